/*
 * Transports: how the proxy moves one operation to a peer. Host side only.
 * Each transport is an ops table filled with designated initialisers; the
 * first field is the table's size (its version). Operations a transport
 * does not have are NULL-free: they return GIN_ERR_UNSUPPORTED.
 *
 * Layering: transports use src/arch and src/base, and see the
 * communicator only as a gin_job_t (job.h); src/proxy uses transports.
 * The registry (transport.c) owns their ids, names and the selection of
 * one for each proxied peer: a new transport is its own file plus one
 * line there.
 */
#ifndef GIN_TRANSPORT_H
#define GIN_TRANSPORT_H

#include "arch/arch.h"
#include "gin/device/proxy.h"
#include "transport/job.h"

/* One operation, already validated by the proxy against the windows. */
typedef struct gin_xfer {
  int op;           /* GIN_OP_PUT, GIN_OP_PUT_VALUE, GIN_OP_SIGNAL */
  int peer;         /* world rank */
  const void *src;  /* PUT: source bytes (this rank's window) */
  uint32_t src_win; /* PUT: the source's window slot */
  uint64_t value;   /* PUT_VALUE: the value (low `bytes` bytes) */
  uint64_t bytes;
  uint32_t dst_win; /* window slot at the peer (symmetric) */
  uint64_t dst_off;
  int has_signal;
  uint32_t sig_win; /* the devcomm's signal window slot */
  uint64_t sig_off; /* byte offset of the 64-bit signal word */
  uint64_t sig_add;
  uint64_t mode_off; /* offset of the signal's INC/ADD mode word, 0: none */
  uint32_t mode_bit; /* 1 INC, 2 ADD: or-ed in before the signal update */
} gin_xfer_t;

typedef struct gin_transport_ops {
  size_t size; /* sizeof(gin_transport_ops_t) */
  const char *name;
  /* Collective over the communicator: every rank calls every transport's
   * init. use[r] != 0 for the peers this rank will reach through it. */
  gin_result_t (*init)(const gin_job_t *job, const uint8_t *use,
                       void **state_out);
  /* Starts one operation to x->peer; operations to one peer are delivered
   * in the order they were started (payload before its signal). x->src
   * may be read until the next flush returns. GIN_ERR_AGAIN: no room now,
   * call progress and again. */
  gin_result_t (*put)(void *state, const gin_xfer_t *x);
  /* Finishes reading every source of the operations started so far (the
   * proxy then counts them and frees their ring slots). GIN_ERR_AGAIN:
   * some are still being read (RMA writes in flight); the proxy drives
   * progress and calls it again, bounded by the timeout, naming the peer
   * flush_peer gives. */
  gin_result_t (*flush)(void *state);
  /* Optional (NULL: none): the peer whose operations a flush that said
   * GIN_ERR_AGAIN waits for, -1 if none. */
  int (*flush_peer)(void *state);
  /* Drives sends and applies received operations; never blocks long. */
  gin_result_t (*progress)(void *state);
  void (*fini)(void *state);
  /* Optional (NULL: none): a count that grows whenever progress found
   * traffic (bytes received, a full socket drained). An idle proxy keeps
   * polling while it grows instead of napping: a rank that only receives
   * has no descriptors of its own to count as work. Any thread. */
  uint64_t (*traffic)(void *state);
  /* Optional (NULL: none): called by each proxy thread once, before it
   * serves anything, to set up what it will use (inside gin_comm_init:
   * allocating pinned memory later may wait for a spinning kernel). */
  gin_result_t (*thread_start)(void *state);
  /* Optional, for proxies that sleep when idle (host target): a file
   * descriptor that polls readable when progress has something to do
   * (data arrived, a blocked send can go on), or GIN_WAIT_BUSY while
   * progress must keep being called (work that no descriptor announces).
   * NULL: progress never has anything to do that a ring descriptor does
   * not start (ipc, null). Called by the thread that calls progress. */
  int (*wait_fd)(void *state);
  /* Optional (NULL: none): window slot `slot` of the job's table was
   * registered (live 1: collective, every rank calls it for the same
   * slot in the same order, before the slot goes live) or is being
   * deregistered (live 0: before its memory is unmapped; this rank alone,
   * no operation on the window in flight). A transport that writes into
   * peers' windows registers them with its network here. */
  gin_result_t (*window)(void *state, uint32_t slot, int live);
} gin_transport_ops_t;

#define GIN_WAIT_BUSY (-2)

extern const gin_transport_ops_t gin_transport_ipc;
extern const gin_transport_ops_t gin_transport_null;
extern const gin_transport_ops_t gin_transport_tcp;
#ifdef GIN_HAVE_OFI
extern const gin_transport_ops_t gin_transport_ofi; /* libfabric */
#endif

/* Transport ids are positions in the registry, below GIN_TRANSPORT_MAX. */
#define GIN_TRANSPORT_MAX 8

/* The table of transport id t, or NULL. */
const gin_transport_ops_t *gin_transport_get(int t);
/* The transport that reaches a proxied peer, by GIN_TRANSPORT: a name
 * the registry has (ipc only for peers mapped here, tcp for the others),
 * or auto: ipc where the peer's memory is mapped here (mapped != 0), tcp
 * otherwise. GIN_ERR_INVALID names the setting and the
 * names there are; *id_out is written only on success. */
gin_result_t gin_transport_select(int mapped, int *id_out);

#endif
