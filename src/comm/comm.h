/*
 * Communicator internals shared by comm.c, window.c, devcomm.c and mem.c.
 * The communicator layer (src/comm) is the top of the library under EP:
 * it owns the proxy (src/proxy) and hands it and the transports a
 * gin_job_t, the narrow view of itself they get.
 */
#ifndef GIN_COMM_COMM_H
#define GIN_COMM_COMM_H

#include "arch/arch.h"
#include "comm/bootstrap.h"
#include "comm/records.h" /* gin_peer_info_t, GIN_HOSTID_BYTES */
#include "gin/gin.h"
#include "proxy/proxy.h"

typedef struct gin_devcomm_res gin_devcomm_res_t;

/* How a rank was found dead (watch.c). */
enum {
  GIN_DEATH_CLOSED = 1, /* its connection closed without a goodbye */
  GIN_DEATH_ERROR = 2   /* its connection failed (reset, keepalive) */
};

/* The first rank this rank learnt is dead: written once by the watcher
 * thread (fields, then `ready` with release), read by any thread. */
typedef struct gin_comm_death {
  uint32_t claimed, ready;
  int rank; /* the dead rank */
  int by;   /* the rank whose connection to it closed or failed */
  int how;  /* GIN_DEATH_* */
  int err;  /* errno of a failed connection, else 0 */
} gin_comm_death_t;

struct gin_comm {
  uint64_t magic;
  gin_job_t job; /* what the proxy and the transports see of this one */
  int rank, nranks;
  int64_t timeout_ms;
  gin_bs_t *bs;
  gin_unique_id_t uid;     /* the job's id: root address and secret */
  gin_peer_info_t *peers;  /* [nranks] */
  uint8_t *path;           /* [nranks] GIN_PATH_* (host) */
  uint8_t *path_mapped;    /* [nranks] 1 if the rank's memory is mapped here */
  uint8_t *transport;      /* [nranks] transport id of proxied peers */
  struct gin_proxy *proxy; /* proxy threads and transports, or NULL */
  char proxy_msg[256];     /* what the proxy reported, for the async error */
  uint8_t *path_dev;       /* device copy */
  int lsa_size, lsa_rank;
  int *lsa_ranks; /* host */
  int *lsa_ranks_dev;
  /* control pages: ours, and mapped peers' (lsa) */
  gin_ctrl_t *ctrl;     /* host view */
  gin_ctrl_t *ctrl_dev; /* device view */
  void *ctrl_cookie;
  gin_ctrl_t **peer_ctrl;        /* [nranks] host views (NULL: none) */
  gin_ctrl_t **peer_ctrl_devtab; /* device array [nranks] of device views */
  void **peer_ctrl_cookie;
  int32_t *statuses;  /* [nranks] gin_comm_statuses_'s buffer, allocated
                         with the communicator so the exchange cannot fail
                         for want of memory on one rank only */
  uint32_t *gate_dev; /* device word, set once aborted (gin_devcomm_t.gate) */
  uint32_t gate_shut; /* gin_comm_gate_shut_ ran (atomic) */
  /* windows */
  uint32_t max_windows;
  gin_win_slot_t *wins;       /* [max_windows] */
  gin_dev_window_t *wins_dev; /* device table [max_windows] */
  char **bases_dev;           /* device [max_windows * nranks] */
  /* device communicators */
  gin_devcomm_res_t *devcomms;
  uint64_t next_devcomm_id;
  struct gin_comm *next_live;
  /* peer watch (watch.c) */
  struct gin_watch *watch; /* NULL: not watching */
  /* The watcher's calls the state (state.c) makes, set by gin_watch_start
   * before `watch`: gin_watch_busy_, gin_watch_poke_. */
  int (*watch_busy)(gin_comm_t comm);
  void (*watch_poke)(gin_comm_t comm);
  gin_comm_death_t dead;
  uint64_t death_grace_until; /* end of the reports' wait for a death, ns
                                 (0: none yet; atomic) */
};

/* ---- state.c: a live communicator's state ---- */

/* The list of live communicators: added once set up, removed (returns
 * whether it was there) at the start of its destroy. */
void gin_comm_live_add_(gin_comm_t comm);
int gin_comm_live_remove_(gin_comm_t comm);
/* The bootstrap's abort check (gin_bs_set_abort, arg the communicator):
 * its error once it is aborted or knows of a dead rank. */
gin_result_t gin_comm_bs_abort_(void *arg, int settle_ms);
/* Looks comm up among live communicators (never dereferences a dead
 * pointer). GIN_ERR_STATE with a message naming `fn` if it is not live;
 * GIN_ERR_ABORTED if it was aborted (message says by whom and why). */
gin_result_t gin_comm_check_(gin_comm_t comm, const char *fn);
/* Like gin_comm_check_ but succeeds on aborted communicators. */
gin_result_t gin_comm_check_live_(gin_comm_t comm, const char *fn);

/* Collective: every rank's status word (0: fine), so that a rank whose
 * own arguments failed still takes part and the others fail with it at
 * once. Allocates nothing (comm->statuses). *first gets the lowest rank
 * whose word is nonzero (-1 if none) and *word that word (0 if none); on
 * a bootstrap error (returned) they are left alone. */
gin_result_t gin_comm_statuses_(gin_comm_t comm, int32_t mine, int *first,
                                int32_t *word);

/* Which rank aborted the communicator (1 + rank), 0 if none: the GPU-side
 * word first, then the CPU-side one. */
uint32_t gin_comm_aborted_by_(gin_comm_t comm);
/* Sets the devcomms' gate once the communicator aborted: this rank's
 * kernels stop writing into peers directly (a dead peer's memory may be
 * unmapped at any moment). Idempotent (retried after a failure); a
 * copy-engine write, waited for at most a second. Not in a CUDA stream
 * callback (gin_comm_abort leaves it to the watcher). */
void gin_comm_gate_shut_(gin_comm_t comm);
/* Marks the communicator aborted from a CPU thread (this rank's and its
 * load/store peers' CPU-side words). Works during init and destroy too. */
void gin_comm_abort_cpu_(gin_comm_t comm);
/* The same in the name of `who` (1 + the rank that aborted: news from a
 * peer watch link). */
void gin_comm_abort_as_(gin_comm_t comm, uint32_t who);

/* Peer watch (watch.c): connections to a few other ranks (about 2 log2 N,
 * so every rank is watched by several) and a thread that notices one
 * closing without a goodbye: that rank died. Starts after the exchange of
 * peer information (collective); stop says goodbye (local). */
gin_result_t gin_watch_start(gin_comm_t comm);
void gin_watch_stop(gin_comm_t comm);
/* Whether this rank asks to be watched (GIN_WATCH), for the exchange. */
int gin_watch_wanted_(void);
/* Asks the watcher to look for an abort now (and pass it on) instead of
 * at its next tick. Any thread. */
void gin_watch_poke_(gin_comm_t comm);
/* Whether the watcher has news it has not recorded yet (a link with bytes
 * or a close pending, or events being handled). Any thread. */
int gin_watch_busy_(gin_comm_t comm);
/* Records that rank `dead` died, as rank `by` saw it (GIN_DEATH_* `how`,
 * errno `err`): the communicator's death record, the CPU-side error record
 * and abort word of this rank and of its load/store peers (device waits
 * stop, host calls fail naming it). The first death wins. Any thread. */
void gin_comm_peer_dead_(gin_comm_t comm, int dead, int by, int how, int err);

/* Allocation registry (mem.c). */
typedef struct gin_alloc_info {
  void *base;
  size_t size;
  gin_arch_handle_t handle;
} gin_alloc_info_t;
/* Finds the gin_mem_alloc allocation holding [ptr, ptr+size). */
gin_result_t gin_mem_lookup_(const void *ptr, size_t size,
                             gin_alloc_info_t *out);
/* Window references keep an allocation from being freed. */
void gin_mem_ref_(void *base, int delta);

/* Windows (window.c). */
gin_result_t gin_window_init_(gin_comm_t comm);
void gin_window_fini_(gin_comm_t comm);
/* Memory behind an internal window when it is not from gin_mem_alloc:
 * host memory the device maps (gin_arch_hostmem_alloc). */
typedef struct gin_win_mem {
  void *host; /* CPU view */
  void *dev;  /* device view (the window's ptr) */
  size_t size;
  gin_arch_handle_t handle;
} gin_win_mem_t;
/* Registers a window; `hostmem` NULL: ptr is gin_mem_alloc memory. */
gin_result_t gin_window_register_(gin_comm_t comm, void *ptr, size_t size,
                                  int internal, const gin_win_mem_t *hostmem,
                                  gin_window_t *win_out);
gin_result_t gin_window_deregister_(gin_comm_t comm, gin_window_t win,
                                    int internal);

/* Device communicators (devcomm.c). */
void gin_devcomm_fini_(gin_comm_t comm);

#endif
