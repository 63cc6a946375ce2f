/*
 * Proxy threads: drain rings in order, check each descriptor, hand it to
 * the peer's transport, bump counters once sources are consumed, publish
 * the consumer index. A bad descriptor, or one the transport failed, is
 * reported (rank, context, what was wrong) through the control page and
 * dropped without touching any memory (the rest of the pass is dropped
 * too); once the pass's consumer indices are published the communicator
 * is aborted, so a flush that waited for the dropped descriptors returns
 * (they are consumed) and the error is the communicator's.
 *
 * Each thread owns the rings assigned to it and reaches them through its
 * own array and lock: threads never share a lock or a ring on the hot
 * path. Only ring creation and destruction (the API thread) also take a
 * thread's lock, which keeps a ring alive while its thread drains it.
 * Transports are called by several threads at once: each keeps what a
 * thread started apart from the others (ipc: a lane per thread).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "proxy/proxy.h"

GIN_PARAM_INT(param_proxy_threads, "PROXY_THREADS", 1,
              "proxy threads per communicator; rings are divided among them")
GIN_PARAM_INT(param_ring_size, "PROXY_RING_SIZE", 512,
              "descriptors per ring (power of two, 8..65536)")
GIN_PARAM_INT(param_busy_poll, "PROXY_BUSY_POLL", -1,
              "1: idle proxy threads keep polling (lowest latency, one core "
              "each); 0: they yield, then sleep until work arrives (host "
              "target) or nap 50 us (cuda); -1: the target's "
              "default (1 on cuda, 0 on the host target, whose ranks "
              "already compete for the cores)")

GIN_PARAM_INT(param_proxy_delay_us, "PROXY_DELAY_US", 0,
              "for tests only: each proxy thread pauses this many "
              "microseconds after every batch of descriptors it completes "
              "(a slow proxy: rings stay full); 0: never")

GIN_PARAM_STR(param_proxy_cpus, "PROXY_CPUS", "auto",
              "CPUs the proxy threads may run on: auto (those near the GPU, "
              "where the machine says; anywhere on the host target), none "
              "(no pinning), or a cpulist such as 2-3,8")

#define PROXY_MAX_THREADS 16
/* The longest an idle proxy thread sleeps in poll() before it looks at
 * its rings, the stop flag and the transports again (a wake-up that its
 * doorbell or sockets did not announce). */
#define PROXY_SLEEP_MS 10
/* How often within a batch the abort words are read again. */
#define PROXY_ABORT_EVERY 32
/* How many slots ahead of the one it reads a draining thread prefetches. */
#define PROXY_PREFETCH 8

/* One proxy thread and the rings it serves, on cache lines of its own.
 * `lock` guards `rings`: the thread takes it for each pass over them, ring
 * creation and destruction to change them. */
typedef struct proxy_thread {
  _Alignas(64) pthread_mutex_t lock;
  gin_proxy_ring_t **rings; /* [nrings] */
  int nrings, cap;
  struct gin_proxy *px;
  int idx;
  pthread_t tid;
  gin_result_t start_res; /* its transports' thread_start */
  char start_msg[200];
  /* Host target: the doorbell (an eventfd, -1 where none) that producers
   * write when `sleeping` says the thread sleeps in poll(). */
  int bell;
  _Alignas(64) uint32_t sleeping;
  /* Where the thread waits or waited in vain for a transport's room
   * (proxy_issue_retry): the peer (-1: nowhere), the transport, since
   * when and, once it gave up, until when (0 while it waits); written by
   * the thread, read by gin_proxy_stuck. */
  int stuck_peer, stuck_t;
  uint64_t stuck_since_ns, stuck_end_ns;
} proxy_thread_t;

struct gin_proxy {
  proxy_thread_t th[PROXY_MAX_THREADS];
  const gin_job_t *job;
  int nthreads;
  pthread_mutex_t lock;    /* guards the list of all rings, next_thread */
  gin_proxy_ring_t *rings; /* all rings (quiesce walks them) */
  int next_thread;         /* round-robin ring assignment */
  int stop;
  int busy;
  int started; /* threads past their setup (atomic) */
  int trace; /* GIN_DEBUG=TRACE for PROXY, read once: no call per descriptor */
  int64_t delay_us; /* GIN_PROXY_DELAY_US (tests), read once */
  const gin_transport_ops_t *ops[GIN_TRANSPORT_MAX];
  void *state[GIN_TRANSPORT_MAX];
};

/* Records an error the proxy found (first one wins) in the CPU's record
 * of the control page and logs it; the caller aborts the communicator. */
static void proxy_record(const gin_job_t *c, int kind, int64_t peer, int64_t id,
                         uint64_t a0, uint64_t a1, const char *msg) {
  gin_dev_error_t *e = &c->ctrl->herr; /* the CPU's record */
  uint32_t zero = 0;
  if (__atomic_compare_exchange_n(&e->claimed, &zero, 1, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE)) {
    snprintf(c->proxy_msg, c->proxy_msg_len, "%s", msg);
    e->kind = kind;
    e->rank = c->rank;
    e->peer = peer;
    e->id = id;
    e->expected = 0;
    e->seen = 0;
    e->arg0 = a0;
    e->arg1 = a1;
    __atomic_store_n(&e->ready, 1, __ATOMIC_RELEASE);
  }
  GIN_WARN(PROXY, "rank %d: %s", c->rank, msg);
}

/* Records transport t's failure `res` (its message in gin_last_error;
 * peer -1 when none is known) as proxy_record does. A transport that had
 * no room for the whole timeout (the peer is alive but takes nothing) is
 * a timeout; anything else (a closed or failed connection) is the peer's
 * failure. */
static void proxy_record_transport(struct gin_proxy *px, int t,
                                   gin_result_t res, int peer, int64_t id,
                                   uint64_t a0) {
  char full[256], who[24] = "";
  if (peer >= 0) snprintf(who, sizeof who, ", peer %d", peer);
  snprintf(full, sizeof full, "transport %s%s: %s", px->ops[t]->name, who,
           gin_last_error());
  proxy_record(px->job,
               res == GIN_ERR_TIMEOUT ? GIN_DEVERR_TIMEOUT_TRANSPORT
                                      : GIN_DEVERR_TRANSPORT,
               peer, id, a0, 0, full);
}

/* The message for a window check that failed (win_ok's slow path, off
 * the per-descriptor one): `registered` 0 when handle `v` (packed) names
 * no live window of its generation, else [off, off+bytes) is outside
 * `size`. Returns 0. */
static __attribute__((noinline, cold)) int
win_bad(uint32_t v, int registered, uint64_t off, uint64_t bytes, uint64_t size,
        const char *what, char *msg, size_t len) {
  if (!registered)
    snprintf(msg, len, "%s window {idx %u, gen %u} is not registered", what,
             GIN_DESC_WIN_IDX(v), GIN_DESC_WIN_GEN(v));
  else
    snprintf(msg, len,
             "%s offset %llu + %llu bytes is outside window %u of %llu bytes",
             what, (unsigned long long)off, (unsigned long long)bytes,
             GIN_DESC_WIN_IDX(v), (unsigned long long)size);
  return 0;
}

/* Checks window handle `v` (packed) with [off, off+bytes) against the
 * table; on failure writes why into msg. */
static inline int win_ok(const gin_job_t *c, uint32_t v, uint64_t off,
                         uint64_t bytes, const char *what, char *msg,
                         size_t len) {
  uint32_t idx = GIN_DESC_WIN_IDX(v);
  if (__builtin_expect(idx >= c->max_windows, 0))
    return win_bad(v, 0, off, bytes, 0, what, msg, len);
  const gin_win_slot_t *w = &c->wins[idx];
  if (__builtin_expect(!__atomic_load_n(&w->live, __ATOMIC_ACQUIRE) ||
                           (__atomic_load_n(&w->gen, __ATOMIC_ACQUIRE) &
                            0xffffu) != GIN_DESC_WIN_GEN(v),
                       0))
    return win_bad(v, 0, off, bytes, 0, what, msg, len);
  uint64_t size = w->size;
  if (__builtin_expect(off > size || bytes > size - off, 0))
    return win_bad(v, 1, off, bytes, size, what, msg, len);
  return 1;
}

gin_result_t gin_proxy_window(struct gin_proxy *px, uint32_t slot, int live) {
  if (!px) return GIN_SUCCESS;
  gin_result_t res = GIN_SUCCESS;
  for (int t = 0; t < GIN_TRANSPORT_MAX; t++) {
    if (!px->ops[t] || !px->ops[t]->window) continue;
    gin_result_t r = px->ops[t]->window(px->state[t], slot, live);
    if (res == GIN_SUCCESS) res = r;
  }
  return res;
}

/* Validates a descriptor copy; fills the transfer. 0 and msg if bad. */
static int desc_check(const gin_job_t *c, const gin_proxy_ring_t *r,
                      const gin_desc_t *d, gin_xfer_t *x, char *msg,
                      size_t len) {
  memset(x, 0, sizeof *x);
  if (d->version != GIN_DESC_VERSION) {
    snprintf(msg, len, "descriptor version %u, expected %u", d->version,
             GIN_DESC_VERSION);
    return 0;
  }
  if (d->peer < 0 || d->peer >= c->nranks ||
      c->path[d->peer] != GIN_PATH_PROXY) {
    snprintf(msg, len, "peer %d is not a proxied rank of %d", d->peer,
             c->nranks);
    return 0;
  }
  x->op = d->op == GIN_OP_BARRIER ? GIN_OP_SIGNAL : d->op;
  x->peer = d->peer;
  switch (d->op) {
  case GIN_OP_PUT:
    if (!win_ok(c, d->dst_win, d->dst_off, d->bytes, "destination", msg, len) ||
        !win_ok(c, d->src_win, d->src_off, d->bytes, "source", msg, len))
      return 0;
    x->src_win = GIN_DESC_WIN_IDX(d->src_win);
    x->src = c->wins[x->src_win].ptr;
    x->src = (const char *)x->src + d->src_off;
    break;
  case GIN_OP_PUT_VALUE:
    if (d->bytes < 1 || d->bytes > 8) {
      snprintf(msg, len, "put_value of %llu bytes",
               (unsigned long long)d->bytes);
      return 0;
    }
    if (!win_ok(c, d->dst_win, d->dst_off, d->bytes, "destination", msg, len))
      return 0;
    x->value = d->src_off;
    break;
  case GIN_OP_SIGNAL:
  case GIN_OP_BARRIER:
    if (d->remote == GIN_REMOTE_NONE) {
      snprintf(msg, len, "signal operation without a signal");
      return 0;
    }
    break;
  default: snprintf(msg, len, "unknown operation %u", d->op); return 0;
  }
  x->bytes = d->bytes;
  x->dst_win = GIN_DESC_WIN_IDX(d->dst_win);
  x->dst_off = d->dst_off;
  if (d->remote != GIN_REMOTE_NONE) {
    /* Barrier arrivals address the counters after the signals. */
    int lo = d->op == GIN_OP_BARRIER ? r->nsignals : 0;
    int hi = d->op == GIN_OP_BARRIER ? r->nsig_total : r->nsignals;
    if ((d->remote != GIN_REMOTE_SIGNAL_INC &&
         d->remote != GIN_REMOTE_SIGNAL_ADD) ||
        d->signal < lo || d->signal >= hi) {
      snprintf(msg, len, "signal %d (action %u) outside [%d, %d)", d->signal,
               d->remote, lo, hi);
      return 0;
    }
    x->has_signal = 1;
    x->sig_win = r->sig_win;
    x->sig_off = (uint64_t)d->signal * 8;
    x->sig_add = d->remote == GIN_REMOTE_SIGNAL_INC ? 1 : d->signal_value;
    if (d->signal < r->nsignals) { /* barrier counters have no mode */
      x->mode_off = (uint64_t)r->nsig_total * 8 + (uint64_t)d->signal * 4;
      x->mode_bit = d->remote;
    }
  }
  if (d->local != GIN_LOCAL_NONE &&
      (d->local != GIN_LOCAL_COUNTER_INC || d->counter < 0 ||
       d->counter >= r->ncounters)) {
    snprintf(msg, len, "counter %d (action %u) outside [0, %d)", d->counter,
             d->local, r->ncounters);
    return 0;
  }
  return 1;
}

/* Hands an operation that transport t had no room for to it again (x
 * NULL: asks its flush again), driving the transport meanwhile (bounded
 * by the timeout from `since`); `peer` is the one waited for. The
 * deadline is only read here, off the per-descriptor path. */
static gin_result_t proxy_retry_loop(struct gin_proxy *px, proxy_thread_t *th,
                                     int t, const gin_xfer_t *x, int peer,
                                     uint64_t since) {
  const gin_job_t *c = px->job;
  const gin_transport_ops_t *ops = px->ops[t];
  uint64_t deadline = since + (uint64_t)c->timeout_ms * 1000000ull;
  /* A flush that waits holds the ring's slots: no room either. */
  const char *what =
      x ? "had no room" : "had no room (its sends did not complete)";
  for (unsigned i = 0;; i++) {
    GIN_CHECK(ops->progress(px->state[t]));
    /* A flush waits for several peers: the one it waits for now is on
     * record (the others' sends may complete meanwhile). */
    if (!x && ops->flush_peer && (i & 63) == 0) {
      int p = ops->flush_peer(px->state[t]);
      if (p >= 0) peer = p;
      if (th) __atomic_store_n(&th->stuck_peer, peer, __ATOMIC_RELEASE);
    }
    if (gin_job_aborted_by(c))
      return GIN_ERROR(GIN_ERR_ABORTED,
                       "proxy: communicator aborted while transport %s %s "
                       "(peer %d)",
                       ops->name, what, peer);
    if (gin_now_ns() > deadline)
      return GIN_ERROR(GIN_ERR_TIMEOUT,
                       "proxy: transport %s %s for %lld ms: peer %d "
                       "takes nothing (stopped, or too slow)",
                       ops->name, what, (long long)c->timeout_ms, peer);
    gin_result_t res = x ? ops->put(px->state[t], x) : ops->flush(px->state[t]);
    if (res != GIN_ERR_AGAIN) return res;
    sched_yield(); /* the receiver may need this core to make room */
  }
}

/* proxy_retry_loop, with the thread's wait on record meanwhile (and
 * kept if it fails: the communicator is then done): a kernel that times
 * out on the full ring behind it is told which peer held the proxy up
 * (gin_proxy_stuck), not only the one it was putting to, even when its
 * report is formed after the proxy gave up. x NULL: a flush. */
static gin_result_t proxy_issue_retry(struct gin_proxy *px, proxy_thread_t *th,
                                      int t, const gin_xfer_t *x) {
  uint64_t since = gin_now_ns();
  const gin_transport_ops_t *ops = px->ops[t];
  int peer = x ? x->peer : ops->flush_peer ? ops->flush_peer(px->state[t]) : -1;
  /* A wait that failed stays on record (only a failure sets its end). */
  if (__atomic_load_n(&th->stuck_end_ns, __ATOMIC_RELAXED))
    return proxy_retry_loop(px, NULL, t, x, peer, since);
  __atomic_store_n(&th->stuck_since_ns, since, __ATOMIC_RELAXED);
  __atomic_store_n(&th->stuck_t, t, __ATOMIC_RELAXED);
  __atomic_store_n(&th->stuck_peer, peer, __ATOMIC_RELEASE);
  gin_result_t res = proxy_retry_loop(px, th, t, x, peer, since);
  if (res == GIN_SUCCESS)
    __atomic_store_n(&th->stuck_peer, -1, __ATOMIC_RELEASE);
  else
    __atomic_store_n(&th->stuck_end_ns, gin_now_ns(), __ATOMIC_RELEASE);
  return res;
}

int gin_proxy_stuck(struct gin_proxy *px, int *peer, uint64_t *ms,
                    const char **transport) {
  uint64_t now = gin_now_ns(), longest = 0;
  int found = 0;
  for (int i = 0; px && i < px->nthreads; i++) {
    proxy_thread_t *th = &px->th[i];
    int p = __atomic_load_n(&th->stuck_peer, __ATOMIC_ACQUIRE);
    if (p < 0) continue;
    uint64_t since = __atomic_load_n(&th->stuck_since_ns, __ATOMIC_RELAXED);
    uint64_t end = __atomic_load_n(&th->stuck_end_ns, __ATOMIC_ACQUIRE);
    int t = __atomic_load_n(&th->stuck_t, __ATOMIC_RELAXED);
    uint64_t until = end ? end : now;
    uint64_t d = until > since ? until - since : 0;
    if (found && d <= longest) continue;
    found = 1;
    longest = d;
    *peer = p;
    *transport =
        t >= 0 && t < GIN_TRANSPORT_MAX && px->ops[t] ? px->ops[t]->name : "?";
  }
  if (found) *ms = longest / 1000000ull;
  return found;
}

/* Notes a local counter increment of the ring's batch (merged per
 * counter: one atomic add each when the batch completes). */
static void counters_note(gin_proxy_ring_t *r, int counter) {
  for (int i = r->ncnt - 1; i >= 0; i--)
    if (r->cnt_idx[i] == counter) {
      r->cnt_add[i]++;
      return;
    }
  r->cnt_idx[r->ncnt] = counter;
  r->cnt_add[r->ncnt++] = 1;
}

/* Whether descriptor `next` of a ring (in its slot) is published: the
 * slot's flag says that lap. Acquires its body. */
static inline int slot_published(const gin_desc_t *slot, uint64_t next,
                                 int lap_shift) {
  return __atomic_load_n(&slot->flag, __ATOMIC_ACQUIRE) ==
         (uint32_t)(next >> lap_shift) + 1;
}

/* Whether the ring's next descriptor is published. */
static int ring_next_ready(const gin_proxy_ring_t *r) {
  return slot_published(&r->slots[r->next & (r->size - 1)], r->next,
                        r->lap_shift);
}

/* Issues up to r->batch descriptors of a ring to the transports (adding
 * theirs to *used, a bit per transport id); returns how many. Nothing is
 * complete yet: pass_complete finishes them. The abort words are read
 * when the batch starts and every PROXY_ABORT_EVERY descriptors; what this
 * thread rejects or its transport fails is recorded, sets *failed (the
 * caller aborts once the pass is complete) and stops the rest of the
 * pass at once. */
static int ring_drain(struct gin_proxy *px, gin_proxy_ring_t *r, unsigned *used,
                      int *failed) {
  const gin_job_t *c = px->job;
  int n = 0, aborted = *failed;
  /* In locals: the transports' calls would make the compiler reload them
   * from *r after each descriptor. */
  const gin_desc_t *slots = r->slots;
  const uint64_t mask = r->size - 1;
  const int shift = r->lap_shift, batch = r->batch;
  uint64_t next = r->next;
  for (; n < batch; n++, next++) {
    const gin_desc_t *slot = &slots[next & mask];
    if (!slot_published(slot, next, shift)) break;
    /* A line a few slots on, written by now under load (on the cuda
     * target each slot is a fresh line the GPU wrote across PCIe). */
    __builtin_prefetch(&slots[(next + PROXY_PREFETCH) & mask]);
    if (n % PROXY_ABORT_EVERY == 0 && !aborted)
      aborted = gin_job_aborted_by(c) != 0;
    /* A copy: the device could rewrite the slot after it was checked. */
    gin_desc_t d;
    memcpy(&d, slot, sizeof d);
    gin_xfer_t x;
    char msg[200];
    if (px->trace)
      gin_log(GIN_LOG_TRACE, GIN_SUB_PROXY, __FILE__, __LINE__,
              "rank %d: context %d descriptor %llu: op %u peer %d signal %d "
              "(action %u, value %llu) %llu bytes",
              c->rank, r->ctx, (unsigned long long)next, d.op, d.peer, d.signal,
              d.remote, (unsigned long long)d.signal_value,
              (unsigned long long)d.bytes);
    if (!desc_check(c, r, &d, &x, msg, sizeof msg)) {
      char full[256];
      snprintf(full, sizeof full,
               "proxy rejected descriptor %llu of context %d: %s",
               (unsigned long long)next, r->ctx, msg);
      proxy_record(c, GIN_DEVERR_BAD_DESC, d.peer, r->ctx, next, 0, full);
      aborted = *failed = 1;
    } else if (!aborted) {
      int t = c->transport[x.peer];
      *used |= 1u << t;
      gin_result_t res = px->ops[t]->put(px->state[t], &x);
      if (res == GIN_ERR_AGAIN)
        res = proxy_issue_retry(px, &px->th[r->thread], t, &x);
      if (res == GIN_ERR_ABORTED) { /* by someone else, who said why */
        aborted = 1;
      } else if (res != GIN_SUCCESS) {
        proxy_record_transport(px, t, res, x.peer, r->ctx, next);
        aborted = *failed = 1;
      } else if (d.local == GIN_LOCAL_COUNTER_INC) {
        counters_note(r, d.counter);
      }
    }
  }
  r->next = next;
  r->pending = n;
  return n;
}

/* Completes a pass over the thread's rings: the transports in `used`
 * finish what they started, once for all the rings (ipc waits for its
 * copies, then applies the signals), then each ring's counters count
 * (their sources are free now) and its consumer index moves on. A
 * transport that fails here is recorded and sets *failed. */
static void pass_complete(struct gin_proxy *px, proxy_thread_t *th,
                          unsigned used, int *failed) {
  int ok = 1;
  /* Every one of them, even after one failed: nothing stays pending. */
  for (int t = 0; used; t++, used >>= 1) {
    if (!(used & 1)) continue;
    gin_result_t res = px->ops[t]->flush(px->state[t]);
    if (res == GIN_ERR_AGAIN) res = proxy_issue_retry(px, th, t, NULL);
    if (res == GIN_SUCCESS || !ok) continue;
    const gin_proxy_ring_t *r = th->rings[0]; /* the first with a batch */
    for (int i = 1; !r->pending && i < th->nrings; i++)
      r = th->rings[i];
    proxy_record_transport(px, t, res, -1, r->ctx, r->next);
    ok = 0;
    *failed = 1;
  }
  for (int i = 0; i < th->nrings; i++) {
    gin_proxy_ring_t *r = th->rings[i];
    if (!r->pending) continue;
    for (int j = 0; ok && j < r->ncnt; j++)
      gin_arch_atomic_add_u64(&r->counters[r->cnt_idx[j]], r->cnt_add[j]);
    r->ncnt = 0;
    r->pending = 0;
    /* Only now are the batch's sources consumed: the flush point. */
    __atomic_store_n(r->cons, r->next, __ATOMIC_RELEASE);
  }
}

/* Parses a Linux cpulist ("0-3,8,10-11") into set; 0 if malformed. */
static int cpulist_parse(const char *s, cpu_set_t *set) {
  CPU_ZERO(set);
  int n = 0;
  while (*s) {
    char *end;
    long a = strtol(s, &end, 10), b = a;
    if (end == s || a < 0) return 0;
    s = end;
    if (*s == '-') {
      b = strtol(s + 1, &end, 10);
      if (end == s + 1 || b < a) return 0;
      s = end;
    }
    for (long c = a; c <= b && c < CPU_SETSIZE; c++, n++)
      CPU_SET((int)c, set);
    if (*s == ',')
      s++;
    else if (*s)
      return 0;
  }
  return n > 0;
}

/* Pins the calling proxy thread per GIN_PROXY_CPUS; failures only log. */
static void proxy_pin(struct gin_proxy *px, int idx) {
  const char *want = param_proxy_cpus();
  char list[256];
  if (strcmp(want, "none") == 0) return;
  if (strcmp(want, "auto") == 0) {
    if (gin_arch_device_cpulist(list, sizeof list) != GIN_SUCCESS) return;
  } else {
    snprintf(list, sizeof list, "%s", want);
  }
  cpu_set_t set;
  if (!cpulist_parse(list, &set)) {
    GIN_WARN(PROXY, "GIN_PROXY_CPUS: cannot parse cpulist \"%s\"", list);
    return;
  }
  int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (e != 0)
    GIN_WARN(PROXY, "rank %d: proxy thread %d: cannot pin to %s: %s",
             px->job->rank, idx, list, strerror(e));
  else
    GIN_INFO(PROXY, "rank %d: proxy thread %d pinned to CPUs %s", px->job->rank,
             idx, list);
}

/* GIN_PROXY_DELAY_US: a pause after a batch, in 1 ms slices that end
 * once the thread is told to stop. Tests only. */
static void proxy_delay(struct gin_proxy *px) {
  uint64_t until = gin_now_ns() + (uint64_t)px->delay_us * 1000ull;
  for (uint64_t now = gin_now_ns();
       now < until && !__atomic_load_n(&px->stop, __ATOMIC_ACQUIRE);
       now = gin_now_ns()) {
    uint64_t ns = until - now < 1000000ull ? until - now : 1000000ull;
    nanosleep(&(struct timespec){0, (long)ns}, NULL);
  }
}

/* Whether a descriptor waits in one of the thread's rings. */
static int rings_ready(proxy_thread_t *th) {
  int ready = 0;
  pthread_mutex_lock(&th->lock);
  for (int i = 0; i < th->nrings && !ready; i++)
    ready = ring_next_ready(th->rings[i]);
  pthread_mutex_unlock(&th->lock);
  return ready;
}

/* An idle thread with a doorbell sleeps in poll() on it and on its
 * transports' descriptors (thread 0, which progresses them) until a
 * producer rings, a socket has something, or PROXY_SLEEP_MS pass.
 * Returns 0 without sleeping where a transport must keep being polled. */
static int proxy_sleep(struct gin_proxy *px, proxy_thread_t *th) {
  struct pollfd fds[1 + GIN_TRANSPORT_MAX];
  int n = 0;
  fds[n++] = (struct pollfd){.fd = th->bell, .events = POLLIN};
  /* Once aborted nobody progresses the transports, whose level-triggered
   * descriptors may then stay readable: the doorbell and the timeout only. */
  int transports = th->idx == 0 && !gin_job_aborted_by(px->job);
  for (int t = 0; transports && t < GIN_TRANSPORT_MAX; t++) {
    if (!px->ops[t] || !px->ops[t]->wait_fd) continue;
    int fd = px->ops[t]->wait_fd(px->state[t]);
    if (fd == GIN_WAIT_BUSY) return 0;
    if (fd >= 0) fds[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
  }
  /* Announce the sleep, then look once more: a producer publishes, then
   * reads `sleeping` (gin_ring_bell); between the two fences one of us
   * sees the other. */
  __atomic_store_n(&th->sleeping, 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (!rings_ready(th) && !__atomic_load_n(&px->stop, __ATOMIC_ACQUIRE))
    poll(fds, (nfds_t)n, PROXY_SLEEP_MS);
  __atomic_store_n(&th->sleeping, 0, __ATOMIC_RELAXED);
  uint64_t v;
  ssize_t r = read(th->bell, &v, sizeof v); /* empty it (non-blocking) */
  (void)r;
  return 1;
}

static void *proxy_main(void *p) {
  proxy_thread_t *th = (proxy_thread_t *)p;
  struct gin_proxy *px = th->px;
  uint32_t idle = 0;
  uint64_t traffic = 0; /* the transports' traffic counts, summed */
  const uint32_t spins = gin_arch_proxy_idle_spins();
  proxy_pin(px, th->idx);
  /* Set up this thread's device stream and the transports' per-thread
   * state now, inside gin_comm_init: made at the first operation instead,
   * a pinned allocation would wait for the kernel that waits for it. */
  gin_result_t res = gin_arch_copy_thread_setup();
  for (int t = 0; t < GIN_TRANSPORT_MAX && res == GIN_SUCCESS; t++)
    if (px->ops[t] && px->ops[t]->thread_start)
      res = px->ops[t]->thread_start(px->state[t]);
  th->start_res = res;
  if (res != GIN_SUCCESS)
    snprintf(th->start_msg, sizeof th->start_msg, "%s", gin_last_error());
  __atomic_fetch_add(&px->started, 1, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&px->stop, __ATOMIC_ACQUIRE)) {
    int did = 0, failed = 0;
    unsigned used = 0;
    pthread_mutex_lock(&th->lock); /* uncontended but for ring changes */
    for (int i = 0; i < th->nrings; i++)
      did += ring_drain(px, th->rings[i], &used, &failed);
    if (did) pass_complete(px, th, used, &failed);
    pthread_mutex_unlock(&th->lock);
    /* Only now that the consumer indices are published: a flush that
     * waited for what this pass dropped sees it consumed. */
    if (failed) px->job->abort(px->job->owner);
    if (did && px->delay_us > 0) proxy_delay(px);
    /* The receiving side: a transport that fails (a peer died, sent a bad
     * operation) aborts the communicator, so nobody waits for what it
     * will never deliver. */
    if (th->idx == 0 && !gin_job_aborted_by(px->job))
      for (int t = 0; t < GIN_TRANSPORT_MAX; t++) {
        if (!px->ops[t]) continue;
        gin_result_t res = px->ops[t]->progress(px->state[t]);
        if (res == GIN_SUCCESS) continue;
        proxy_record_transport(px, t, res, -1, -1, 0);
        px->job->abort(px->job->owner);
        break;
      }
    /* Idle (no descriptors, no transport traffic) and not busy-polling:
     * a few more passes (the target's count), then yield the core, and
     * after a long quiet sleep until a producer or a socket wakes the
     * thread (host target), or else nap 50 us at a time. Sleeping as soon
     * as idle made the host-target tcp round trip no faster and its p99
     * 2 x worse (each ping found its proxy asleep): docs/PERFORMANCE.md,
     * "Design figures". */
    uint64_t seen = 0;
    if (th->idx == 0)
      for (int t = 0; t < GIN_TRANSPORT_MAX; t++)
        if (px->ops[t] && px->ops[t]->traffic)
          seen += px->ops[t]->traffic(px->state[t]);
    if (did || seen != traffic) {
      idle = 0;
      traffic = seen;
    } else if (!px->busy && ++idle > spins) {
      if (idle < 16384) {
        sched_yield();
      } else if (th->bell < 0 || !proxy_sleep(px, th)) {
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
      }
    }
  }
  return NULL;
}

gin_result_t gin_proxy_attach(const gin_job_t *c, struct gin_proxy **px_out) {
  struct gin_proxy *px =
      (struct gin_proxy *)aligned_alloc(_Alignof(struct gin_proxy), sizeof *px);
  if (!px) return GIN_ERROR(GIN_ERR_NOMEM, "proxy");
  memset(px, 0, sizeof *px);
  px->job = c;
  pthread_mutex_init(&px->lock, NULL);
  for (int i = 0; i < PROXY_MAX_THREADS; i++) {
    pthread_mutex_init(&px->th[i].lock, NULL);
    px->th[i].px = px;
    px->th[i].idx = i;
    px->th[i].bell = -1;
    px->th[i].stuck_peer = -1;
  }
  int64_t nt = param_proxy_threads();
  px->nthreads = nt < 1                   ? 1
                 : nt > PROXY_MAX_THREADS ? PROXY_MAX_THREADS
                                          : (int)nt;
  int64_t busy = param_busy_poll();
  px->busy = busy < 0 ? gin_arch_proxy_busy_poll_default() : busy != 0;
  px->trace = gin_log_enabled(GIN_LOG_TRACE, GIN_SUB_PROXY);
  px->delay_us = param_proxy_delay_us();
  gin_result_t res = GIN_SUCCESS;
  /* Doorbells where kernels can ring them (the host target's kernels are
   * CPU threads); a GPU cannot wake a thread, so there proxies poll. */
  for (int i = 0;
       i < px->nthreads && !px->busy && gin_arch_kernels_wake_proxy(); i++) {
    px->th[i].bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (px->th[i].bell < 0) {
      res = GIN_ERROR(GIN_ERR_SYSTEM, "proxy doorbell: eventfd: %s",
                      strerror(errno));
      goto free_proxy;
    }
  }
  uint8_t *use = (uint8_t *)calloc((size_t)c->nranks, 1);
  if (!use) {
    res = GIN_ERROR(GIN_ERR_NOMEM, "proxy");
    goto free_proxy;
  }
  /* Collective: every rank initialises every transport in id order. */
  for (int t = 0; t < GIN_TRANSPORT_MAX && res == GIN_SUCCESS; t++) {
    const gin_transport_ops_t *ops = gin_transport_get(t);
    if (!ops) continue;
    for (int r = 0; r < c->nranks; r++)
      use[r] = c->path[r] == GIN_PATH_PROXY && c->transport[r] == t;
    res = ops->init(c, use, &px->state[t]);
    if (res == GIN_SUCCESS) px->ops[t] = ops;
  }
  free(use);
  if (res != GIN_SUCCESS) goto fini_transports;
  for (int i = 0; i < px->nthreads; i++) {
    int e = pthread_create(&px->th[i].tid, NULL, proxy_main, &px->th[i]);
    if (e != 0) {
      res = GIN_ERROR(GIN_ERR_SYSTEM, "proxy thread %d: %s", i, strerror(e));
      px->nthreads = i;
      break;
    }
  }
  /* Every thread set itself up (bounded: setup does not wait on peers). */
  uint64_t deadline = gin_now_ns() + (uint64_t)c->timeout_ms * 1000000ull;
  while (res == GIN_SUCCESS &&
         __atomic_load_n(&px->started, __ATOMIC_ACQUIRE) < px->nthreads) {
    if (gin_now_ns() > deadline)
      res = GIN_ERROR(GIN_ERR_TIMEOUT, "proxy threads did not start in %lld ms",
                      (long long)c->timeout_ms);
    sched_yield();
  }
  for (int i = 0; i < px->nthreads && res == GIN_SUCCESS; i++)
    if (px->th[i].start_res != GIN_SUCCESS)
      res = GIN_ERROR(px->th[i].start_res, "proxy thread %d: %s", i,
                      px->th[i].start_msg);
  if (res != GIN_SUCCESS) {
    gin_proxy_detach(px);
    return res;
  }
  GIN_INFO(PROXY, "rank %d: %d proxy thread(s), rings of %lld", c->rank,
           px->nthreads, (long long)param_ring_size());
  *px_out = px;
  return GIN_SUCCESS;

fini_transports:
  for (int t = 0; t < GIN_TRANSPORT_MAX; t++)
    if (px->ops[t]) px->ops[t]->fini(px->state[t]);
free_proxy:
  for (int i = 0; i < PROXY_MAX_THREADS; i++) {
    if (px->th[i].bell >= 0) close(px->th[i].bell);
    pthread_mutex_destroy(&px->th[i].lock);
  }
  pthread_mutex_destroy(&px->lock);
  free(px);
  return res;
}

gin_result_t gin_proxy_quiesce(struct gin_proxy *px, int grace_ms) {
  if (!px) return GIN_SUCCESS;
  const gin_job_t *c = px->job;
  uint64_t deadline =
      gin_now_ns() + (uint64_t)(c->timeout_ms + grace_ms) * 1000000ull;
  pthread_mutex_lock(&px->lock);
  gin_proxy_ring_t *r = px->rings;
  pthread_mutex_unlock(&px->lock);
  /* Rings are unlinked only by devcomm destroy, which gin.h's contract
   * keeps from running beside the calls that quiesce (no two calls on one
   * communicator at once), so the list is walked without the lock while
   * the proxy drains. */
  for (; r; r = r->next_ring) {
    uint64_t prod = 0, cons;
    GIN_CHECK(gin_arch_dev_load_u64(r->prod, &prod));
    while ((cons = __atomic_load_n(r->cons, __ATOMIC_ACQUIRE)) < prod) {
      if (gin_job_aborted_by(c))
        return GIN_SUCCESS; /* aborted: nothing more will be consumed */
      if (gin_now_ns() > deadline)
        return GIN_ERROR(GIN_ERR_TIMEOUT,
                         "rank %d: the proxy did not consume context %d's "
                         "ring within %lld ms (%llu of %llu)",
                         c->rank, r->ctx, (long long)(c->timeout_ms + grace_ms),
                         (unsigned long long)cons, (unsigned long long)prod);
      sched_yield();
    }
  }
  return GIN_SUCCESS;
}

void gin_proxy_detach(struct gin_proxy *px) {
  if (!px) return;
  __atomic_store_n(&px->stop, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < px->nthreads; i++) {
    if (px->th[i].bell >= 0) { /* wake it from poll() */
      uint64_t one = 1;
      ssize_t w = write(px->th[i].bell, &one, sizeof one);
      (void)w;
    }
    pthread_join(px->th[i].tid, NULL);
  }
  for (int t = 0; t < GIN_TRANSPORT_MAX; t++)
    if (px->ops[t]) px->ops[t]->fini(px->state[t]);
  for (int i = 0; i < PROXY_MAX_THREADS; i++) {
    free(px->th[i].rings);
    if (px->th[i].bell >= 0) close(px->th[i].bell);
    pthread_mutex_destroy(&px->th[i].lock);
  }
  pthread_mutex_destroy(&px->lock);
  free(px);
}

/* Makes room in each thread's array for the rings assigned to it, so
 * that handing them over cannot fail. */
static gin_result_t threads_reserve(struct gin_proxy *px,
                                    const gin_proxy_ring_t *rings, int n) {
  for (int t = 0; t < px->nthreads; t++) {
    proxy_thread_t *th = &px->th[t];
    int add = 0;
    for (int i = 0; i < n; i++)
      add += rings[i].thread == t;
    if (add == 0) continue;
    pthread_mutex_lock(&th->lock);
    gin_result_t res = GIN_SUCCESS;
    if (th->nrings + add > th->cap) {
      int cap = 2 * (th->nrings + add);
      gin_proxy_ring_t **a =
          (gin_proxy_ring_t **)realloc(th->rings, (size_t)cap * sizeof *a);
      if (a) {
        th->rings = a;
        th->cap = cap;
      } else {
        res = GIN_ERROR(GIN_ERR_NOMEM, "proxy thread %d's ring table", t);
      }
    }
    pthread_mutex_unlock(&th->lock);
    GIN_CHECK(res);
  }
  return GIN_SUCCESS;
}

gin_result_t gin_proxy_rings_create(struct gin_proxy *px, gin_devcomm_t *dc,
                                    uint32_t sig_win, int nsig_total,
                                    uint64_t *counters_host,
                                    gin_proxy_ring_t **rings_out) {
  int64_t size = param_ring_size();
  if (size < 8 || size > 65536 || (size & (size - 1)))
    return GIN_ERROR(GIN_ERR_INVALID,
                     "GIN_PROXY_RING_SIZE=%lld is not a power of two in "
                     "[8, 65536]",
                     (long long)size);
  int n = dc->nctx;
  gin_proxy_ring_t *rings = (gin_proxy_ring_t *)aligned_alloc(
      _Alignof(gin_proxy_ring_t), (size_t)n * sizeof *rings);
  if (rings) memset(rings, 0, (size_t)n * sizeof *rings);
  gin_ring_t *devtab = (gin_ring_t *)calloc((size_t)n, sizeof *devtab);
  gin_result_t res = GIN_SUCCESS;
  if (!rings || !devtab) {
    res = GIN_ERROR(GIN_ERR_NOMEM, "proxy rings");
    goto fail;
  }
  int lap_shift = 0;
  while ((1ll << lap_shift) < size)
    lap_shift++;
  /* Round robin over the threads, continuing where the last device
   * communicator stopped. */
  pthread_mutex_lock(&px->lock);
  int first = px->next_thread;
  px->next_thread = (first + n) % px->nthreads;
  pthread_mutex_unlock(&px->lock);
  for (int i = 0; i < n && res == GIN_SUCCESS; i++) {
    gin_proxy_ring_t *r = &rings[i];
    r->thread = (first + i) % px->nthreads;
    r->size = (uint32_t)size;
    r->lap_shift = lap_shift;
    r->batch = size / 2 < GIN_PROXY_BATCH ? (int)(size / 2) : GIN_PROXY_BATCH;
    r->ctx = i;
    r->sig_win = sig_win;
    r->nsig_total = nsig_total;
    r->nsignals = dc->nsignals;
    r->ncounters = dc->ncounters;
    r->counters = counters_host;
    r->mem_bytes = (size_t)size * sizeof(gin_desc_t) + 64;
    gin_arch_handle_t h;
    res = gin_arch_hostmem_alloc(r->mem_bytes, &r->mem, &r->mem_dev, &h,
                                 &r->mem_cookie);
    if (res == GIN_SUCCESS)
      res = gin_arch_dev_alloc(2 * sizeof(uint64_t), (void **)&r->prod);
    if (res == GIN_SUCCESS) { /* producer index 0, credit limit `size` */
      uint64_t init[2] = {0, (uint64_t)size};
      res = gin_arch_copy(r->prod, init, sizeof init);
    }
    if (res != GIN_SUCCESS) break;
    r->slots = (gin_desc_t *)r->mem;
    r->cons = (uint64_t *)((char *)r->mem + (size_t)size * sizeof(gin_desc_t));
    devtab[i].slots = (gin_desc_t *)r->mem_dev;
    devtab[i].cons = (const uint64_t *)((char *)r->mem_dev +
                                        (size_t)size * sizeof(gin_desc_t));
    devtab[i].prod = r->prod;
    devtab[i].size = (uint32_t)size;
    /* The host target's producers are threads of this process: they see
     * the serving thread's flag and ring its doorbell. */
    proxy_thread_t *th = &px->th[r->thread];
    devtab[i].bell = th->bell;
    devtab[i].sleeping = th->bell >= 0 ? &th->sleeping : NULL;
  }
  void *dev = NULL;
  if (res == GIN_SUCCESS)
    res = gin_arch_dev_alloc(sizeof(gin_ring_t) * (size_t)n, &dev);
  if (res == GIN_SUCCESS)
    res = gin_arch_copy(dev, devtab, sizeof(gin_ring_t) * (size_t)n);
  if (res != GIN_SUCCESS) {
    gin_arch_dev_free(dev);
    goto fail;
  }
  res = threads_reserve(px, rings, n);
  if (res != GIN_SUCCESS) {
    gin_arch_dev_free(dev);
    goto fail;
  }
  free(devtab);
  for (int i = 0; i < n; i++)
    rings[i].next_ring = i + 1 < n ? &rings[i + 1] : NULL;
  pthread_mutex_lock(&px->lock);
  rings[n - 1].next_ring = px->rings;
  px->rings = rings;
  pthread_mutex_unlock(&px->lock);
  /* Now the threads see them: everything above is written before. */
  for (int i = 0; i < n; i++) {
    proxy_thread_t *th = &px->th[rings[i].thread];
    pthread_mutex_lock(&th->lock);
    th->rings[th->nrings++] = &rings[i];
    pthread_mutex_unlock(&th->lock);
  }
  dc->rings = (gin_ring_t *)dev;
  *rings_out = rings;
  return GIN_SUCCESS;

fail:
  if (rings)
    for (int i = 0; i < n; i++) {
      if (rings[i].mem)
        gin_arch_hostmem_free(rings[i].mem, rings[i].mem_bytes,
                              rings[i].mem_cookie);
      gin_arch_dev_free(rings[i].prod);
    }
  free(rings);
  free(devtab);
  return res;
}

void gin_proxy_rings_destroy(struct gin_proxy *px, gin_proxy_ring_t *rings,
                             int n, void *dev_table) {
  if (!rings) return;
  if (px) { /* gone already when the communicator is being destroyed */
    /* Once its thread's lock is released, no thread is draining a ring
     * or will again. */
    for (int i = 0; i < n; i++) {
      proxy_thread_t *th = &px->th[rings[i].thread];
      pthread_mutex_lock(&th->lock);
      for (int j = 0; j < th->nrings; j++)
        if (th->rings[j] == &rings[i]) {
          th->rings[j] = th->rings[--th->nrings];
          break;
        }
      pthread_mutex_unlock(&th->lock);
    }
    /* The n rings are consecutive in the list of all rings. */
    pthread_mutex_lock(&px->lock);
    gin_proxy_ring_t **pp = &px->rings;
    while (*pp && *pp != rings)
      pp = &(*pp)->next_ring;
    if (*pp) *pp = rings[n - 1].next_ring;
    pthread_mutex_unlock(&px->lock);
  }
  for (int i = 0; i < n; i++) {
    gin_arch_hostmem_free(rings[i].mem, rings[i].mem_bytes,
                          rings[i].mem_cookie);
    gin_arch_dev_free(rings[i].prod);
  }
  gin_arch_dev_free(dev_table);
  free(rings);
}
