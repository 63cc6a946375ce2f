/*
 * One-off probe (fourteenth session), not part of the build: the second
 * half of vmm_probe.cu's question. In one process a copy with four loads
 * in flight kept ~1990 GB/s over 8.9 GB whether the buffers came from
 * cudaMalloc or cuMemCreate; gin's block puts into a peer's window over
 * 8.4 GB run at ~1350-1400. Is it the peer's mapping? Two processes
 * (fork before CUDA starts): the child allocates the destination and
 * shares it, the parent maps it and copies bw's pattern into it (132
 * blocks x 512 threads, four loads in flight, a barrier before each
 * region) from its own cudaMalloc buffer:
 *   local: into a second buffer of its own (the same-run reference)
 *   ipc:   the child's cudaMalloc, cudaIpcGetMemHandle / OpenMemHandle
 *          (what gin's windows are)
 *   vmm:   the child's cuMemCreate, exported as a POSIX file descriptor
 *          (passed over a socket), imported and mapped (what NVSHMEM's
 *          heap is)
 * Build and run on the GPU machine (with and without an MPS daemon):
 *   nvcc -O2 -arch=sm_90 -o ipc_probe ipc_probe.cu -lcuda && ./ipc_probe
 * Prints: kind, window GB, message bytes, messages per block, GB/s
 * (median of 5 timed launches after one warm-up).
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%d: %s: %s\n", (int)getpid(), #x,                       \
              cudaGetErrorString(e_));                                         \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)
#define CKD(x)                                                                 \
  do {                                                                         \
    CUresult r_ = (x);                                                         \
    if (r_ != CUDA_SUCCESS) {                                                  \
      fprintf(stderr, "%d: %s: %d\n", (int)getpid(), #x, (int)r_);             \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

__global__ void k_copy4(const int4 *src, int4 *dst, size_t bytes, int iters) {
  size_t n = bytes / 16, s = blockDim.x;
  for (int i = 0; i < iters; i++) {
    size_t base = ((size_t)blockIdx.x * iters + i) * n;
    const int4 *vs = src + base;
    int4 *vd = dst + base;
    __syncthreads();
    size_t k = threadIdx.x;
    for (; k + 3 * s < n; k += 4 * s) {
      int4 a = vs[k], b = vs[k + s], c = vs[k + 2 * s], d = vs[k + 3 * s];
      vd[k] = a;
      vd[k + s] = b;
      vd[k + 2 * s] = c;
      vd[k + 3 * s] = d;
    }
    for (; k < n; k += s) vd[k] = vs[k];
  }
}

static void send_all(int fd, const void *p, size_t n) {
  if (write(fd, p, n) != (ssize_t)n) exit(2);
}
static void recv_all(int fd, void *p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (char *)p + got, n - got);
    if (r <= 0) exit(3);
    got += (size_t)r;
  }
}
static void send_fd(int sock, int fd) {
  char c = 0, buf[CMSG_SPACE(sizeof(int))];
  struct iovec io = {&c, 1};
  struct msghdr m;
  memset(&m, 0, sizeof m);
  memset(buf, 0, sizeof buf);
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  m.msg_control = buf;
  m.msg_controllen = sizeof buf;
  struct cmsghdr *h = CMSG_FIRSTHDR(&m);
  h->cmsg_level = SOL_SOCKET;
  h->cmsg_type = SCM_RIGHTS;
  h->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(h), &fd, sizeof fd);
  if (sendmsg(sock, &m, 0) != 1) exit(4);
}
static int recv_fd(int sock) {
  char c, buf[CMSG_SPACE(sizeof(int))];
  struct iovec io = {&c, 1};
  struct msghdr m;
  memset(&m, 0, sizeof m);
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  m.msg_control = buf;
  m.msg_controllen = sizeof buf;
  if (recvmsg(sock, &m, 0) != 1) exit(5);
  int fd;
  memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof fd);
  return fd;
}

static CUmemAllocationProp vmm_prop(void) {
  CUmemAllocationProp p;
  memset(&p, 0, sizeof p);
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = 0;
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return p;
}
static size_t vmm_round(size_t size) {
  CUmemAllocationProp p = vmm_prop();
  size_t g = 0;
  CKD(cuMemGetAllocationGranularity(&g, &p,
                                    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  return (size + g - 1) / g * g;
}
static void *vmm_map(CUmemGenericAllocationHandle h, size_t size) {
  CUdeviceptr va;
  CKD(cuMemAddressReserve(&va, size, 0, 0, 0));
  CKD(cuMemMap(va, size, 0, h, 0));
  CUmemAccessDesc a;
  memset(&a, 0, sizeof a);
  a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a.location.id = 0;
  a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CKD(cuMemSetAccess(va, size, &a, 1));
  return (void *)va;
}

/* The child: for each (kind, window) the parent asks for, allocate and
 * share a destination, then wait for "done" before freeing it. */
static void child(int sock) {
  CK(cudaSetDevice(0));
  CK(cudaFree(0));
  for (;;) {
    int kind;
    size_t win;
    recv_all(sock, &kind, sizeof kind);
    if (kind < 0) return;
    recv_all(sock, &win, sizeof win);
    if (kind == 1) {
      void *p;
      CK(cudaMalloc(&p, win));
      CK(cudaMemset(p, 0, win));
      CK(cudaDeviceSynchronize());
      cudaIpcMemHandle_t h;
      CK(cudaIpcGetMemHandle(&h, p));
      send_all(sock, &h, sizeof h);
      recv_all(sock, &kind, sizeof kind);
      CK(cudaFree(p));
    } else {
      size_t size = vmm_round(win);
      CUmemAllocationProp p = vmm_prop();
      CUmemGenericAllocationHandle h;
      CKD(cuMemCreate(&h, size, &p, 0));
      void *va = vmm_map(h, size);
      CK(cudaMemset(va, 0, size));
      CK(cudaDeviceSynchronize());
      int fd = -1;
      CKD(cuMemExportToShareableHandle(
          &fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
      send_fd(sock, fd);
      recv_all(sock, &kind, sizeof kind);
      close(fd);
      CKD(cuMemUnmap((CUdeviceptr)va, size));
      CKD(cuMemAddressFree((CUdeviceptr)va, size));
      CKD(cuMemRelease(h));
    }
  }
}

static int cmp(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) return 1;
  pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    child(sv[1]);
    return 0;
  }
  close(sv[1]);
  int sock = sv[0];
  CK(cudaSetDevice(0));
  CK(cudaFree(0));
  const int grid = 132, threads = 512;
  const size_t windows[2] = {(size_t)grid << 24, (size_t)grid << 26};
  const size_t sizes[4] = {1 << 16, 1 << 20, 1 << 24, 1 << 26};
  const char *names[3] = {"local", "ipc", "vmm"};
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int w = 0; w < 2; w++) {
    size_t win = windows[w];
    void *src;
    CK(cudaMalloc(&src, win));
    CK(cudaMemset(src, 1, win));
    for (int kind = 0; kind < 3; kind++) {
      void *dst = NULL, *own = NULL;
      CUmemGenericAllocationHandle vh = 0;
      size_t vsize = 0;
      if (kind == 0) {
        CK(cudaMalloc(&own, win));
        dst = own;
      } else {
        send_all(sock, &kind, sizeof kind);
        send_all(sock, &win, sizeof win);
        if (kind == 1) {
          cudaIpcMemHandle_t h;
          recv_all(sock, &h, sizeof h);
          CK(cudaIpcOpenMemHandle(&dst, h, cudaIpcMemLazyEnablePeerAccess));
        } else {
          int fd = recv_fd(sock);
          vsize = vmm_round(win);
          CKD(cuMemImportFromShareableHandle(
              &vh, (void *)(uintptr_t)fd,
              CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
          close(fd);
          dst = vmm_map(vh, vsize);
        }
      }
      for (int s = 0; s < 4; s++) {
        size_t bytes = sizes[s];
        size_t fit = win / ((size_t)grid * bytes);
        int iters = fit > 100 ? 100 : (int)fit;
        if (iters < 1) continue;
        float t[5];
        for (int r = -1; r < 5; r++) {
          CK(cudaEventRecord(e0));
          k_copy4<<<grid, threads>>>((const int4 *)src, (int4 *)dst, bytes,
                                     iters);
          CK(cudaEventRecord(e1));
          CK(cudaEventSynchronize(e1));
          if (r >= 0) CK(cudaEventElapsedTime(&t[r], e0, e1));
        }
        qsort(t, 5, sizeof t[0], cmp);
        double gbps = (double)grid * iters * bytes / (t[2] * 1e-3) / 1e9;
        printf("%s window %.1f GB msg %zu iters %d GB/s %.0f\n", names[kind],
               win / 1e9, bytes, iters, gbps);
        fflush(stdout);
      }
      if (kind == 0) {
        CK(cudaFree(own));
      } else {
        if (kind == 1) {
          CK(cudaIpcCloseMemHandle(dst));
        } else {
          CKD(cuMemUnmap((CUdeviceptr)dst, vsize));
          CKD(cuMemAddressFree((CUdeviceptr)dst, vsize));
          CKD(cuMemRelease(vh));
        }
        int done = 0;
        send_all(sock, &done, sizeof done);
      }
    }
    CK(cudaFree(src));
  }
  int stop = -1;
  send_all(sock, &stop, sizeof stop);
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
