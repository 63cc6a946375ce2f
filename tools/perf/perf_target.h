/*
 * gin-perf's target glue: the few host-side things a benchmark needs that
 * differ between the cuda and host targets (mapped host flags, a copy to
 * time). Device code itself is target-neutral.
 */
#ifndef GIN_PERF_TARGET_H
#define GIN_PERF_TARGET_H

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "gin/device/arch.h"

static inline double perf_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Host memory shared with another process on this machine (memfd, mapped
 * through /proc/<pid>/fd): blob holds the pid and fd. */
static inline void *perf_memfd_alloc(size_t n, unsigned char blob[64]) {
  int fd = memfd_create("gin-perf", MFD_CLOEXEC), pid = (int)getpid();
  memset(blob, 0, 64);
  if (fd < 0) return NULL;
  void *p = ftruncate(fd, (off_t)n) == 0
                ? mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                : MAP_FAILED;
  if (p == MAP_FAILED) {
    close(fd);
    return NULL;
  }
  memcpy(blob, &pid, sizeof pid);
  memcpy(blob + sizeof pid, &fd, sizeof fd);
  return p;
}
static inline void *perf_memfd_map(const unsigned char blob[64], size_t n) {
  int pid, fd;
  char path[64];
  memcpy(&pid, blob, sizeof pid);
  memcpy(&fd, blob + sizeof pid, sizeof fd);
  snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fd);
  int f = open(path, O_RDWR | O_CLOEXEC);
  if (f < 0) return NULL;
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
  close(f);
  return p == MAP_FAILED ? NULL : p;
}
static inline void perf_memfd_free(void *p, size_t n,
                                   const unsigned char blob[64]) {
  int fd;
  memcpy(&fd, blob + sizeof(int), sizeof fd);
  if (p) { /* a failed allocation closed its descriptor already */
    munmap(p, n);
    close(fd);
  }
}

#if GIN_ARCH_CUDA
static inline int perf_have_device(void) {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
/* Host memory the kernel can poll: *host for the CPU, *dev for kernels. */
static inline int perf_hostflag_alloc(size_t n, void **host, void **dev) {
  if (cudaHostAlloc(host, n, cudaHostAllocMapped) != cudaSuccess) return -1;
  memset(*host, 0, n);
  return cudaHostGetDevicePointer(dev, *host, 0) == cudaSuccess ? 0 : -1;
}
static inline void perf_hostflag_free(void *host) { cudaFreeHost(host); }
/* Device-to-device copy of n bytes, timed (us), the copy floor. */
static inline double perf_copy_us(void *dst, const void *src, size_t n,
                                  int reps) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaMemcpy(dst, src, n, cudaMemcpyDeviceToDevice); /* warm */
  cudaEventRecord(a, 0);
  for (int i = 0; i < reps; i++)
    cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, 0);
  cudaEventRecord(b, 0);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return (double)ms * 1000.0 / reps;
}
/* Host <-> device copy bandwidth (GB/s) over pinned host memory. */
static inline double perf_h2d_gbps(size_t n, int to_device) {
  void *h = NULL, *d = NULL;
  double g = -1;
  if (cudaMallocHost(&h, n) == cudaSuccess &&
      cudaMalloc(&d, n) == cudaSuccess) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    enum cudaMemcpyKind k =
        to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    cudaMemcpy(to_device ? d : h, to_device ? h : d, n, k);
    cudaEventRecord(a, 0);
    for (int i = 0; i < 10; i++)
      cudaMemcpyAsync(to_device ? d : h, to_device ? h : d, n, k, 0);
    cudaEventRecord(b, 0);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    g = ms > 0 ? 10.0 * (double)n / ((double)ms * 1e6) : -1;
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  cudaFree(d);
  cudaFreeHost(h);
  return g;
}
/* What the proxy's ipc lane does per batch: `count` (at most 64) copies
 * of `n` bytes into dst (count disjoint slots, e.g. a peer's mapped
 * buffer) from src (device memory, or pinned host memory when host_src),
 * submitted as one cudaMemcpyBatchAsync and waited for, reps times after
 * two warm-ups; t[i]: us per copy in batch i. 0, or -1 if a call failed
 * (or no copy engine: host target). */
static inline int perf_batch_copy_times(char *dst, const char *src, size_t n,
                                        int count, int reps, int host_src,
                                        double *t) {
  enum { MAXC = 64 };
  void *d[MAXC];
  const void *r[MAXC];
  size_t z[MAXC];
  char *h = NULL;
  cudaStream_t s;
  if (count > MAXC) count = MAXC;
  if (host_src && cudaMallocHost((void **)&h, n * (size_t)count) != cudaSuccess)
    return -1;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  for (int i = 0; i < count; i++) {
    d[i] = dst + (size_t)i * n;
    r[i] = host_src ? (const void *)(h + (size_t)i * n)
                    : (const void *)(src + (size_t)i * n);
    z[i] = n;
  }
  struct cudaMemcpyAttributes attr;
  memset(&attr, 0, sizeof attr);
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  size_t idx = 0;
  int ok = 1;
  for (int i = -2; i < reps && ok; i++) { /* two warm-up batches */
    double t0 = perf_now_us();
    ok = cudaMemcpyBatchAsync(d, r, z, (size_t)count, &attr, &idx, 1, s) ==
             cudaSuccess &&
         cudaStreamSynchronize(s) == cudaSuccess;
    if (i >= 0) t[i] = (perf_now_us() - t0) / count;
  }
  if (!ok) cudaGetLastError();
  cudaStreamDestroy(s);
  if (h) cudaFreeHost(h);
  return ok ? 0 : -1;
}
/* What one small asynchronous copy costs the host (us per call, n calls
 * then one synchronisation), and one copy waited for on its own. */
static inline void perf_copy_call_us(int n, double *async_us, double *sync_us) {
  void *d = NULL;
  cudaStream_t s;
  *async_us = *sync_us = -1;
  if (cudaMalloc(&d, 128) != cudaSuccess) return;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaMemcpyAsync(d, (char *)d + 64, 8, cudaMemcpyDeviceToDevice, s);
  cudaStreamSynchronize(s);
  double t0 = perf_now_us();
  for (int i = 0; i < n; i++)
    cudaMemcpyAsync(d, (char *)d + 64, 8, cudaMemcpyDeviceToDevice, s);
  cudaStreamSynchronize(s);
  *async_us = (perf_now_us() - t0) / n;
  t0 = perf_now_us();
  for (int i = 0; i < n; i++) {
    cudaMemcpyAsync(d, (char *)d + 64, 8, cudaMemcpyDeviceToDevice, s);
    cudaStreamSynchronize(s);
  }
  *sync_us = (perf_now_us() - t0) / n;
  cudaStreamDestroy(s);
  cudaFree(d);
}
/* A device buffer another process on this machine can map: allocate and
 * describe it in `blob` (64 bytes), map a peer's, release. */
static inline void *perf_shared_alloc(size_t n, unsigned char blob[64]) {
  void *p = NULL;
  if (cudaMalloc(&p, n) != cudaSuccess) return NULL;
  cudaMemset(p, 0, n);
  cudaDeviceSynchronize();
  cudaIpcMemHandle_t h;
  if (cudaIpcGetMemHandle(&h, p) != cudaSuccess) return NULL;
  memcpy(blob, &h, sizeof h < 64 ? sizeof h : 64);
  return p;
}
static inline void *perf_shared_map(const unsigned char blob[64], size_t n) {
  cudaIpcMemHandle_t h;
  void *p = NULL;
  memcpy(&h, blob, sizeof h < 64 ? sizeof h : 64);
  return cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess) ==
                 cudaSuccess
             ? p
             : NULL;
}
static inline void perf_shared_unmap(void *p, size_t n) {
  if (p) cudaIpcCloseMemHandle(p);
}
static inline void perf_shared_free(void *p, size_t n,
                                    const unsigned char blob[64]) {
  cudaFree(p);
}
/* The host-initiated way: kernels and copies on one stream of the
 * application's, waited for by the host. */
static inline gin_stream_t perf_stream(void) {
  static cudaStream_t s;
  if (!s) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  return s;
}
static inline int perf_copy_async(void *dst, const void *src, size_t n,
                                  gin_stream_t s) {
  return cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s) ==
                 cudaSuccess
             ? 0
             : -1;
}
/* Bytes of window the bandwidth test may spread its puts over. */
static inline size_t perf_bw_budget(void) { return (size_t)1 << 30; }
static inline const char *perf_target_name(void) { return "cuda"; }
/* Bandwidth runs one block per SM by default. */
static inline int perf_default_blocks(void) {
  int dev = 0, n = 8;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
  return n > 0 ? n : 8;
}
/* Time marks on the default stream: n events, recorded in stream order,
 * read once the stream is synchronised (elapsed in us). */
typedef struct perf_marks {
  int n;
  cudaEvent_t *ev;
} perf_marks_t;
static inline int perf_marks_make(perf_marks_t *m, int n) {
  m->n = n;
  m->ev = (cudaEvent_t *)calloc((size_t)n, sizeof *m->ev);
  if (!m->ev) return -1;
  for (int i = 0; i < n; i++)
    if (cudaEventCreate(&m->ev[i]) != cudaSuccess) return -1;
  return 0;
}
static inline void perf_mark(perf_marks_t *m, int i) {
  cudaEventRecord(m->ev[i], 0);
}
static inline double perf_marks_us(perf_marks_t *m, int i, int j) {
  float ms = 0;
  cudaEventElapsedTime(&ms, m->ev[i], m->ev[j]);
  return (double)ms * 1e3;
}
static inline void perf_marks_free(perf_marks_t *m) {
  for (int i = 0; i < m->n; i++)
    cudaEventDestroy(m->ev[i]);
  free(m->ev);
}
#else
static inline int perf_have_device(void) { return 1; }
static inline int perf_hostflag_alloc(size_t n, void **host, void **dev) {
  *host = calloc(1, n);
  *dev = *host;
  return *host ? 0 : -1;
}
static inline void perf_hostflag_free(void *host) { free(host); }
static inline double perf_copy_us(void *dst, const void *src, size_t n,
                                  int reps) {
  memcpy(dst, src, n);
  double t0 = perf_now_us();
  for (int i = 0; i < reps; i++)
    memcpy(dst, src, n);
  return (perf_now_us() - t0) / reps;
}
static inline double perf_h2d_gbps(size_t n, int to_device) {
  (void)n, (void)to_device;
  return -1; /* host and "device" memory are the same on the host target */
}
static inline void perf_copy_call_us(int n, double *async_us, double *sync_us) {
  *async_us = *sync_us = -1; /* no copy engine on the host target */
}
static inline int perf_batch_copy_times(char *dst, const char *src, size_t n,
                                        int count, int reps, int host_src,
                                        double *t) {
  (void)dst, (void)src, (void)n, (void)count, (void)reps, (void)host_src;
  (void)t;
  return -1; /* no copy engine on the host target */
}
static inline void *perf_shared_alloc(size_t n, unsigned char blob[64]) {
  return perf_memfd_alloc(n, blob);
}
static inline void *perf_shared_map(const unsigned char blob[64], size_t n) {
  return perf_memfd_map(blob, n);
}
static inline void perf_shared_unmap(void *p, size_t n) { munmap(p, n); }
static inline void perf_shared_free(void *p, size_t n,
                                    const unsigned char blob[64]) {
  perf_memfd_free(p, n, blob);
}
static inline gin_stream_t perf_stream(void) { return NULL; }
static inline int perf_copy_async(void *dst, const void *src, size_t n,
                                  gin_stream_t s) {
  memcpy(dst, src, n);
  return 0;
}
static inline size_t perf_bw_budget(void) { return (size_t)64 << 20; }
static inline const char *perf_target_name(void) { return "host"; }
/* Whether the raw floors' waits may spin without yielding: where this
 * process may run on two CPUs or more, so that each of gin-perf's two ranks
 * has one. Yielding there (as gin's own waits do past GIN_HOST_SPINS polls,
 * for ranks that outnumber the cores) made the raw flag floor flip between
 * ~0.35 and ~3.7 us from run to run on a 2-core machine. */
static inline int perf_raw_spin_only(void) {
  static int v = -1;
  int r = __atomic_load_n(&v, __ATOMIC_RELAXED);
  if (r < 0) {
    cpu_set_t set;
    int cpus = sched_getaffinity(0, sizeof set, &set) == 0
                   ? CPU_COUNT(&set)
                   : (int)sysconf(_SC_NPROCESSORS_ONLN);
    r = cpus >= 2;
    __atomic_store_n(&v, r, __ATOMIC_RELAXED);
  }
  return r;
}
static inline int perf_default_blocks(void) { return 1; }
/* Time marks: launches are synchronous on the host target, so a mark is
 * the wall clock when it is taken. */
typedef struct perf_marks {
  int n;
  double *t;
} perf_marks_t;
static inline int perf_marks_make(perf_marks_t *m, int n) {
  m->n = n;
  m->t = (double *)calloc((size_t)n, sizeof *m->t);
  return m->t ? 0 : -1;
}
static inline void perf_mark(perf_marks_t *m, int i) {
  m->t[i] = perf_now_us();
}
static inline double perf_marks_us(perf_marks_t *m, int i, int j) {
  return m->t[j] - m->t[i];
}
static inline void perf_marks_free(perf_marks_t *m) { free(m->t); }
#endif

#endif
