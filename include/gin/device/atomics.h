/*
 * Memory ordering on both targets: acquire/release/relaxed loads, stores
 * and read-modify-writes at GPU or system scope, read-only loads, the
 * clock, the pause and cadence of a polling wait, and the bell that wakes
 * a sleeping host-target proxy. Every cross-rank access goes through
 * these.
 */
#ifndef GIN_DEVICE_ATOMICS_H
#define GIN_DEVICE_ATOMICS_H

#include "gin/device/impl/arch__types.h"

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
#endif
