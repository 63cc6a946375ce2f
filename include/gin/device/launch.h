/*
 * Kernels on both targets: the device's limits for sizing grids (SMs,
 * registers, occupancy), kernel declaration (GIN_KERNEL) and launch
 * (gin_launch), streams.
 */
#ifndef GIN_DEVICE_LAUNCH_H
#define GIN_DEVICE_LAUNCH_H

#include "gin/device/coop.h"
#include "gin/device/impl/arch__types.h"

/* ------------------------------------------------------ device limits */

/* Host side, for sizing grids: the current device's multiprocessors and
 * registers per multiprocessor (host target: 4, so that grids sized by
 * it stay a few CPU threads, and 0: no register file), the threads a
 * block may have whose warps are counted (host target: 1, a block is one
 * thread), and a kernel's registers a thread and blocks of `threads`
 * that fit on a multiprocessor at once (gin_kernel_occupancy; host
 * target: 0 and 1). gin_kernel_occupancy returns GIN_SUCCESS or
 * GIN_ERR_CUDA with the runtime's message in *why. */
#if GIN_ARCH_CUDA
static inline int gin_device_sms(void) {
  int dev = 0, n = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) !=
          cudaSuccess ||
      n < 1)
    n = 132;
  return n;
}
static inline int gin_device_sm_regs(void) {
  int dev = 0, n = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&n, cudaDevAttrMaxRegistersPerMultiprocessor,
                             dev) != cudaSuccess ||
      n < 1)
    n = 65536;
  return n;
}
#define GIN_WARPS_PER_BLOCK(threads) ((threads) / GIN_WARP_SIZE)
static inline gin_result_t gin_kernel_occupancy_(const void *k, int threads,
                                                 int *regs, int *blocks,
                                                 const char **why) {
  struct cudaFuncAttributes attr;
  int n = 0;
  cudaError_t e = cudaFuncGetAttributes(&attr, k);
  if (e == cudaSuccess)
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, threads, 0);
  if (e != cudaSuccess) {
    *why = cudaGetErrorString(e);
    return GIN_ERR_CUDA;
  }
  *regs = attr.numRegs;
  *blocks = n;
  return GIN_SUCCESS;
}
#define gin_kernel_occupancy(kernel, threads, regs, blocks, why)               \
  gin_kernel_occupancy_((const void *)(kernel), (threads), (regs), (blocks),   \
                        (why))
#else
static inline int gin_device_sms(void) { return 4; }
static inline int gin_device_sm_regs(void) { return 0; }
#define GIN_WARPS_PER_BLOCK(threads) 1
#define gin_kernel_occupancy(kernel, threads, regs, blocks, why)               \
  ((void)(kernel), (void)(threads), (void)(why), *(regs) = 0, *(blocks) = 1,   \
   GIN_SUCCESS)
#endif

/* ------------------------------------------------------------- launch */

/* GIN_KERNEL(name, args_t) { body using `args` }: declares a kernel that
 * takes one struct by value. gin_launch(name, grid, block, stream, &args)
 * starts it; on the host target the launch runs `grid` CPU threads and
 * returns when they finish (block is ignored: blocks have one thread). */
#if GIN_ARCH_CUDA
typedef cudaStream_t gin_stream_t;
#define GIN_KERNEL(name, args_t) __global__ void name(args_t args)
/* The same, for blocks of at most `threads` threads of which `blocks` must
 * fit on an SM at once (a register ceiling; the host target ignores it). */
#define GIN_KERNEL_BOUNDED(name, args_t, threads, blocks)                      \
  __global__ void __launch_bounds__(threads, blocks) name(args_t args)
#define gin_launch(name, grid, block, stream, argsp)                           \
  (name<<<(grid), (block), 0, (stream)>>>(*(argsp)),                           \
   cudaGetLastError() == cudaSuccess ? GIN_SUCCESS : GIN_ERR_CUDA)
#define gin_stream_synchronize(stream)                                         \
  (cudaStreamSynchronize(stream) == cudaSuccess ? GIN_SUCCESS : GIN_ERR_CUDA)
#else
typedef void *gin_stream_t;
typedef void (*gin_host_kernel_fn)(const void *args);
GIN_API gin_result_t gin_host_launch(gin_host_kernel_fn fn, int grid,
                                     const void *args);
#define GIN_KERNEL(name, args_t)                                               \
  static void name##_body_(args_t args);                                       \
  static void name(const void *p) { name##_body_(*(const args_t *)p); }        \
  static void name##_body_(args_t args)
#define GIN_KERNEL_BOUNDED(name, args_t, threads, blocks)                      \
  GIN_KERNEL(name, args_t)
#define gin_launch(name, grid, block, stream, argsp)                           \
  gin_host_launch(name, (grid), (argsp))
static inline gin_result_t gin_stream_synchronize(gin_stream_t stream) {
  (void)stream; /* launches on the host target are synchronous */
  return GIN_SUCCESS;
}
#endif
#endif
