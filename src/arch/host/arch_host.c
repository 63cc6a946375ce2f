/*
 * Host target: "device" memory is shareable host memory (memfd.c); kernels
 * run as CPU threads (launch.c), so device pointers are host pointers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch/memfd.h"
#include "gin/device/arch.h"

uint32_t gin_host_spins_ = GIN_SPIN_YIELD_AFTER;

/* The waits' spin before they yield: 64 where ranks' threads may
 * outnumber the cores (a spinning waiter holds a core its peer needs);
 * 4096 polls where there are cores to spare (4 per rank: its kernel
 * thread, its proxy, and room for more blocks). Timed step by step on 16
 * cores, a waiter that already yields at a ~10 us tcp round trip notices
 * the proxy's signal in 161-278 ns (median), one that spins in 74-96 ns;
 * the round trip as a whole moves less than its run-to-run spread
 * (docs/PERFORMANCE.md, "Design figures"). A CPU quota (cgroup cpu.max)
 * is not read: set GIN_HOST_SPINS=64 under one. */
void gin_arch_local_ranks(int local_ranks) {
  int64_t v = gin_arch_param_host_spins();
  cpu_set_t set;
  int cores = sched_getaffinity(0, sizeof set, &set) == 0
                  ? CPU_COUNT(&set)
                  : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (local_ranks < 1) local_ranks = 1;
  if (v < 0) v = cores >= 4 * local_ranks ? 4096 : 0;
  if (v < GIN_SPIN_YIELD_AFTER) v = GIN_SPIN_YIELD_AFTER;
  if (v > 1 << 24) v = 1 << 24;
  __atomic_store_n(&gin_host_spins_, (uint32_t)v, __ATOMIC_RELAXED);
}

gin_result_t gin_arch_init(gin_arch_devinfo_t *info_out) {
  memset(info_out, 0, sizeof *info_out);
  snprintf(info_out->bytes, sizeof info_out->bytes, "host");
  return GIN_SUCCESS;
}

int gin_arch_can_map(const gin_arch_devinfo_t *self,
                     const gin_arch_devinfo_t *peer) {
  return 1;
}

int gin_arch_same_device(const gin_arch_devinfo_t *self,
                         const gin_arch_devinfo_t *peer) {
  return 1;
}

int gin_arch_time_sliced(const gin_arch_devinfo_t *dev) { return 0; }

gin_result_t gin_arch_shm_alloc(size_t size, void **ptr_out,
                                gin_arch_handle_t *handle_out,
                                void **cookie_out) {
  return gin_memfd_alloc(size, ptr_out, handle_out, cookie_out);
}

void gin_arch_shm_free(void *ptr, size_t size, void *cookie) {
  gin_memfd_free(ptr, size, cookie);
}

gin_result_t gin_arch_shm_import(const gin_arch_handle_t *handle, size_t size,
                                 void **ptr_out, void **cookie_out) {
  return gin_memfd_import(handle, size, ptr_out, cookie_out);
}

void gin_arch_shm_unimport(void *ptr, size_t size, void *cookie) {
  gin_memfd_unimport(ptr, size, cookie);
}

/* memfd memory is imported through /proc, as control pages are: nothing
 * to check, nothing to fall back from. */
int gin_arch_shm_mode(void) { return 0; }

void gin_arch_shm_fallback(void) {}

gin_result_t gin_arch_hostmem_alloc(size_t size, void **host_out,
                                    void **dev_out,
                                    gin_arch_handle_t *handle_out,
                                    void **cookie_out) {
  GIN_CHECK(gin_arch_shm_alloc(size, host_out, handle_out, cookie_out));
  *dev_out = *host_out;
  return GIN_SUCCESS;
}

void gin_arch_hostmem_free(void *host, size_t size, void *cookie) {
  gin_arch_shm_free(host, size, cookie);
}

gin_result_t gin_arch_hostmem_import(const gin_arch_handle_t *handle,
                                     size_t size, void **host_out,
                                     void **dev_out, void **cookie_out) {
  GIN_CHECK(gin_arch_shm_import(handle, size, host_out, cookie_out));
  *dev_out = *host_out;
  return GIN_SUCCESS;
}

void gin_arch_hostmem_unimport(void *host, size_t size, void *cookie) {
  gin_arch_shm_unimport(host, size, cookie);
}

gin_result_t gin_arch_dev_alloc(size_t size, void **ptr_out) {
  void *p = calloc(1, size ? size : 1);
  if (!p) return GIN_ERROR(GIN_ERR_NOMEM, "calloc(%zu) failed", size);
  *ptr_out = p;
  return GIN_SUCCESS;
}

void gin_arch_dev_free(void *ptr) { free(ptr); }

gin_result_t gin_arch_copy(void *dst, const void *src, size_t bytes) {
  memmove(dst, src, bytes);
  return GIN_SUCCESS;
}

gin_result_t gin_arch_dev_load_u64(const uint64_t *dev, uint64_t *out) {
  *out = __atomic_load_n(dev, __ATOMIC_ACQUIRE);
  return GIN_SUCCESS;
}

gin_result_t gin_arch_dev_flag_set(uint32_t *dev) {
  __atomic_store_n(dev, 1, __ATOMIC_RELEASE);
  return GIN_SUCCESS;
}

gin_result_t gin_arch_memset(void *dst, int value, size_t bytes) {
  memset(dst, value, bytes);
  return GIN_SUCCESS;
}

gin_result_t gin_arch_atomic_add_u64(uint64_t *host_ptr, uint64_t value) {
  __atomic_fetch_add(host_ptr, value, __ATOMIC_RELEASE);
  return GIN_SUCCESS;
}

int gin_arch_proxy_busy_poll_default(void) { return 0; }

gin_result_t gin_arch_device_cpulist(char *buf, size_t len) {
  return GIN_ERR_UNSUPPORTED; /* no device: the scheduler decides */
}

gin_result_t gin_arch_copy_submit(void *const *dsts, const void *const *srcs,
                                  const size_t *sizes, size_t n) {
  for (size_t i = 0; i < n; i++)
    memmove(dsts[i], srcs[i], sizes[i]);
  return GIN_SUCCESS;
}

gin_result_t gin_arch_copy_thread_setup(void) { return GIN_SUCCESS; }

gin_result_t gin_arch_copy_wait(void) {
  return GIN_SUCCESS; /* submit copied already */
}

gin_result_t gin_arch_staging_alloc(size_t size, void **ptr_out) {
  void *p = malloc(size ? size : 1);
  if (!p) return GIN_ERROR(GIN_ERR_NOMEM, "staging buffer of %zu bytes", size);
  *ptr_out = p;
  return GIN_SUCCESS;
}

void gin_arch_staging_free(void *ptr) { free(ptr); }
