/*
 * Threads and cooperative groups on both targets: a kernel's block and
 * thread indices, the groups (thread, warp, block) that issue one call
 * together, their synchronisation, votes, scans and shuffles, and arrays
 * a block's threads share.
 */
#ifndef GIN_DEVICE_COOP_H
#define GIN_DEVICE_COOP_H

#include "gin/device/impl/arch__types.h"

/* ------------------------------------------------------------ indices */

#if GIN_ARCH_CUDA
GIN_DEVICE_FN int gin_block_idx(void) { return (int)blockIdx.x; }
GIN_DEVICE_FN int gin_grid_dim(void) { return (int)gridDim.x; }
GIN_DEVICE_FN int gin_thread_idx(void) { return (int)threadIdx.x; }
GIN_DEVICE_FN int gin_block_dim(void) { return (int)blockDim.x; }
#else
GIN_API extern _Thread_local int gin_host_block_idx_;
GIN_API extern _Thread_local int gin_host_grid_dim_;
GIN_DEVICE_FN int gin_block_idx(void) { return gin_host_block_idx_; }
GIN_DEVICE_FN int gin_grid_dim(void) { return gin_host_grid_dim_; }
GIN_DEVICE_FN int gin_thread_idx(void) { return 0; }
GIN_DEVICE_FN int gin_block_dim(void) { return 1; }
#endif

/* ------------------------------------------------- cooperative groups */

/* The group of threads that issues one call together. Every thread of the
 * group calls with the same arguments. On the cuda target blocks are 1-D
 * (threadIdx.x) and warp coops need whole warps (block size a multiple of
 * 32). */
typedef enum gin_coop {
  GIN_COOP_THREAD = 0,
  GIN_COOP_WARP = 1,
  GIN_COOP_BLOCK = 2
} gin_coop_t;

#define GIN_WARP_SIZE 32 /* threads of a warp on the cuda target */

#if GIN_ARCH_CUDA
GIN_DEVICE_FN int gin_coop_size(gin_coop_t c) {
  return c == GIN_COOP_THREAD ? 1
         : c == GIN_COOP_WARP ? GIN_WARP_SIZE
                              : (int)blockDim.x;
}
GIN_DEVICE_FN int gin_coop_rank(gin_coop_t c) {
  return c == GIN_COOP_THREAD ? 0
         : c == GIN_COOP_WARP ? (int)(threadIdx.x % GIN_WARP_SIZE)
                              : (int)threadIdx.x;
}
GIN_DEVICE_FN void gin_coop_sync(gin_coop_t c) {
  if (c == GIN_COOP_WARP)
    __syncwarp();
  else if (c == GIN_COOP_BLOCK)
    __syncthreads();
}
/* Synchronises the coop and gives every thread the same result: 0 if all
 * threads' rc are 0, else the smallest (most negative) one. So no thread
 * leaves a call early while the others reach a later coop barrier. */
GIN_DEVICE_FN int gin_coop_rc(gin_coop_t c, int rc) {
  if (c == GIN_COOP_WARP) {
    __syncwarp(); /* a memory barrier for the warp, as the block's is */
    if (!__any_sync(0xffffffffu, rc)) return 0; /* a vote: the common case */
#if __CUDA_ARCH__ >= 800
    return __reduce_min_sync(0xffffffffu, rc);
#else
    for (int d = 16; d > 0; d /= 2) {
      int o = __shfl_xor_sync(0xffffffffu, rc, d);
      rc = o < rc ? o : rc;
    }
    return rc;
#endif
  }
  if (c == GIN_COOP_BLOCK) {
    /* One barrier when every thread succeeded (the common case); the
     * smallest code only when one failed. */
    if (!__syncthreads_or(rc != 0)) return 0;
    __shared__ int gin_coop_rc_word;
    if (threadIdx.x == 0) gin_coop_rc_word = 0x7fffffff;
    __syncthreads();
    atomicMin(&gin_coop_rc_word, rc);
    __syncthreads();
    return gin_coop_rc_word; /* rewritten only after the next call's barrier */
  }
  return rc;
}
/* Reductions and a broadcast over a THREAD or WARP coop (not BLOCK):
 * every thread of the coop gets the result. */
GIN_DEVICE_FN float gin_coop_max_f32(gin_coop_t c, float v) {
  if (c != GIN_COOP_WARP) return v;
  for (int d = 16; d > 0; d /= 2) {
    float o = __shfl_xor_sync(0xffffffffu, v, d);
    v = o > v ? o : v;
  }
  return v;
}
GIN_DEVICE_FN uint32_t gin_coop_sum_u32(gin_coop_t c, uint32_t v) {
  if (c != GIN_COOP_WARP) return v;
  for (int d = 16; d > 0; d /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, d);
  return v;
}
/* Scans and lane exchanges of a THREAD or WARP coop (a BLOCK coop has no
 * lanes: trap). Inclusive prefix sum in rank order. */
GIN_DEVICE_FN uint32_t gin_coop_scan_u32(gin_coop_t c, uint32_t v) {
  if (c == GIN_COOP_BLOCK) __trap();
  if (c != GIN_COOP_WARP) return v;
  int lane = (int)(threadIdx.x % GIN_WARP_SIZE);
  for (int d = 1; d < GIN_WARP_SIZE; d *= 2) {
    uint32_t o = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += o;
  }
  return v;
}
/* The value of rank `src` of the coop. */
GIN_DEVICE_FN uint32_t gin_coop_shfl_u32(gin_coop_t c, uint32_t v, int src) {
  if (c == GIN_COOP_BLOCK) __trap();
  if (c != GIN_COOP_WARP) return v;
  return __shfl_sync(0xffffffffu, v, src);
}
/* The lowest rank of the coop whose `pred` is nonzero, -1 if none. */
GIN_DEVICE_FN int gin_coop_first(gin_coop_t c, int pred) {
  if (c == GIN_COOP_BLOCK) __trap();
  if (c != GIN_COOP_WARP) return pred ? 0 : -1;
  return __ffs(__ballot_sync(0xffffffffu, pred)) - 1;
}
/* Synchronises the coop (any kind) and tells every thread whether any
 * thread's `pred` is nonzero. */
GIN_DEVICE_FN int gin_coop_any(gin_coop_t c, int pred) {
  if (c == GIN_COOP_WARP) {
    __syncwarp(); /* a memory barrier for the warp, as the block's is */
    return __any_sync(0xffffffffu, pred);
  }
  if (c == GIN_COOP_BLOCK) return __syncthreads_or(pred);
  return pred;
}
#else
GIN_DEVICE_FN int gin_coop_size(gin_coop_t c) { return 1; }
GIN_DEVICE_FN int gin_coop_rank(gin_coop_t c) { return 0; }
GIN_DEVICE_FN void gin_coop_sync(gin_coop_t c) {}
GIN_DEVICE_FN int gin_coop_rc(gin_coop_t c, int rc) { return rc; }
GIN_DEVICE_FN float gin_coop_max_f32(gin_coop_t c, float v) { return v; }
GIN_DEVICE_FN uint32_t gin_coop_sum_u32(gin_coop_t c, uint32_t v) { return v; }
GIN_DEVICE_FN uint32_t gin_coop_scan_u32(gin_coop_t c, uint32_t v) { return v; }
GIN_DEVICE_FN uint32_t gin_coop_shfl_u32(gin_coop_t c, uint32_t v, int src) {
  return v;
}
GIN_DEVICE_FN int gin_coop_first(gin_coop_t c, int pred) {
  return pred ? 0 : -1;
}
GIN_DEVICE_FN int gin_coop_any(gin_coop_t c, int pred) { return pred != 0; }
#endif

/* An array the threads of a block share, declared in a kernel's body
 * (cuda: shared memory; host: the stack of the block's one thread). */
#if GIN_ARCH_CUDA
#define GIN_BLOCK_ARRAY(type, name, n) __shared__ type name[n]
#else
#define GIN_BLOCK_ARRAY(type, name, n) type name[n]
#endif
#endif
