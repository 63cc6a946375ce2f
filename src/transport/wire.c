/* Operations as messages: what tcp and ofi share (wire.h). */
#include <string.h>

#include "transport/wire.h"

void gin_wire_header(const gin_job_t *job, const gin_xfer_t *x, uint64_t done,
                     uint64_t chunk, int last, gin_tcp_hdr_t *h) {
  memset(h, 0, sizeof *h);
  h->magic = GIN_TCP_HDR_MAGIC;
  h->version = GIN_TCP_VERSION;
  h->op = x->op == GIN_OP_SIGNAL ? GIN_TCP_OP_SIGNAL : GIN_TCP_OP_PUT;
  if (h->op == GIN_TCP_OP_PUT) {
    h->dst_win = x->dst_win;
    h->dst_gen = __atomic_load_n(&job->wins[x->dst_win].gen, __ATOMIC_ACQUIRE);
    h->dst_off = x->dst_off + done;
    h->bytes = chunk;
  }
  if (last && x->has_signal) {
    h->flags = GIN_TCP_F_SIGNAL;
    h->sig_win = x->sig_win;
    h->sig_gen = __atomic_load_n(&job->wins[x->sig_win].gen, __ATOMIC_ACQUIRE);
    h->sig_off = x->sig_off;
    h->sig_add = x->sig_add;
    h->mode_off = x->mode_off;
    h->mode_bit = x->mode_off ? x->mode_bit : 0;
  }
}

int gin_wire_xfer_same(const gin_xfer_t *a, const gin_xfer_t *b) {
  return a->op == b->op && a->peer == b->peer && a->src == b->src &&
         a->src_win == b->src_win && a->value == b->value &&
         a->bytes == b->bytes && a->dst_win == b->dst_win &&
         a->dst_off == b->dst_off && a->has_signal == b->has_signal &&
         a->sig_win == b->sig_win && a->sig_off == b->sig_off &&
         a->sig_add == b->sig_add && a->mode_off == b->mode_off &&
         a->mode_bit == b->mode_bit;
}

gin_result_t gin_wire_payload(const gin_xfer_t *x, const char *who,
                              const char **src, uint64_t *total) {
  *src = NULL;
  *total = 0;
  if (x->op == GIN_OP_PUT) {
    *src = (const char *)x->src;
    *total = x->bytes;
  } else if (x->op == GIN_OP_PUT_VALUE && x->bytes <= 8) {
    *src = (const char *)&x->value;
    *total = x->bytes;
  } else if (x->op != GIN_OP_SIGNAL) {
    return GIN_ERROR(GIN_ERR_INTERNAL, "%s: operation %d of %llu bytes", who,
                     x->op, (unsigned long long)x->bytes);
  }
  return GIN_SUCCESS;
}

gin_result_t gin_wire_partial_resume(const gin_wire_partial_t *p,
                                     const gin_xfer_t *x, const char *who,
                                     int peer, uint64_t *done) {
  *done = 0;
  if (!p->active) return GIN_SUCCESS;
  if (!pthread_equal(p->owner, pthread_self())) return GIN_ERR_AGAIN;
  if (!gin_wire_xfer_same(&p->x, x))
    return GIN_ERROR(GIN_ERR_INTERNAL,
                     "%s: a new operation to rank %d while one is partly "
                     "queued",
                     who, peer);
  *done = p->done;
  return GIN_SUCCESS;
}

void gin_wire_partial_save(gin_wire_partial_t *p, const gin_xfer_t *x,
                           uint64_t done) {
  p->active = done > 0;
  if (!p->active) return;
  p->x = *x;
  p->done = done;
  p->owner = pthread_self();
}

char *gin_wire_cpu_dst(const gin_job_t *job, const gin_tcp_hdr_t *h) {
  const gin_win_slot_t *w = &job->wins[h->dst_win];
  char *cpu = w->hptr                         ? (char *)w->hptr
              : gin_arch_device_mem_is_host() ? (char *)w->ptr
                                              : NULL;
  return cpu ? cpu + h->dst_off : NULL;
}

gin_result_t gin_wire_signal(const gin_job_t *job, const gin_tcp_hdr_t *h) {
  if (!(h->flags & GIN_TCP_F_SIGNAL)) return GIN_SUCCESS;
  gin_win_slot_t *w = &job->wins[h->sig_win];
  char *base = (char *)(w->hptr ? w->hptr : w->ptr);
  if (h->mode_off)
    __atomic_fetch_or((uint32_t *)(base + h->mode_off), h->mode_bit,
                      __ATOMIC_RELAXED);
  return gin_arch_atomic_add_u64((uint64_t *)(base + h->sig_off), h->sig_add);
}

gin_result_t gin_wire_self_put(const gin_job_t *job, const gin_xfer_t *x) {
  if (x->op == GIN_OP_PUT || x->op == GIN_OP_PUT_VALUE)
    GIN_CHECK(gin_arch_copy((char *)job->wins[x->dst_win].ptr + x->dst_off,
                            x->op == GIN_OP_PUT ? x->src : &x->value,
                            x->bytes));
  gin_tcp_hdr_t h;
  gin_wire_header(job, x, 0, 0, 1, &h);
  return gin_wire_signal(job, &h);
}
