/*
 * The proxy: CPU threads that drain the device communicators' rings,
 * validate every descriptor against the peers and registered windows, and
 * hand the operation to the peer's transport; they also drive the
 * transports' progress (receiving side). Uses transport/, arch/ and
 * base/; sees the communicator only as the gin_job_t it was attached with.
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

struct gin_proxy;

/* Starts the proxy threads and transports for a job that has proxied
 * peers (collective: every rank calls it); *px_out on success. The job
 * must outlive the proxy. */
gin_result_t gin_proxy_attach(const gin_job_t *job, struct gin_proxy **px_out);
/* Waits, bounded by the timeout plus grace_ms, until every ring of the
 * proxy is consumed (before windows or rings go away, or an error
 * report); returns at once, successfully, once the job is aborted, or
 * without a proxy (px NULL). */
gin_result_t gin_proxy_quiesce(struct gin_proxy *px, int grace_ms);
/* Stops the threads and closes the transports (px NULL: nothing). */
void gin_proxy_detach(struct gin_proxy *px);
/* Whether a proxy thread waits for a transport's room to send to a peer,
 * or gave up waiting (the job is then failing): 1 with that peer, the wait
 * in ms (so far, or until it gave up) and the transport's name (the
 * longest such wait), else 0 and nothing written. px NULL: 0. */
int gin_proxy_stuck(struct gin_proxy *px, int *peer, uint64_t *ms,
                    const char **transport);

/* Tells every transport that window slot `slot` was registered (live 1:
 * collective, on every rank before the slot goes live) or is being
 * deregistered (live 0: this rank, once no operation on it is in flight;
 * gin_transport_ops_t.window). px NULL: nothing. Returns the first
 * failure, every transport told. */
gin_result_t gin_proxy_window(struct gin_proxy *px, uint32_t slot, int live);

/* Creates the rings of one device communicator (nctx of them), fills
 * dc->rings (device view), and hands them to the proxy threads. sig_win:
 * the host-kind window holding the proxy's part of the signals;
 * counters_host: CPU view of the proxy's part of the counters. */
gin_result_t gin_proxy_rings_create(struct gin_proxy *px, gin_devcomm_t *dc,
                                    uint32_t sig_win, int nsig_total,
                                    uint64_t *counters_host,
                                    gin_proxy_ring_t **rings_out);
/* Takes the rings away from the threads (px NULL: they are gone already)
 * and frees them. */
void gin_proxy_rings_destroy(struct gin_proxy *px, gin_proxy_ring_t *rings,
                             int n, void *dev_table);

#endif
