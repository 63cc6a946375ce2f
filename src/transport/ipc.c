/*
 * ipc transport: peers on this machine whose windows are mapped here (the
 * proxy path inside a node). Each proxy thread has its own lane: the
 * copies of the operations it starts are collected and submitted to the
 * copy engine in groups (memcpy on the host target, one
 * cudaMemcpyBatchAsync on the thread's stream on cuda: no CUDA call per
 * small put). The copies of one group run in no particular order, so a
 * copy that overlaps one collected before (same destination, or reading
 * what it writes) first submits the group collected so far: stream order
 * runs that group to completion before the next one starts, and nobody
 * waits. Only a flush waits for the stream, once, then applies the
 * pending signals in order with release adds on the CPU views of the
 * peers' proxy signal words. So a signal is never visible before its
 * payload, or any earlier one.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "transport/transport.h"

#define IPC_BATCH 64    /* copies per submission */
#define IPC_PENDING 256 /* signals and put_value sources held until a flush */

typedef struct ipc_sig {
  uint64_t *word; /* CPU view of the signal */
  uint32_t *mode; /* CPU view of its INC/ADD mark word, or NULL */
  uint32_t mode_bit;
  uint64_t add;
} ipc_sig_t;

/* One proxy thread's operations since its last flush. Used by that thread
 * only (and by fini, once the threads are gone). */
typedef struct ipc_lane {
  struct ipc_lane *next;
  pthread_t owner;
  /* The group being collected, not yet submitted. */
  size_t ncopies;
  void *dst[IPC_BATCH];
  const void *src[IPC_BATCH];
  size_t size[IPC_BATCH];
  uintptr_t dlo, dhi; /* span of the group's destinations */
  uintptr_t slo, shi; /* span of its put sources */
  int submitted;      /* groups were submitted since the last wait */
  /* Held until the flush has waited for the copies. */
  size_t nvalues;
  uint64_t *value; /* [IPC_PENDING] put_value sources (staging memory) */
  size_t nsigs;
  ipc_sig_t sig[IPC_PENDING];
} ipc_lane_t;

typedef struct ipc_state {
  const gin_job_t *job;
  uint64_t id;          /* unique per state, never reused */
  pthread_mutex_t lock; /* guards the lane list */
  ipc_lane_t *lanes;
} ipc_state_t;

/* The calling thread's lane of the state with id `id`: the last one it
 * used (a proxy thread serves one communicator). */
static _Thread_local struct {
  uint64_t id;
  ipc_lane_t *lane;
} ipc_tls;
static uint64_t ipc_next_id = 1;

static gin_result_t ipc_init(const gin_job_t *job, const uint8_t *use,
                             void **state_out) {
  for (int r = 0; r < job->nranks; r++)
    if (use[r] && job->mapped[r] == 0)
      return GIN_ERROR(GIN_ERR_UNSUPPORTED,
                       "ipc transport: rank %d cannot map rank %d's memory",
                       job->rank, r);
  ipc_state_t *s = (ipc_state_t *)calloc(1, sizeof *s);
  if (!s) return GIN_ERROR(GIN_ERR_NOMEM, "ipc transport");
  s->job = job;
  s->id = __atomic_fetch_add(&ipc_next_id, 1, __ATOMIC_RELAXED);
  pthread_mutex_init(&s->lock, NULL);
  *state_out = s;
  return GIN_SUCCESS;
}

static void span_reset(ipc_lane_t *l) {
  l->dlo = l->slo = UINTPTR_MAX;
  l->dhi = l->shi = 0;
}

/* The calling thread's lane; creates it when `create`, else *lane_out may
 * be NULL (the thread started nothing). */
static gin_result_t lane_get(ipc_state_t *s, int create,
                             ipc_lane_t **lane_out) {
  if (ipc_tls.id == s->id) {
    *lane_out = ipc_tls.lane;
    return GIN_SUCCESS;
  }
  /* A thread that served another state in between finds its lane. */
  pthread_t self = pthread_self();
  pthread_mutex_lock(&s->lock);
  ipc_lane_t *l = s->lanes;
  while (l && !pthread_equal(l->owner, self))
    l = l->next;
  pthread_mutex_unlock(&s->lock);
  if (l || !create) {
    if (l) {
      ipc_tls.id = s->id;
      ipc_tls.lane = l;
    }
    *lane_out = l;
    return GIN_SUCCESS;
  }
  l = (ipc_lane_t *)calloc(1, sizeof *l);
  if (!l) return GIN_ERROR(GIN_ERR_NOMEM, "ipc transport lane");
  /* Waiting on the (empty) queue first sets the thread up for its device,
   * so the staging memory is pinned where the copies run. */
  gin_result_t res = gin_arch_copy_wait();
  if (res == GIN_SUCCESS)
    res = gin_arch_staging_alloc(IPC_PENDING * sizeof(uint64_t),
                                 (void **)&l->value);
  if (res != GIN_SUCCESS) {
    free(l);
    return res;
  }
  span_reset(l);
  l->owner = self;
  pthread_mutex_lock(&s->lock);
  l->next = s->lanes;
  s->lanes = l;
  pthread_mutex_unlock(&s->lock);
  ipc_tls.id = s->id;
  ipc_tls.lane = l;
  *lane_out = l;
  return GIN_SUCCESS;
}

/* Hands the collected group to the copy engine; nobody waits. */
static gin_result_t lane_submit(ipc_lane_t *l) {
  if (l->ncopies == 0) return GIN_SUCCESS;
  gin_result_t res = gin_arch_copy_submit(l->dst, l->src, l->size, l->ncopies);
  l->ncopies = 0;
  l->submitted = 1;
  span_reset(l);
  return res;
}

/* Submits what is collected, waits for every copy, then applies the
 * signals in the order their operations were started. */
static gin_result_t lane_flush(ipc_lane_t *l) {
  gin_result_t res = lane_submit(l);
  GIN_TRACE(PROXY, "ipc flush: waiting for the copies (%zu signals pending)",
            l->nsigs);
  if (l->submitted) { /* even after a failure: nothing may stay in flight */
    gin_result_t w = gin_arch_copy_wait();
    if (res == GIN_SUCCESS) res = w;
  }
  l->submitted = 0;
  l->nvalues = 0; /* no copy reads them any more */
  if (res != GIN_SUCCESS) {
    l->nsigs = 0;
    return res;
  }
  /* Every payload is written: now the signals. */
  GIN_TRACE(PROXY, "ipc flush: copies done, %zu signals to apply", l->nsigs);
  for (size_t i = 0; i < l->nsigs; i++) {
    ipc_sig_t *g = &l->sig[i];
    if (g->mode) __atomic_fetch_or(g->mode, g->mode_bit, __ATOMIC_RELAXED);
    gin_arch_atomic_add_u64(g->word, g->add);
  }
  l->nsigs = 0;
  return GIN_SUCCESS;
}

static gin_result_t ipc_flush(void *state) {
  ipc_lane_t *l;
  GIN_CHECK(lane_get((ipc_state_t *)state, 0, &l));
  return l ? lane_flush(l) : GIN_SUCCESS;
}

static int ranges_overlap(uintptr_t a, size_t na, uintptr_t b, size_t nb) {
  return a < b + nb && b < a + na;
}

/* What the collected group means for a copy to [dst, dst+n) (from src,
 * if a put's source), in one look: `match`, the copy writing exactly
 * those bytes (or l->ncopies); `raw`, whether the group writes what src
 * reads; `conflict`, whether the copy must go after the group (copies of
 * one submission run in no particular order). The spans answer most
 * calls without looking at each copy. */
typedef struct lane_scan {
  size_t match;
  int raw, conflict;
} lane_scan_t;

static lane_scan_t lane_scan(const ipc_lane_t *l, uintptr_t dst, uintptr_t src,
                             size_t n) {
  lane_scan_t r = {l->ncopies, 0, 0};
  int waw = l->dlo < l->dhi && ranges_overlap(dst, n, l->dlo, l->dhi - l->dlo);
  int war = l->slo < l->shi && ranges_overlap(dst, n, l->slo, l->shi - l->slo);
  int raw =
      src && l->dlo < l->dhi && ranges_overlap(src, n, l->dlo, l->dhi - l->dlo);
  if (!waw && !war && !raw) return r;
  for (size_t i = 0; i < l->ncopies; i++) {
    uintptr_t d = (uintptr_t)l->dst[i], s = (uintptr_t)l->src[i];
    int w = ranges_overlap(d, l->size[i], dst, n);         /* after write */
    int rd = src && ranges_overlap(d, l->size[i], src, n); /* read after */
    if (r.match == l->ncopies && d == dst && l->size[i] == n) r.match = i;
    r.raw |= rd;
    r.conflict |= w || ranges_overlap(s, l->size[i], dst, n) || rd;
  }
  return r;
}

static gin_result_t ipc_put(void *state, const gin_xfer_t *x) {
  ipc_state_t *s = (ipc_state_t *)state;
  const gin_job_t *c = s->job;
  char *dst = NULL, *sig = NULL;
  if (x->op == GIN_OP_PUT || x->op == GIN_OP_PUT_VALUE) {
    dst = c->wins[x->dst_win].bases[x->peer];
    if (!dst)
      return GIN_ERROR(GIN_ERR_INTERNAL, "ipc: window %u of rank %d not mapped",
                       x->dst_win, x->peer);
    dst += x->dst_off;
    if (x->bytes == 0) dst = NULL; /* nothing to copy */
  }
  if (x->has_signal) {
    sig = c->wins[x->sig_win].hbases[x->peer]; /* CPU view */
    if (!sig)
      return GIN_ERROR(GIN_ERR_INTERNAL, "ipc: signals of rank %d not mapped",
                       x->peer);
  }
  ipc_lane_t *l;
  GIN_CHECK(lane_get(s, 1, &l));
  /* Out of value slots or signal room: everything must complete first. */
  if ((dst && x->op == GIN_OP_PUT_VALUE && l->nvalues == IPC_PENDING) ||
      (sig && l->nsigs == IPC_PENDING))
    GIN_CHECK(lane_flush(l));
  if (dst) {
    uintptr_t d = (uintptr_t)dst;
    uintptr_t src = x->op == GIN_OP_PUT ? (uintptr_t)x->src : 0;
    size_t n = (size_t)x->bytes;
    /* A copy to exactly the bytes a collected one writes replaces it:
     * that one's data would be overwritten before anyone could rely on it
     * (its signal, applied after the whole group, shows the newer bytes,
     * which a direct put racing the reader could show too). No collected
     * copy reads those bytes (it would have split the group), so only
     * the new source must not read what the group writes. */
    lane_scan_t sc = lane_scan(l, d, src, n);
    size_t i = sc.match;
    if (i == l->ncopies || sc.raw) {
      if (l->ncopies == IPC_BATCH || sc.conflict) GIN_CHECK(lane_submit(l));
      i = l->ncopies++;
    }
    l->dst[i] = dst;
    l->size[i] = n;
    if (d < l->dlo) l->dlo = d;
    if (d + n > l->dhi) l->dhi = d + n;
    if (src) {
      l->src[i] = x->src;
      if (src < l->slo) l->slo = src;
      if (src + n > l->shi) l->shi = src + n;
    } else {
      /* Little endian: the low bytes come first. The slot stays untouched
       * until the flush has waited for the copy. */
      uint64_t *v = &l->value[l->nvalues++];
      *v = x->value;
      l->src[i] = v;
    }
  }
  if (sig) {
    ipc_sig_t *g = &l->sig[l->nsigs++];
    g->word = (uint64_t *)(sig + x->sig_off);
    g->mode = x->mode_off ? (uint32_t *)(sig + x->mode_off) : NULL;
    g->mode_bit = x->mode_bit;
    g->add = x->sig_add;
  }
  return GIN_SUCCESS;
}

/* The calling proxy thread's lane, made before any kernel runs. */
static gin_result_t ipc_thread_start(void *state) {
  ipc_lane_t *l;
  return lane_get((ipc_state_t *)state, 1, &l);
}

/* Nothing to drive: each proxy thread flushes its lane after each batch. */
static gin_result_t ipc_progress(void *state) { return GIN_SUCCESS; }

/* Called once the proxy threads are joined. Their lanes are empty (each
 * batch ends with a flush, which also clears a lane when it fails), so
 * this frees them; whatever one still held would be flushed here, on the
 * calling thread's queue. */
static void ipc_fini(void *state) {
  ipc_state_t *s = (ipc_state_t *)state;
  while (s->lanes) {
    ipc_lane_t *l = s->lanes;
    s->lanes = l->next;
    l->submitted = 0; /* the owner waited for its queue before exiting */
    lane_flush(l);
    gin_arch_staging_free(l->value);
    free(l);
  }
  pthread_mutex_destroy(&s->lock);
  free(s);
}

const gin_transport_ops_t gin_transport_ipc = {
    .size = sizeof(gin_transport_ops_t),
    .name = "ipc",
    .init = ipc_init,
    .put = ipc_put,
    .flush = ipc_flush,
    .progress = ipc_progress,
    .fini = ipc_fini,
    .thread_start = ipc_thread_start,
};
