/*
 * Target glue for device code written once for two targets:
 *   cuda (nvcc, __CUDACC__): real GPU kernels;
 *   host (the C compiler): each block of a kernel runs as one CPU thread,
 *        and every cooperative group (thread, warp, block) has size 1.
 * All divergence between the targets lives here and in src/arch: memory
 * ordering primitives, thread indices, coop synchronisation, time, launch.
 * Protocol code above this header has no #ifdef on the target.
 */
#ifndef GIN_DEVICE_ARCH_H
#define GIN_DEVICE_ARCH_H

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

/* ------------------------------------------------ ordering primitives */
/* Every cross-rank access goes through these; never ad-hoc volatile. */

#if GIN_ARCH_CUDA
GIN_DEVICE_FN uint64_t gin_load_acquire_u64(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
GIN_DEVICE_FN uint32_t gin_load_acquire_u32(const volatile uint32_t *p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
/* A load that sees other agents' latest writes but orders nothing: what a
 * poll loop reads (an acquire load also invalidates the SM's L1, which
 * every other block on that SM then pays for); the poll ends with one
 * acquire load. */
GIN_DEVICE_FN uint64_t gin_load_relaxed_u64(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
/* A load that may be served from the SM's L1, so it can return an old
 * value for as long as the line stays there (a new kernel starts with a
 * cold L1): for a word that changes once and may be seen late. The
 * compiler keeps every such load (asm volatile). */
GIN_DEVICE_FN uint32_t gin_load_cached_u32(const uint32_t *p) {
  uint32_t v;
  asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
/* A store other agents see, ordering nothing. */
GIN_DEVICE_FN void gin_store_relaxed_u64(uint64_t *p, uint64_t v) {
  asm volatile("st.relaxed.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
GIN_DEVICE_FN void gin_store_release_u64(uint64_t *p, uint64_t v) {
  asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
GIN_DEVICE_FN void gin_store_release_u32(volatile uint32_t *p, uint32_t v) {
  asm volatile("st.release.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
/* Atomic add that orders this thread's earlier writes (and those it has
 * observed) before it, at system scope. */
GIN_DEVICE_FN void gin_add_release_u64(uint64_t *p, uint64_t v) {
  asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v)
               : "memory");
}
/* The same ordering for observers on this GPU only (cheaper: no
 * system-wide barrier). */
GIN_DEVICE_FN void gin_add_release_gpu_u64(uint64_t *p, uint64_t v) {
  asm volatile("red.release.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v)
               : "memory");
}
/* Atomic or, no order, returning the word before it: at system scope, and
 * at GPU scope for a word on this GPU. A word that both see (a signal's
 * mode word, marked by senders on its GPU and on others) resolves at its
 * GPU's L2 either way; the PTX model does not promise that two scopes
 * see each other there, which only the INC/ADD misuse check relies on. */
GIN_DEVICE_FN uint32_t gin_fetch_or_relaxed_u32(uint32_t *p, uint32_t v) {
  uint32_t old;
  asm volatile("atom.relaxed.sys.global.or.b32 %0, [%1], %2;"
               : "=r"(old)
               : "l"(p), "r"(v)
               : "memory");
  return old;
}
GIN_DEVICE_FN uint32_t gin_fetch_or_relaxed_gpu_u32(uint32_t *p, uint32_t v) {
  uint32_t old;
  asm volatile("atom.relaxed.gpu.global.or.b32 %0, [%1], %2;"
               : "=r"(old)
               : "l"(p), "r"(v)
               : "memory");
  return old;
}
GIN_DEVICE_FN uint64_t gin_fetch_add_relaxed_u64(uint64_t *p, uint64_t v) {
  return (uint64_t)atomicAdd_system((unsigned long long *)p,
                                    (unsigned long long)v);
}
/* Atomic add, no result, no order, for counters only this GPU reads. */
GIN_DEVICE_FN void gin_add_relaxed_gpu_u64(uint64_t *p, uint64_t v) {
  asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v)
               : "memory");
}
/* Atomic add that is both a release of this thread's earlier accesses and
 * an acquire of those released by earlier adds (GPU scope). */
GIN_DEVICE_FN uint64_t gin_fetch_add_acq_rel_gpu_u64(uint64_t *p, uint64_t v) {
  uint64_t old;
  asm volatile("atom.acq_rel.gpu.global.add.u64 %0, [%1], %2;"
               : "=l"(old)
               : "l"(p), "l"(v)
               : "memory");
  return old;
}
/* The same at system scope (observers on other GPUs and the host). */
GIN_DEVICE_FN uint64_t gin_fetch_add_acq_rel_u64(uint64_t *p, uint64_t v) {
  uint64_t old;
  asm volatile("atom.acq_rel.sys.global.add.u64 %0, [%1], %2;"
               : "=l"(old)
               : "l"(p), "l"(v)
               : "memory");
  return old;
}
GIN_DEVICE_FN uint32_t gin_cas_u32(uint32_t *p, uint32_t expect, uint32_t v) {
  return atomicCAS_system((unsigned int *)p, expect, v);
}
/* *p = max(*p, v) with release, among this GPU's threads. */
GIN_DEVICE_FN void gin_max_release_u64(uint64_t *p, uint64_t v) {
  asm volatile("red.release.gpu.global.max.u64 [%0], %1;" ::"l"(p), "l"(v)
               : "memory");
}
GIN_DEVICE_FN void gin_fence_system(void) { __threadfence_system(); }
/* Reads of tables that do not change while kernels run (window table,
 * peer pointer tables, paths): through the read-only cache, which the
 * acquire loads of the waits do not flush. */
/* Deliberately not volatile and without a memory clobber: the compiler
 * treats each as a pure function of its address, so in a loop of puts it
 * loads a table entry once instead of after every acquire (an acquire
 * invalidates the L1, and a dependent chain of table loads then costs a
 * round trip to L2 each; measured by gin-perf's ladder). */
GIN_DEVICE_FN uint64_t gin_ro_u64(const uint64_t *p) {
  uint64_t v;
  asm("ld.global.nc.u64 %0, [%1];" : "=l"(v) : "l"(p));
  return v;
}
GIN_DEVICE_FN uint32_t gin_ro_u32(const uint32_t *p) {
  uint32_t v;
  asm("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
GIN_DEVICE_FN uint8_t gin_ro_u8(const uint8_t *p) {
  uint16_t v;
  asm("ld.global.nc.u8 %0, [%1];" : "=h"(v) : "l"(p));
  return (uint8_t)v;
}
GIN_DEVICE_FN void *gin_ro_ptr(void *const *p) {
  return (void *)gin_ro_u64((const uint64_t *)p);
}
GIN_DEVICE_FN uint64_t gin_time_ns(void) {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
GIN_DEVICE_FN void gin_spin_pause(uint32_t iter) {}
/* Whether poll `iter` of a wait also reads the abort words and the clock:
 * they may sit across PCIe, so every 256 polls, never on the first. */
GIN_DEVICE_FN int gin_spin_check_due(uint32_t iter) {
  return (iter & 255) == 255;
}
/* A fine-grained per-thread cycle count (SM clock); calibrate against
 * gin_time_ns over a long interval to turn cycles into time. */
GIN_DEVICE_FN uint64_t gin_cycles(void) { return (uint64_t)clock64(); }
#else
#include <sched.h>
#include <time.h>
GIN_DEVICE_FN uint64_t gin_load_acquire_u64(const uint64_t *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
GIN_DEVICE_FN uint32_t gin_load_acquire_u32(const volatile uint32_t *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
GIN_DEVICE_FN uint32_t gin_load_cached_u32(const uint32_t *p) {
  return __atomic_load_n(p, __ATOMIC_RELAXED);
}
GIN_DEVICE_FN void gin_store_relaxed_u64(uint64_t *p, uint64_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
}
GIN_DEVICE_FN void gin_store_release_u64(uint64_t *p, uint64_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
GIN_DEVICE_FN void gin_store_release_u32(volatile uint32_t *p, uint32_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
GIN_DEVICE_FN void gin_add_release_u64(uint64_t *p, uint64_t v) {
  __atomic_fetch_add(p, v, __ATOMIC_RELEASE);
}
GIN_DEVICE_FN void gin_add_release_gpu_u64(uint64_t *p, uint64_t v) {
  __atomic_fetch_add(p, v, __ATOMIC_RELEASE);
}
GIN_DEVICE_FN uint32_t gin_fetch_or_relaxed_u32(uint32_t *p, uint32_t v) {
  return __atomic_fetch_or(p, v, __ATOMIC_RELAXED);
}
GIN_DEVICE_FN uint32_t gin_fetch_or_relaxed_gpu_u32(uint32_t *p, uint32_t v) {
  return __atomic_fetch_or(p, v, __ATOMIC_RELAXED);
}
GIN_DEVICE_FN uint64_t gin_fetch_add_relaxed_u64(uint64_t *p, uint64_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
GIN_DEVICE_FN void gin_add_relaxed_gpu_u64(uint64_t *p, uint64_t v) {
  __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
GIN_DEVICE_FN uint64_t gin_fetch_add_acq_rel_gpu_u64(uint64_t *p, uint64_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}
GIN_DEVICE_FN uint64_t gin_fetch_add_acq_rel_u64(uint64_t *p, uint64_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}
GIN_DEVICE_FN uint64_t gin_load_relaxed_u64(const uint64_t *p) {
  return __atomic_load_n(p, __ATOMIC_RELAXED);
}
GIN_DEVICE_FN uint32_t gin_cas_u32(uint32_t *p, uint32_t expect, uint32_t v) {
  __atomic_compare_exchange_n(p, &expect, v, 0, __ATOMIC_ACQ_REL,
                              __ATOMIC_ACQUIRE);
  return expect;
}
GIN_DEVICE_FN void gin_max_release_u64(uint64_t *p, uint64_t v) {
  uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (cur < v && !__atomic_compare_exchange_n(
                        p, &cur, v, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
  }
}
GIN_DEVICE_FN void gin_fence_system(void) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
GIN_DEVICE_FN uint64_t gin_ro_u64(const uint64_t *p) { return *p; }
GIN_DEVICE_FN uint32_t gin_ro_u32(const uint32_t *p) { return *p; }
GIN_DEVICE_FN uint8_t gin_ro_u8(const uint8_t *p) { return *p; }
GIN_DEVICE_FN void *gin_ro_ptr(void *const *p) { return *p; }
GIN_DEVICE_FN uint64_t gin_time_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
GIN_DEVICE_FN uint64_t gin_cycles(void) { return gin_time_ns(); }
/* Polls of a wait before it starts yielding its core (host target), at
 * least: 64 where ranks may outnumber the cores; each gin_comm_init sets
 * it for the whole process (the last one wins) from GIN_HOST_SPINS or the
 * CPUs per rank on this machine (gin_arch_local_ranks, arch_host.c). Read
 * relaxed: any value seen is a valid one. */
#define GIN_SPIN_YIELD_AFTER 64
GIN_API extern uint32_t gin_host_spins_;
GIN_DEVICE_FN uint32_t gin_spin_yield_after(void) {
  return __atomic_load_n(&gin_host_spins_, __ATOMIC_RELAXED);
}
/* Ranks of the host target are processes that may outnumber the cores:
 * past gin_spin_yield_after() polls a waiter gives its core away at each
 * poll instead of spinning it. */
GIN_DEVICE_FN void gin_spin_pause(uint32_t iter) {
  if (iter >= gin_spin_yield_after()) sched_yield();
#if defined(__x86_64__) || defined(__i386__)
  else
    __builtin_ia32_pause();
#elif defined(__aarch64__)
  else
    __asm__ volatile("yield");
#endif
}
/* Whether poll `iter` of a wait also reads the abort words and the clock:
 * every 256 polls while it spins, and every poll once it yields (a poll
 * costs a scheduler slice then, and on a loaded machine 256 of them took
 * tens of milliseconds to seconds before an abort was seen). */
GIN_DEVICE_FN int gin_spin_check_due(uint32_t iter) {
  return (iter & 255) == 255 || iter >= gin_spin_yield_after();
}
#endif

/* After publishing a ring descriptor: wakes the ring's proxy thread if it
 * sleeps (host target; `sleeping` is NULL on a GPU, whose proxies poll).
 * The fence pairs with the sleeper's between setting its flag and looking
 * at the rings once more, so one of the two sees the other. */
#if GIN_ARCH_CUDA
GIN_DEVICE_FN void gin_ring_bell(const uint32_t *sleeping, int bell) {}
#else
#include <unistd.h>
GIN_DEVICE_FN void gin_ring_bell(const uint32_t *sleeping, int bell) {
  if (!sleeping) return;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (__atomic_load_n(sleeping, __ATOMIC_RELAXED)) {
    uint64_t one = 1;
    ssize_t n = write(bell, &one, sizeof one); /* EAGAIN: already rung */
    (void)n;
  }
}
#endif

/* Plain (weak) store of 16 bytes from src to dst, both 16-byte aligned:
 * one 128-bit store on the GPU (one transaction across PCIe). */
#if GIN_ARCH_CUDA
GIN_DEVICE_FN void gin_store16(void *dst, const void *src) {
  *(uint4 *)dst = *(const uint4 *)src;
}
#else
GIN_DEVICE_FN void gin_store16(void *dst, const void *src) {
  memcpy(dst, src, 16);
}
#endif

/* ---------------------------------------------------------- small copy */

/* Up to GIN_SMALL_BYTES bytes held in registers (byte i at bits
 * 8 (i % 8) of w[i / 8]). A small put (up to GIN_SMALL_BYTES for a lone
 * thread, GIN_SMALL_COOP_BYTES per thread of a warp or block: gin_put)
 * reads its source into these as soon as it may, so that the read's
 * memory latency passes while the call finds its destination, then
 * stores them. */
#define GIN_SMALL_BYTES 64
#define GIN_SMALL_COOP_BYTES 16
typedef struct gin_small {
  uint64_t w[GIN_SMALL_BYTES / 8];
} gin_small_t;

#if GIN_ARCH_CUDA || defined(GIN_UNIT_TEST_DEVICE_COPIES)
/* Reads n <= GIN_SMALL_BYTES bytes at src: 16- or 8-byte loads where the
 * size and alignment allow them (all in flight), else independent byte
 * loads. Words past the first n bytes are left unset (gin_small_store
 * reads none of them; zeroing them cost a lone thread's put eight
 * instructions before its load). */
GIN_DEVICE_FN gin_small_t gin_small_load(const char *src, size_t n) {
  gin_small_t v;
#if !GIN_ARCH_CUDA
  /* The unit test's host build: poison, not zeros (its compiler warns
   * about unset words, and zeros would hide a store that read one). */
  memset(&v, 0xa5, sizeof v);
#endif
  uintptr_t a = (uintptr_t)src;
  if (n == 8 && (a & 7) == 0) {
    v.w[0] = *(const uint64_t *)src;
  } else if ((n & 15) == 0 && (a & 15) == 0) {
#pragma unroll
    for (int q = 0; q < GIN_SMALL_BYTES / 16; q++) {
      if (16 * (size_t)q >= n) break;
      uint4 x = ((const uint4 *)src)[q];
      v.w[2 * q] = x.x | (uint64_t)x.y << 32;
      v.w[2 * q + 1] = x.z | (uint64_t)x.w << 32;
    }
  } else if ((n & 7) == 0 && (a & 7) == 0) {
#pragma unroll
    for (int q = 0; q < GIN_SMALL_BYTES / 8; q++) {
      if (8 * (size_t)q >= n) break;
      v.w[q] = ((const uint64_t *)src)[q];
    }
  } else if (n == 4 && (a & 3) == 0) {
    v.w[0] = *(const uint32_t *)src;
  } else {
#pragma unroll
    for (int i = 0; i < GIN_SMALL_BYTES; i++) {
      if ((size_t)i >= n) break;
      uint64_t b = (uint64_t)(unsigned char)src[i] << (8 * (i % 8));
      v.w[i / 8] = i % 8 ? v.w[i / 8] | b : b;
    }
  }
  return v;
}
/* Writes the first n bytes of v at dst (as gin_small_load reads them). */
GIN_DEVICE_FN void gin_small_store(char *dst, gin_small_t v, size_t n) {
  uintptr_t a = (uintptr_t)dst;
  if (n == 8 && (a & 7) == 0) {
    *(uint64_t *)dst = v.w[0];
  } else if ((n & 15) == 0 && (a & 15) == 0) {
#pragma unroll
    for (int q = 0; q < GIN_SMALL_BYTES / 16; q++) {
      if (16 * (size_t)q >= n) break;
      ((uint4 *)dst)[q] = make_uint4(
          (uint32_t)v.w[2 * q], (uint32_t)(v.w[2 * q] >> 32),
          (uint32_t)v.w[2 * q + 1], (uint32_t)(v.w[2 * q + 1] >> 32));
    }
  } else if ((n & 7) == 0 && (a & 7) == 0) {
#pragma unroll
    for (int q = 0; q < GIN_SMALL_BYTES / 8; q++) {
      if (8 * (size_t)q >= n) break;
      ((uint64_t *)dst)[q] = v.w[q];
    }
  } else if (n == 4 && (a & 3) == 0) {
    *(uint32_t *)dst = (uint32_t)v.w[0];
  } else {
#pragma unroll
    for (int i = 0; i < GIN_SMALL_BYTES; i++) {
      if ((size_t)i >= n) break;
      dst[i] = (char)(v.w[i / 8] >> (8 * (i % 8)));
    }
  }
}
#else
/* The host target's kernels are CPU threads: the bytes are copied as
 * they are (the layout above on a little-endian host; only store reads
 * what load wrote). */
GIN_DEVICE_FN gin_small_t gin_small_load(const char *src, size_t n) {
  gin_small_t v = {{0}};
  memcpy(v.w, src, n);
  return v;
}
GIN_DEVICE_FN void gin_small_store(char *dst, gin_small_t v, size_t n) {
  memcpy(dst, v.w, n);
}
#endif

/* ---------------------------------------------------------- bulk copy */

/* Copies n bytes with the threads of a coop (rank r of size s), using the
 * widest accesses the alignment allows. */
/* No restrict on the GPU: with `const restrict` the compiler may read the
 * source through the non-coherent cache, which can miss what other threads
 * of the kernel wrote into it just before the put. */
#if GIN_ARCH_CUDA || defined(GIN_UNIT_TEST_DEVICE_COPIES)
GIN_DEVICE_FN void gin_copy_coop(char *dst, const char *src, size_t n, int r,
                                 int s) {
  size_t head = 0;
  if ((((uintptr_t)dst | (uintptr_t)src) & 15) == 0) {
    const uint4 *vs = (const uint4 *)src;
    uint4 *vd = (uint4 *)dst;
    size_t nv = n / 16;
    size_t i = (size_t)r;
    for (; i + 3 * (size_t)s < nv; i += 4 * (size_t)s) {
      uint4 a = vs[i], b = vs[i + s], c = vs[i + 2 * s], d = vs[i + 3 * s];
      vd[i] = a;
      vd[i + s] = b;
      vd[i + 2 * s] = c;
      vd[i + 3 * s] = d;
    }
    /* The last (at most three) loaded before any is stored: a store
     * between two loads keeps the second waiting (the compiler cannot
     * tell the buffers apart), one memory latency each. */
    if (i + (size_t)s < nv) {
      uint4 a = vs[i], b = vs[i + s];
      if (i + 2 * (size_t)s < nv) {
        uint4 c = vs[i + 2 * s];
        vd[i + 2 * s] = c;
      }
      vd[i] = a;
      vd[i + s] = b;
    } else if (i < nv) {
      vd[i] = vs[i];
    }
    head = nv * 16;
  }
  if ((((uintptr_t)dst | (uintptr_t)src | head) & 7) == 0 && n - head >= 8) {
    /* What 16-byte steps left, or all of it when only 8-aligned (8-byte
     * puts: one store, not eight). */
    const uint64_t *vs = (const uint64_t *)(src + head);
    uint64_t *vd = (uint64_t *)(dst + head);
    size_t nv = (n - head) / 8;
    for (size_t i = (size_t)r; i < nv; i += (size_t)s)
      vd[i] = vs[i];
    head += nv * 8;
  }
  for (size_t i = head + (size_t)r; i < n; i += (size_t)s)
    dst[i] = src[i];
}
#else
GIN_DEVICE_FN void gin_copy_coop(char *GIN_RESTRICT dst,
                                 const char *GIN_RESTRICT src, size_t n, int r,
                                 int s) {
  memcpy(dst, src, n);
}
#endif

/* Copies n bytes with the threads of a coop (rank r of size s) like
 * gin_copy_coop, for long rows: where both pointers and n are multiples
 * of 16, each thread loads GIN_COPY_BATCH vectors before it stores any
 * (a 14 KiB row in four memory round trips where gin_copy_coop takes
 * seven), at the cost of their registers. */
#define GIN_COPY_BATCH 8
#if GIN_ARCH_CUDA || defined(GIN_UNIT_TEST_DEVICE_COPIES)
GIN_DEVICE_FN void gin_copy_coop_batched(char *dst, const char *src, size_t n,
                                         int r, int s) {
  if ((((uintptr_t)dst | (uintptr_t)src | n) & 15) == 0) {
    const uint4 *vs = (const uint4 *)src;
    uint4 *vd = (uint4 *)dst;
    size_t nv = n / 16;
    for (size_t i0 = (size_t)r; i0 < nv; i0 += GIN_COPY_BATCH * (size_t)s) {
      uint4 v[GIN_COPY_BATCH];
      for (int b = 0; b < GIN_COPY_BATCH; b++) {
        size_t i = i0 + (size_t)b * (size_t)s;
        if (i < nv) v[b] = vs[i];
      }
      for (int b = 0; b < GIN_COPY_BATCH; b++) {
        size_t i = i0 + (size_t)b * (size_t)s;
        if (i < nv) vd[i] = v[b];
      }
    }
    return;
  }
  gin_copy_coop(dst, src, n, r, s);
}
#else
GIN_DEVICE_FN void gin_copy_coop_batched(char *dst, const char *src, size_t n,
                                         int r, int s) {
  gin_copy_coop(dst, src, n, r, s);
}
#endif

/* Copies n bytes from src with the threads of a coop: the first nx to dx,
 * the rest to ds (a row and what follows it, such as its scales). Where
 * the rest is at most one 16-byte vector a thread and every pointer and
 * length a multiple of 16, each thread loads its vector of the rest
 * before the row's copy and stores it after, so the two round trips
 * overlap; else two copies. */
#if GIN_ARCH_CUDA || defined(GIN_UNIT_TEST_DEVICE_COPIES)
GIN_DEVICE_FN void gin_copy_coop_split(char *dx, size_t nx, char *ds,
                                       const char *src, size_t n, int r,
                                       int s) {
  /* Not a branch around the row's copy: knowing the row aligned, the
   * compiler specialises that copy into one that takes more registers. */
  size_t ns = (n - nx) / 16;
  int pre = (((uintptr_t)ds | (uintptr_t)(src + nx) | (n - nx)) & 15) == 0 &&
            ns <= (size_t)s;
  uint4 v;
  if (pre && (size_t)r < ns) v = ((const uint4 *)(src + nx))[r];
  gin_copy_coop(dx, src, nx, r, s);
  if (pre && (size_t)r < ns) ((uint4 *)ds)[r] = v;
  if (!pre && n > nx) gin_copy_coop(ds, src + nx, n - nx, r, s);
}
#else
GIN_DEVICE_FN void gin_copy_coop_split(char *dx, size_t nx, char *ds,
                                       const char *src, size_t n, int r,
                                       int s) {
  gin_copy_coop(dx, src, nx, r, s);
  if (n > nx) gin_copy_coop(ds, src + nx, n - nx, r, s);
}
#endif

/* ---------------------------------------------------------- fp8 cast */

/* Converts f to FP8 E4M3 (nearest even, saturating to +-448) in one
 * instruction where the GPU has one (sm_89 and up): 1 and *out; else 0
 * (the caller converts in software, the same way, NaN's sign kept). */
GIN_HD_FN int gin_hw_float_to_fp8e4m3(float f, uint8_t *out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if (f == f) {
    unsigned short r;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;"
        : "=h"(r)
        : "f"(0.0f), "f"(f));
    *out = (uint8_t)(r & 0xffu);
    return 1;
  }
#endif
  (void)f, (void)out;
  return 0;
}

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
