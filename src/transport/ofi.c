/*
 * ofi transport: proxied peers over libfabric, so one proxy path reaches
 * whatever fabric the machine has a provider for (verbs for InfiniBand
 * and RoCE, efa, cxi, tcp, shm on one host).
 *
 * Endpoint: one reliable datagram endpoint (FI_EP_RDM) per communicator,
 * with messages (FI_MSG) whose sends are processed in order (FI_ORDER_SAS)
 * and one completion queue for sends and receives. The provider is the
 * first fi_getinfo offers for these hints, narrowed by GIN_OFI_PROVIDER
 * (a provider name, e.g. "tcp;ofi_rxm") or libfabric's own FI_PROVIDER.
 * Memory registration modes the provider may ask for (local buffers,
 * virtual addresses, provider keys, endpoint binding) are accepted; the
 * transport registers the one pool it sends from and receives into.
 *
 * Setup (init, collective): every rank opens its endpoint (a rank without
 * ofi peers too), the endpoints' names and who-uses-ofi-with-whom are
 * all-gathered through the bootstrap and checked alike on every rank
 * (gin_ofi_entries_check), and each rank inserts its peers' names into its
 * address vector.
 *
 * Sending (put): an operation travels as messages of at most OFI_MSG_BYTES:
 * a prefix (sender, sequence number), an operation header (tcp.h) and up
 * to OFI_MSG_BYTES - OFI_HEAD_BYTES bytes of payload, copied from the
 * source into a send buffer of the pool (gin_arch_copy: it may be GPU
 * memory), so sources are free once put returns; the signal rides on the
 * operation's last message. A message the provider can inject goes
 * without a buffer. GIN_ERR_AGAIN while no buffer is free or the provider
 * has no room; an operation partly sent then resumes where it stopped.
 *
 * RMA writes: a put of at least GIN_OFI_RMA_MIN bytes between windows
 * in host memory goes as RMA writes (fi_writedata) straight from its
 * source window into the peer's, where the provider has RMA writes with
 * remote CQ data (verbs, efa, cxi; tcp;ofi_rxm and shm only with
 * GIN_OFI_RMA=1: ofi_rma_default_off says why; the mechanism is the same
 * for every provider). Windows are registered with the domain as they
 * are registered with the communicator (the `window` hook, collective:
 * every rank all-gathers its address and key); a window some rank could
 * not register takes messages. Each write carries, as its remote CQ data,
 * the sender's rank and a sequence number of the sender's messages to
 * that peer (ofi.h, write token), so the write is one step of the
 * sequence the target applies in order: the put's signal travels as a
 * message after its writes and is applied only once the target saw every
 * write before it complete, which libfabric reports only after the data
 * is placed. No atomics and no ordering between writes and sends are
 * asked of the provider. flush says GIN_ERR_AGAIN until the writes
 * started so far completed at the source (their sources are then free);
 * the proxy asks again, bounded by the timeout.
 *
 * Receiving (progress): receive buffers of the pool stay posted; each
 * message's prefix and header are checked before anything is written,
 * then the payload is copied into the window, then the signal applied.
 * Signals (every provider alike): applied by the target's proxy when the
 * message that carries them is applied, after the payload of every earlier
 * message from that sender, so a signal never overtakes the bytes of an
 * earlier put on the way. Messages are applied in the sender's sequence
 * order: providers may report completions out of order (comp_order
 * FI_ORDER_NONE), so one that arrives early is kept, copied out of its
 * buffer, until those before it are applied. A message naming a window
 * not registered here yet waits the same way (the sender registered it
 * first), at most timeout_ms.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "transport/ofi.h"
#include "transport/ofi_lib.h"
#include "transport/transport.h"
#include "transport/wire.h"

#define OFI_API FI_VERSION(1, 9)
#define OFI_HEAD_BYTES (GIN_OFI_PREFIX_BYTES + GIN_TCP_HDR_BYTES)
/* One message, head and payload: within tcp;ofi_rxm's eager size (16
 * KiB), whose larger messages grew its buffer pools by 28 MB a rank in
 * the first seconds of the 4-rank EP soak (8 KiB: 10 MB). */
#define OFI_MSG_BYTES (8u << 10)
#define OFI_PAYLOAD_MAX (OFI_MSG_BYTES - OFI_HEAD_BYTES)
/* Send buffers: OFI_TX_PEER for each peer, at most OFI_TX_MAX in all, and
 * no peer holds more than OFI_TX_PEER in flight: a peer that stops taking
 * (SIGSTOP, a full queue) then holds up puts to itself only, and the
 * proxy's wait names it (with one pool for all, a stopped peer's sends
 * took every buffer and a put to another peer was reported stuck). */
#define OFI_TX_PEER 16
#define OFI_TX_MAX 512
#define OFI_RX_BUFS 64 /* receive buffers kept posted */
/* RMA writes in flight: at most OFI_WR_PEER to one peer (so a target
 * gets at most that many write tokens from each sender beyond what its
 * completion queue is sized for), OFI_WR_MAX in all. */
#define OFI_WR_PEER 16
#define OFI_WR_MAX 256
#define OFI_WR_BYTES (4u << 20) /* the largest single write */
#define OFI_QUEUE 256           /* provider send and receive queue entries */
#define OFI_CQ_BATCH 16
#define OFI_INJECT_MAX 4096 /* injected messages are built on the stack */
#define OFI_FINI_MS 5000    /* fini waits this long for sends to complete */

enum { OFI_TX = 1, OFI_RX = 2, OFI_WR = 3 };

/* A buffer of the pool; ctx first: the provider's, given as the operation
 * context (FI_CONTEXT2 mode). */
typedef struct ofi_buf {
  struct fi_context2 ctx;
  struct ofi_buf *next; /* free list (send buffers) */
  int kind;             /* OFI_TX, OFI_RX, OFI_WR (an RMA write) */
  int peer;             /* a send's or write's destination */
  char *data;           /* OFI_MSG_BYTES (OFI_WR: none) */
} ofi_buf_t;

/* A message applied later: arrived ahead of its turn, or waiting for its
 * window. */
typedef struct ofi_held {
  struct ofi_held *next;
  uint32_t seq;
  size_t len;
  char data[];
} ofi_held_t;

typedef struct ofi_peer {
  int use; /* an ofi peer of this rank */
  fi_addr_t addr;
  int left;         /* it said goodbye */
  gin_result_t err; /* failed: why in msg */
  char msg[224];
  uint64_t again;    /* failures and puts after the first failure (logged
                        once, at close) */
  uint32_t tx_seq;   /* next message to it */
  int tx_busy;       /* its sends in flight, from buffers */
  int wr_busy;       /* its RMA writes in flight */
  uint32_t rx_seq;   /* next message from it to apply */
  ofi_held_t *held;  /* messages from it ahead of rx_seq, by sequence */
  uint64_t stall_ns; /* since when the message at rx_seq waits for a window */
  gin_wire_partial_t partial; /* an operation partly sent */
} ofi_peer_t;

/* This rank's registration of a window for RMA writes (mr NULL: none). */
typedef struct ofi_mr {
  struct fid_mr *mr;
  void *desc;
} ofi_mr_t;

/* Where a peer's window is written: its key, valid for generation gen. */
typedef struct ofi_key {
  int ok;
  uint32_t gen;
  uint64_t addr, key;
} ofi_key_t;

typedef struct ofi_state {
  const gin_job_t *job;
  pthread_mutex_t lock; /* put, flush and progress run on proxy threads */
  struct fi_info *info;
  struct fid_fabric *fabric;
  struct fid_domain *domain;
  struct fid_cq *cq;
  struct fid_av *av;
  struct fid_ep *ep;
  struct fid_mr *mr;
  void *desc;  /* the pool's descriptor where the provider wants one */
  int wait_fd; /* the completion queue's, or -1 */
  char *pool;
  int ntx;         /* send buffers */
  ofi_buf_t *bufs; /* ntx send, then OFI_RX_BUFS receive */
  ofi_buf_t *tx_free;
  ofi_buf_t *rx_unposted; /* receive buffers the provider had no room for */
  int tx_busy;            /* sends in flight */
  /* A failure found while a put drained completions, for progress to
   * report (it aborts the communicator). */
  gin_result_t pend_res;
  char pend_msg[256];
  size_t inject; /* messages this small go without a buffer */
  int npeers, nstalled;
  int closing;       /* in fini: peers that left first fail sends quietly */
  ofi_peer_t *peers; /* [nranks] */
  uint8_t *use;      /* [nranks] */
  uint64_t traffic;  /* messages received (atomic) */
  /* RMA writes. `any` is the same on every rank: some rank uses ofi, so
   * window keys are all-gathered; `rma`: this rank writes. */
  int any, rma;
  int rx_cq_data;   /* remote CQ data consumes a posted receive */
  size_t cq_data;   /* bytes of remote CQ data (4 or 8) */
  uint64_t rma_min; /* GIN_OFI_RMA_MIN */
  uint64_t rma_max; /* the largest single write */
  ofi_mr_t *mrs;    /* [max_windows] */
  ofi_key_t *keys;  /* [max_windows * nranks] */
  ofi_buf_t *wrs;   /* OFI_WR_MAX write contexts */
  ofi_buf_t *wr_free;
  int wr_busy;                        /* writes in flight */
  uint64_t nputs_rma, nwrites, nmsgs; /* counts, logged at fini */
} ofi_state_t;

/* libfabric's text for a negative return value. */
static const char *ofi_err(ssize_t rc) {
  return gin_ofi_lib()->strerror((int)-rc);
}

/* Fails peer p (the first reason sticks), records the error naming both
 * ranks and logs it the first time (a dead peer fails every operation in
 * flight to it: the others are counted, and the count logged at close). */
static gin_result_t peer_fail(ofi_state_t *s, int p, gin_result_t res,
                              const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static gin_result_t peer_fail(ofi_state_t *s, int p, gin_result_t res,
                              const char *fmt, ...) {
  ofi_peer_t *c = &s->peers[p];
  if (c->stall_ns) s->nstalled--; /* nothing more is applied from it */
  c->stall_ns = 0;
  if (c->err) {
    c->again++;
    return gin_error_again(c->err, "ofi: rank %d, peer %d: %s", s->job->rank, p,
                           c->msg);
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->msg, sizeof c->msg, fmt, ap);
  va_end(ap);
  c->err = res;
  return GIN_ERROR(c->err, "ofi: rank %d, peer %d: %s", s->job->rank, p,
                   c->msg);
}

/* ------------------------------------------------------------ receive */

/* Posts receive buffer b; one the provider has no room for now waits in
 * a list that progress posts again. */
static gin_result_t rx_post(ofi_state_t *s, ofi_buf_t *b) {
  if (!s->ep) return GIN_SUCCESS; /* closed after an abort */
  ssize_t rc =
      fi_recv(s->ep, b->data, OFI_MSG_BYTES, s->desc, FI_ADDR_UNSPEC, &b->ctx);
  if (rc == -FI_EAGAIN) {
    b->next = s->rx_unposted;
    s->rx_unposted = b;
    return GIN_SUCCESS;
  }
  if (rc)
    return GIN_ERROR(GIN_ERR_SYSTEM, "ofi: rank %d: fi_recv: %s", s->job->rank,
                     ofi_err(rc));
  return GIN_SUCCESS;
}

static gin_result_t rx_repost(ofi_state_t *s) {
  ofi_buf_t *list = s->rx_unposted;
  s->rx_unposted = NULL;
  gin_result_t res = GIN_SUCCESS;
  while (list) {
    ofi_buf_t *b = list;
    list = b->next;
    gin_result_t r = rx_post(s, b);
    if (r != GIN_SUCCESS && res == GIN_SUCCESS) res = r;
  }
  return res;
}

/* The message at p's turn waits for a window: at most the timeout. */
static gin_result_t peer_stall(ofi_state_t *s, int p, const char *why) {
  ofi_peer_t *c = &s->peers[p];
  uint64_t now = gin_now_ns();
  if (!c->stall_ns) {
    c->stall_ns = now;
    s->nstalled++;
    return GIN_ERR_AGAIN;
  }
  if (now - c->stall_ns > (uint64_t)s->job->timeout_ms * 1000000ull)
    return peer_fail(s, p, GIN_ERR_PROTOCOL, "rank %d: %s after %lld ms", p,
                     why, (long long)s->job->timeout_ms);
  return GIN_ERR_AGAIN;
}

static void peer_unstall(ofi_state_t *s, ofi_peer_t *c) {
  if (c->stall_ns) s->nstalled--;
  c->stall_ns = 0;
}

/* Applies one message from p, its turn come: GIN_ERR_AGAIN if it waits
 * for a window. An empty one (len 0) is a write token: the write it
 * stands for has landed, nothing is left to apply. */
static gin_result_t rx_apply(ofi_state_t *s, int p, const char *msg,
                             size_t len) {
  if (len == 0) return GIN_SUCCESS;
  const gin_job_t *job = s->job;
  ofi_peer_t *c = &s->peers[p];
  char why[160];
  gin_tcp_hdr_t h;
  gin_result_t res =
      gin_tcp_header_check(msg + GIN_OFI_PREFIX_BYTES, GIN_TCP_HDR_BYTES,
                           job->wins, job->max_windows, why, sizeof why, &h);
  if (res == GIN_ERR_AGAIN) return peer_stall(s, p, why);
  peer_unstall(s, c);
  if (res != GIN_SUCCESS)
    return peer_fail(s, p, GIN_ERR_PROTOCOL, "rank %d sent a bad operation: %s",
                     p, why);
  if (c->left)
    return peer_fail(s, p, GIN_ERR_PROTOCOL,
                     "rank %d sent data after its goodbye", p);
  if (len - OFI_HEAD_BYTES != h.bytes)
    return peer_fail(s, p, GIN_ERR_PROTOCOL,
                     "rank %d sent %zu payload bytes for a header of %llu", p,
                     len - OFI_HEAD_BYTES, (unsigned long long)h.bytes);
  if (h.op == GIN_TCP_OP_BYE) {
    c->left = 1;
    return GIN_SUCCESS;
  }
  if (h.bytes) {
    const char *payload = msg + OFI_HEAD_BYTES;
    char *cpu = gin_wire_cpu_dst(job, &h);
    if (cpu)
      memcpy(cpu, payload, h.bytes);
    else if ((res = gin_arch_copy((char *)job->wins[h.dst_win].ptr + h.dst_off,
                                  payload, h.bytes)) != GIN_SUCCESS)
      return peer_fail(s, p, res, "payload from rank %d: %s", p,
                       gin_last_error());
  }
  if ((res = gin_wire_signal(job, &h)) != GIN_SUCCESS)
    return peer_fail(s, p, res, "signal from rank %d: %s", p, gin_last_error());
  return GIN_SUCCESS;
}

/* Keeps a copy of a message for later, in sequence order. */
static gin_result_t rx_hold(ofi_state_t *s, int p, uint32_t seq,
                            const char *msg, size_t len) {
  ofi_peer_t *c = &s->peers[p];
  ofi_held_t *m = (ofi_held_t *)malloc(sizeof *m + len);
  if (!m)
    return peer_fail(s, p, GIN_ERR_NOMEM, "holding a message of %zu bytes",
                     len);
  m->seq = seq;
  m->len = len;
  if (len) memcpy(m->data, msg, len);
  ofi_held_t **pp = &c->held;
  while (*pp && (int32_t)((*pp)->seq - seq) < 0)
    pp = &(*pp)->next;
  if (*pp && (*pp)->seq == seq) {
    free(m);
    return peer_fail(s, p, GIN_ERR_PROTOCOL, "rank %d sent message %u twice", p,
                     seq);
  }
  m->next = *pp;
  *pp = m;
  return GIN_SUCCESS;
}

/* Applies the held messages of p whose turn came. */
static gin_result_t rx_drain_held(ofi_state_t *s, int p) {
  ofi_peer_t *c = &s->peers[p];
  while (!c->err && c->held && c->held->seq == c->rx_seq) {
    ofi_held_t *m = c->held;
    gin_result_t res = rx_apply(s, p, m->data, m->len);
    if (res == GIN_ERR_AGAIN) return GIN_SUCCESS; /* stays first */
    if (res != GIN_SUCCESS) return res;
    c->held = m->next;
    free(m);
    c->rx_seq++;
  }
  return GIN_SUCCESS;
}

/* Message (or write token: len 0) seq from p, applied in p's sequence
 * order: at once where its turn came, else held. */
static gin_result_t rx_in_order(ofi_state_t *s, int p, uint32_t seq,
                                const char *msg, size_t len) {
  __atomic_fetch_add(&s->traffic, 1, __ATOMIC_RELAXED);
  ofi_peer_t *c = &s->peers[p];
  if (c->err) return GIN_SUCCESS; /* reported; nothing more from it */
  if (seq != c->rx_seq || c->held) {
    if ((int32_t)(seq - c->rx_seq) < 0)
      return peer_fail(s, p, GIN_ERR_PROTOCOL,
                       "rank %d sent message %u again (next is %u)", p, seq,
                       c->rx_seq);
    GIN_CHECK(rx_hold(s, p, seq, msg, len));
    return rx_drain_held(s, p);
  }
  gin_result_t res = rx_apply(s, p, msg, len);
  if (res == GIN_ERR_AGAIN) return rx_hold(s, p, seq, msg, len);
  if (res != GIN_SUCCESS) return res;
  c->rx_seq++;
  return GIN_SUCCESS;
}

/* One received message in a receive buffer (reposted by the caller). */
static gin_result_t rx_message(ofi_state_t *s, const char *msg, size_t len) {
  char why[160];
  gin_ofi_prefix_t pre;
  gin_result_t res =
      gin_ofi_prefix_check(msg, len, OFI_HEAD_BYTES, s->job->rank,
                           s->job->nranks, s->use, why, sizeof why, &pre);
  if (res != GIN_SUCCESS)
    return GIN_ERROR(GIN_ERR_PROTOCOL,
                     "ofi: rank %d received a bad message: %s", s->job->rank,
                     why);
  return rx_in_order(s, pre.rank, pre.seq, msg, len);
}

static uint32_t rx_next_seq(void *arg, int p) {
  return ((ofi_state_t *)arg)->peers[p].rx_seq;
}

/* One write token (a write's remote CQ data) received. */
static gin_result_t rx_token(ofi_state_t *s, uint64_t data) {
  char why[160];
  int p;
  uint32_t seq;
  gin_result_t res =
      gin_ofi_token_decode(data, s->cq_data, s->job->rank, s->job->nranks,
                           s->use, rx_next_seq, s, why, sizeof why, &p, &seq);
  if (res != GIN_SUCCESS)
    return GIN_ERROR(GIN_ERR_PROTOCOL,
                     "ofi: rank %d received a bad write token: %s",
                     s->job->rank, why);
  return rx_in_order(s, p, seq, NULL, 0);
}

/* The free list of send buffers (OFI_TX) or write contexts (OFI_WR). */
static ofi_buf_t **buf_pool(ofi_state_t *s, int kind) {
  return kind == OFI_WR ? &s->wr_free : &s->tx_free;
}

/* Puts b back on its free list (not counted as in flight). */
static void buf_back(ofi_state_t *s, ofi_buf_t *b) {
  ofi_buf_t **pool = buf_pool(s, b->kind);
  b->next = *pool;
  *pool = b;
}

/* A send or write completed (or failed): its buffer or context back. */
static void tx_done(ofi_state_t *s, ofi_buf_t *b) {
  if (b->kind == OFI_WR) {
    s->wr_busy--;
    s->peers[b->peer].wr_busy--;
    buf_back(s, b);
    return;
  }
  s->tx_busy--;
  s->peers[b->peer].tx_busy--;
  buf_back(s, b);
}

/* Reads completions: receives are applied and reposted, send buffers
 * return to the pool. Returns the first failure. */
static gin_result_t cq_drain(ofi_state_t *s) {
  gin_result_t res = GIN_SUCCESS, r;
  for (;;) {
    struct fi_cq_data_entry ev[OFI_CQ_BATCH];
    ssize_t n = fi_cq_read(s->cq, ev, OFI_CQ_BATCH);
    if (n == -FI_EAGAIN) break;
    if (n == -FI_EAVAIL) {
      struct fi_cq_err_entry e;
      memset(&e, 0, sizeof e);
      if (fi_cq_readerr(s->cq, &e, 0) < 0) break;
      ofi_buf_t *b = e.flags & FI_REMOTE_CQ_DATA && !s->rx_cq_data
                         ? NULL
                         : (ofi_buf_t *)e.op_context;
      char text[160];
      snprintf(text, sizeof text, "%s (provider: %s)",
               gin_ofi_lib()->strerror(e.err),
               fi_cq_strerror(s->cq, e.prov_errno, e.err_data, NULL, 0));
      if (b && (b->kind == OFI_TX || b->kind == OFI_WR)) {
        int wr = b->kind == OFI_WR;
        tx_done(s, b);
        if (s->closing) continue; /* a goodbye to a peer already gone */
        r = peer_fail(s, b->peer, GIN_ERR_REMOTE, "%s to rank %d failed: %s",
                      wr ? "RMA write" : "send", b->peer, text);
      } else {
        r = GIN_ERROR(GIN_ERR_REMOTE, "ofi: rank %d: a receive failed: %s",
                      s->job->rank, text);
        if (b && e.err != FI_ECANCELED) {
          gin_result_t q = rx_post(s, b);
          if (q != GIN_SUCCESS) r = q;
        }
      }
      if (res == GIN_SUCCESS) res = r;
      continue;
    }
    if (n < 0) {
      r = GIN_ERROR(GIN_ERR_SYSTEM, "ofi: rank %d: fi_cq_read: %s",
                    s->job->rank, ofi_err(n));
      return res == GIN_SUCCESS ? r : res;
    }
    for (ssize_t i = 0; i < n; i++) {
      if (ev[i].flags & FI_REMOTE_CQ_DATA) { /* a peer's write landed */
        r = rx_token(s, ev[i].data);
        if (r != GIN_SUCCESS && res == GIN_SUCCESS) res = r;
        ofi_buf_t *b = (ofi_buf_t *)ev[i].op_context;
        if (s->rx_cq_data && b && b->kind == OFI_RX &&
            (r = rx_post(s, b)) != GIN_SUCCESS && res == GIN_SUCCESS)
          res = r;
        continue;
      }
      ofi_buf_t *b = (ofi_buf_t *)ev[i].op_context;
      if (!b) continue;
      if (b->kind == OFI_TX || b->kind == OFI_WR) {
        tx_done(s, b);
        continue;
      }
      r = rx_message(s, b->data, ev[i].len);
      if (r != GIN_SUCCESS && res == GIN_SUCCESS) res = r;
      r = rx_post(s, b);
      if (r != GIN_SUCCESS && res == GIN_SUCCESS) res = r;
    }
    if (n < OFI_CQ_BATCH) break;
  }
  return res;
}

/* cq_drain from put, whose caller does not hear of receives: a failure is
 * kept for progress to report (it aborts the communicator). */
static void cq_drain_keep(ofi_state_t *s) {
  gin_result_t res = cq_drain(s);
  if (res != GIN_SUCCESS && s->pend_res == GIN_SUCCESS) {
    s->pend_res = res;
    snprintf(s->pend_msg, sizeof s->pend_msg, "%s", gin_last_error());
  }
}

/* ------------------------------------------------------------ send */

/* A free send buffer (OFI_TX) or write context (OFI_WR) for peer p,
 * within the per-peer cap (OFI_TX_PEER, OFI_WR_PEER); where none is free,
 * completions are read once first. NULL: none now (the caller says
 * GIN_ERR_AGAIN). */
static ofi_buf_t *buf_take(ofi_state_t *s, int p, int kind) {
  ofi_peer_t *c = &s->peers[p];
  ofi_buf_t **pool = buf_pool(s, kind);
  const int *busy = kind == OFI_WR ? &c->wr_busy : &c->tx_busy;
  int cap = kind == OFI_WR ? OFI_WR_PEER : OFI_TX_PEER;
  if (*busy >= cap || !*pool) {
    cq_drain_keep(s);
    if (*busy >= cap || !*pool) return NULL;
  }
  ofi_buf_t *b = *pool;
  *pool = b->next;
  b->peer = p;
  return b;
}

/* Writes this rank's message prefix with sequence number seq to p. */
static void tx_prefix(ofi_state_t *s, uint32_t seq, char *p) {
  gin_ofi_prefix_t pre = {GIN_OFI_MAGIC, GIN_OFI_VERSION, 0, s->job->rank, seq};
  gin_ofi_prefix_encode(&pre, (uint8_t *)p);
}

/* Writes the prefix and header of x's chunk [done, done + chunk) to p. */
static void tx_head(ofi_state_t *s, const gin_xfer_t *x, uint32_t seq,
                    uint64_t done, uint64_t chunk, int last, char *p) {
  tx_prefix(s, seq, p);
  gin_tcp_hdr_t h;
  gin_wire_header(s->job, x, done, chunk, last, &h);
  gin_tcp_hdr_encode(&h, (uint8_t *)p + GIN_OFI_PREFIX_BYTES);
}

/* Sends one message of len bytes in msg to p: injected (msg may be on the
 * caller's stack) or from its send buffer b. GIN_ERR_AGAIN: no room now
 * (b is back in the pool). */
static gin_result_t tx_send(ofi_state_t *s, int p, ofi_buf_t *b,
                            const char *msg, size_t len) {
  ofi_peer_t *c = &s->peers[p];
  ssize_t rc = !s->ep ? -FI_ECANCELED /* closed after an abort */
               : b    ? fi_send(s->ep, b->data, len, s->desc, c->addr, &b->ctx)
                      : fi_inject(s->ep, msg, len, c->addr);
  if (rc == 0) {
    if (b) {
      s->tx_busy++;
      c->tx_busy++;
    }
    c->tx_seq++;
    return GIN_SUCCESS;
  }
  if (b) buf_back(s, b);
  if (rc == -FI_EAGAIN) return GIN_ERR_AGAIN;
  if (s->closing) return GIN_ERR_REMOTE; /* a goodbye: nobody to tell */
  return peer_fail(s, p, GIN_ERR_SYSTEM, "%s to rank %d: %s",
                   b ? "fi_send" : "fi_inject", p, ofi_err(rc));
}

/* The key of x's destination at its peer, where x goes as RMA writes
 * (a put of at least rma_min bytes, both windows registered for them);
 * NULL where it goes as messages. */
static const ofi_key_t *rma_key(ofi_state_t *s, const gin_xfer_t *x,
                                uint64_t total) {
  if (!s->rma || x->op != GIN_OP_PUT || total < s->rma_min) return NULL;
  const gin_job_t *job = s->job;
  const ofi_key_t *k =
      &s->keys[(size_t)x->dst_win * (size_t)job->nranks + (size_t)x->peer];
  if (!k->ok || !s->mrs[x->src_win].mr ||
      k->gen != __atomic_load_n(&job->wins[x->dst_win].gen, __ATOMIC_ACQUIRE))
    return NULL;
  return k;
}

/* Writes x's bytes [*done, total) from src into p's window by k, each
 * write a step of p's message sequence (its token); *done follows.
 * GIN_ERR_AGAIN: no context free or no room now. */
static gin_result_t rma_write(ofi_state_t *s, int p, const gin_xfer_t *x,
                              const ofi_key_t *k, const char *src,
                              uint64_t total, uint64_t *done) {
  ofi_peer_t *c = &s->peers[p];
  void *desc = s->mrs[x->src_win].desc;
  while (*done < total) {
    uint64_t chunk = total - *done < s->rma_max ? total - *done : s->rma_max;
    if (!s->ep) /* closed after an abort */
      return GIN_ERROR(GIN_ERR_ABORTED, "ofi: rank %d: closed (aborted)",
                       s->job->rank);
    ofi_buf_t *b = buf_take(s, p, OFI_WR);
    if (!b) return GIN_ERR_AGAIN;
    ssize_t rc =
        fi_writedata(s->ep, src + *done, chunk, desc,
                     gin_ofi_token_encode(s->job->rank, c->tx_seq, s->cq_data),
                     c->addr, k->addr + x->dst_off + *done, k->key, &b->ctx);
    if (rc) buf_back(s, b);
    if (rc == -FI_EAGAIN) return GIN_ERR_AGAIN;
    if (rc)
      return peer_fail(s, p, GIN_ERR_SYSTEM,
                       "fi_writedata of %llu bytes to rank %d: %s",
                       (unsigned long long)chunk, p, ofi_err(rc));
    s->wr_busy++;
    c->wr_busy++;
    c->tx_seq++;
    *done += chunk;
  }
  return GIN_SUCCESS;
}

/* Sends x's signal alone, after its writes: a message with no payload. */
static gin_result_t tx_signal(ofi_state_t *s, int p, const gin_xfer_t *x) {
  ofi_peer_t *c = &s->peers[p];
  gin_xfer_t sig = *x;
  sig.op = GIN_OP_SIGNAL;
  sig.bytes = 0;
  char msg[OFI_HEAD_BYTES];
  tx_head(s, &sig, c->tx_seq, 0, 0, 1, msg);
  ofi_buf_t *b = NULL;
  if (sizeof msg > s->inject) {
    if (!(b = buf_take(s, p, OFI_TX))) return GIN_ERR_AGAIN;
    memcpy(b->data, msg, sizeof msg);
  }
  return tx_send(s, p, b, msg, sizeof msg);
}

/* Sends x as messages to p from byte *done of its payload on (*done
 * follows). GIN_ERR_AGAIN: no buffer free or no room now. */
static gin_result_t ofi_send_msgs(ofi_state_t *s, int p, const gin_xfer_t *x,
                                  const char *src, uint64_t total,
                                  uint64_t *donep) {
  ofi_peer_t *c = &s->peers[p];
  uint64_t done = *donep;
  gin_result_t res = GIN_SUCCESS;
  do {
    uint64_t chunk =
        total - done < OFI_PAYLOAD_MAX ? total - done : OFI_PAYLOAD_MAX;
    size_t len = OFI_HEAD_BYTES + (size_t)chunk;
    int last = done + chunk == total;
    if (len <= s->inject &&
        (x->op != GIN_OP_PUT || gin_arch_device_mem_is_host())) {
      char msg[OFI_INJECT_MAX];
      tx_head(s, x, c->tx_seq, done, chunk, last, msg);
      if (chunk) memcpy(msg + OFI_HEAD_BYTES, src + done, chunk);
      if ((res = tx_send(s, p, NULL, msg, len)) != GIN_SUCCESS) break;
      done += chunk;
      continue;
    }
    ofi_buf_t *b = buf_take(s, p, OFI_TX);
    if (!b) {
      res = GIN_ERR_AGAIN;
      break;
    }
    tx_head(s, x, c->tx_seq, done, chunk, last, b->data);
    if (chunk) {
      if (x->op == GIN_OP_PUT)
        res = gin_arch_copy(b->data + OFI_HEAD_BYTES, src + done, chunk);
      else
        memcpy(b->data + OFI_HEAD_BYTES, src + done, chunk);
      if (res != GIN_SUCCESS) {
        buf_back(s, b);
        return peer_fail(s, p, res, "staging %llu bytes: %s",
                         (unsigned long long)chunk, gin_last_error());
      }
    }
    if ((res = tx_send(s, p, b, NULL, len)) != GIN_SUCCESS) break;
    done += chunk;
  } while (done < total);
  *donep = done;
  return res;
}

static gin_result_t ofi_put_locked(ofi_state_t *s, const gin_xfer_t *x) {
  int p = x->peer, me = s->job->rank;
  ofi_peer_t *c = &s->peers[p];
  if (c->err) { /* logged when it failed; counted, logged at close */
    c->again++;
    return gin_error_again(c->err, "ofi: rank %d cannot reach rank %d: %s", me,
                           p, c->msg);
  }
  if (c->left)
    return GIN_ERROR(
        GIN_ERR_REMOTE,
        "ofi: rank %d has destroyed its communicator (put from rank %d)", p,
        me);
  if (!c->use)
    return GIN_ERROR(GIN_ERR_INTERNAL,
                     "ofi: rank %d is not an ofi peer of "
                     "rank %d",
                     p, me);
  const char *src;
  uint64_t total, done;
  gin_result_t res = gin_wire_payload(x, "ofi", &src, &total);
  if (res == GIN_SUCCESS)
    res = gin_wire_partial_resume(&c->partial, x, "ofi", p, &done);
  if (res != GIN_SUCCESS) return res;
  const ofi_key_t *k = rma_key(s, x, total);
  uint32_t seq0 = c->tx_seq;
  if (k) {
    /* Partly done: done == total once only the signal is left. */
    res = rma_write(s, p, x, k, src, total, &done);
    s->nwrites += c->tx_seq - seq0;
    if (res == GIN_SUCCESS && x->has_signal) res = tx_signal(s, p, x);
    if (res == GIN_SUCCESS) s->nputs_rma++;
  } else {
    res = ofi_send_msgs(s, p, x, src, total, &done);
    s->nmsgs += c->tx_seq - seq0;
  }
  if (res == GIN_ERR_AGAIN) {
    cq_drain_keep(s); /* the provider's room comes with its progress */
    gin_wire_partial_save(&c->partial, x, done);
    return GIN_ERR_AGAIN;
  }
  gin_wire_partial_save(&c->partial, x, 0);
  return res;
}

static gin_result_t ofi_put(void *state, const gin_xfer_t *x) {
  ofi_state_t *s = (ofi_state_t *)state;
  if (x->peer < 0 || x->peer >= s->job->nranks)
    return GIN_ERROR(GIN_ERR_INTERNAL, "ofi: peer %d out of range", x->peer);
  if (x->peer == s->job->rank) return gin_wire_self_put(s->job, x);
  pthread_mutex_lock(&s->lock);
  gin_result_t res = ofi_put_locked(s, x);
  pthread_mutex_unlock(&s->lock);
  return res;
}

/* Messages' sources are copied into send buffers as put starts them;
 * RMA writes read their sources until they complete: GIN_ERR_AGAIN while
 * some are in flight (the proxy asks again, naming ofi_flush_peer's). A
 * write that failed is reported here. */
static gin_result_t ofi_flush(void *state) {
  ofi_state_t *s = (ofi_state_t *)state;
  if (!s->rma) return GIN_SUCCESS;
  gin_result_t res = GIN_SUCCESS;
  pthread_mutex_lock(&s->lock);
  if (s->wr_busy > 0) cq_drain_keep(s);
  if (s->pend_res != GIN_SUCCESS) {
    res = GIN_ERROR(s->pend_res, "%s", s->pend_msg);
    s->pend_res = GIN_SUCCESS;
  } else if (s->wr_busy > 0) {
    res = GIN_ERR_AGAIN;
  }
  pthread_mutex_unlock(&s->lock);
  return res;
}

/* The peer with the most RMA writes in flight, -1 if none. */
static int ofi_flush_peer(void *state) {
  ofi_state_t *s = (ofi_state_t *)state;
  int best = -1;
  pthread_mutex_lock(&s->lock);
  for (int p = 0; s->peers && p < s->job->nranks; p++)
    if (s->peers[p].wr_busy > 0 &&
        (best < 0 || s->peers[p].wr_busy > s->peers[best].wr_busy))
      best = p;
  pthread_mutex_unlock(&s->lock);
  return best;
}

/* Drops this rank's registration of window `slot` and every peer's key
 * for it. Under the lock. */
static void window_drop(ofi_state_t *s, uint32_t slot) {
  if (!s->mrs) return;
  /* After an abort peers' writes may still be arriving, also into this
   * window, whose memory is released next: the endpoint closes first, so
   * that nothing lands there any more (closing the registration alone
   * does not stop a write already under way: tcp;ofi_rxm then crashed
   * at a later close). Sends fail from then on; the job is over. */
  if (s->mrs[slot].mr && s->ep && gin_job_aborted_by(s->job)) {
    fi_close(&s->ep->fid);
    s->ep = NULL;
  }
  if (s->mrs[slot].mr) fi_close(&s->mrs[slot].mr->fid);
  s->mrs[slot].mr = NULL;
  s->mrs[slot].desc = NULL;
  for (int r = 0; r < s->job->nranks; r++)
    s->keys[(size_t)slot * (size_t)s->job->nranks + (size_t)r].ok = 0;
}

/* Registers window `slot` (this rank's memory) for RMA writes; its
 * address and key in *addr and *key. 0 where it cannot (logged: its puts
 * then go as messages). Under the lock. */
static int window_reg(ofi_state_t *s, uint32_t slot, uint64_t *addr,
                      uint64_t *key) {
  const gin_win_slot_t *w = &s->job->wins[slot];
  uint64_t mode = s->info->domain_attr->mr_mode;
  struct fid_mr *mr = NULL;
  /* Requested keys (providers that choose none) are unique: the pool
   * has 0. */
  int rc = fi_mr_reg(s->domain, w->ptr, w->size, FI_WRITE | FI_REMOTE_WRITE, 0,
                     1 + (uint64_t)slot, 0, &mr, NULL);
  const char *step = "fi_mr_reg";
  if (rc == 0 && (mode & FI_MR_ENDPOINT) &&
      ((step = "fi_mr_bind", rc = fi_mr_bind(mr, &s->ep->fid, 0)) ||
       (step = "fi_mr_enable", rc = fi_mr_enable(mr))))
    fi_close(&mr->fid);
  if (rc != 0) {
    GIN_INFO(NET,
             "ofi: rank %d: window %u (%zu bytes) not registered for RMA "
             "writes (%s: %s): its puts go as messages",
             s->job->rank, slot, w->size, step, ofi_err(rc));
    return 0;
  }
  s->mrs[slot].mr = mr;
  s->mrs[slot].desc = fi_mr_desc(mr);
  *key = fi_mr_key(mr);
  *addr = mode & FI_MR_VIRT_ADDR ? (uint64_t)(uintptr_t)w->ptr : 0;
  return 1;
}

/* gin_transport_ops_t.window: registering, every rank registers its part
 * where it writes (host memory, a provider with RMA) and all-gather their
 * keys (where some rank uses ofi: `any` is the same everywhere). */
static gin_result_t ofi_window(void *state, uint32_t slot, int live) {
  ofi_state_t *s = (ofi_state_t *)state;
  const gin_job_t *job = s->job;
  if (slot >= job->max_windows)
    return GIN_ERROR(GIN_ERR_INTERNAL, "ofi: window slot %u of %u", slot,
                     job->max_windows);
  pthread_mutex_lock(&s->lock);
  window_drop(s, slot);
  pthread_mutex_unlock(&s->lock);
  if (!live || !s->any) return GIN_SUCCESS;
  int n = job->nranks;
  uint8_t *all = (uint8_t *)calloc((size_t)n, GIN_OFI_KEY_BYTES);
  uint64_t addr = 0, key = 0;
  uint32_t ok = 0;
  uint32_t gen = __atomic_load_n(&job->wins[slot].gen, __ATOMIC_ACQUIRE);
  if (s->rma && all) {
    pthread_mutex_lock(&s->lock);
    ok = (uint32_t)window_reg(s, slot, &addr, &key);
    pthread_mutex_unlock(&s->lock);
  }
  uint8_t mine[GIN_OFI_KEY_BYTES];
  gin_ofi_key_encode(ok, gen, addr, key, mine);
  /* Without memory for the keys this rank cannot take part: its peers'
   * exchange then ends at the timeout. */
  gin_result_t res =
      all ? (memcpy(all + (size_t)job->rank * GIN_OFI_KEY_BYTES, mine,
                    sizeof mine),
             job->allgather(job->owner, all, GIN_OFI_KEY_BYTES))
          : GIN_ERROR(GIN_ERR_NOMEM, "ofi: window keys of %d ranks", n);
  pthread_mutex_lock(&s->lock);
  if (res != GIN_SUCCESS) {
    window_drop(s, slot);
  } else {
    for (int r = 0; r < n; r++) {
      if (r == job->rank || !s->use[r]) continue;
      ofi_key_t *k = &s->keys[(size_t)slot * (size_t)n + (size_t)r];
      k->ok = gin_ofi_key_decode(all + (size_t)r * GIN_OFI_KEY_BYTES, &k->gen,
                                 &k->addr, &k->key) &&
              k->gen == gen;
    }
  }
  pthread_mutex_unlock(&s->lock);
  free(all);
  return res;
}

static gin_result_t ofi_progress(void *state) {
  ofi_state_t *s = (ofi_state_t *)state;
  if (s->npeers == 0 || pthread_mutex_trylock(&s->lock) != 0)
    return GIN_SUCCESS; /* another thread is progressing */
  gin_result_t res = cq_drain(s), r;
  if (s->pend_res != GIN_SUCCESS) {
    r = GIN_ERROR(s->pend_res, "%s", s->pend_msg);
    s->pend_res = GIN_SUCCESS;
    if (res == GIN_SUCCESS) res = r;
  }
  if (s->rx_unposted && (r = rx_repost(s)) != GIN_SUCCESS && res == GIN_SUCCESS)
    res = r;
  for (int p = 0; s->nstalled > 0 && p < s->job->nranks; p++)
    if (s->peers[p].stall_ns && (r = rx_drain_held(s, p)) != GIN_SUCCESS &&
        res == GIN_SUCCESS)
      res = r;
  pthread_mutex_unlock(&s->lock);
  return res;
}

/* The completion queue's descriptor once libfabric says a wait is safe
 * (fi_trywait: nothing pending that only progress would find); busy while
 * a message waits for a window, or where the queue has no descriptor. */
static int ofi_wait_fd(void *state) {
  ofi_state_t *s = (ofi_state_t *)state;
  if (s->npeers == 0) return -1;
  if (s->wait_fd < 0 || pthread_mutex_trylock(&s->lock) != 0)
    return GIN_WAIT_BUSY;
  struct fid *f = &s->cq->fid;
  int fd = s->nstalled == 0 && fi_trywait(s->fabric, &f, 1) == FI_SUCCESS
               ? s->wait_fd
               : GIN_WAIT_BUSY;
  pthread_mutex_unlock(&s->lock);
  return fd;
}

static uint64_t ofi_traffic(void *state) {
  return __atomic_load_n(&((ofi_state_t *)state)->traffic, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------ setup */

static void ofi_close(struct fid *f) {
  if (f) fi_close(f);
}

/* Says goodbye to every peer and waits, bounded, for the sends in flight;
 * then closes everything. */
static void ofi_fini(void *state) {
  ofi_state_t *s = (ofi_state_t *)state;
  if (!s) return;
  int n = s->job->nranks;
  s->closing = 1;
  /* Goodbyes go where messages went before: a first message opens a
   * connection (tcp;ofi_rxm), which a peer closing at the same time may
   * accept after its endpoint closed, leaving it a socket. None once the
   * communicator aborted: everyone is closing. */
  if (s->ep && !gin_job_aborted_by(s->job)) {
    for (int p = 0; p < n; p++) {
      ofi_peer_t *c = &s->peers[p];
      if (!c->use || c->err || c->left || (!c->tx_seq && !c->rx_seq)) continue;
      char msg[OFI_HEAD_BYTES];
      tx_prefix(s, c->tx_seq, msg);
      gin_tcp_hdr_t h = {.magic = GIN_TCP_HDR_MAGIC,
                         .version = GIN_TCP_VERSION,
                         .op = GIN_TCP_OP_BYE};
      gin_tcp_hdr_encode(&h, (uint8_t *)msg + GIN_OFI_PREFIX_BYTES);
      ofi_buf_t *b = s->tx_free;
      if (b) {
        s->tx_free = b->next;
        b->peer = p;
        memcpy(b->data, msg, sizeof msg);
      }
      if (b || sizeof msg <= s->inject) (void)tx_send(s, p, b, msg, sizeof msg);
    }
    int64_t ms =
        s->job->timeout_ms < OFI_FINI_MS ? s->job->timeout_ms : OFI_FINI_MS;
    uint64_t deadline = gin_now_ns() + (uint64_t)ms * 1000000ull;
    while (s->tx_busy + s->wr_busy > 0 && gin_now_ns() < deadline)
      (void)cq_drain(s);
    if (s->tx_busy + s->wr_busy > 0)
      GIN_INFO(NET,
               "ofi: rank %d: %d sends, %d writes still in flight at close",
               s->job->rank, s->tx_busy, s->wr_busy);
  }
  for (int p = 0; s->peers && p < n; p++)
    if (s->peers[p].again)
      GIN_WARN(NET,
               "ofi: rank %d, peer %d: %llu more operations failed after the "
               "first (%s)",
               s->job->rank, p, (unsigned long long)s->peers[p].again,
               s->peers[p].msg);
  if (s->npeers)
    GIN_INFO(NET,
             "ofi: rank %d: %llu puts as %llu RMA writes, %llu messages "
             "otherwise",
             s->job->rank, (unsigned long long)s->nputs_rma,
             (unsigned long long)s->nwrites, (unsigned long long)s->nmsgs);
  /* Windows' registrations first: with the endpoint gone, closing one
   * that a peer's write was still arriving into crashed in tcp;ofi_rxm. */
  for (uint32_t i = 0; s->mrs && i < s->job->max_windows; i++)
    ofi_close(s->mrs[i].mr ? &s->mrs[i].mr->fid : NULL);
  ofi_close(s->ep ? &s->ep->fid : NULL);
  ofi_close(s->mr ? &s->mr->fid : NULL);
  ofi_close(s->av ? &s->av->fid : NULL);
  ofi_close(s->cq ? &s->cq->fid : NULL);
  ofi_close(s->domain ? &s->domain->fid : NULL);
  ofi_close(s->fabric ? &s->fabric->fid : NULL);
  if (s->info) gin_ofi_lib()->freeinfo(s->info);
  for (int p = 0; s->peers && p < n; p++)
    while (s->peers[p].held) {
      ofi_held_t *m = s->peers[p].held;
      s->peers[p].held = m->next;
      free(m);
    }
  gin_arch_staging_free(s->pool);
  free(s->bufs);
  free(s->wrs);
  free(s->mrs);
  free(s->keys);
  free(s->peers);
  free(s->use);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

/* The hints gin needs; with `ordered` the send-after-send ordering too,
 * with `rma` RMA writes (their remote CQ data comes with FI_RMA). */
static struct fi_info *ofi_hints(int ordered, int rma) {
  struct fi_info *h = gin_ofi_lib()->dupinfo(NULL);
  if (!h) return NULL;
  h->ep_attr->type = FI_EP_RDM;
  h->caps = FI_MSG | (rma ? FI_RMA | FI_WRITE | FI_REMOTE_WRITE : 0);
  h->mode = FI_CONTEXT | FI_CONTEXT2 | (rma ? FI_RX_CQ_DATA : 0);
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
                            FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  h->domain_attr->threading = FI_THREAD_DOMAIN;
  /* Queues sized to what the transport keeps in flight: the providers'
   * defaults (2048 entries, each with its buffer in tcp;ofi_rxm) cost
   * 150 MB a process. */
  h->tx_attr->size = OFI_QUEUE;
  h->rx_attr->size = OFI_QUEUE;
  if (ordered) {
    h->tx_attr->msg_order = FI_ORDER_SAS;
    h->rx_attr->msg_order = FI_ORDER_SAS;
  }
  const char *prov = gin_ofi_param_provider();
  if (prov[0]) h->fabric_attr->prov_name = strdup(prov);
  return h;
}

/* Whether the provider of info carries write tokens: remote CQ data of
 * 8 bytes, or of 4 in jobs of at most GIN_OFI_TOKEN4_RANKS ranks; and
 * windows in host memory (GPU memory would need FI_HMEM). */
static int ofi_rma_usable(const struct fi_info *fi, int nranks) {
  size_t d = fi->domain_attr->cq_data_size;
  return gin_arch_device_mem_is_host() &&
         (d >= 8 || (d >= 4 && nranks <= GIN_OFI_TOKEN4_RANKS));
}

/* Providers that take messages unless GIN_OFI_RMA=1, for what a peer
 * that stops or fails does to them (libfabric 1.17, the fault tests):
 * shm's writes to live peers stopped completing while one peer was
 * stopped, where a stopped peer must hold up puts to itself only; with
 * tcp;ofi_rxm a process whose peer aborted in the middle of writes into
 * it crashed in libfabric at its next close (3 of 20 runs). Both carry
 * RMA writes correctly otherwise (the suite passes with them forced). */
static int ofi_rma_default_off(const struct fi_info *fi) {
  const char *p = fi->fabric_attr->prov_name;
  return !strcmp(p, "shm") || !strncmp(p, "tcp", 3);
}

/* The IP address entry fi's endpoints send from, into *a (port 0): 1, or
 * 0 where its addresses are not socket addresses (verbs over IB, efa,
 * cxi, shm) or it names none. */
static int ofi_entry_ip(const struct fi_info *fi, gin_net_addr_t *a) {
  if (!fi->src_addr ||
      (fi->addr_format != FI_SOCKADDR && fi->addr_format != FI_SOCKADDR_IN &&
       fi->addr_format != FI_SOCKADDR_IN6))
    return 0;
  if (gin_net_addr_from_sockaddr((const struct sockaddr *)fi->src_addr, a) !=
      GIN_SUCCESS)
    return 0;
  a->port = 0;
  return 1;
}

/* Of fi_getinfo's entries, the one to open: among those of the first
 * entry's provider (its choice of fabric stands), the one whose address is
 * the source of this host's route to the bootstrap root, the network the
 * job's ranks already reach each other over; else the first of the root's
 * family that a peer on another host can reach (not loopback, not IPv6
 * link-local); else the first. Socket-address providers list an entry per
 * interface address, loopback and link-local ones included, in an order
 * that says nothing of which the peers reach: the first may be an address
 * peers cannot connect to (their first send then fails). */
static const struct fi_info *ofi_choose(const struct fi_info *list,
                                        const gin_job_t *job) {
  gin_net_addr_t want, a;
  int routed = gin_net_route_source(&job->root, &want) == GIN_SUCCESS;
  const struct fi_info *reachable = NULL;
  const char *prov = list->fabric_attr->prov_name;
  for (const struct fi_info *fi = list; fi; fi = fi->next) {
    if (strcmp(fi->fabric_attr->prov_name, prov) || !ofi_entry_ip(fi, &a))
      continue;
    if (routed && a.family == want.family &&
        !memcmp(a.addr, want.addr, a.family == AF_INET6 ? 16 : 4))
      return fi;
    if (!reachable && a.family == job->root.family &&
        !gin_net_addr_local_only(&a))
      reachable = fi;
  }
  return reachable ? reachable : list;
}

/* The provider to use (with RMA writes where it has them and GIN_OFI_RMA
 * allows), or a message naming what is missing. */
static gin_result_t ofi_pick(ofi_state_t *s) {
  const gin_ofi_lib_t *lib = gin_ofi_lib();
  if (!lib) return GIN_ERR_UNSUPPORTED; /* recorded, naming the cause */
  const char *prov = gin_ofi_param_provider();
  const char *which = prov[0] ? prov : "any provider";
  int rc = -FI_ENODATA;
  int want = (int)gin_ofi_param_rma();
  for (int rma = want != 0; rma >= 0; rma--) {
    struct fi_info *h = ofi_hints(1, rma);
    if (!h) return GIN_ERROR(GIN_ERR_NOMEM, "ofi: hints");
    struct fi_info *list = NULL;
    rc = lib->getinfo(OFI_API, NULL, NULL, 0, h, &list);
    lib->freeinfo(h);
    if (rc != 0) continue;
    s->info = lib->dupinfo(ofi_choose(list, s->job));
    lib->freeinfo(list);
    if (!s->info) return GIN_ERROR(GIN_ERR_NOMEM, "ofi: fi_dupinfo");
    if (rma && (!ofi_rma_usable(s->info, s->job->nranks) ||
                (want < 0 && ofi_rma_default_off(s->info)))) {
      lib->freeinfo(s->info);
      s->info = NULL;
      continue;
    }
    s->rma = rma;
    if (rma) {
      s->cq_data = s->info->domain_attr->cq_data_size >= 8 ? 8 : 4;
      s->rx_cq_data = (s->info->mode & FI_RX_CQ_DATA) != 0;
      s->rma_min = (uint64_t)gin_ofi_param_rma_min();
      size_t mx = s->info->ep_attr->max_msg_size;
      s->rma_max = mx && mx < OFI_WR_BYTES ? mx : OFI_WR_BYTES;
    }
    return GIN_SUCCESS;
  }
  /* Say what is missing: the ordering, or the endpoint itself. */
  struct fi_info *h2 = ofi_hints(0, 0), *got = NULL;
  int rc2 = h2 ? lib->getinfo(OFI_API, NULL, NULL, 0, h2, &got) : -FI_ENOMEM;
  if (h2) lib->freeinfo(h2);
  if (got) lib->freeinfo(got);
  if (rc2 == 0)
    return GIN_ERROR(GIN_ERR_UNSUPPORTED,
                     "ofi: %s (GIN_OFI_PROVIDER, FI_PROVIDER) lacks "
                     "send-after-send ordering (FI_ORDER_SAS), which gin's "
                     "signals need",
                     which);
  return GIN_ERROR(GIN_ERR_UNSUPPORTED,
                   "ofi: %s (GIN_OFI_PROVIDER, FI_PROVIDER) has no reliable "
                   "datagram endpoint with messages (FI_EP_RDM, FI_MSG): "
                   "fi_getinfo: %s",
                   which, lib->strerror(-rc));
}

/* Opens the fabric, domain, completion queue, address vector and
 * endpoint, registers and posts the pool; the endpoint's name in name. */
static gin_result_t ofi_open(ofi_state_t *s, char *name, size_t *name_len) {
  int rank = s->job->rank;
  struct fi_info *fi = s->info;
  int rc;
#define OFI_TRY(call, what)                                                    \
  do {                                                                         \
    if ((rc = (call)) != 0)                                                    \
      return GIN_ERROR(GIN_ERR_SYSTEM, "ofi: rank %d: %s (provider %s): %s",   \
                       rank, what, fi->fabric_attr->prov_name,                 \
                       gin_ofi_lib()->strerror(-rc));                          \
  } while (0)
  OFI_TRY(gin_ofi_lib()->fabric(fi->fabric_attr, &s->fabric, NULL),
          "fi_fabric");
  OFI_TRY(fi_domain(s->fabric, fi, &s->domain, NULL), "fi_domain");
  /* Room for every completion that can be pending at once: sends,
   * receives, this rank's writes and the peers' write tokens. */
  size_t wr_peers = (size_t)s->npeers * OFI_WR_PEER;
  struct fi_cq_attr cqa = {
      .format = FI_CQ_FORMAT_DATA,
      .wait_obj = FI_WAIT_FD,
      .size = (size_t)s->ntx + OFI_RX_BUFS + 64 +
              (s->rma ? OFI_WR_MAX + (wr_peers < 4096 ? wr_peers : 4096) : 0)};
  if (fi_cq_open(s->domain, &cqa, &s->cq, NULL) != 0) {
    cqa.wait_obj = FI_WAIT_NONE; /* then the proxy polls */
    OFI_TRY(fi_cq_open(s->domain, &cqa, &s->cq, NULL), "fi_cq_open");
  } else if (fi_control(&s->cq->fid, FI_GETWAIT, &s->wait_fd) != 0) {
    s->wait_fd = -1;
  }
  struct fi_av_attr ava = {.type = FI_AV_TABLE};
  OFI_TRY(fi_av_open(s->domain, &ava, &s->av, NULL), "fi_av_open");
  OFI_TRY(fi_endpoint(s->domain, fi, &s->ep, NULL), "fi_endpoint");
  OFI_TRY(fi_ep_bind(s->ep, &s->av->fid, 0), "fi_ep_bind (address vector)");
  OFI_TRY(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV),
          "fi_ep_bind (completion queue)");
  OFI_TRY(fi_enable(s->ep), "fi_enable");
  size_t pool_bytes = (size_t)(s->ntx + OFI_RX_BUFS) * OFI_MSG_BYTES;
  if (gin_arch_staging_alloc(pool_bytes, (void **)&s->pool) != GIN_SUCCESS)
    return GIN_ERROR(GIN_ERR_NOMEM, "ofi: rank %d: %zu bytes of buffers", rank,
                     pool_bytes);
  if (fi->domain_attr->mr_mode & FI_MR_LOCAL) {
    OFI_TRY(fi_mr_reg(s->domain, s->pool, pool_bytes, FI_SEND | FI_RECV, 0, 0,
                      0, &s->mr, NULL),
            "fi_mr_reg (buffers)");
    if (fi->domain_attr->mr_mode & FI_MR_ENDPOINT) {
      OFI_TRY(fi_mr_bind(s->mr, &s->ep->fid, 0), "fi_mr_bind");
      OFI_TRY(fi_mr_enable(s->mr), "fi_mr_enable");
    }
    s->desc = fi_mr_desc(s->mr);
  }
  s->bufs = (ofi_buf_t *)calloc((size_t)s->ntx + OFI_RX_BUFS, sizeof *s->bufs);
  if (!s->bufs) return GIN_ERROR(GIN_ERR_NOMEM, "ofi: buffer table");
  if (s->rma) {
    s->wrs = (ofi_buf_t *)calloc(OFI_WR_MAX, sizeof *s->wrs);
    if (!s->wrs) return GIN_ERROR(GIN_ERR_NOMEM, "ofi: write contexts");
    for (int i = 0; i < OFI_WR_MAX; i++) {
      s->wrs[i].kind = OFI_WR;
      s->wrs[i].next = s->wr_free;
      s->wr_free = &s->wrs[i];
    }
  }
  for (int i = 0; i < s->ntx + OFI_RX_BUFS; i++) {
    ofi_buf_t *b = &s->bufs[i];
    b->data = s->pool + (size_t)i * OFI_MSG_BYTES;
    b->kind = i < s->ntx ? OFI_TX : OFI_RX;
    if (b->kind == OFI_TX) {
      b->next = s->tx_free;
      s->tx_free = b;
    } else {
      GIN_CHECK(rx_post(s, b));
    }
  }
  /* Injected messages are copied by the provider at once: only where the
   * source is host memory. */
  s->inject = fi->tx_attr->inject_size < OFI_INJECT_MAX
                  ? fi->tx_attr->inject_size
                  : OFI_INJECT_MAX;
  *name_len = GIN_OFI_NAME_MAX;
  OFI_TRY(fi_getname(&s->ep->fid, name, name_len), "fi_getname");
  return GIN_SUCCESS;
#undef OFI_TRY
}

static gin_result_t ofi_init(const gin_job_t *job, const uint8_t *use,
                             void **state_out) {
  int n = job->nranks;
  size_t esz = gin_ofi_entry_bytes(n);
  ofi_state_t *s = (ofi_state_t *)calloc(1, sizeof *s);
  uint8_t *all = (uint8_t *)calloc((size_t)n, esz);
  ofi_peer_t *peers = (ofi_peer_t *)calloc((size_t)n, sizeof *peers);
  uint8_t *mine = (uint8_t *)calloc((size_t)n, 1);
  if (!s || !all || !peers || !mine) {
    free(s);
    free(all);
    free(peers);
    free(mine);
    return GIN_ERROR(GIN_ERR_NOMEM, "ofi: state for %d ranks", n);
  }
  pthread_mutex_init(&s->lock, NULL);
  s->job = job;
  s->peers = peers;
  s->use = mine;
  s->wait_fd = -1;
  for (int r = 0; r < n; r++) {
    mine[r] = use[r] && r != job->rank;
    peers[r].use = mine[r];
    peers[r].addr = FI_ADDR_NOTAVAIL;
    s->npeers += mine[r];
  }
  s->ntx = s->npeers * OFI_TX_PEER < OFI_TX_MAX ? s->npeers * OFI_TX_PEER
                                                : OFI_TX_MAX;
  uint64_t start = gin_now_ns();
  gin_result_t res = GIN_SUCCESS, local = GIN_SUCCESS;
  char name[GIN_OFI_NAME_MAX], why[192];
  size_t name_len = 0;
  if (s->npeers) {
    local = ofi_pick(s);
    if (local == GIN_SUCCESS) local = ofi_open(s, name, &name_len);
  }
  /* Every rank sends its entry, also one that failed, so all fail
   * together. */
  gin_ofi_entry_encode(local, name, local == GIN_SUCCESS ? name_len : 0, mine,
                       n, all + (size_t)job->rank * esz);
  GIN_CHECK_GOTO(job->allgather(job->owner, all, esz), res, fail);
  GIN_CHECK_GOTO(local, res, fail);
  if ((res = gin_ofi_entries_check(all, (size_t)n * esz, n, why, sizeof why)) !=
      GIN_SUCCESS) {
    res = GIN_ERROR(res, "ofi: %s", why);
    goto fail;
  }
  /* Whether any rank uses ofi (the same answer on every rank): window
   * keys are exchanged then. */
  for (int r = 0; r < n && !s->any; r++)
    for (size_t b = 0; b < ((size_t)n + 7) / 8; b++)
      s->any |= all[(size_t)r * esz + GIN_OFI_ENTRY_HEAD + b] != 0;
  if (s->any) {
    s->mrs = (ofi_mr_t *)calloc(job->max_windows, sizeof *s->mrs);
    s->keys = (ofi_key_t *)calloc((size_t)job->max_windows * (unsigned)n,
                                  sizeof *s->keys);
    if (!s->mrs || !s->keys) {
      res = GIN_ERROR(GIN_ERR_NOMEM, "ofi: window keys of %d ranks", n);
      goto fail;
    }
  }
  for (int r = 0; r < n; r++) {
    if (!mine[r]) continue;
    size_t len;
    const uint8_t *peer_name = gin_ofi_entry_name(all, n, r, &len);
    if (fi_av_insert(s->av, peer_name, 1, &peers[r].addr, 0, NULL) != 1) {
      res = GIN_ERROR(GIN_ERR_SYSTEM,
                      "ofi: rank %d cannot insert rank %d's address (%zu "
                      "bytes) into its address vector",
                      job->rank, r, len);
      goto fail;
    }
  }
  free(all);
  if (s->npeers) {
    gin_net_addr_t src;
    char at[64] = "";
    if (ofi_entry_ip(s->info, &src)) {
      memcpy(at, ", from ", 7);
      gin_net_addr_str(&src, at + 7, sizeof at - 7);
      char *colon = strrchr(at, ':'); /* the port is the provider's */
      if (colon) *colon = 0;
    }
    GIN_INFO(NET, "ofi: rank %d: provider %s, %d peers in %.1f ms%s%s%s",
             job->rank, s->info->fabric_attr->prov_name, s->npeers,
             (double)(gin_now_ns() - start) / 1e6, at,
             s->rma ? ", puts from GIN_OFI_RMA_MIN bytes as RMA writes"
                    : ", every put as messages",
             s->wait_fd < 0 ? " (no wait descriptor: the proxy polls)" : "");
  }
  *state_out = s;
  return GIN_SUCCESS;
fail:
  free(all);
  for (int r = 0; r < n; r++)
    peers[r].left = 1; /* no goodbyes */
  ofi_fini(s);
  return res;
}

const gin_transport_ops_t gin_transport_ofi = {
    .size = sizeof(gin_transport_ops_t),
    .name = "ofi",
    .init = ofi_init,
    .put = ofi_put,
    .flush = ofi_flush,
    .flush_peer = ofi_flush_peer,
    .progress = ofi_progress,
    .fini = ofi_fini,
    .traffic = ofi_traffic,
    .wait_fd = ofi_wait_fd,
    .window = ofi_window,
};
