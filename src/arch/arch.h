/*
 * Target layer, host side: what differs between the cuda and host targets
 * when allocating, sharing and copying memory. Implemented once per target
 * (arch_host.c, arch_cuda.c). Above base/ only: includes base/base.h.
 */
#ifndef GIN_ARCH_H
#define GIN_ARCH_H

#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "base/base.h"

/* Settings read by one target (declared in params.c). */
int64_t gin_arch_param_cuda_device(void);  /* GIN_CUDA_DEVICE, cuda */
int64_t gin_arch_param_copy_batch(void);   /* GIN_COPY_BATCH, cuda */
int64_t gin_arch_param_copy_streams(void); /* GIN_COPY_STREAMS, cuda */
int64_t gin_arch_param_cuda_vmm(void);     /* GIN_CUDA_VMM, cuda */
int64_t gin_arch_param_host_spins(void);   /* GIN_HOST_SPINS, host */
int64_t gin_arch_param_mps(void);          /* GIN_MPS, cuda (and ginrun) */

/* An exportable description of shareable memory that another process on
 * the same host can map (a CUDA IPC handle, or a memfd's pid and fd). */
#define GIN_ARCH_HANDLE_BYTES 80
typedef struct gin_arch_handle {
  uint8_t bytes[GIN_ARCH_HANDLE_BYTES];
} gin_arch_handle_t;

/* Identity of this process's device, exchanged at init to decide which
 * peers are load/store reachable. */
#define GIN_ARCH_DEVINFO_BYTES 64
typedef struct gin_arch_devinfo {
  char bytes[GIN_ARCH_DEVINFO_BYTES];
} gin_arch_devinfo_t;

/* Called once per communicator init: selects/initialises the device. */
gin_result_t gin_arch_init(gin_arch_devinfo_t *info_out);
/* Called by each communicator init once it knows how many of its ranks
 * run on this machine (this one included): the host target sizes its
 * device waits' spin by them (GIN_HOST_SPINS); nothing on a GPU. */
void gin_arch_local_ranks(int local_ranks);
/* Whether memory of a process with device `peer` on the same host can be
 * mapped by this process (same GPU, or P2P-capable GPUs; always on host). */
int gin_arch_can_map(const gin_arch_devinfo_t *self,
                     const gin_arch_devinfo_t *peer);
/* Whether a process with device `peer` on the same host runs on this very
 * device (GPU-scope ordering reaches it; always on the host target). */
int gin_arch_same_device(const gin_arch_devinfo_t *self,
                         const gin_arch_devinfo_t *peer);
/* Whether processes sharing the device described by dev take turns on it
 * by time slice (a GPU without MPS: an exchange between them waits for a
 * slice); never on the host target. */
int gin_arch_time_sliced(const gin_arch_devinfo_t *dev);

/* Shareable device memory (backs windows and signal areas), zeroed. */
gin_result_t gin_arch_shm_alloc(size_t size, void **ptr_out,
                                gin_arch_handle_t *handle_out,
                                void **cookie_out);
void gin_arch_shm_free(void *ptr, size_t size, void *cookie);
/* Maps a peer's shareable device memory described by handle. */
gin_result_t gin_arch_shm_import(const gin_arch_handle_t *handle, size_t size,
                                 void **ptr_out, void **cookie_out);
void gin_arch_shm_unimport(void *ptr, size_t size, void *cookie);
/* What importing this process's shareable memory asks of a peer, for
 * gin_comm_init to check on every rank: GIN_ARCH_SHM_TAKES_FD (the peer
 * takes a descriptor from this process, pidfd_getfd), GIN_ARCH_SHM_FORCED
 * (the user chose that method: no falling back). 0 on the host target. */
#define GIN_ARCH_SHM_TAKES_FD 1
#define GIN_ARCH_SHM_FORCED 2
int gin_arch_shm_mode(void);
/* 0 if this process can take a descriptor from the peer whose control page
 * is `peer_ctrl` (gin_arch_hostmem_alloc's handle, a process on this host),
 * else the errno (memfd.c, for both targets). */
int gin_arch_shm_fd_check(const gin_arch_handle_t *peer_ctrl);
/* Makes this process's later allocations use the method every process can
 * import (called on every rank of a communicator where some rank could not
 * take a peer's descriptor). */
void gin_arch_shm_fallback(void);

/* Shareable host memory that the device can access (control pages):
 * host_ptr for the CPU, dev_ptr for kernels. */
gin_result_t gin_arch_hostmem_alloc(size_t size, void **host_out,
                                    void **dev_out,
                                    gin_arch_handle_t *handle_out,
                                    void **cookie_out);
void gin_arch_hostmem_free(void *host, size_t size, void *cookie);
gin_result_t gin_arch_hostmem_import(const gin_arch_handle_t *handle,
                                     size_t size, void **host_out,
                                     void **dev_out, void **cookie_out);
void gin_arch_hostmem_unimport(void *host, size_t size, void *cookie);

/* Host buffers that device memory is copied through (transport staging):
 * pinned on cuda, so the copies run at full speed; plain on host. */
gin_result_t gin_arch_staging_alloc(size_t size, void **ptr_out);
void gin_arch_staging_free(void *ptr);

/* Private device memory (tables, counters), zeroed. */
gin_result_t gin_arch_dev_alloc(size_t size, void **ptr_out);
void gin_arch_dev_free(void *ptr);

/* Synchronous copies and fills; pointers may be host or device memory. */
gin_result_t gin_arch_copy(void *dst, const void *src, size_t bytes);
/* Reads a 64-bit word of device memory that kernels may be updating with
 * atomics meanwhile (cuda: a copy-engine read; host: an acquire load). */
gin_result_t gin_arch_dev_load_u64(const uint64_t *dev, uint64_t *out);
/* Sets a 32-bit word of device memory to 1 while kernels may be running
 * and reading it (cuda: a copy-engine write, which spinning kernels do
 * not hold up, waited for at most a second; host: an atomic store). */
gin_result_t gin_arch_dev_flag_set(uint32_t *dev);
gin_result_t gin_arch_memset(void *dst, int value, size_t bytes);
/* Starts n copies on the calling thread's copy queue (its stream on cuda:
 * one submission for the batch; memmove before returning on the host
 * target). The copies of one call run in no particular order, so they
 * must not overlap each other; they run after every copy this thread
 * submitted before, and before any it submits later. Sources must stay
 * valid and unchanged, and destinations untouched by the CPU, until
 * gin_arch_copy_wait returns. The arrays themselves may be reused at once.
 * Thread safety: any thread; each has its own queue. */
gin_result_t gin_arch_copy_submit(void *const *dsts, const void *const *srcs,
                                  const size_t *sizes, size_t n);
/* Sets up the calling (proxy) thread's copy streams now, so that nothing
 * is created later while kernels run. */
gin_result_t gin_arch_copy_thread_setup(void);
/* Waits until every copy the calling thread submitted is complete (one
 * stream synchronisation on cuda; nothing on the host target). The first
 * call on a thread also sets up its queue for this process's device. */
gin_result_t gin_arch_copy_wait(void);

/* Atomic add (release) from a CPU thread on a 64-bit word in host memory
 * that the device reads (the proxy's part of a signal or counter; pass the
 * CPU view). */
gin_result_t gin_arch_atomic_add_u64(uint64_t *host_ptr, uint64_t value);

/* Whether idle proxy threads keep polling by default: yes on a GPU,
 * where they serve kernels; no on the host target, whose ranks' kernels
 * run on the same cores. */
int gin_arch_proxy_busy_poll_default(void);

/* Whether kernels can wake a sleeping proxy thread (a doorbell it polls):
 * the host target's kernels are CPU threads; a GPU cannot. */
static inline int gin_arch_kernels_wake_proxy(void) {
#ifdef GIN_TARGET_HOST
  return 1;
#else
  return 0;
#endif
}

/* Target defaults that are constants, decided at compile time (gin_host
 * builds with GIN_TARGET_HOST, gin_cuda with GIN_TARGET_CUDA); inline so
 * that both targets have them without a definition per arch_*.c. */

/* How many passes with nothing to do an idle proxy thread that does not
 * busy-poll makes before it starts to yield: few on the host target (a
 * spinning proxy delays its own rank's kernel threads on shared cores),
 * more on a GPU (kernels run elsewhere; polling a while saves a wake-up). */
static inline uint32_t gin_arch_proxy_idle_spins(void) {
#ifdef GIN_TARGET_HOST
  /* Measured: 4 halves the tcp round trip on a 2-core machine; on a
   * 16-core one it raised it from 1.06-1.24 x to 1.6 x raw TCP (the
   * yields cost wake-ups where cores are free). */
  return sysconf(_SC_NPROCESSORS_ONLN) >= 8 ? 256 : 4; /* once per thread */
#else
  return 256;
#endif
}

/* Whether device memory (what gin_arch_shm_alloc returns, and windows
 * not of the host kind) is ordinary host memory that the CPU reads and
 * writes, so that a transport may hand it to system calls directly: yes
 * on the host target; no on cuda (copy through staging with
 * gin_arch_copy). */
static inline int gin_arch_device_mem_is_host(void) {
#ifdef GIN_TARGET_HOST
  return 1;
#else
  return 0;
#endif
}

/* The CPUs near this process's device, as a Linux cpulist ("0-15,32-47")
 * written into buf; GIN_ERR_UNSUPPORTED where the target has no device or
 * the machine does not say. */
gin_result_t gin_arch_device_cpulist(char *buf, size_t len);

#endif
