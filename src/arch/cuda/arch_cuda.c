/*
 * cuda target: windows and signal areas are device memory shared with the
 * peers of the host, from cuMemCreate with its descriptor taken by
 * pidfd_getfd (vmm.c) or from cudaMalloc with CUDA IPC handles; both work
 * between MPS clients of one GPU and between P2P-capable GPUs. Control pages
 * are memfd host memory registered as mapped pinned memory, so kernels poll the
 * abort word and the host reads error records without a copy.
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/cuda/cuda_arch.h"
#include "arch/memfd.h"

typedef struct cuda_devinfo {
  char uuid[16];
  char busid[32];
  uint8_t mps; /* contexts on this GPU are MPS clients (or unknown) */
} cuda_devinfo_t;
_Static_assert(sizeof(cuda_devinfo_t) <= GIN_ARCH_DEVINFO_BYTES, "devinfo");

static int local_rank_from_env(void) {
  const char *names[] = {"GIN_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                         "SLURM_LOCALID", "LOCAL_RANK"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *v = getenv(names[i]);
    if (v && *v) return atoi(v);
  }
  return -1;
}

void gin_arch_local_ranks(int local_ranks) { (void)local_ranks; }

gin_result_t gin_arch_init(gin_arch_devinfo_t *info_out) {
  int count = 0;
  GIN_CUDA_CALL(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (count < 1) return GIN_ERROR(GIN_ERR_CUDA, "no CUDA device visible");
  int64_t want = gin_arch_param_cuda_device();
  int dev = -1;
  if (want >= 0) {
    if (want >= count)
      return GIN_ERROR(GIN_ERR_INVALID, "GIN_CUDA_DEVICE=%lld but only %d GPUs",
                       (long long)want, count);
    dev = (int)want;
  } else if (want == -1 && local_rank_from_env() >= 0) {
    dev = local_rank_from_env() % count;
  }
  if (dev >= 0) GIN_CUDA_CALL(cudaSetDevice(dev), "cudaSetDevice");
  GIN_CUDA_CALL(cudaGetDevice(&dev), "cudaGetDevice");
  gin_cuda_device_set_(dev);
  GIN_CHECK(gin_cuda_vmm_init_());
  struct cudaDeviceProp prop;
  GIN_CUDA_CALL(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  cuda_devinfo_t di;
  memset(&di, 0, sizeof di);
  memcpy(di.uuid, prop.uuid.bytes, sizeof di.uuid);
  GIN_CUDA_CALL(cudaDeviceGetPCIBusId(di.busid, sizeof di.busid, dev),
                "cudaDeviceGetPCIBusId");
  int mps = 1; /* unknown counts as served: no warning on a guess */
  if (cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, dev) != cudaSuccess)
    cudaGetLastError();
  di.mps = mps != 0;
  memset(info_out, 0, sizeof *info_out);
  memcpy(info_out->bytes, &di, sizeof di);
  GIN_INFO(INIT, "cuda device %d (%s, %s)", dev, prop.name, di.busid);
  return GIN_SUCCESS;
}

int gin_arch_same_device(const gin_arch_devinfo_t *self,
                         const gin_arch_devinfo_t *peer) {
  cuda_devinfo_t a, b;
  memcpy(&a, self->bytes, sizeof a);
  memcpy(&b, peer->bytes, sizeof b);
  return memcmp(a.uuid, b.uuid, sizeof a.uuid) == 0;
}

int gin_arch_time_sliced(const gin_arch_devinfo_t *dev) {
  cuda_devinfo_t d;
  memcpy(&d, dev->bytes, sizeof d);
  return !d.mps;
}

int gin_arch_can_map(const gin_arch_devinfo_t *self,
                     const gin_arch_devinfo_t *peer) {
  cuda_devinfo_t a, b;
  memcpy(&a, self->bytes, sizeof a);
  memcpy(&b, peer->bytes, sizeof b);
  /* The peer's bus id came from the all-gather: read it as a string only
   * within its field (a real one is about 13 characters). */
  b.busid[sizeof b.busid - 1] = '\0';
  if (memcmp(a.uuid, b.uuid, sizeof a.uuid) == 0) return 1;
  int mine = -1, theirs = -1, ok = 0;
  if (cudaGetDevice(&mine) != cudaSuccess) return 0;
  if (cudaDeviceGetByPCIBusId(&theirs, b.busid) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  if (cudaDeviceCanAccessPeer(&ok, mine, theirs) != cudaSuccess) return 0;
  return ok;
}

/* cudaMalloc memory and its CUDA IPC handle in h. */
static gin_result_t ipc_alloc(size_t size, void **p, cuda_handle_t *h) {
  GIN_CUDA_CALL(cudaMalloc(p, size), "cudaMalloc of shareable memory");
  cudaError_t e = cudaIpcGetMemHandle(&h->u.ipc, *p);
  if (e != cudaSuccess) {
    cudaFree(*p);
    return GIN_ERROR(GIN_ERR_CUDA, "cudaIpcGetMemHandle(%zu bytes): %s", size,
                     cudaGetErrorString(e));
  }
  h->magic = CUDA_HANDLE_MAGIC;
  h->size = size;
  return GIN_SUCCESS;
}

gin_result_t gin_arch_shm_alloc(size_t size, void **ptr_out,
                                gin_arch_handle_t *handle_out,
                                void **cookie_out) {
  cuda_handle_t h;
  memset(&h, 0, sizeof h);
  h.pid = (int32_t)getpid();
  void *p = NULL, *cookie = NULL;
  gin_result_t res = GIN_ERR_UNSUPPORTED;
  if (gin_cuda_vmm_on_()) {
    res = gin_cuda_vmm_alloc_(size, &p, &h, &cookie);
    if (res != GIN_SUCCESS && (res == GIN_ERR_NOMEM || gin_cuda_vmm_forced_()))
      return res;
    /* Automatic choice: an allocation VMM cannot make (other than for
     * want of memory) comes from cudaMalloc, as every later one. */
    if (res != GIN_SUCCESS) {
      GIN_WARN(INIT, "the VMM allocation failed (the warning above): "
                     "cudaMalloc from now on");
      gin_cuda_vmm_off_();
    }
  }
  if (res != GIN_SUCCESS) GIN_CHECK(ipc_alloc(size, &p, &h));
  /* Zeroed on this thread's stream, synchronously: a memset on the legacy
   * stream would not be ordered before later copies on that stream. */
  if (gin_arch_memset(p, 0, size) != GIN_SUCCESS) {
    gin_arch_shm_free(p, size, cookie);
    return GIN_ERR_CUDA;
  }
  memset(handle_out, 0, sizeof *handle_out);
  memcpy(handle_out->bytes, &h, sizeof h);
  *ptr_out = p;
  *cookie_out = cookie;
  return GIN_SUCCESS;
}

void gin_arch_shm_free(void *ptr, size_t size, void *cookie) {
  if (cookie)
    gin_cuda_vmm_release_(cookie);
  else
    cudaFree(ptr);
}

gin_result_t gin_arch_shm_import(const gin_arch_handle_t *handle, size_t size,
                                 void **ptr_out, void **cookie_out) {
  cuda_handle_t h;
  memcpy(&h, handle->bytes, sizeof h);
  if ((h.magic != CUDA_HANDLE_MAGIC && h.magic != CUDA_VMM_MAGIC) ||
      h.size < size)
    return GIN_ERROR(GIN_ERR_PROTOCOL,
                     "bad CUDA memory handle (magic %#x, size %llu; %zu "
                     "bytes wanted)",
                     h.magic, (unsigned long long)h.size, size);
  if (h.magic == CUDA_VMM_MAGIC)
    return gin_cuda_vmm_import_(&h, ptr_out, cookie_out);
  void *p = NULL;
  GIN_CUDA_CALL(
      cudaIpcOpenMemHandle(&p, h.u.ipc, cudaIpcMemLazyEnablePeerAccess),
      "cudaIpcOpenMemHandle of a peer's memory");
  *ptr_out = p;
  *cookie_out = NULL;
  return GIN_SUCCESS;
}

void gin_arch_shm_unimport(void *ptr, size_t size, void *cookie) {
  if (cookie)
    gin_cuda_vmm_release_(cookie);
  else
    cudaIpcCloseMemHandle(ptr);
}

int gin_arch_shm_mode(void) {
  return (gin_cuda_vmm_on_() ? GIN_ARCH_SHM_TAKES_FD : 0) |
         (gin_cuda_vmm_forced_() ? GIN_ARCH_SHM_FORCED : 0);
}

void gin_arch_shm_fallback(void) {
  if (!gin_cuda_vmm_on_()) return;
  gin_cuda_vmm_off_();
  GIN_INFO(INIT, "a rank cannot take its peers' descriptors: windows from "
                 "cudaMalloc (CUDA IPC) from now on");
}

static gin_result_t host_register(void *host, size_t size, void **dev_out) {
  GIN_CUDA_CALL(
      cudaHostRegister(host, size,
                       cudaHostRegisterMapped | cudaHostRegisterPortable),
      "cudaHostRegister of a control page");
  cudaError_t e = cudaHostGetDevicePointer(dev_out, host, 0);
  if (e != cudaSuccess) {
    cudaHostUnregister(host);
    return GIN_ERROR(GIN_ERR_CUDA, "cudaHostGetDevicePointer: %s",
                     cudaGetErrorString(e));
  }
  return GIN_SUCCESS;
}

gin_result_t gin_arch_hostmem_alloc(size_t size, void **host_out,
                                    void **dev_out,
                                    gin_arch_handle_t *handle_out,
                                    void **cookie_out) {
  GIN_CHECK(gin_memfd_alloc(size, host_out, handle_out, cookie_out));
  gin_result_t res = host_register(*host_out, size, dev_out);
  if (res != GIN_SUCCESS) gin_memfd_free(*host_out, size, *cookie_out);
  return res;
}

void gin_arch_hostmem_free(void *host, size_t size, void *cookie) {
  cudaHostUnregister(host);
  gin_memfd_free(host, size, cookie);
}

gin_result_t gin_arch_hostmem_import(const gin_arch_handle_t *handle,
                                     size_t size, void **host_out,
                                     void **dev_out, void **cookie_out) {
  GIN_CHECK(gin_memfd_import(handle, size, host_out, cookie_out));
  gin_result_t res = host_register(*host_out, size, dev_out);
  if (res != GIN_SUCCESS) gin_memfd_unimport(*host_out, size, *cookie_out);
  return res;
}

void gin_arch_hostmem_unimport(void *host, size_t size, void *cookie) {
  cudaHostUnregister(host);
  gin_memfd_unimport(host, size, cookie);
}

gin_result_t gin_arch_dev_alloc(size_t size, void **ptr_out) {
  void *p = NULL;
  GIN_CUDA_CALL(cudaMalloc(&p, size ? size : 1), "cudaMalloc");
  if (gin_arch_memset(p, 0, size ? size : 1) != GIN_SUCCESS) {
    cudaFree(p);
    return GIN_ERR_CUDA;
  }
  *ptr_out = p;
  return GIN_SUCCESS;
}

void gin_arch_dev_free(void *ptr) { cudaFree(ptr); }

gin_result_t gin_arch_copy(void *dst, const void *src, size_t bytes) {
  cudaStream_t s;
  GIN_CHECK(gin_cuda_thread_stream_(&s));
  GIN_CUDA_CALL(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s),
                "cudaMemcpyAsync");
  GIN_CUDA_CALL(cudaStreamSynchronize(s), "cudaStreamSynchronize after copy");
  return GIN_SUCCESS;
}

gin_result_t gin_arch_dev_load_u64(const uint64_t *dev, uint64_t *out) {
  return gin_arch_copy(out, dev, sizeof *out);
}

gin_result_t gin_arch_dev_flag_set(uint32_t *dev) {
  /* The copy engine writes it whatever the SMs are doing; waited for (a
   * kernel launched after this returns sees it), at most a second: only
   * this copy is on the stream. */
  static const uint32_t one = 1;
  cudaStream_t s;
  GIN_CHECK(gin_cuda_thread_stream_(&s));
  GIN_CUDA_CALL(
      cudaMemcpyAsync(dev, &one, sizeof one, cudaMemcpyHostToDevice, s),
      "cudaMemcpyAsync of the abort gate");
  for (int i = 0; i < 10000; i++) {
    cudaError_t e = cudaStreamQuery(s);
    if (e == cudaSuccess) return GIN_SUCCESS;
    if (e != cudaErrorNotReady)
      return GIN_ERROR(GIN_ERR_CUDA, "abort gate copy: %s",
                       cudaGetErrorString(e));
    usleep(100);
  }
  return GIN_ERROR(GIN_ERR_TIMEOUT, "abort gate copy: not done after 1 s");
}

/* Copies at least this large go one by one through cudaMemcpyAsync,
 * which the driver runs at device-copy speed; a batch runs on a copy
 * engine (measured on an H200: about 300 GB/s for 16 MiB copies). */
#define COPY_ALONE_BYTES (256u << 10)
#define COPY_BATCH_MAX 64

static gin_result_t copy_batch(void **d, const void **r, size_t *z, size_t n,
                               cudaStream_t s) {
  if (n == 0) return GIN_SUCCESS;
  if (n == 1 || !gin_arch_param_copy_batch()) {
    for (size_t i = 0; i < n; i++)
      GIN_CUDA_CALL(cudaMemcpyAsync(d[i], r[i], z[i], cudaMemcpyDefault, s),
                    "cudaMemcpyAsync");
    return GIN_SUCCESS;
  }
  /* One submission for the small copies: the proxy pays a few CUDA calls
   * per batch of puts, not per put. */
  struct cudaMemcpyAttributes attr;
  memset(&attr, 0, sizeof attr);
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  size_t idx = 0;
  GIN_CUDA_CALL(cudaMemcpyBatchAsync(d, r, z, n, &attr, &idx, 1, s),
                "cudaMemcpyBatchAsync");
  return GIN_SUCCESS;
}

#define COPY_SIDE_MAX 8

/* A thread's side streams for large copies, joined back into its main
 * stream after each submission (so stream order still separates
 * submissions). */
typedef struct copy_side {
  int n;
  cudaStream_t s[COPY_SIDE_MAX];
  cudaEvent_t done[COPY_SIDE_MAX];
  cudaEvent_t start;
} copy_side_t;

static pthread_key_t side_key;
static pthread_once_t side_once = PTHREAD_ONCE_INIT;
static void side_destroy(void *p) {
  copy_side_t *c = (copy_side_t *)p;
  for (int i = 0; i < c->n; i++) {
    cudaStreamDestroy(c->s[i]);
    cudaEventDestroy(c->done[i]);
  }
  if (c->n) cudaEventDestroy(c->start);
  free(c);
}
static void side_key_make(void) { pthread_key_create(&side_key, side_destroy); }

/* The calling thread's side streams (at least `want`, when they can be
 * made), or NULL. */
static copy_side_t *thread_side(int want) {
  pthread_once(&side_once, side_key_make);
  copy_side_t *c = (copy_side_t *)pthread_getspecific(side_key);
  if (!c) {
    c = (copy_side_t *)calloc(1, sizeof *c);
    if (!c) return NULL;
    if (cudaEventCreateWithFlags(&c->start, cudaEventDisableTiming) !=
        cudaSuccess) {
      free(c);
      return NULL;
    }
    pthread_setspecific(side_key, c);
  }
  while (c->n < want) {
    if (cudaStreamCreateWithFlags(&c->s[c->n], cudaStreamNonBlocking) !=
        cudaSuccess)
      break;
    if (cudaEventCreateWithFlags(&c->done[c->n], cudaEventDisableTiming) !=
        cudaSuccess) {
      cudaStreamDestroy(c->s[c->n]);
      break;
    }
    c->n++;
  }
  return c->n >= want ? c : NULL;
}

/* Spreads the large copies over side streams that start after the main
 * stream's earlier work and that the main stream then waits for. */
static gin_result_t copy_large_spread(void *const *dsts,
                                      const void *const *srcs,
                                      const size_t *sizes, size_t n,
                                      size_t nlarge, cudaStream_t s) {
  int64_t k = gin_arch_param_copy_streams();
  int want = (int)(k < 1 ? 1 : k > COPY_SIDE_MAX ? COPY_SIDE_MAX : k);
  if ((size_t)want > nlarge) want = (int)nlarge;
  copy_side_t *c = want > 1 ? thread_side(want) : NULL;
  for (size_t i = 0, j = 0; i < n; i++) {
    if (sizes[i] < COPY_ALONE_BYTES) continue;
    cudaStream_t t = s;
    if (c) {
      t = c->s[j % (size_t)want];
      if (j < (size_t)want) { /* first use in this submission */
        if (j == 0)
          GIN_CUDA_CALL(cudaEventRecord(c->start, s), "cudaEventRecord");
        GIN_CUDA_CALL(cudaStreamWaitEvent(t, c->start, 0),
                      "cudaStreamWaitEvent");
      }
      j++;
    }
    GIN_CUDA_CALL(
        cudaMemcpyAsync(dsts[i], srcs[i], sizes[i], cudaMemcpyDefault, t),
        "cudaMemcpyAsync");
  }
  if (c)
    for (int j = 0; j < want; j++) {
      GIN_CUDA_CALL(cudaEventRecord(c->done[j], c->s[j]), "cudaEventRecord");
      GIN_CUDA_CALL(cudaStreamWaitEvent(s, c->done[j], 0),
                    "cudaStreamWaitEvent");
    }
  return GIN_SUCCESS;
}

gin_result_t gin_arch_copy_submit(void *const *dsts, const void *const *srcs,
                                  const size_t *sizes, size_t n) {
  if (n == 0) return GIN_SUCCESS;
  cudaStream_t s;
  GIN_CHECK(gin_cuda_thread_stream_(&s));
  size_t nlarge = 0;
  for (size_t i = 0; i < n; i++)
    nlarge += sizes[i] >= COPY_ALONE_BYTES;
  if (nlarge) GIN_CHECK(copy_large_spread(dsts, srcs, sizes, n, nlarge, s));
  /* The copies of one submission do not overlap, so their order is free;
   * all of them start after what the stream held before. */
  void *d[COPY_BATCH_MAX];
  const void *r[COPY_BATCH_MAX];
  size_t z[COPY_BATCH_MAX], k = 0;
  for (size_t i = 0; i < n; i++) {
    if (sizes[i] >= COPY_ALONE_BYTES) continue; /* spread above */
    d[k] = dsts[i];
    r[k] = srcs[i];
    z[k++] = sizes[i];
    if (k == COPY_BATCH_MAX) {
      GIN_CHECK(copy_batch(d, r, z, k, s));
      k = 0;
    }
  }
  return copy_batch(d, r, z, k, s);
}

/* Makes every kind of copy the proxy uses once (host to device, device to
 * host, device to device, small ones batched, a large one): with CUDA's
 * lazy loading the driver loads what a copy needs at its first use, which
 * can wait until the device is idle, while a kernel spins on that copy. */
static gin_result_t copy_warm_up(cudaStream_t s) {
  const size_t big = COPY_ALONE_BYTES, n = 2 * big + 64;
  char *d = NULL, *h = NULL;
  gin_result_t res = GIN_SUCCESS;
  if (cudaMalloc((void **)&d, n) != cudaSuccess ||
      cudaMallocHost((void **)&h, 64) != cudaSuccess) {
    cudaGetLastError();
    res = GIN_ERROR(GIN_ERR_CUDA, "proxy thread: copy warm-up buffers");
  } else {
    memset(h, 0, 64);
    void *dst[2] = {d, d + 32};
    const void *src[2] = {h, d + 16};
    size_t sz[2] = {8, 8};
    if (copy_batch(dst, src, sz, 2, s) != GIN_SUCCESS ||
        cudaMemcpyAsync(h + 8, d, 8, cudaMemcpyDefault, s) != cudaSuccess ||
        cudaMemcpyAsync(d + 64 + big, d + 64, big, cudaMemcpyDefault, s) !=
            cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess)
      res = GIN_ERROR(GIN_ERR_CUDA, "proxy thread: copy warm-up: %s",
                      cudaGetErrorString(cudaGetLastError()));
  }
  if (d) cudaFree(d);
  if (h) cudaFreeHost(h);
  return res;
}

gin_result_t gin_arch_copy_thread_setup(void) {
  cudaStream_t s;
  GIN_CHECK(gin_cuda_thread_stream_(&s));
  int64_t k = gin_arch_param_copy_streams();
  if (k > 1 && !thread_side((int)(k > COPY_SIDE_MAX ? COPY_SIDE_MAX : k)))
    return GIN_ERROR(GIN_ERR_CUDA,
                     "proxy thread: cannot make %lld copy streams",
                     (long long)k);
  return copy_warm_up(s);
}

gin_result_t gin_arch_copy_wait(void) {
  cudaStream_t s;
  GIN_CHECK(gin_cuda_thread_stream_(&s));
  GIN_CUDA_CALL(cudaStreamSynchronize(s), "cudaStreamSynchronize after copies");
  return GIN_SUCCESS;
}

gin_result_t gin_arch_memset(void *dst, int value, size_t bytes) {
  cudaStream_t s;
  GIN_CHECK(gin_cuda_thread_stream_(&s));
  GIN_CUDA_CALL(cudaMemsetAsync(dst, value, bytes, s), "cudaMemsetAsync");
  GIN_CUDA_CALL(cudaStreamSynchronize(s), "cudaStreamSynchronize after memset");
  return GIN_SUCCESS;
}

gin_result_t gin_arch_atomic_add_u64(uint64_t *host_ptr, uint64_t value) {
  __atomic_fetch_add(host_ptr, value, __ATOMIC_RELEASE);
  return GIN_SUCCESS;
}

int gin_arch_proxy_busy_poll_default(void) { return 1; }

gin_result_t gin_arch_device_cpulist(char *buf, size_t len) {
  char busid[32], path[128];
  int dev = gin_cuda_device_();
  if (dev < 0 || cudaDeviceGetPCIBusId(busid, sizeof busid, dev) != cudaSuccess)
    return GIN_ERR_UNSUPPORTED;
  for (char *p = busid; *p; p++)
    if (*p >= 'A' && *p <= 'F') *p = (char)(*p - 'A' + 'a');
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/local_cpulist", busid);
  FILE *f = fopen(path, "r");
  if (!f) return GIN_ERR_UNSUPPORTED;
  char *ok = fgets(buf, (int)len, f);
  fclose(f);
  if (!ok) return GIN_ERR_UNSUPPORTED;
  buf[strcspn(buf, "\n")] = '\0';
  return GIN_SUCCESS;
}

gin_result_t gin_arch_staging_alloc(size_t size, void **ptr_out) {
  void *p = NULL;
  GIN_CUDA_CALL(cudaMallocHost(&p, size ? size : 1),
                "cudaMallocHost of a staging buffer");
  *ptr_out = p;
  return GIN_SUCCESS;
}

void gin_arch_staging_free(void *ptr) {
  if (ptr) cudaFreeHost(ptr);
}

/* A kernel compiled for the host target (by a C compiler, where GIN_KERNEL
 * makes a CPU function and gin_launch calls this) in a program linked with
 * the cuda target's library: refused, saying what to rebuild, where the
 * kernel would otherwise run on the CPU over device memory. The host
 * target's thread-local indices and spin count are defined here too, so
 * that such a program links and gets this message. */
GIN_API _Thread_local int gin_host_block_idx_;
GIN_API _Thread_local int gin_host_grid_dim_ = 1;
GIN_API uint32_t gin_host_spins_ = 64;
GIN_API gin_result_t gin_host_launch(void (*fn)(const void *args), int grid,
                                     const void *args) {
  (void)fn, (void)grid, (void)args;
  return GIN_ERROR(GIN_ERR_INVALID,
                   "gin_launch: this kernel was compiled for the host target "
                   "(by a C compiler, not nvcc) but the program is linked "
                   "with gin_cuda: compile its source as CUDA (nvcc -x cu; "
                   "CMake: gin_device_program) or link gin_host");
}
