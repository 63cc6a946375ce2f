/*
 * ipc transport: peers on this machine whose windows are mapped here (the
 * proxy path inside a node). The proxy thread collects a batch of
 * operations, copies every payload into the peers' mapped windows in one
 * submission (memcpy on the host target, one cudaMemcpyBatchAsync on the
 * copy engine on cuda: no CUDA call per small put), waits for it, then
 * applies the batch's signals in order with release adds on the CPU views
 * of the peers' proxy signal words. So a signal is never visible before
 * its payload, or any earlier one.
 */
#include <stdlib.h>
#include <string.h>

#include "transport/transport.h"

#define IPC_BATCH 64

/* Operations started since the last flush: their copies go to the copy
 * engine in one submission, then their signals are applied in order. */
typedef struct ipc_sig {
  uint64_t *word; /* CPU view of the signal */
  uint32_t *mode; /* CPU view of its INC/ADD mark word, or NULL */
  uint32_t mode_bit;
  uint64_t add;
} ipc_sig_t;

typedef struct ipc_state {
  gin_comm_t comm;
  size_t ncopies, nsigs;
  void *dst[IPC_BATCH];
  const void *src[IPC_BATCH];
  size_t size[IPC_BATCH];
  uint64_t value[IPC_BATCH]; /* PUT_VALUE sources live here until flush */
  ipc_sig_t sig[IPC_BATCH];
} ipc_state_t;

static gin_result_t ipc_init(gin_comm_t comm, const uint8_t *use,
                             void **state_out) {
  for (int r = 0; r < comm->nranks; r++)
    if (use[r] && comm->path_mapped[r] == 0)
      return GIN_ERROR(GIN_ERR_UNSUPPORTED,
                       "ipc transport: rank %d cannot map rank %d's memory",
                       comm->rank, r);
  ipc_state_t *s = (ipc_state_t *)calloc(1, sizeof *s);
  if (!s) return GIN_ERROR(GIN_ERR_NOMEM, "ipc transport");
  s->comm = comm;
  *state_out = s;
  return GIN_SUCCESS;
}

static gin_result_t ipc_flush(void *state) {
  ipc_state_t *s = (ipc_state_t *)state;
  gin_result_t res = gin_arch_copy_batch(s->dst, s->src, s->size, s->ncopies);
  s->ncopies = 0;
  if (res != GIN_SUCCESS) {
    s->nsigs = 0;
    return res;
  }
  /* Every payload of the batch is written: now its signals. */
  for (size_t i = 0; i < s->nsigs; i++) {
    ipc_sig_t *g = &s->sig[i];
    if (g->mode) __atomic_fetch_or(g->mode, g->mode_bit, __ATOMIC_RELAXED);
    gin_arch_atomic_add_u64(g->word, g->add);
  }
  s->nsigs = 0;
  return GIN_SUCCESS;
}

static int ranges_overlap(const char *a, size_t na, const char *b, size_t nb) {
  return a < b + nb && b < a + na;
}

/* Whether a copy to dst (or from src) must wait for the pending batch:
 * copies within one submission run in no particular order. */
static int ipc_conflicts(const ipc_state_t *s, const char *dst, const char *src,
                         size_t n) {
  for (size_t i = 0; i < s->ncopies; i++) {
    const char *d = (const char *)s->dst[i], *r = (const char *)s->src[i];
    if (ranges_overlap(d, s->size[i], dst, n) ||        /* write after write */
        ranges_overlap(r, s->size[i], dst, n) ||        /* write after read */
        (src && ranges_overlap(d, s->size[i], src, n))) /* read after write */
      return 1;
  }
  return 0;
}

static gin_result_t ipc_put(void *state, const gin_xfer_t *x) {
  ipc_state_t *s = (ipc_state_t *)state;
  gin_comm_t c = s->comm;
  char *dst = NULL, *sig = NULL;
  if (x->op == GIN_OP_PUT || x->op == GIN_OP_PUT_VALUE) {
    dst = c->wins[x->dst_win].bases[x->peer];
    if (!dst)
      return GIN_ERROR(GIN_ERR_INTERNAL, "ipc: window %u of rank %d not mapped",
                       x->dst_win, x->peer);
    dst += x->dst_off;
  }
  if (x->has_signal) {
    sig = c->wins[x->sig_win].hbases[x->peer]; /* CPU view */
    if (!sig)
      return GIN_ERROR(GIN_ERR_INTERNAL, "ipc: signals of rank %d not mapped",
                       x->peer);
  }
  if (s->ncopies == IPC_BATCH || s->nsigs == IPC_BATCH ||
      (dst &&
       ipc_conflicts(s, dst, x->op == GIN_OP_PUT ? (const char *)x->src : NULL,
                     x->bytes)))
    GIN_CHECK(ipc_flush(s));
  if (dst && x->bytes > 0) {
    size_t i = s->ncopies++;
    s->dst[i] = dst;
    s->size[i] = x->bytes;
    if (x->op == GIN_OP_PUT) {
      s->src[i] = x->src;
    } else {
      s->value[i] = x->value; /* little endian: the low bytes come first */
      s->src[i] = &s->value[i];
    }
  }
  if (sig) {
    ipc_sig_t *g = &s->sig[s->nsigs++];
    g->word = (uint64_t *)(sig + x->sig_off);
    g->mode = x->mode_off ? (uint32_t *)(sig + x->mode_off) : NULL;
    g->mode_bit = x->mode_bit;
    g->add = x->sig_add;
  }
  return GIN_SUCCESS;
}

/* Nothing to drive: the proxy flushes each batch (under its lock). */
static gin_result_t ipc_progress(void *state) { return GIN_SUCCESS; }

static void ipc_fini(void *state) {
  ipc_flush(state);
  free(state);
}

const gin_transport_ops_t gin_transport_ipc = {
    .size = sizeof(gin_transport_ops_t),
    .name = "ipc",
    .init = ipc_init,
    .put = ipc_put,
    .flush = ipc_flush,
    .progress = ipc_progress,
    .fini = ipc_fini,
};
