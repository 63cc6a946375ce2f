/*
 * Probe (issue 6): does a survivor's mapping of a peer's GPU memory
 * outlive the peer's SIGKILL under MPS? Two processes on one GPU: the
 * exporter allocates, shares, keeps a kernel running and is killed; the
 * importer's kernel keeps writing into the mapping for a second and then
 * reports whether its context survived. Mode "ipc": cudaMalloc +
 * cudaIpcGetMemHandle (what gin uses now); mode "vmm": cuMemCreate, the
 * handle exported as a POSIX fd and passed over a unix socket
 * (SCM_RIGHTS), imported, mapped. Prints one line per mode; exit 0 if the
 * importer's context survived.
 * Build: nvcc -arch=sm_90 -o vmm_survive vmm_survive.cu -lcuda
 * Run:   ./vmm_survive ipc; ./vmm_survive vmm   (MPS daemon running)
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SZ (2u << 20)
#define CK(x)                                                                  \
  do {                                                                         \
    CUresult r_ = (x);                                                         \
    if (r_ != CUDA_SUCCESS) {                                                  \
      const char *s_ = "";                                                     \
      cuGetErrorName(r_, &s_);                                                 \
      fprintf(stderr, "%s: %s (line %d)\n", #x, s_, __LINE__);                 \
      exit(3);                                                                 \
    }                                                                          \
  } while (0)
#define RK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s: %s (line %d)\n", #x, cudaGetErrorName(e_),         \
              __LINE__);                                                       \
      exit(3);                                                                 \
    }                                                                          \
  } while (0)

__global__ void k_write(volatile unsigned long long *p, unsigned long long ns,
                        unsigned long long *count) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  unsigned long long i = 0;
  do {
    p[(i * 32 + threadIdx.x) % (SZ / 8)] = i;
    i++;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
  if (threadIdx.x == 0) *count = i;
}

static void send_fd(int sock, int fd, const void *bytes, size_t n) {
  struct msghdr m;
  memset(&m, 0, sizeof m);
  struct iovec io = {(void *)bytes, n};
  char cbuf[CMSG_SPACE(sizeof(int))];
  memset(cbuf, 0, sizeof cbuf);
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  if (fd >= 0) {
    m.msg_control = cbuf;
    m.msg_controllen = sizeof cbuf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  if (sendmsg(sock, &m, 0) != (ssize_t)n) perror("sendmsg"), exit(3);
}

static int recv_fd(int sock, void *bytes, size_t n) {
  struct msghdr m;
  memset(&m, 0, sizeof m);
  struct iovec io = {bytes, n};
  char cbuf[CMSG_SPACE(sizeof(int))];
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  m.msg_control = cbuf;
  m.msg_controllen = sizeof cbuf;
  if (recvmsg(sock, &m, MSG_WAITALL) != (ssize_t)n) perror("recvmsg"), exit(3);
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  int fd = -1;
  if (c && c->cmsg_type == SCM_RIGHTS) memcpy(&fd, CMSG_DATA(c), sizeof(int));
  return fd;
}

static void *vmm_map(CUmemGenericAllocationHandle h, size_t size) {
  CUdeviceptr va;
  CK(cuMemAddressReserve(&va, size, 0, 0, 0));
  CK(cuMemMap(va, size, 0, h, 0));
  CUmemAccessDesc a;
  memset(&a, 0, sizeof a);
  a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a.location.id = 0;
  a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CK(cuMemSetAccess(va, size, &a, 1));
  return (void *)va;
}

static void exporter(int sock, int vmm) {
  RK(cudaSetDevice(0));
  RK(cudaFree(0));
  void *p = NULL;
  if (vmm) {
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle h;
    CK(cuMemCreate(&h, SZ, &prop, 0));
    int fd = -1;
    CK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    p = vmm_map(h, SZ);
    char b = 'v';
    send_fd(sock, fd, &b, 1);
  } else {
    RK(cudaMalloc(&p, SZ));
    cudaIpcMemHandle_t h;
    RK(cudaIpcGetMemHandle(&h, p));
    send_fd(sock, -1, &h, sizeof h);
  }
  unsigned long long *cnt;
  RK(cudaMalloc(&cnt, 8));
  /* A live rank: its own kernel runs until it is killed. */
  k_write<<<1, 32>>>((unsigned long long *)p, 5000000000ull, cnt);
  char go = 1;
  send_fd(sock, -1, &go, 1);
  pause();
}

int main(int argc, char **argv) {
  int vmm = argc > 1 && strcmp(argv[1], "vmm") == 0;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) return perror("socketpair"), 3;
  pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    exporter(sv[1], vmm);
    return 0;
  }
  close(sv[1]);
  cuInit(0);
  RK(cudaSetDevice(0));
  RK(cudaFree(0));
  void *p = NULL;
  if (vmm) {
    char b;
    int fd = recv_fd(sv[0], &b, 1);
    CUmemGenericAllocationHandle h;
    CK(cuMemImportFromShareableHandle(&h, (void *)(uintptr_t)fd,
                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd); /* the handle holds the memory now */
    p = vmm_map(h, SZ);
  } else {
    cudaIpcMemHandle_t h;
    recv_fd(sv[0], &h, sizeof h);
    RK(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
  }
  char go;
  recv_fd(sv[0], &go, 1);
  unsigned long long *cnt;
  RK(cudaMallocManaged(&cnt, 8));
  *cnt = 0;
  k_write<<<1, 32>>>((unsigned long long *)p, 1500000000ull, cnt);
  usleep(300000);
  kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  cudaError_t e = cudaDeviceSynchronize();
  printf("%s: exporter killed mid-kernel; importer's kernel after 1.5 s: %s, "
         "%llu rounds written\n",
         vmm ? "vmm+fd" : "cuda-ipc", cudaGetErrorName(e),
         e == cudaSuccess ? *cnt : 0ull);
  return e == cudaSuccess ? 0 : 1;
}
