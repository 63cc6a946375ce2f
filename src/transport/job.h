/*
 * The communicator as the layers below it see it: the transports and the
 * proxy get a gin_job_t, never the communicator's struct. It holds what
 * they read (ranks, the timeout, the job's root address and secret, each
 * peer's path and transport, the window table, this rank's control page)
 * and the two things they ask of the communicator above (an all-gather
 * over the bootstrap network, an abort), as calls through `owner`; the
 * cause of a failure they record in the control page and proxy_msg.
 *
 * Layering: base < arch < transport < proxy < comm < ep. This header is
 * the transport layer's bottom; the communicator (src/comm) fills one
 * per communicator.
 */
#ifndef GIN_TRANSPORT_JOB_H
#define GIN_TRANSPORT_JOB_H

#include "base/net.h"
#include "gin/device/types.h"

/* One registered window, host side: the communicator writes it (window
 * registration), the proxy and the transports read it (`live` and `gen`
 * with acquire). */
typedef struct gin_win_slot {
  int live;
  uint32_t gen;
  void *ptr; /* local memory */
  size_t size;
  char **bases;      /* [nranks] host mirror of the device base table */
  char **hbases;     /* [nranks] CPU views (host-kind windows), else NULL */
  int host_kind;     /* backed by host memory the device maps */
  void *hptr;        /* CPU view of the local memory (host kind) */
  void **import_ptr; /* [nranks] peer allocations mapped here */
  void **import_cookie;
  size_t *import_size;
  int internal; /* owned by a devcomm */
} gin_win_slot_t;

typedef struct gin_job {
  int rank, nranks;
  int64_t timeout_ms;
  gin_net_addr_t root;      /* the bootstrap root (tcp listens on its family) */
  uint8_t secret[16];       /* the job secret every connection presents */
  const uint8_t *path;      /* [nranks] GIN_PATH_* */
  const uint8_t *mapped;    /* [nranks] 1: the rank's memory is mapped here */
  const uint8_t *transport; /* [nranks] transport id of proxied peers */
  gin_win_slot_t *wins;     /* [max_windows] */
  uint32_t max_windows;
  gin_ctrl_t *ctrl; /* this rank's control page (host view) */
  char *proxy_msg;  /* [proxy_msg_len]: what the proxy reported */
  size_t proxy_msg_len;
  /* Calls up, each given `owner`: */
  void *owner;
  /* Collective: all[rank * bytes, + bytes) in, every rank's out. */
  gin_result_t (*allgather)(void *owner, void *all, size_t bytes);
  /* Marks the communicator aborted by this rank (CPU side; any thread). */
  void (*abort)(void *owner);
} gin_job_t;

/* Which rank aborted (1 + rank), 0 if none, by a control page: its
 * GPU-side word first, then the CPU-side one. Any thread. */
static inline uint32_t gin_ctrl_aborted_by(const gin_ctrl_t *ctrl) {
  uint32_t who = __atomic_load_n(&ctrl->abort, __ATOMIC_ACQUIRE);
  return who ? who : __atomic_load_n(&ctrl->habort, __ATOMIC_ACQUIRE);
}
/* The same for the job, by this rank's control page. */
static inline uint32_t gin_job_aborted_by(const gin_job_t *job) {
  return gin_ctrl_aborted_by(job->ctrl);
}

#endif
