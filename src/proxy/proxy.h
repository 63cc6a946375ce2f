/*
 * The proxy: CPU threads that drain the device communicators' rings,
 * validate every descriptor against the peers and registered windows, and
 * hand the operation to the peer's transport; they also drive the
 * transports' progress (receiving side). Top host layer: uses transport/,
 * core/ and arch/.
 */
#ifndef GIN_PROXY_H
#define GIN_PROXY_H

#include "gin/device/proxy.h"
#include "transport/transport.h"

/* Most descriptors of one ring issued between flushes (at most half the
 * ring, so producers keep room while the proxy completes a batch). */
#define GIN_PROXY_BATCH 256

/* One ring, host side; aligned so that rings served by different threads
 * share no cache line. */
typedef struct gin_proxy_ring {
  _Alignas(64) gin_desc_t *slots; /* host view */
  uint64_t *cons;                 /* host view of the consumer index */
  uint64_t next;                  /* next slot to consume */
  uint32_t size;
  int lap_shift; /* log2(size): lap of a slot index */
  int batch;     /* most descriptors consumed between flushes */
  int ctx;
  int thread; /* proxy thread serving it */
  /* what descriptors are checked against */
  uint32_t sig_win; /* the devcomm's signal window slot */
  int nsignals;
  int nsig_total; /* signals + barrier counters */
  int ncounters;
  uint64_t *counters; /* CPU view of the proxy's part of the counters */
  void *mem, *mem_cookie;
  size_t mem_bytes;
  void *mem_dev;
  uint64_t *prod;                   /* device memory */
  struct gin_proxy_ring *next_ring; /* list of all the proxy's rings */
  /* The batch issued but not complete yet (its thread's only). */
  int pending; /* descriptors */
  int ncnt;    /* local counter increments, merged per counter */
  int cnt_idx[GIN_PROXY_BATCH];
  uint64_t cnt_add[GIN_PROXY_BATCH];
} gin_proxy_ring_t;

/* Starts the proxy threads and transports of a communicator that has
 * proxied peers (collective: every rank calls it). */
gin_result_t gin_proxy_attach(gin_comm_t comm);
/* Waits, bounded by the timeout plus grace_ms, until every ring of the
 * communicator is consumed (before windows or rings go away, or an error
 * report); returns at once, successfully, once the communicator is
 * aborted. */
gin_result_t gin_proxy_quiesce(gin_comm_t comm, int grace_ms);
/* Stops the threads and closes the transports. */
void gin_proxy_detach(gin_comm_t comm);

/* Creates the rings of one device communicator (nctx of them), fills
 * dc->rings (device view), and hands them to the proxy threads. sig_win:
 * the host-kind window holding the proxy's part of the signals;
 * counters_host: CPU view of the proxy's part of the counters. */
gin_result_t gin_proxy_rings_create(gin_comm_t comm, gin_devcomm_t *dc,
                                    uint32_t sig_win, int nsig_total,
                                    uint64_t *counters_host,
                                    gin_proxy_ring_t **rings_out);
/* Takes the rings away from the threads and frees them. */
void gin_proxy_rings_destroy(gin_comm_t comm, gin_proxy_ring_t *rings, int n,
                             void *dev_table);

#endif
