/*
 * CPU reference of gin EP; the rules are in ep_ref.h.
 */
#include "ep_ref.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gin/ep_format.h"

/* ------------------------------------------------------------ random */

/* splitmix64 stream. */
typedef struct ep_rng {
  uint64_t s;
} ep_rng_t;

static uint64_t ep_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint64_t ep_rng_next(ep_rng_t *r) {
  r->s += 0x9e3779b97f4a7c15ull;
  return ep_mix(r->s);
}

/* Uniform in [0, n). */
static int ep_rng_below(ep_rng_t *r, int n) {
  return (int)((ep_rng_next(r) >> 33) % (uint64_t)n);
}

/* Uniform in [0, 1), 24 bits. */
static float ep_rng_unit(ep_rng_t *r) {
  return (float)(ep_rng_next(r) >> 40) * (1.0f / 16777216.0f);
}

const char *ep_route_name(ep_route_t route) {
  switch (route) {
  case EP_ROUTE_RANDOM: return "random";
  case EP_ROUTE_SKEWED: return "skewed";
  case EP_ROUTE_MASKED: return "masked";
  }
  return "?";
}

/* ------------------------------------------------------------ inputs */

/* Kinds of rows, for the fp8 scales: most are plain [-2, 2). */
enum { ROW_PLAIN, ROW_LARGE, ROW_TINY, ROW_ZERO, ROW_OUTLIER };

static int ep_row_kind(ep_rng_t *r) {
  switch (ep_rng_below(r, 12)) {
  case 0: return ROW_LARGE;
  case 1: return ROW_TINY;
  case 2: return ROW_ZERO;
  case 3: return ROW_OUTLIER;
  default: return ROW_PLAIN;
  }
}

/* bf16 of f rounded toward zero, so |value| stays below the bound. */
static uint16_t ep_bf16_trunc(float f) {
  return (uint16_t)(gin_ep_float_bits(f) >> 16);
}

static void ep_make_row(ep_rng_t *r, int hidden, uint16_t *row) {
  int kind = ep_row_kind(r);
  float mul = 1.0f;
  if (kind == ROW_LARGE)
    mul = ldexpf(1.0f, 3 + ep_rng_below(r, 8)); /* 2^3 .. 2^10 */
  else if (kind == ROW_TINY)
    mul = ldexpf(1.0f, -20); /* amax < GIN_EP_AMAX_MIN */
  int outlier = kind == ROW_OUTLIER ? ep_rng_below(r, hidden) : -1;
  for (int c = 0; c < hidden; c++) {
    /* [-2, 2) in steps of 2^-22 */
    float v = (float)((int32_t)(ep_rng_next(r) >> 40) - (1 << 23)) *
              (1.0f / 4194304.0f);
    if (c == outlier) v *= 256.0f; /* the others of its group: subnormal */
    row[c] = kind == ROW_ZERO ? 0 : ep_bf16_trunc(v * mul);
  }
}

/* topk distinct experts from [first, num_experts) into idx (partial
 * Fisher-Yates over perm). */
static void ep_pick_distinct(ep_rng_t *r, int first, int num_experts, int n,
                             int *perm, int32_t *idx) {
  int m = num_experts - first;
  for (int i = 0; i < m; i++)
    perm[i] = first + i;
  for (int i = 0; i < n; i++) {
    int j = i + ep_rng_below(r, m - i);
    int t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
    idx[i] = perm[i];
  }
}

void ep_ref_input_free(ep_ref_input_t *in) {
  free(in->x);
  free(in->topk_idx);
  free(in->weights);
  memset(in, 0, sizeof *in);
}

int ep_ref_input_make(uint64_t seed, int rank, int num_tokens, int hidden,
                      int topk, int num_experts, ep_route_t route,
                      ep_ref_input_t *in) {
  memset(in, 0, sizeof *in);
  if (num_tokens < 0 || hidden <= 0 || topk <= 0 || topk > num_experts ||
      (route == EP_ROUTE_SKEWED && topk > num_experts))
    return -1;
  size_t t = (size_t)num_tokens;
  in->num_tokens = num_tokens;
  in->hidden = hidden;
  in->topk = topk;
  in->num_experts = num_experts;
  /* +1: never malloc(0), so NULL means out of memory */
  in->x = (uint16_t *)malloc(t * (size_t)hidden * sizeof(uint16_t) + 1);
  in->topk_idx = (int32_t *)malloc(t * (size_t)topk * sizeof(int32_t) + 1);
  in->weights = (float *)malloc(t * (size_t)topk * sizeof(float) + 1);
  int *perm = (int *)malloc((size_t)num_experts * sizeof(int));
  if (!in->x || !in->topk_idx || !in->weights || !perm) {
    free(perm);
    ep_ref_input_free(in);
    return -1;
  }
  ep_rng_t r = {ep_mix(seed ^ ((uint64_t)(rank + 1) << 48))};
  for (int i = 0; i < num_tokens; i++) {
    ep_make_row(&r, hidden, in->x + (size_t)i * (size_t)hidden);
    int32_t *idx = in->topk_idx + (size_t)i * (size_t)topk;
    if (route == EP_ROUTE_SKEWED) {
      idx[0] = 0;
      ep_pick_distinct(&r, 1, num_experts, topk - 1, perm, idx + 1);
    } else {
      ep_pick_distinct(&r, 0, num_experts, topk, perm, idx);
    }
    if (route == EP_ROUTE_MASKED) {
      int none = ep_rng_below(&r, 6) == 0; /* routed nowhere */
      for (int k = 0; k < topk; k++)
        if (none || ep_rng_below(&r, 4) == 0) idx[k] = -1;
    }
    for (int k = 0; k < topk; k++)
      in->weights[(size_t)i * (size_t)topk + (size_t)k] = ep_rng_unit(&r);
  }
  free(perm);
  return 0;
}

/* -------------------------------------------------------------- recv */

size_t ep_ref_recv_x_bytes(const ep_ref_recv_t *r) {
  return (size_t)r->local_experts * (size_t)r->slots * (size_t)r->hidden *
         (r->fp8 ? 1u : 2u);
}

size_t ep_ref_recv_scales_bytes(const ep_ref_recv_t *r) {
  if (!r->fp8) return 0;
  return (size_t)r->local_experts * (size_t)r->slots *
         (size_t)(r->hidden / GIN_EP_FP8_GROUP) * sizeof(float);
}

size_t ep_ref_recv_slot_bytes(const ep_ref_recv_t *r) {
  return (size_t)r->local_experts * (size_t)r->slots * sizeof(int32_t);
}

void ep_ref_recv_free(ep_ref_recv_t *r) {
  free(r->x);
  free(r->scales);
  free(r->src_rank);
  free(r->src_token);
  free(r->count);
  free(r->layout);
  memset(r, 0, sizeof *r);
}

int ep_ref_recv_alloc(int local_experts, int ranks, int max_tokens, int hidden,
                      int fp8, ep_ref_recv_t *r) {
  memset(r, 0, sizeof *r);
  if (local_experts <= 0 || ranks <= 0 || max_tokens <= 0 || hidden <= 0 ||
      fp8 < 0 || fp8 > EP_REF_FP8_POW2 ||
      (fp8 && hidden % GIN_EP_FP8_GROUP != 0))
    return -1;
  r->local_experts = local_experts;
  r->ranks = ranks;
  r->slots = ranks * max_tokens;
  r->hidden = hidden;
  r->fp8 = fp8;
  r->x = calloc(ep_ref_recv_x_bytes(r), 1);
  if (fp8) r->scales = (float *)calloc(ep_ref_recv_scales_bytes(r), 1);
  r->src_rank = (int32_t *)calloc(ep_ref_recv_slot_bytes(r), 1);
  r->src_token = (int32_t *)calloc(ep_ref_recv_slot_bytes(r), 1);
  r->count = (int32_t *)calloc((size_t)local_experts, sizeof(int32_t));
  r->layout = (int32_t *)calloc((size_t)local_experts * (size_t)ranks * 2,
                                sizeof(int32_t));
  if (!r->x || (fp8 && !r->scales) || !r->src_rank || !r->src_token ||
      !r->count || !r->layout) {
    ep_ref_recv_free(r);
    return -1;
  }
  return 0;
}

/* ---------------------------------------------------------- dispatch */

void ep_ref_quantize_row(const uint16_t *x, int hidden, int pow2, uint8_t *q,
                         float *scales) {
  for (int g = 0; g < hidden / GIN_EP_FP8_GROUP; g++) {
    const uint16_t *xg = x + g * GIN_EP_FP8_GROUP;
    float amax = 0.0f;
    for (int c = 0; c < GIN_EP_FP8_GROUP; c++) {
      float a = fabsf(gin_ep_bf16_to_float(xg[c]));
      if (a > amax) amax = a;
    }
    if (amax < GIN_EP_AMAX_MIN) amax = GIN_EP_AMAX_MIN;
    float scale = amax / GIN_EP_FP8_MAX;
    float inv = GIN_EP_FP8_MAX / amax;
    if (pow2) { /* the power of two at or above scale, by frexp */
      int e;
      float m = frexpf(scale, &e); /* scale = m * 2^e, m in [0.5, 1) */
      if (m == 0.5f) e--;          /* scale is 2^(e - 1) itself */
      scale = ldexpf(1.0f, e);
      inv = ldexpf(1.0f, -e);
    }
    for (int c = 0; c < GIN_EP_FP8_GROUP; c++)
      q[g * GIN_EP_FP8_GROUP + c] =
          gin_ep_float_to_fp8(gin_ep_bf16_to_float(xg[c]) * inv);
    scales[g] = scale;
  }
}

void ep_ref_dispatch(const ep_ref_input_t *inputs, int nranks, int me,
                     ep_ref_recv_t *r) {
  int L = r->local_experts, H = r->hidden, G = H / GIN_EP_FP8_GROUP;
  size_t S = (size_t)r->slots;
  memset(r->count, 0, (size_t)L * sizeof(int32_t));
  for (int src = 0; src < nranks; src++) {
    const ep_ref_input_t *in = &inputs[src];
    for (int le = 0; le < L; le++)
      r->layout[((size_t)le * (size_t)nranks + (size_t)src) * 2] = r->count[le];
    for (int t = 0; t < in->num_tokens; t++) {
      const uint16_t *row = in->x + (size_t)t * (size_t)H;
      for (int k = 0; k < in->topk; k++) {
        int e = in->topk_idx[(size_t)t * (size_t)in->topk + (size_t)k];
        if (e < 0 || e / L != me) continue;
        int le = e % L;
        size_t j = (size_t)r->count[le]++;
        if (j >= S) { /* cannot happen with distinct experts per token */
          r->count[le]--;
          continue;
        }
        size_t slot = (size_t)le * S + j;
        r->src_rank[slot] = src;
        r->src_token[slot] = t;
        if (r->fp8)
          ep_ref_quantize_row(row, H, r->fp8 == EP_REF_FP8_POW2,
                              (uint8_t *)r->x + slot * (size_t)H,
                              r->scales + slot * (size_t)G);
        else
          memcpy((uint16_t *)r->x + slot * (size_t)H, row,
                 (size_t)H * sizeof(uint16_t));
      }
    }
    for (int le = 0; le < L; le++) {
      int32_t *lay =
          r->layout + ((size_t)le * (size_t)nranks + (size_t)src) * 2;
      lay[1] = r->count[le] - lay[0];
    }
  }
}

/* ----------------------------------------------------------- experts */

uint16_t ep_ref_expert(float deq, int expert) {
  return gin_ep_float_to_bf16(deq * (float)(expert + 1) * 0.125f);
}

/* The value an expert sees on channel c of a delivered (or cast) row. */
static float ep_deq(int fp8, const void *row, const float *scales, int c) {
  if (fp8)
    return gin_ep_fp8_to_float(((const uint8_t *)row)[c]) *
           scales[c / GIN_EP_FP8_GROUP];
  return gin_ep_bf16_to_float(((const uint16_t *)row)[c]);
}

void ep_ref_experts(const ep_ref_recv_t *r, int me, uint16_t *y) {
  int L = r->local_experts, H = r->hidden, G = H / GIN_EP_FP8_GROUP;
  size_t S = (size_t)r->slots, es = r->fp8 ? 1 : 2;
  for (int le = 0; le < L; le++) {
    int e = me * L + le, n = r->count[le];
    if (n < 0) n = 0;
    if ((size_t)n > S) n = (int)S;
    for (int j = 0; j < n; j++) {
      size_t slot = (size_t)le * S + (size_t)j;
      const char *row = (const char *)r->x + slot * (size_t)H * es;
      const float *sc = r->fp8 ? r->scales + slot * (size_t)G : NULL;
      for (int c = 0; c < H; c++)
        y[slot * (size_t)H + (size_t)c] =
            ep_ref_expert(ep_deq(r->fp8, row, sc, c), e);
    }
  }
}

/* ----------------------------------------------------------- combine */

void ep_ref_combine(const ep_ref_input_t *in, int fp8, uint16_t *out) {
  int H = in->hidden, K = in->topk;
  uint8_t *q = (uint8_t *)malloc((size_t)H);
  float *sc = (float *)malloc((size_t)(H / GIN_EP_FP8_GROUP + 1) * 4);
  if (!q || !sc) abort();
  for (int t = 0; t < in->num_tokens; t++) {
    const uint16_t *row = in->x + (size_t)t * (size_t)H;
    if (fp8) ep_ref_quantize_row(row, H, fp8 == EP_REF_FP8_POW2, q, sc);
    const void *src = fp8 ? (const void *)q : (const void *)row;
    const int32_t *idx = in->topk_idx + (size_t)t * (size_t)K;
    const float *w = in->weights + (size_t)t * (size_t)K;
    for (int c = 0; c < H; c++) {
      float acc = 0.0f;
      for (int k = 0; k < K; k++) {
        if (idx[k] < 0) continue;
        uint16_t y = ep_ref_expert(ep_deq(fp8, src, sc, c), idx[k]);
        acc += w[k] * gin_ep_bf16_to_float(y);
      }
      out[(size_t)t * (size_t)H + (size_t)c] = gin_ep_float_to_bf16(acc);
    }
  }
  free(q);
  free(sc);
}

/* ------------------------------------------------------------ checks */

/* Records the first mismatch's description. */
static void ep_note(long *n, char *msg, size_t len, const char *fmt, ...) {
  if ((*n)++ == 0 && msg && len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, len, fmt, ap);
    va_end(ap);
  }
}

long ep_ref_check_recv(const ep_ref_recv_t *want, const ep_ref_recv_t *got,
                       int me, char *msg, size_t len) {
  long n = 0;
  int L = want->local_experts, R = want->ranks, H = want->hidden;
  int G = H / GIN_EP_FP8_GROUP;
  size_t S = (size_t)want->slots;
  if (msg && len) msg[0] = 0;
  for (int le = 0; le < L; le++) {
    int e = me * L + le;
    if (got->count[le] != want->count[le])
      ep_note(&n, msg, len,
              "rank %d expert %d (local %d): count expected %d got %d", me, e,
              le, want->count[le], got->count[le]);
    for (int r = 0; r < R; r++) {
      const int32_t *lw = want->layout + ((size_t)le * (size_t)R + r) * 2;
      const int32_t *lg = got->layout + ((size_t)le * (size_t)R + r) * 2;
      /* The offset of an empty range is not compared. */
      if (lg[1] != lw[1] || (lw[1] > 0 && lg[0] != lw[0]))
        ep_note(&n, msg, len,
                "rank %d expert %d (local %d): layout of source rank %d "
                "expected (offset %d, count %d) got (%d, %d)",
                me, e, le, r, lw[0], lw[1], lg[0], lg[1]);
    }
    int used =
        want->count[le] < got->count[le] ? want->count[le] : got->count[le];
    if (used < 0) used = 0;
    for (int j = 0; j < used; j++) {
      size_t slot = (size_t)le * S + (size_t)j;
      if (got->src_rank[slot] != want->src_rank[slot] ||
          got->src_token[slot] != want->src_token[slot])
        ep_note(&n, msg, len,
                "rank %d expert %d (local %d) slot %d: source expected "
                "(rank %d, token %d) got (%d, %d)",
                me, e, le, j, want->src_rank[slot], want->src_token[slot],
                got->src_rank[slot], got->src_token[slot]);
      for (int c = 0; c < H; c++) {
        size_t i = slot * (size_t)H + (size_t)c;
        unsigned a = want->fp8 ? ((const uint8_t *)want->x)[i]
                               : ((const uint16_t *)want->x)[i];
        unsigned b = want->fp8 ? ((const uint8_t *)got->x)[i]
                               : ((const uint16_t *)got->x)[i];
        if (a != b)
          ep_note(&n, msg, len,
                  "rank %d expert %d (local %d) slot %d channel %d (source "
                  "rank %d token %d): %s expected 0x%x got 0x%x",
                  me, e, le, j, c, want->src_rank[slot], want->src_token[slot],
                  want->fp8 ? "fp8" : "bf16", a, b);
      }
      for (int g = 0; want->fp8 && g < G; g++) {
        float a = want->scales[slot * (size_t)G + (size_t)g];
        float b = got->scales[slot * (size_t)G + (size_t)g];
        if (gin_ep_float_bits(a) != gin_ep_float_bits(b))
          ep_note(&n, msg, len,
                  "rank %d expert %d (local %d) slot %d group %d (source "
                  "rank %d token %d): scale expected %.9g (0x%08x) got %.9g "
                  "(0x%08x)",
                  me, e, le, j, g, want->src_rank[slot], want->src_token[slot],
                  (double)a, gin_ep_float_bits(a), (double)b,
                  gin_ep_float_bits(b));
      }
    }
  }
  return n;
}

int ep_ref_close(float want, float got) {
  return fabsf(got - want) <= fabsf(want) * (1.0f / 128.0f) + 1e-3f;
}

long ep_ref_check_out(const uint16_t *want, const uint16_t *got, int num_tokens,
                      int hidden, char *msg, size_t len) {
  long n = 0;
  if (msg && len) msg[0] = 0;
  for (int t = 0; t < num_tokens; t++)
    for (int c = 0; c < hidden; c++) {
      size_t i = (size_t)t * (size_t)hidden + (size_t)c;
      float a = gin_ep_bf16_to_float(want[i]);
      float b = gin_ep_bf16_to_float(got[i]);
      if (!ep_ref_close(a, b))
        ep_note(&n, msg, len,
                "token %d channel %d: expected %.6g (0x%04x) got %.6g "
                "(0x%04x)",
                t, c, (double)a, want[i], (double)b, got[i]);
    }
  return n;
}
