/*
 * gin-perf's target glue: the few host-side things a benchmark needs that
 * differ between the cuda and host targets (mapped host flags, a copy to
 * time). Device code itself is target-neutral.
 */
#ifndef GIN_PERF_TARGET_H
#define GIN_PERF_TARGET_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gin/device/arch.h"

static inline double perf_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
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
static inline const char *perf_target_name(void) { return "cuda"; }
/* Bandwidth runs one block per SM by default. */
static inline int perf_default_blocks(void) {
  int dev = 0, n = 8;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
  return n > 0 ? n : 8;
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
static inline const char *perf_target_name(void) { return "host"; }
static inline int perf_default_blocks(void) { return 1; }
#endif

#endif
