/*
 * The target a translation unit is compiled for, and the qualifiers device
 * code is written with:
 *   cuda (nvcc, __CUDACC__): real GPU kernels;
 *   host (the C compiler): each block of a kernel runs as one CPU thread,
 *        and every cooperative group (thread, warp, block) has size 1.
 * Internal: included by the device headers (gin/device/arch.h).
 */
#ifndef GIN_DEVICE_IMPL_ARCH_TYPES_H
#define GIN_DEVICE_IMPL_ARCH_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gin/result.h"

#if defined(__CUDACC__)
#define GIN_ARCH_CUDA 1
#include <cuda_runtime.h>
#define GIN_DEVICE_FN static __device__ __forceinline__
/* A device function called only where a call fails: one copy, out of the
 * calls' line (docs/PERFORMANCE.md, "Design figures"). */
#define GIN_COLD_FN static __device__ __noinline__ __attribute__((unused))
#define GIN_HD_FN static __host__ __device__ __forceinline__
#define GIN_GLOBAL __global__
#define GIN_RESTRICT __restrict__
#else
#define GIN_ARCH_HOST 1
#define GIN_DEVICE_FN static inline
#define GIN_COLD_FN static __attribute__((noinline, cold, unused))
#define GIN_HD_FN static inline
#define GIN_GLOBAL
#define GIN_RESTRICT restrict
#endif
/* A condition that holds only where a call fails: its code goes out of
 * the fast path's line. */
#define GIN_UNLIKELY(x) __builtin_expect(!!(x), 0)
#endif
