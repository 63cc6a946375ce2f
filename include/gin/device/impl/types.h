/*
 * The definitions behind the device types of types.h: the window handle,
 * the device communicator, the window table slot, the control page and
 * its error records. gin's calls read them; kernels use the handles
 * through the device API. Internal: they change between releases (a
 * program compiled against other headers is refused at gin_comm_init).
 */
#ifndef GIN_DEVICE_IMPL_TYPES_H
#define GIN_DEVICE_IMPL_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* A registered window: an index into the communicator's window table and a
 * generation that changes when the slot is reused, so a stale handle is
 * caught; its size, so the range checks need no load; this rank's own base,
 * so a put reads its source without a table load; and the bases of ranks
 * 0..GIN_INLINE_PEERS-1, so a put to one of them finds its destination without
 * one either. idx, gen and size are the same on every rank; use a handle on
 * the rank that registered it, and only handles gin_window_register wrote. */
struct gin_window {
  uint32_t idx;
  uint32_t gen;
  uint64_t size;
  char *local; /* this rank's base (device view), as the table holds it */
  char *peer[GIN_INLINE_PEERS]; /* rank w's base (device view), NULL where
                                   not mapped or w >= ranks */
};

/* One window table slot, as device code sees it. base[r] is rank r's window
 * mapped into this rank (NULL where not mapped). state: the slot's
 * generation in its low 32 bits, GIN_DEV_WINDOW_LIVE set while a window
 * is registered there: a handle is live when state equals
 * GIN_DEV_WINDOW_LIVE | its generation (one load, one compare). */
typedef struct gin_dev_window {
  uint64_t size;
  uint64_t state;
  char **base;
} gin_dev_window_t;
#define GIN_DEV_WINDOW_LIVE ((uint64_t)1 << 32)

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
  GIN_DEVERR_EP_ROUTING,    /* EP: bad routing, a refused peer word, or
                               ranks whose dispatch payloads differ */
  GIN_DEVERR_PEER_DEAD,     /* a rank died (host-side record, `peer`) */
  /* the transport had no room for a whole timeout (host-side, `peer`) */
  GIN_DEVERR_TIMEOUT_TRANSPORT,
  GIN_DEVERR_USER /* a program's kernel (gin_record_error) */
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

struct gin_ring;

/* Device communicator (types.h says what a kernel may read), passed by
 * value to kernels. */
struct gin_devcomm {
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
};

#endif
