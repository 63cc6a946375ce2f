/*
 * gin — GPU-initiated networking. Host API (C11).
 *
 * Layering: this umbrella header is the top of the host library. It pulls
 * in the result codes and the device-side types that kernels receive by
 * value (gin_devcomm_t, gin_window_t). Nothing under src/ includes a header
 * of a higher layer.
 *
 * Thread safety: unless a function says otherwise, calls on one
 * communicator must not run concurrently from several threads; calls on
 * distinct communicators may. gin_comm_abort may be called from any thread
 * at any time.
 *
 * Dead ranks: a rank whose process ends without gin_comm_destroy (killed,
 * crashed, exited) is noticed by the others within milliseconds (GIN_WATCH,
 * on by default): each survivor's communicator is aborted, its device waits
 * stop, and its pending and later calls fail with GIN_ERR_REMOTE and a
 * message naming the rank ("rank 3 (pid 4242 on host) died: ..."), also
 * through gin_comm_get_async_error. A host that vanishes without closing
 * its connections is noticed by TCP keepalive within about the timeout.
 */
#ifndef GIN_GIN_H
#define GIN_GIN_H

#include <stddef.h>
#include <stdint.h>

#include "gin/device/types.h"
#include "gin/result.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Versioning: MAJOR.MINOR.PATCH. A PATCH release changes neither the API
 * nor the ABI. Before 1.0 a MINOR release may change both, and the shared
 * libraries' SONAME carries MAJOR.MINOR; from 1.0 only a MAJOR release
 * may, and the SONAME carries MAJOR. */
#define GIN_VERSION_MAJOR 0
#define GIN_VERSION_MINOR 2
#define GIN_VERSION_PATCH 0
#define GIN_VERSION_NUMBER                                                     \
  (GIN_VERSION_MAJOR * 10000 + GIN_VERSION_MINOR * 100 + GIN_VERSION_PATCH)

/* The library's version, "MAJOR.MINOR.PATCH" (of the headers it was built
 * with; they may differ from the program's, which gin_comm_init checks).
 * Never NULL. Thread-safe. */
GIN_API const char *gin_version(void);

/* ---------------------------------------------------------------- errors */

/* Returns a static, human-readable name for a result code. Never NULL. */
GIN_API const char *gin_strerror(gin_result_t res);

/* Returns the message recorded by the last failing gin call on this thread
 * (it names the bad argument, rank, window, offset or limit), or "" if none.
 * The string stays valid until the next gin call on this thread. */
GIN_API const char *gin_last_error(void);

/* ---------------------------------------------------------- unique id */

#define GIN_UNIQUE_ID_BYTES 128

/* Opaque job identifier: the bootstrap root's address and port plus a
 * random 128-bit job secret. Copy it to every rank by any means. */
typedef struct gin_unique_id {
  char bytes[GIN_UNIQUE_ID_BYTES];
} gin_unique_id_t;

/* Creates a unique id and starts the bootstrap root in a background thread
 * of the calling process. The root serves one job (nranks connections) and
 * then exits; it gives up after GIN_TIMEOUT_MS without all ranks.
 * The address advertised is GIN_ROOT_ADDR if set; else MASTER_ADDR's where
 * that is a non-loopback address of this host (torchrun's rank 0 host);
 * else 127.0.0.1 (set one of them to an address every host reaches for
 * multi-host jobs).
 * nranks: the number of ranks that will join (1..GIN_MAX_RANKS).
 * Returns GIN_SUCCESS and writes *uid_out, or an error. Thread safe. */
GIN_API gin_result_t gin_get_unique_id(int nranks, gin_unique_id_t *uid_out);

/* Text form of a unique id (hex, 2*GIN_UNIQUE_ID_BYTES+1 bytes with the
 * terminating NUL) for passing through the environment (GIN_UNIQUE_ID). */
GIN_API gin_result_t gin_unique_id_to_string(const gin_unique_id_t *uid,
                                             char *buf, size_t len);
/* Parses the text form. GIN_ERR_INVALID names what was malformed. */
GIN_API gin_result_t gin_unique_id_from_string(const char *str,
                                               gin_unique_id_t *uid_out);

/* ------------------------------------------------------- communicator */

typedef struct gin_comm *gin_comm_t;

/* Optional settings for gin_comm_init; zero-initialise then set fields, or
 * pass NULL for defaults. */
typedef struct gin_config {
  size_t size;    /* sizeof(gin_config_t); 0 means "all defaults" */
  int timeout_ms; /* bound on every wait; 0: GIN_TIMEOUT_MS */
} gin_config_t;

/* Joins the job named by uid as rank `rank` of `nranks` (collective: every
 * rank must call it). Connects to the bootstrap root, authenticates with
 * the job secret, exchanges addresses and host identities, and sets up the
 * world and lsa (load/store reachable) teams.
 * Errors: GIN_ERR_INVALID (rank/nranks out of range, NULL), GIN_ERR_TIMEOUT
 * (peers did not join within the timeout), GIN_ERR_PROTOCOL (secret or
 * size mismatch reported by the root). *comm_out is written only on
 * success. */
static inline gin_result_t gin_comm_init(gin_comm_t *comm_out, int nranks,
                                         int rank, const gin_unique_id_t *uid,
                                         const gin_config_t *cfg);

/* Like gin_comm_init, taking rank, size and job id from the environment:
 * ginrun (GIN_RANK, GIN_NRANKS, GIN_UNIQUE_ID); Open MPI
 * (OMPI_COMM_WORLD_RANK/SIZE); Slurm (SLURM_PROCID, SLURM_NTASKS); torchrun
 * (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT). For the launchers other than
 * ginrun, rank 0 hosts the root on GIN_ROOT_ADDR/MASTER_ADDR (default
 * 127.0.0.1) and GIN_ROOT_PORT/MASTER_PORT (default: derived from the job
 * id), and the job secret comes from GIN_JOB_SECRET (default: derived from
 * the launcher's job id, which is not secret). A process started without
 * any of these launchers is a job of one rank (a warning says so). Errors
 * as gin_comm_init, and GIN_ERR_INVALID naming the variable when a
 * launcher's variables are missing or out of range. */
static inline gin_result_t gin_comm_init_from_env(gin_comm_t *comm_out,
                                                  const gin_config_t *cfg);

/* How the calling program was compiled, which gin_comm_init and
 * gin_comm_init_from_env (inline, at the end of this header) hand to the
 * library, so that a program built against other headers, or compiled by
 * nvcc but linked with the host target's library, fails at init with a
 * message saying what to rebuild, instead of corrupting memory later. */
typedef struct gin_build_ {
  uint32_t version;       /* GIN_VERSION_NUMBER of the program's headers */
  uint32_t devcomm_bytes; /* sizeof(gin_devcomm_t) there */
  uint32_t window_bytes;  /* sizeof(gin_window_t) there */
  uint32_t cuda;          /* 1: the caller was compiled by nvcc */
} gin_build_t_;
GIN_API gin_result_t gin_comm_init_built_(gin_comm_t *comm_out, int nranks,
                                          int rank, const gin_unique_id_t *uid,
                                          const gin_config_t *cfg,
                                          const gin_build_t_ *build);
GIN_API gin_result_t gin_comm_init_from_env_built_(gin_comm_t *comm_out,
                                                   const gin_config_t *cfg,
                                                   const gin_build_t_ *build);
/* The library's own build description (cuda 0), for a caller that
 * compiles no device code against gin's headers and so has nothing of its
 * own to check: a language binding (the Python package) hands this to
 * gin_comm_init_built_ or gin_comm_init_from_env_built_. */
GIN_API void gin_build_self_(gin_build_t_ *out);
/* sizeof the public struct named `name` ("gin_config_t", "gin_ep_recv_t",
 * ... every struct of gin.h and gin_ep.h that a call takes) as this
 * library was built; 0 for a name it does not know. A language binding
 * that mirrors the structs checks its layouts against it (the Python
 * package does at import). Thread-safe. */
GIN_API size_t gin_struct_size_(const char *name);

/* Tears down a communicator: windows and device communicators still
 * registered are released, peers' mappings closed, and the other ranks
 * told that this one leaves (so its going is not taken for a death).
 * Local (not collective); call it on every rank after the last kernel
 * using it has finished. Also succeeds, and frees everything, on an
 * aborted communicator (a rank died). GIN_ERR_STATE if comm is not a live
 * communicator (destroyed twice). */
GIN_API gin_result_t gin_comm_destroy(gin_comm_t comm);

/* Marks the communicator aborted: every device and host wait on it returns
 * GIN_ERR_ABORTED promptly, on this rank and on the others ("aborted by
 * rank R"): load/store peers see the flag at once, ranks on other hosts
 * within milliseconds through the peer-watch links (GIN_WATCH=1, the
 * default). An abort raised by a device error or the proxy travels the
 * same way. Safe from any thread, also while another thread is inside a
 * gin call. */
GIN_API gin_result_t gin_comm_abort(gin_comm_t comm);

/* Reports an error raised asynchronously (by a device wait that timed out,
 * a device-side argument check, the proxy, or an abort), GIN_SUCCESS if
 * none. The message (gin_last_error) names the rank, signal/counter/window
 * or peer and the values seen. A dead or unreachable rank comes first
 * (GIN_ERR_REMOTE, "rank R (pid P on host) died: ..." or "... unreachable:
 * ..."): what else failed followed from it. Operations to a peer that is
 * there but takes nothing for GIN_TIMEOUT_MS (the proxy's transport had no
 * room for them, or the kernel no free slot in the proxy ring) fail with
 * GIN_ERR_TIMEOUT naming it ("peer P"); a transport connection that closed
 * or failed is GIN_ERR_REMOTE. Call it after synchronising with the
 * kernels: it first waits (bounded by the timeout) until the proxy has
 * taken every descriptor published so far, so the proxy's verdict on a
 * kernel that has ended is included. */
GIN_API gin_result_t gin_comm_get_async_error(gin_comm_t comm);

GIN_API gin_result_t gin_comm_rank(gin_comm_t comm, int *rank_out);
/* The ranks of the communicator that share this rank's device (its GPU;
 * on the host target, its machine), this rank included: they share its
 * SMs and memory bandwidth, so a grid of blocks that wait for peers is
 * sized by them (docs/SETTINGS.md, "CUDA lazy loading and kernels that wait").
 * GIN_ERR_STATE if comm is not live. */
GIN_API gin_result_t gin_comm_device_ranks(gin_comm_t comm, int *count_out);
/* How this rank reaches `peer`: GIN_PATH_SELF, GIN_PATH_DIRECT (its window
 * memory is mapped here: load/store), GIN_PATH_PROXY (through the CPU
 * proxy) or GIN_PATH_NONE, or-ed with GIN_PATH_NEAR when the peer shares
 * this rank's device. GIN_ERR_INVALID for a peer outside [0, nranks),
 * GIN_ERR_STATE if comm is not live. */
GIN_API gin_result_t gin_comm_peer_path(gin_comm_t comm, int peer,
                                        int *path_out);
GIN_API gin_result_t gin_comm_size(gin_comm_t comm, int *nranks_out);

/* Collective barrier over the bootstrap network (host side, bounded). */
GIN_API gin_result_t gin_comm_barrier(gin_comm_t comm);

/* Collective all-gather over the bootstrap network: rank r's `bytes` at
 * sendbuf land at recvbuf + r*bytes on every rank (recvbuf holds
 * nranks*bytes). sendbuf may alias recvbuf + rank*bytes. A NULL buffer on
 * any rank fails the call on every rank (GIN_ERR_INVALID naming it),
 * recvbuf untouched. */
GIN_API gin_result_t gin_comm_allgather(gin_comm_t comm, const void *sendbuf,
                                        void *recvbuf, size_t bytes);

/* ------------------------------------------------------------- memory */

/* Allocates `size` bytes of memory that can back a window: device memory
 * on the cuda target, shareable memory (memfd) on the host target. The
 * memory is zeroed. Thread safe. */
GIN_API gin_result_t gin_mem_alloc(size_t size, void **ptr_out);
/* Frees memory from gin_mem_alloc. GIN_ERR_INVALID for any other pointer;
 * GIN_ERR_STATE while a window still uses it. Thread safe. */
GIN_API gin_result_t gin_mem_free(void *ptr);
/* Copies between host and gin memory (either direction). Synchronous with
 * the host and ordered with no stream (cuda: a copy on gin's own
 * non-blocking stream, so it never waits behind a kernel that spins):
 * kernels queued before it, on any stream, may still read or write those
 * bytes; synchronize their stream first (gin_stream_synchronize, the
 * device API's) where they might. */
GIN_API gin_result_t gin_mem_copy(void *dst, const void *src, size_t bytes);
/* Sets bytes of gin memory; synchronous and ordered with no stream, as
 * gin_mem_copy. */
GIN_API gin_result_t gin_mem_set(void *dst, int value, size_t bytes);

/* Window registration and device-communicator creation/destruction change
 * tables that kernels read through a read-only cache: no kernel using the
 * communicator may run during these calls (it would not see the change).
 *
 * Registers [ptr, ptr+size) of memory from gin_mem_alloc as a window of
 * the communicator. Collective and symmetric: every rank calls it in the
 * same order with the same size (checked: a mismatch fails on every rank
 * with a message naming the ranks and sizes). Peers reachable by load/store
 * map the window. Writes a handle usable on host and device.
 * Errors: GIN_ERR_INVALID (ptr not from gin_mem_alloc, range past the
 * allocation, size 0), GIN_ERR_AGAIN (window table full, see
 * GIN_MAX_WINDOWS). */
GIN_API gin_result_t gin_window_register(gin_comm_t comm, void *ptr,
                                         size_t size, gin_window_t *win_out);
/* Collective: unmaps peers' views and retires the handle (later device use
 * of it is reported as a bad window). GIN_ERR_INVALID for a handle that is
 * not live (deregistered twice). On an aborted communicator (a rank died)
 * it releases the window on this rank alone, so its memory can be freed,
 * and returns the abort's error. */
GIN_API gin_result_t gin_window_deregister(gin_comm_t comm, gin_window_t win);

/* ------------------------------------------------- device communicator */

/* What a device communicator provides. Zero fields take defaults. */
typedef struct gin_devcomm_reqs {
  int contexts; /* default 4 */
  int signals;  /* default 256 (64-bit each) */
  int counters; /* default 256 (56-bit each) */
  int barriers; /* barrier slots per team, default 4 */
} gin_devcomm_reqs_t;

/* Creates the device communicator (collective): signal and barrier memory
 * shared with load/store peers, local counters and shadows. *dcomm_out is a
 * plain struct; pass it by value to kernels. reqs may be NULL. */
GIN_API gin_result_t gin_devcomm_create(gin_comm_t comm,
                                        const gin_devcomm_reqs_t *reqs,
                                        gin_devcomm_t *dcomm_out);
/* Releases a device communicator (collective). GIN_ERR_INVALID on every
 * rank, nothing released anywhere, if it is NULL or not live on comm on
 * any rank. On an aborted communicator a live handle is released locally
 * (GIN_SUCCESS); if the bootstrap fails otherwise (a timeout), the error
 * is returned and the handle stays until gin_comm_destroy. */
GIN_API gin_result_t gin_devcomm_destroy(gin_comm_t comm, gin_devcomm_t *dcomm);

/* ------------------------------------------------------------ settings */

/* A setting (GIN_* environment variable) as gin_param_info describes it.
 * The strings are the library's; they stay valid for the process's life. */
typedef struct gin_setting {
  const char *name;   /* GIN_... */
  const char *value;  /* current: the environment's, else the default */
  const char *def;    /* default */
  const char *help;   /* what it does */
  const char *target; /* "cuda" or "host": only that target reads it;
                         "ofi": only a build with the libfabric transport;
                         NULL: every build */
} gin_setting_t;

/* Number of settings: every one of either target, whichever this library
 * is. Thread-safe. */
GIN_API int gin_param_count(void);
/* Describes the i-th setting (sorted by name) into *info_out. Errors:
 * GIN_ERR_INVALID (i out of [0, gin_param_count()), info_out NULL).
 * Thread-safe. For tools (ginrun --env). */
GIN_API gin_result_t gin_param_info(int i, gin_setting_t *info_out);

/* ---------------------------------------------------- inline wrappers */

#ifdef __CUDACC__
#define GIN_BUILD_CUDA_ 1u
#else
#define GIN_BUILD_CUDA_ 0u
#endif
#define GIN_BUILD_INIT_                                                        \
  {                                                                            \
    (uint32_t) GIN_VERSION_NUMBER, (uint32_t)sizeof(gin_devcomm_t),            \
        (uint32_t)sizeof(gin_window_t), GIN_BUILD_CUDA_                        \
  }

static inline gin_result_t gin_comm_init(gin_comm_t *comm_out, int nranks,
                                         int rank, const gin_unique_id_t *uid,
                                         const gin_config_t *cfg) {
  gin_build_t_ b = GIN_BUILD_INIT_;
  return gin_comm_init_built_(comm_out, nranks, rank, uid, cfg, &b);
}

static inline gin_result_t gin_comm_init_from_env(gin_comm_t *comm_out,
                                                  const gin_config_t *cfg) {
  gin_build_t_ b = GIN_BUILD_INIT_;
  return gin_comm_init_from_env_built_(comm_out, cfg, &b);
}

#ifdef __cplusplus
}
#endif
#endif
