/*
 * EP internals shared by the host side (ep.c, C) and the kernels
 * (ep_kernels.c, built as C for the host target and as CUDA for the cuda
 * target). One window per buffer holds, at symmetric offsets:
 *   send   [2][M] messages          (dispatch sources, two sets: one
 *                                     payload per token, cast once;
 *                                     headers unused)
 *   recv   [2][L][R][M] messages    (dispatch arrivals, two sets)
 *   csend  [L][R * M][H] bf16       (combine sources: rows staged for
 *                                     proxied peers, or the experts'
 *                                     outputs written there by the user,
 *                                     gin_ep_combine_buffer)
 *   crecv  [2][M][K][H] bf16        (combine arrivals, two sets)
 *   where  [2][M][K] uint64         (combine: GIN_EP_PULLED | the row's
 *                                     slot in the expert's csend, where
 *                                     the row stayed there; 0 when it
 *                                     came into crecv)
 *   hdr    [2][L][R][M] uint64      (dispatch arrivals' headers, apart
 *                                     from their messages: a send's
 *                                     headers to one rank land in a few
 *                                     pages, not one page per expert)
 * A received message: 16 bytes unused, then the payload (fp8 bytes [H] +
 * fp32 scales [H / 128], or bf16 [H]), padded to 16; its header (int32
 * token, top-k slot with GIN_EP_PULLED: one 8-byte put) is the message's
 * word in hdr. A sender whose path to
 * the receiver is direct (its window mapped there) sends the header alone
 * and sets GIN_EP_PULLED: the receiver copies the payload straight from
 * the sender's send slot (one copy in all, not two). The send slots have
 * two sets so that a slot is rewritten only after every receiver is done
 * with it (ep.c: the dispatch after next, which waits for every rank's
 * signals of the dispatch between, sent after their receives).
 * A token's slot at an expert is the number of earlier tokens of its
 * rank routed there, so arrivals sit in token order.
 * Combine returns a row the same way: with y given in csend
 * (gin_ep_combine_buffer) and a direct path, only an 8-byte `where`
 * word; the token's rank reads the row from the expert's csend and
 * zeroes the word.
 * Signals: dispatch (set, local expert, source) at the expert's rank,
 * added count + 1 after the tokens; combine (set, token) at the token's
 * rank, incremented by each of its returning top-k slots.
 */
#ifndef GIN_EP_GEOM_H
#define GIN_EP_GEOM_H

#include "ep/ep_msg.h"
#include "gin/device/gin_device.h"
#include "gin/gin_ep.h"

#define GIN_EP_HEADER 16

typedef struct gin_ep_geom {
  int R, L, E, M, K, H, fp8, me;
  size_t msg; /* bytes per dispatch message */
  size_t off_send, off_recv, off_csend, off_crecv, off_where, off_hdr;
  size_t win_bytes;
} gin_ep_geom_t;

/* Everything a kernel needs, by value. */
typedef struct gin_ep_args {
  gin_devcomm_t dc;
  gin_window_t win;
  gin_ep_geom_t g;
  int set, T;
  int split;  /* dispatch receive: units per local expert (launcher's) */
  int near;   /* ranks sharing this rank's device, itself included */
  int pull;   /* sends: let mapped receivers copy from here */
  int zc;     /* combine: y is this buffer's csend (gin_ep_combine_buffer) */
  char *base; /* this rank's window (device view) */
  int fp8;    /* dispatch: the payload is fp8 (else bf16) */
  int pow2;   /* dispatch: fp8 scales rounded up to powers of two */
  int scale_layout; /* dispatch receive: GIN_EP_SCALES_* of r.scales */
  int packed;       /* dispatch receive: r.layout as GIN_EP_LAYOUT_PACKED */
  int idx64;        /* topk is int64_t */
  int32_t *stats;   /* dispatch receive: [L] += count, or NULL */
  const uint16_t *x;
  const void *topk; /* [T][K] int32_t or (idx64) int64_t: gin_ep_topk */
  const float *weights;
  const uint16_t *y;
  uint16_t *out;
  gin_ep_recv_t r;   /* output arrays */
  int32_t *src_k;    /* [L][R * M] top-k slot of each received token */
  uint64_t *scratch; /* [E] tokens per expert, then blocks done (dispatch
                        send), then [L] units done per local expert
                        (dispatch receive); zero between launches */
} gin_ep_args_t;

/* Entry i of the routing table; an int64 id past int32's range reads as
 * the nearest int32 (out of range as well: reported as such). */
GIN_HD_FN int32_t gin_ep_topk(const gin_ep_args_t *a, size_t i) {
  if (!a->idx64) return ((const int32_t *)a->topk)[i];
  int64_t v = ((const int64_t *)a->topk)[i];
  return v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : (int32_t)v;
}

GIN_HD_FN size_t gin_ep_send_off(const gin_ep_geom_t *g, int set, int t) {
  return g->off_send + ((size_t)set * (size_t)g->M + (size_t)t) * g->msg;
}
/* Dispatch arrival (set, le, src, slot)'s index in [2][L][R][M]. */
GIN_HD_FN size_t gin_ep_arrival(const gin_ep_geom_t *g, int set, int le,
                                int src, int slot) {
  return (((size_t)set * (size_t)g->L + (size_t)le) * (size_t)g->R +
          (size_t)src) *
             (size_t)g->M +
         (size_t)slot;
}
GIN_HD_FN size_t gin_ep_recv_off(const gin_ep_geom_t *g, int set, int le,
                                 int src, int slot) {
  return g->off_recv + gin_ep_arrival(g, set, le, src, slot) * g->msg;
}
/* The 8-byte header of that arrival. */
GIN_HD_FN size_t gin_ep_hdr_off(const gin_ep_geom_t *g, int set, int le,
                                int src, int slot) {
  return g->off_hdr + gin_ep_arrival(g, set, le, src, slot) * 8;
}
GIN_HD_FN size_t gin_ep_csend_off(const gin_ep_geom_t *g, int le, int slot) {
  return g->off_csend +
         ((size_t)le * (size_t)g->R * (size_t)g->M + (size_t)slot) *
             (size_t)g->H * 2;
}
GIN_HD_FN size_t gin_ep_crecv_off(const gin_ep_geom_t *g, int set, int t,
                                  int k) {
  return g->off_crecv +
         (((size_t)set * (size_t)g->M + (size_t)t) * (size_t)g->K + (size_t)k) *
             (size_t)g->H * 2;
}
GIN_HD_FN size_t gin_ep_where_off(const gin_ep_geom_t *g, int set, int t,
                                  int k) {
  return g->off_where +
         (((size_t)set * (size_t)g->M + (size_t)t) * (size_t)g->K + (size_t)k) *
             8;
}
/* Signal ids. */
GIN_HD_FN int gin_ep_dsig(const gin_ep_geom_t *g, int set, int le, int src) {
  return (set * g->L + le) * g->R + src;
}
GIN_HD_FN int gin_ep_csig(const gin_ep_geom_t *g, int set, int t) {
  return 2 * g->L * g->R + set * g->M + t;
}
GIN_HD_FN int64_t gin_ep_nsignals(const gin_ep_geom_t *g) {
  return 2 * (int64_t)g->L * g->R + 2 * (int64_t)g->M;
}

#endif
