/*
 * Types shared by the host API and device code (both targets). Plain C
 * structs passed by value to kernels; every pointer in them is valid in the
 * address space of the device that runs the kernel (the GPU on the cuda
 * target, the process on the host target).
 */
#ifndef GIN_DEVICE_TYPES_H
#define GIN_DEVICE_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define GIN_STATIC_ASSERT(c, m) static_assert(c, m)
#define GIN_ALIGNAS(n) alignas(n)
#define GIN_ALIGNOF(t) alignof(t)
#else
#define GIN_STATIC_ASSERT(c, m) _Static_assert(c, m)
#define GIN_ALIGNAS(n) _Alignas(n)
#define GIN_ALIGNOF(t) _Alignof(t)
#endif

#define GIN_MAX_RANKS 1024

/* Peers whose signal pointers and paths a devcomm, and whose window
 * bases a window handle, carries by value: a put to one of them reads
 * them from the kernel's parameters (constant cache, which acquires do
 * not invalidate) instead of device tables. */
#define GIN_INLINE_PEERS 8

/* A registered window: an index into the communicator's window table and a
 * generation that changes when the slot is reused, so a stale handle is
 * caught; this rank's own base, so a put reads its source without a table
 * load (checks off; with checks, as any rank's below); and the bases of ranks
 * 0..GIN_INLINE_PEERS-1, so a put to one of them finds its destination without
 * one either. idx and gen are the same on every rank; use a handle on the rank
 * that registered it, and only handles gin_window_register wrote. */
typedef struct gin_window {
  uint32_t idx;
  uint32_t gen;
  char *local; /* this rank's base (device view), as the table holds it */
  char *peer[GIN_INLINE_PEERS]; /* rank w's base (device view), NULL where
                                   not mapped or w >= ranks */
} gin_window_t;

/* Paths a peer can be reached by (device code switches on this). */
enum {
  GIN_PATH_NONE = 0,   /* not reachable from this rank (yet) */
  GIN_PATH_SELF = 1,   /* this rank */
  GIN_PATH_DIRECT = 2, /* peer window mapped: load/store */
  GIN_PATH_PROXY = 3   /* descriptors to the CPU proxy through a ring */
};
/* Flag in a devcomm's path_inline byte: the peer runs on this very GPU,
 * so GPU-scope ordering reaches it (a release at system scope costs a
 * system-wide memory barrier; measured by gin-perf's ladder). */
#define GIN_PATH_NEAR 0x80

/* One window table slot, as device code sees it. base[r] is rank r's window
 * mapped into this rank (NULL where not mapped). */
typedef struct gin_dev_window {
  uint64_t size;
  uint32_t gen;
  uint32_t live;
  char **base;
} gin_dev_window_t;

/* What happens at the target once a put's payload has landed. */
typedef enum gin_remote_kind {
  GIN_REMOTE_NONE = 0,
  GIN_REMOTE_SIGNAL_INC = 1, /* signal += 1 */
  GIN_REMOTE_SIGNAL_ADD = 2  /* signal += value */
} gin_remote_kind_t;
/* What happens locally once a put's source has been consumed. */
typedef enum gin_local_kind {
  GIN_LOCAL_NONE = 0,
  GIN_LOCAL_COUNTER_INC = 1 /* counter += 1 when the source is reusable */
} gin_local_kind_t;
/* Kinds of error a device call can record. */
enum {
  GIN_DEVERR_NONE = 0,
  GIN_DEVERR_TIMEOUT_SIGNAL,
  GIN_DEVERR_TIMEOUT_COUNTER,
  GIN_DEVERR_TIMEOUT_BARRIER,
  GIN_DEVERR_ABORTED,
  GIN_DEVERR_BAD_PEER,
  GIN_DEVERR_BAD_WINDOW,
  GIN_DEVERR_BAD_RANGE,
  GIN_DEVERR_BAD_SIGNAL,
  GIN_DEVERR_BAD_COUNTER,
  GIN_DEVERR_BAD_CONTEXT,
  GIN_DEVERR_SIGNAL_MIX,
  GIN_DEVERR_BAD_BARRIER,
  GIN_DEVERR_UNREACHABLE,
  GIN_DEVERR_TIMEOUT_RING,  /* producer waited for a free slot */
  GIN_DEVERR_TIMEOUT_FLUSH, /* flush waited for the proxy */
  GIN_DEVERR_BAD_DESC,      /* the proxy rejected a descriptor */
  GIN_DEVERR_TRANSPORT,     /* the transport failed an operation */
  GIN_DEVERR_EP_ROUTING,    /* EP: an expert id out of range or repeated */
  GIN_DEVERR_PEER_DEAD,     /* a rank died (host-side record, `peer`) */
  /* the transport had no room for a whole timeout (host-side, `peer`) */
  GIN_DEVERR_TIMEOUT_TRANSPORT
};

/* First error a rank's kernels hit, for the host to report. Lives in the
 * control page (host memory, mapped for the device). */
typedef struct gin_dev_error {
  uint32_t claimed; /* 0 free; set by the first reporter */
  uint32_t ready;   /* 1 once the fields below are written */
  int32_t kind;
  int32_t rank; /* the rank that recorded it */
  int64_t peer; /* peer rank involved, -1 if none */
  int64_t id;   /* signal / counter / window / barrier slot id */
  uint64_t expected;
  uint64_t seen;
  uint64_t arg0, arg1; /* kind-specific: offset and size, ... */
} gin_dev_error_t;

/* Per-rank control page: the abort words every wait polls, and the error
 * records. One per communicator, in shared host memory mapped for the GPU.
 * CPU and GPU atomics on one mapped word are not atomic with each other,
 * so each side has its own: `abort`/`err` are written by GPUs only (this
 * rank's kernels and its load/store peers'), `habort`/`herr` by CPUs only
 * (gin_comm_abort, the proxy). The value of an abort word is 1 + the rank
 * that aborted. */
typedef struct gin_ctrl {
  volatile uint32_t abort; /* GPU-written half, then the CPU-written half */
  uint32_t pad0_[15];      /* on its own 64-byte line */
  gin_dev_error_t err;
  volatile uint32_t habort;
  uint32_t pad1_[15];
  gin_dev_error_t herr;
} gin_ctrl_t;

/* Team: a set of world ranks. ranks == NULL means ranks 0..size-1. */
typedef struct gin_team {
  int size;
  int rank;         /* this rank's index in the team, -1 if not a member */
  int id;           /* 0 world, 1 lsa */
  const int *ranks; /* team index -> world rank (device memory) */
} gin_team_t;

#define GIN_TEAM_WORLD 0
#define GIN_TEAM_LSA 1
#define GIN_NUM_TEAMS 2

/* Device communicator: passed by value to kernels. */
typedef struct gin_devcomm {
  int rank, nranks;
  int nctx, nsignals, ncounters, nbarriers;
  int lsa_size, lsa_rank;
  uint64_t timeout_ns;
  uint64_t *signals;       /* this rank's signals [nsignals] */
  uint64_t **peer_signals; /* [nranks] each rank's signal array, mapped */
  uint64_t *peer_sig_inline[GIN_INLINE_PEERS]; /* peer_signals[w], w < 8 */
  uint64_t path_inline;      /* path[w] of w < 8, a byte each (w in bits 8w),
                                with GIN_PATH_NEAR where w shares this GPU */
  uint32_t *sigmode;         /* this rank's signal mode bytes [nsignals] */
  uint32_t **peer_sigmode;   /* [nranks] */
  uint64_t *shadows;         /* [nsignals] */
  uint64_t *counters;        /* [ncounters] */
  uint64_t *bar;             /* [GIN_NUM_TEAMS * nbarriers] arrivals here */
  uint64_t **peer_bar;       /* [nranks] */
  uint64_t *bar_epoch;       /* [GIN_NUM_TEAMS * nbarriers] local epochs */
  const uint8_t *path;       /* [nranks] GIN_PATH_* */
  const int *lsa_ranks;      /* [lsa_size] world rank of each lsa member */
  gin_dev_window_t *windows; /* [max_windows] */
  char *const *win_bases;    /* [max_windows * nranks]: windows[i].base is
                                win_bases + i * nranks */
  uint32_t max_windows;
  gin_ctrl_t *ctrl;       /* this rank's control page (device view) */
  gin_ctrl_t **peer_ctrl; /* [nranks] peers' control pages, NULL if none */
  /* Device memory, nonzero once this rank knows its communicator aborted
   * (a peer died, gin_comm_abort, a device error): direct writes into
   * peers stop there, since a dead peer's memory may go at any moment. A
   * cheap local read, unlike the abort words in host memory. */
  uint32_t *gate;
  struct gin_ring *rings; /* [nctx] proxy rings (device view), or NULL */
  /* The parts the proxy updates, in host memory the device maps (NULL
   * when no peer is proxied). A signal's value is signals[s] +
   * psignals[s]; barrier counters follow the signals in psignals; a
   * counter's value is counters[c] + pcounters[c]. */
  uint64_t *psignals;  /* [nsignals + GIN_NUM_TEAMS * nbarriers] */
  uint32_t *pmode;     /* [nsignals] INC/ADD marks of proxied updates */
  uint64_t *pcounters; /* [ncounters] */
  uint64_t id;         /* identifies the devcomm on its comm */
} gin_devcomm_t;

#endif
