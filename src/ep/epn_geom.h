/*
 * EP normal mode's internals shared by the host side (epn.c) and its
 * kernels (epn_kernels.c). One window per buffer holds, at symmetric
 * offsets (R ranks, C the configuration's channels, S ring rows):
 *   dring  [R src][C][S] dispatch slots   (rows arriving here)
 *   dstage [R dst][C][S] dispatch slots   (rows staged for proxied peers;
 *                                          none where no rank has one)
 *   cring  [R src][C][S] combine slots
 *   cstage [R dst][C][S] combine slots
 *   note   [2][R src] notes               (counts arriving here)
 *   nstage [2][R dst] notes               (counts staged for peers)
 * A dispatch slot: the token's index at its source and the row's format
 * (int32 each, 16 bytes with padding), the payload (bf16 [H], or fp8 [H] then
 * 4-byte scales [H / 128]: never more than the bf16 row), the top-k ids (int32
 * [K], global) and weights (fp32 [K]), padded to 16. A combine slot: the bf16
 * row [H] then the weights (fp32 [K]), padded to 16. A note (int32): the
 * sender's channel count, its token count, tokens to this rank per
 * channel [C], top-k slots naming each of this rank's experts [L].
 *
 * Rings are streams: position p of ring (peer, channel) is slot p % S;
 * the positions written and read so far persist across calls in the
 * device scratch counters; the ring's tail signal at the receiver counts
 * the rows written, its credit signal at the sender the rows read. Notes
 * alternate between two slots, each acknowledged before its reuse.
 */
#ifndef GIN_EPN_GEOM_H
#define GIN_EPN_GEOM_H

#include "gin/device/gin_device.h"
#include "gin/gin_ep_normal.h"

#define GIN_EPN_MAX_CHANNELS 64
#define GIN_EPN_MAX_RANKS 256
#define GIN_EPN_SLOT_HEAD 16
/* Tokens a rank sends in one call at most (so that every count and
 * received-row total fits an int32 at GIN_EPN_MAX_RANKS ranks). */
#define GIN_EPN_MAX_TOKENS (1 << 22)

typedef struct gin_epn_geom {
  int R, L, E, H, K, C, S, me;
  int staged; /* dstage and cstage exist (some rank has a proxied peer) */
  size_t dslot, cslot, note; /* bytes */
  size_t off_dring, off_dstage, off_cring, off_cstage, off_note, off_nstage;
  size_t win_bytes;
} gin_epn_geom_t;

/* Everything a kernel needs, by value. */
typedef struct gin_epn_args {
  gin_devcomm_t dc;
  gin_window_t win;
  gin_epn_geom_t g;
  char *base;        /* this rank's window (device view) */
  uint64_t *scratch; /* persistent counters (the scratch offsets below) */
  int T, C, chunk;   /* tokens, the call's channels, rows per chunk */
  int K, idx64;      /* top-k slots carried (0: none), ids' width */
  int fp8, worst, cap;
  int64_t sst, ssg; /* scale strides (elements) */
  gin_epn_handle_t h;
  const void *x, *scales, *topk;
  const float *weights;
  void *recv_x, *recv_scales;
  int64_t *recv_idx;
  float *recv_w;
  const uint16_t *bias0, *bias1;
  uint16_t *out;
  float *out_w;
  const int32_t *per_expert;
  int32_t *per_rank, *per_expert_out, *recv_counts;
  uint8_t *in_rank_out;
} gin_epn_args_t;

/* Token range [*t0, *t1) of channel c of C over T tokens. */
GIN_HD_FN void gin_epn_channel(int T, int C, int c, int *t0, int *t1) {
  int per = (T + C - 1) / C;
  long b = (long)per * c, e = b + per;
  *t0 = (int)(b < T ? b : T);
  *t1 = (int)(e < T ? e : T);
}

GIN_HD_FN size_t gin_epn_ring(const gin_epn_geom_t *g, size_t off, size_t slot,
                              int peer, int c, uint64_t pos) {
  return off + (((size_t)peer * (size_t)g->C + (size_t)c) * (size_t)g->S +
                (size_t)(pos % (uint64_t)g->S)) *
                   slot;
}
GIN_HD_FN size_t gin_epn_note_off(const gin_epn_geom_t *g, size_t off,
                                  uint64_t seq, int peer) {
  return off + ((size_t)(seq & 1) * (size_t)g->R + (size_t)peer) * g->note;
}

/* Signal ids: ring tails at the receiver (by source), credits at the
 * sender (by destination), for dispatch then combine; notes' arrivals (by
 * source) and acknowledgements (by destination). */
GIN_HD_FN int gin_epn_sig(const gin_epn_geom_t *g, int kind, int peer, int c) {
  return (kind * g->R + peer) * g->C + c;
}
enum { EPN_DTAIL = 0, EPN_DCRED = 1, EPN_CTAIL = 2, EPN_CCRED = 3 };
GIN_HD_FN int gin_epn_sig_note(const gin_epn_geom_t *g, int src) {
  return 4 * g->R * g->C + src;
}
GIN_HD_FN int gin_epn_sig_ack(const gin_epn_geom_t *g, int dst) {
  return 4 * g->R * g->C + g->R + dst;
}
GIN_HD_FN int gin_epn_nsignals(const gin_epn_geom_t *g) {
  return 4 * g->R * g->C + 2 * g->R;
}

/* Scratch counters (uint64): ring positions [4][R][C] by the signal kinds
 * above (rows written to each destination, rows read from each source),
 * the notes sent, then the layout's counts [R + E] (zero between
 * launches). */
GIN_HD_FN size_t gin_epn_scratch_pos(const gin_epn_geom_t *g, int kind,
                                     int peer, int c) {
  return (size_t)gin_epn_sig(g, kind, peer, c);
}
GIN_HD_FN size_t gin_epn_scratch_seq(const gin_epn_geom_t *g) {
  return 4 * (size_t)g->R * (size_t)g->C;
}
GIN_HD_FN size_t gin_epn_scratch_layout(const gin_epn_geom_t *g) {
  return gin_epn_scratch_seq(g) + 1;
}
GIN_HD_FN size_t gin_epn_scratch_words(const gin_epn_geom_t *g) {
  return gin_epn_scratch_layout(g) + (size_t)g->R + (size_t)g->E;
}

#endif
