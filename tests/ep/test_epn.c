/*
 * gin EP normal mode (include/gin/gin_ep_normal.h) against a CPU
 * reference: every rank makes every rank's inputs (ep_ref_input_make:
 * masked routing, so some slots are -1 and some tokens go nowhere), and
 * checks its own layout, counts, received rows (order, bytes, scales,
 * source indices, local top-k ids and weights), cached dispatches,
 * worst-case capacity and combine (sums of every rank's stand-in output,
 * biases, summed weights). Cases run back to back with no barrier between
 * ranks, with rings small enough that every channel's ring wraps and its
 * credits cycle many times:
 *   ginrun -n N test_epn [-t TOKENS] [-H HIDDEN] [-k TOPK] [-e EXPERTS]
 *                        [-c CHANNELS] [-s RING_ROWS] [-i ITERATIONS]
 * (defaults 96, 256, 4, 4 x N, 3, 8, 2). Ranks have uneven token counts
 * (rank 1 none in some cases). With --bad-input: an expert id out of
 * range and a rank sending fp8 rows to ranks that take bf16, each named;
 * with --liar (kernels built with EPN_TEST_LIAR) rank 1's counts, which
 * name more rows than it has, refused by every other rank.
 * Exit 0 pass, 1 fail, 77 skip.
 */
#include <unistd.h>

#include "ep/ep_ref.h"
#include "gin/ep_format.h"
#include "gin/gin_ep.h"
#include "gin/gin_ep_normal.h"
#include "test_common.h"

typedef struct tcase {
  const char *name;
  int fp8, idx64, channels, chunk, cached, worst, bias, rank1_empty;
} tcase_t;

typedef struct world {
  gin_comm_t comm;
  gin_epn_t ep;
  int me, R, E, L, T, H, K, C, S;
  long bad;
} world_t;

static int arg_int(int argc, char **argv, const char *flag, int dflt) {
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], flag)) return atoi(argv[i + 1]);
  return dflt;
}

static void *host_of(const void *d, size_t bytes) {
  void *h = calloc(1, bytes ? bytes : 16);
  TASSERT(h, "out of memory");
  if (bytes) TCHECK(gin_mem_copy(h, d, bytes));
  return h;
}
static void sync_ok(world_t *w, gin_result_t rc, const char *what,
                    const char *cs) {
  if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
  if (rc == GIN_SUCCESS) rc = gin_comm_get_async_error(w->comm);
  TASSERT(rc == GIN_SUCCESS, "rank %d: case %s: %s -> %s: %s", w->me, cs, what,
          gin_strerror(rc), gin_last_error());
}
static void miss(world_t *w, const char *cs, const char *what, long a, long b,
                 long got, long want) {
  if (w->bad < 8)
    printf("rank %d: case %s: %s [%ld][%ld]: got %ld, want %ld\n", w->me, cs,
           what, a, b, got, want);
  w->bad++;
}

/* Tokens of rank r in a case. */
static int tokens_of(const world_t *w, const tcase_t *c, int r) {
  if (c->rank1_empty && r == 1) return 0;
  return w->T - 5 * (r % 3);
}
/* Whether token t of in goes to rank r. */
static int goes(const world_t *w, const ep_ref_input_t *in, int t, int r) {
  for (int k = 0; k < w->K; k++) {
    int e = in->topk_idx[(size_t)t * w->K + k];
    if (e >= 0 && e / w->L == r) return 1;
  }
  return 0;
}
/* The fp8 stand-in of a bf16 row's channel and the scale of group g of
 * token t (any bytes do: dispatch moves them as they are). */
static uint8_t fp8_of(uint16_t v) { return (uint8_t)(v ^ (v >> 8)); }
static float scale_of(int r, int t, int g) {
  return (float)(r * 100000 + t * 100 + g) + 0.5f;
}
/* The stand-in expert output of rank r for a row it received. */
static uint16_t y_of(uint16_t x, int r) {
  return gin_float_to_bf16(gin_bf16_to_float(x) * (float)(r + 1) * 0.25f);
}

static void run_case(world_t *w, const tcase_t *c, int it) {
  int me = w->me, R = w->R, L = w->L, H = w->H, K = w->K;
  int G = H / GIN_EP_FP8_GROUP, C = c->channels;
  char cs[96];
  snprintf(cs, sizeof cs, "%s/%d", c->name, it);
  ep_ref_input_t *in = (ep_ref_input_t *)calloc((size_t)R, sizeof *in);
  TASSERT(in, "out of memory");
  for (int r = 0; r < R; r++)
    TASSERT(ep_ref_input_make(1000u * (unsigned)it + 7, r, tokens_of(w, c, r),
                              H, K, w->E, EP_ROUTE_MASKED, &in[r]) == 0,
            "inputs");
  const ep_ref_input_t *mine = &in[me];
  int T = mine->num_tokens;

  /* Inputs on the device. */
  uint16_t *d_x = (uint16_t *)test_dev_alloc((size_t)T * H * 2);
  if (T) TCHECK(gin_mem_copy(d_x, mine->x, (size_t)T * H * 2));
  size_t idx_bytes = (size_t)T * K * (c->idx64 ? 8 : 4);
  void *h_idx = calloc(1, idx_bytes + 8);
  TASSERT(h_idx, "out of memory");
  for (size_t i = 0; i < (size_t)T * K; i++) {
    if (c->idx64)
      ((int64_t *)h_idx)[i] = mine->topk_idx[i];
    else
      ((int32_t *)h_idx)[i] = mine->topk_idx[i];
  }
  void *d_idx = test_dev_alloc(idx_bytes);
  if (T) TCHECK(gin_mem_copy(d_idx, h_idx, idx_bytes));
  float *d_w = (float *)test_dev_alloc((size_t)T * K * 4);
  if (T) TCHECK(gin_mem_copy(d_w, mine->weights, (size_t)T * K * 4));
  uint8_t *d_x8 = NULL;
  uint32_t *d_sc = NULL;
  if (c->fp8) { /* scales column-major ([G][T]): strides (1, T) */
    uint8_t *h8 = (uint8_t *)calloc((size_t)T * H + 1, 1);
    float *hs = (float *)calloc((size_t)T * G + 1, 4);
    TASSERT(h8 && hs, "out of memory");
    for (size_t i = 0; i < (size_t)T * H; i++)
      h8[i] = fp8_of(mine->x[i]);
    for (int t = 0; t < T; t++)
      for (int g = 0; g < G; g++)
        hs[(size_t)g * T + t] = scale_of(me, t, g);
    d_x8 = (uint8_t *)test_dev_alloc((size_t)T * H);
    d_sc = (uint32_t *)test_dev_alloc((size_t)T * G * 4);
    if (T) {
      TCHECK(gin_mem_copy(d_x8, h8, (size_t)T * H));
      TCHECK(gin_mem_copy(d_sc, hs, (size_t)T * G * 4));
    }
    free(h8);
    free(hs);
  }

  /* Layout. */
  int32_t *d_pr = (int32_t *)test_dev_alloc((size_t)R * 4),
          *d_pe = (int32_t *)test_dev_alloc((size_t)w->E * 4);
  uint8_t *d_in = (uint8_t *)test_dev_alloc((size_t)T * R);
  sync_ok(w,
          gin_epn_layout(w->ep, d_idx, c->idx64, T, K, d_pr, d_pe, d_in, NULL),
          "layout", cs);
  int32_t *pr = (int32_t *)host_of(d_pr, (size_t)R * 4);
  int32_t *pe = (int32_t *)host_of(d_pe, (size_t)w->E * 4);
  uint8_t *inr = (uint8_t *)host_of(d_in, (size_t)T * R);
  for (int r = 0; r < R; r++) {
    int n = 0;
    for (int t = 0; t < T; t++) {
      int want = goes(w, mine, t, r);
      n += want;
      if (inr[(size_t)t * R + r] != want)
        miss(w, cs, "in_rank", t, r, inr[(size_t)t * R + r], want);
    }
    if (pr[r] != n) miss(w, cs, "per_rank", r, 0, pr[r], n);
  }
  for (int e = 0; e < w->E; e++) {
    int n = 0;
    for (size_t i = 0; i < (size_t)T * K; i++)
      n += mine->topk_idx[i] == e;
    if (pe[e] != n) miss(w, cs, "per_expert", e, 0, pe[e], n);
  }

  /* Notify: counts. */
  gin_epn_handle_t h;
  memset(&h, 0, sizeof h);
  h.send_head = (int32_t *)test_dev_alloc((size_t)T * R * 4);
  h.chan_prefix = (int32_t *)test_dev_alloc((size_t)R * C * 4);
  h.rank_prefix = (int32_t *)test_dev_alloc((size_t)R * 4);
  h.recv_chan_prefix = (int32_t *)test_dev_alloc((size_t)R * C * 4);
  int32_t *d_rc = (int32_t *)test_dev_alloc((size_t)(1 + L) * 4);
  sync_ok(w, gin_epn_notify(w->ep, d_in, d_pe, T, C, &h, d_rc, NULL), "notify",
          cs);
  int32_t *rc = (int32_t *)host_of(d_rc, (size_t)(1 + L) * 4);
  int N = 0, all = 0;
  for (int s = 0; s < R; s++) {
    all += in[s].num_tokens;
    for (int t = 0; t < in[s].num_tokens; t++)
      N += goes(w, &in[s], t, me);
  }
  if (rc[0] != N) miss(w, cs, "received rows", 0, 0, rc[0], N);
  for (int l = 0; l < L; l++) {
    int n = 0;
    for (int s = 0; s < R; s++)
      for (size_t i = 0; i < (size_t)in[s].num_tokens * K; i++)
        n += in[s].topk_idx[i] == me * L + l;
    if (rc[1 + l] != n) miss(w, cs, "expert count", l, 0, rc[1 + l], n);
  }

  /* Dispatch. */
  int cap = c->worst ? all : N;
  h.capacity = cap;
  h.recv_src_idx = (int32_t *)test_dev_alloc((size_t)cap * 4);
  size_t xb = c->fp8 ? 1 : 2;
  void *d_rx = test_dev_alloc((size_t)cap * H * xb);
  uint32_t *d_rs =
      c->fp8 ? (uint32_t *)test_dev_alloc((size_t)cap * G * 4) : NULL;
  int64_t *d_ri = (int64_t *)test_dev_alloc((size_t)cap * K * 8);
  float *d_rw = (float *)test_dev_alloc((size_t)cap * K * 4);
  gin_epn_dispatch_args_t da;
  memset(&da, 0, sizeof da);
  da.x = c->fp8 ? (const void *)d_x8 : (const void *)d_x;
  da.fp8 = c->fp8;
  da.scales = d_sc;
  da.scale_stride_t = 1;
  da.scale_stride_g = T;
  da.topk_idx = d_idx;
  da.topk_weights = d_w;
  da.idx64 = c->idx64;
  da.num_topk = K;
  da.chunk = c->chunk;
  da.recv_x = d_rx;
  da.recv_scales = d_rs;
  da.recv_topk_idx = d_ri;
  da.recv_topk_weights = d_rw;
  da.worst = c->worst;
  for (int pass = 0; pass < 1 + c->cached; pass++) {
    if (pass == 1) { /* cached: the handle's routing, no top-k */
      da.topk_idx = NULL;
      da.topk_weights = NULL;
      da.recv_topk_idx = NULL;
      da.recv_topk_weights = NULL;
      da.num_topk = 0;
      TCHECK(gin_mem_set(d_rx, 0, (size_t)cap * H * xb));
    }
    sync_ok(w, gin_epn_dispatch(w->ep, &da, &h, NULL),
            pass ? "cached dispatch" : "dispatch", cs);
    uint8_t *rx = (uint8_t *)host_of(d_rx, (size_t)cap * H * xb);
    uint32_t *rs =
        c->fp8 ? (uint32_t *)host_of(d_rs, (size_t)cap * G * 4) : NULL;
    int64_t *ri = (int64_t *)host_of(d_ri, (size_t)cap * K * 8);
    float *rw = (float *)host_of(d_rw, (size_t)cap * K * 4);
    int32_t *si = (int32_t *)host_of(h.recv_src_idx, (size_t)cap * 4);
    int row = 0;
    for (int s = 0; s < R; s++)
      for (int t = 0; t < in[s].num_tokens; t++) {
        if (!goes(w, &in[s], t, me)) continue;
        if (si[row] != t) miss(w, cs, "recv_src_idx", row, s, si[row], t);
        const uint16_t *xs = in[s].x + (size_t)t * H;
        for (int ch = 0; ch < H; ch++) {
          long got = c->fp8 ? rx[(size_t)row * H + ch]
                            : ((uint16_t *)rx)[(size_t)row * H + ch];
          long want = c->fp8 ? fp8_of(xs[ch]) : xs[ch];
          if (got != want) {
            miss(w, cs, "recv_x", row, ch, got, want);
            break;
          }
        }
        for (int g = 0; c->fp8 && g < G; g++) {
          float got;
          memcpy(&got, &rs[(size_t)row * G + g], 4);
          if (got != scale_of(s, t, g))
            miss(w, cs, "recv_scales", row, g, (long)got,
                 (long)scale_of(s, t, g));
        }
        for (int k = 0; pass == 0 && k < K; k++) {
          int e = in[s].topk_idx[(size_t)t * K + k];
          int local = e >= 0 && e / L == me ? e - me * L : -1;
          float wt = local >= 0 ? in[s].weights[(size_t)t * K + k] : 0.0f;
          if (ri[(size_t)row * K + k] != local)
            miss(w, cs, "recv_topk_idx", row, k, (long)ri[(size_t)row * K + k],
                 local);
          if (rw[(size_t)row * K + k] != wt)
            miss(w, cs, "recv_topk_weights", row, k,
                 (long)(rw[(size_t)row * K + k] * 1000), (long)(wt * 1000));
        }
        row++;
      }
    for (int r2 = N; pass == 0 && c->worst && r2 < cap; r2++)
      for (int k = 0; k < K; k++)
        if (ri[(size_t)r2 * K + k] != -1)
          miss(w, cs, "worst rows' topk_idx", r2, k,
               (long)ri[(size_t)r2 * K + k], -1);
    free(rx);
    free(rs);
    free(ri);
    free(rw);
    free(si);
  }

  /* Combine: rank me's stand-in output for each row it received, the
   * weights dispatch left; biases in some cases. */
  uint16_t *hy = (uint16_t *)calloc((size_t)(N ? N : 1) * H, 2);
  TASSERT(hy, "out of memory");
  int row = 0;
  for (int s = 0; s < R; s++)
    for (int t = 0; t < in[s].num_tokens; t++) {
      if (!goes(w, &in[s], t, me)) continue;
      for (int ch = 0; ch < H; ch++)
        hy[(size_t)row * H + ch] = y_of(in[s].x[(size_t)t * H + ch], me);
      row++;
    }
  uint16_t *d_y = (uint16_t *)test_dev_alloc((size_t)N * H * 2);
  if (N) TCHECK(gin_mem_copy(d_y, hy, (size_t)N * H * 2));
  uint16_t *hb = (uint16_t *)calloc((size_t)T * H + 1, 2);
  TASSERT(hb, "out of memory");
  for (size_t i = 0; i < (size_t)T * H; i++)
    hb[i] = gin_float_to_bf16((float)(i % 7) - 3.0f);
  uint16_t *d_b = (uint16_t *)test_dev_alloc((size_t)T * H * 2);
  if (T) TCHECK(gin_mem_copy(d_b, hb, (size_t)T * H * 2));
  uint16_t *d_out = (uint16_t *)test_dev_alloc((size_t)T * H * 2);
  float *d_ow = (float *)test_dev_alloc((size_t)T * K * 4);
  gin_epn_combine_args_t ca;
  memset(&ca, 0, sizeof ca);
  ca.x = d_y;
  ca.topk_weights = d_rw;
  ca.num_topk = K;
  ca.bias[0] = c->bias ? d_b : NULL;
  ca.chunk = c->chunk;
  ca.out = d_out;
  ca.out_weights = d_ow;
  sync_ok(w, gin_epn_combine(w->ep, &ca, &h, NULL), "combine", cs);
  uint16_t *out = (uint16_t *)host_of(d_out, (size_t)T * H * 2);
  float *ow = (float *)host_of(d_ow, (size_t)T * K * 4);
  for (int t = 0; t < T; t++) {
    for (int ch = 0; ch < H; ch++) {
      float acc = c->bias ? gin_bf16_to_float(hb[(size_t)t * H + ch]) : 0.0f;
      for (int r = 0; r < R; r++)
        if (goes(w, mine, t, r))
          acc += gin_bf16_to_float(y_of(mine->x[(size_t)t * H + ch], r));
      float want = gin_bf16_to_float(gin_float_to_bf16(acc));
      float got = gin_bf16_to_float(out[(size_t)t * H + ch]);
      float tol = (want < 0 ? -want : want) / 128 + 1e-3f;
      if (!(got - want <= tol && want - got <= tol)) {
        miss(w, cs, "combine out (x1000)", t, ch, (long)(got * 1000),
             (long)(want * 1000));
        break;
      }
    }
    for (int k = 0; k < K; k++) {
      int e = mine->topk_idx[(size_t)t * K + k];
      float want = e >= 0 ? mine->weights[(size_t)t * K + k] : 0.0f;
      if (ow[(size_t)t * K + k] != want)
        miss(w, cs, "combine weights (x1000)", t, k,
             (long)(ow[(size_t)t * K + k] * 1000), (long)(want * 1000));
    }
  }
  free(out);
  free(ow);
  free(hy);
  free(hb);
  free(pr);
  free(pe);
  free(inr);
  free(rc);
  free(h_idx);
  void *ptrs[] = {d_x,
                  d_idx,
                  d_w,
                  d_x8,
                  d_sc,
                  d_pr,
                  d_pe,
                  d_in,
                  d_rc,
                  h.send_head,
                  h.chan_prefix,
                  h.rank_prefix,
                  h.recv_chan_prefix,
                  h.recv_src_idx,
                  d_rx,
                  d_rs,
                  d_ri,
                  d_rw,
                  d_y,
                  d_b,
                  d_out,
                  d_ow};
  for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
    if (ptrs[i]) TCHECK(gin_mem_free(ptrs[i]));
  for (int r = 0; r < R; r++)
    ep_ref_input_free(&in[r]);
  free(in);
}

/* The async error of comm, asked again every 10 ms for up to 10 s (a
 * rank may learn of a failure only from the abort, after its call). */
static gin_result_t async_error(gin_comm_t comm) {
  gin_result_t rc = gin_comm_get_async_error(comm);
  for (int i = 0; i < 1000 && rc == GIN_SUCCESS; i++) {
    usleep(10000);
    rc = gin_comm_get_async_error(comm);
  }
  return rc;
}

/* Bad input, each on a fresh communicator (it is aborted): an expert id
 * out of range in rank 1's layout (rank 1 names it), then rank 1's
 * dispatch sending fp8 rows where every other rank's takes bf16 (a
 * receiver names the rank whose rows differ), then rank 1's handle with
 * a token's in_rank entry cleared after gin_epn_notify counted it (rank 1
 * names the destination it has too few tokens for). Every rank's call
 * ends, none hangs. */
static int bad_input(world_t *w, int liar) {
  int fails = 0, R = w->R, H = w->H, K = w->K, T = 16;
  for (int which = liar ? 1 : 0; which < (liar ? 2 : 3); which++) {
    gin_comm_t sub = test_comm_fresh(w->comm, w->me, R);
    gin_epn_config_t cfg = {H, K, w->E, 2, 4};
    gin_epn_t ep;
    TCHECK(gin_epn_create(sub, &cfg, &ep));
    int32_t *hidx = (int32_t *)calloc((size_t)T * K, 4);
    TASSERT(hidx, "out of memory");
    for (int i = 0; i < T * K; i++)
      hidx[i] = (i * 7 + i / K) % w->E;
    for (int t = 0; t < T; t++) /* distinct experts a token */
      for (int k = 0; k < K; k++)
        hidx[t * K + k] = (t + k * (w->E / K)) % w->E;
    if (which == 0 && w->me == 1) hidx[5 * K + 2] = w->E;
    int32_t *d_idx = (int32_t *)test_dev_alloc((size_t)T * K * 4);
    TCHECK(gin_mem_copy(d_idx, hidx, (size_t)T * K * 4));
    int32_t *d_pr = (int32_t *)test_dev_alloc((size_t)R * 4);
    int32_t *d_pe = (int32_t *)test_dev_alloc((size_t)w->E * 4);
    uint8_t *d_in = (uint8_t *)test_dev_alloc((size_t)T * R);
    gin_result_t rc =
        gin_epn_layout(ep, d_idx, 0, T, K, d_pr, d_pe, d_in, NULL);
    if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
    const char *words = "not an expert";
    if (which >= 1) {
      gin_epn_handle_t h;
      memset(&h, 0, sizeof h);
      h.send_head = (int32_t *)test_dev_alloc((size_t)T * R * 4);
      h.chan_prefix = (int32_t *)test_dev_alloc((size_t)R * 2 * 4);
      h.rank_prefix = (int32_t *)test_dev_alloc((size_t)R * 4);
      h.recv_chan_prefix = (int32_t *)test_dev_alloc((size_t)R * 2 * 4);
      int32_t *d_rc = (int32_t *)test_dev_alloc((size_t)(1 + w->L) * 4), n = 0;
      TCHECK(gin_epn_notify(ep, d_in, d_pe, T, 2, &h, d_rc, NULL));
      TCHECK(gin_stream_synchronize(0));
      TCHECK(gin_mem_copy(&n, d_rc, 4));
      if (which == 2 && w->me == 1) { /* one token to rank 0 forgotten */
        uint8_t *in = (uint8_t *)malloc((size_t)T * R);
        TASSERT(in, "out of memory");
        TCHECK(gin_mem_copy(in, d_in, (size_t)T * R));
        int t = 0;
        while (t < T && !in[(size_t)t * R])
          t++;
        TASSERT(t < T, "rank 1 sends rank 0 no token");
        in[(size_t)t * R] = 0;
        TCHECK(gin_mem_copy(d_in, in, (size_t)T * R));
        free(in);
      }
      h.capacity = n;
      h.recv_src_idx = (int32_t *)test_dev_alloc((size_t)n * 4);
      void *d_x = test_dev_alloc((size_t)T * H * 2),
           *d_rx = test_dev_alloc((size_t)n * H * 2);
      float *d_sc = (float *)test_dev_alloc((size_t)T * (H / 128) * 4);
      float *d_rs = (float *)test_dev_alloc((size_t)n * (H / 128) * 4);
      TCHECK(gin_mem_set(d_x, 0, (size_t)T * H * 2));
      gin_epn_dispatch_args_t da;
      memset(&da, 0, sizeof da);
      da.x = d_x;
      da.fp8 = which == 1 && !liar && w->me == 1;
      da.scales = da.fp8 ? d_sc : NULL;
      da.scale_stride_t = H / 128;
      da.scale_stride_g = 1;
      da.chunk = 2;
      da.recv_x = d_rx;
      da.recv_scales = da.fp8 ? d_rs : NULL;
      rc = gin_epn_dispatch(ep, &da, &h, NULL);
      if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
      words = liar         ? "rank 1's counts"
              : which == 1 ? "must pass the same fp8 and num_topk"
                           : "fewer tokens to rank 0";
      void *ptrs[] = {h.send_head,   h.chan_prefix,
                      h.rank_prefix, h.recv_chan_prefix,
                      d_rc,          h.recv_src_idx,
                      d_x,           d_rx,
                      d_sc,          d_rs};
      for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        gin_mem_free(ptrs[i]);
    }
    gin_result_t async =
        which == 0 && w->me != 1 ? GIN_SUCCESS : async_error(sub);
    const char *msg = gin_last_error();
    int named = (async == GIN_ERR_INVALID || async == GIN_ERR_REMOTE) &&
                strstr(msg, words) != NULL;
    /* The layout is local: rank 1 alone names its id. In the dispatch a
     * receiver names the rank whose rows differ; others may see only the
     * abort. */
    int ok = which == 0   ? (w->me != 1 || named)
             : liar       ? (w->me == 1 ? async == GIN_ERR_ABORTED
                                        : named || async == GIN_ERR_ABORTED)
             : which == 2 ? (w->me == 1 ? async == GIN_ERR_INVALID && named
                                        : async == GIN_ERR_ABORTED)
                          : (named || async == GIN_ERR_ABORTED);
    if (liar && named) /* the lie is refused, not an invalid call */
      named = async == GIN_ERR_REMOTE || async == GIN_ERR_INVALID;
    if (!ok || rc != GIN_SUCCESS) {
      printf("rank %d: bad input %d: call %s, async %s '%s' (wanted %s)\n",
             w->me, which, gin_strerror(rc), gin_strerror(async), msg, words);
      fails++;
    }
    int *all = (int *)calloc((size_t)R, sizeof(int)), any = 0;
    TASSERT(all, "out of memory");
    TCHECK(gin_comm_allgather(w->comm, &named, all, sizeof(int)));
    for (int r = 0; r < R; r++)
      any |= all[r];
    free(all);
    if (!any) {
      printf("rank %d: bad input %d: no rank named '%s'\n", w->me, which,
             words);
      fails++;
    }
    free(hidx);
    gin_mem_free(d_idx);
    gin_mem_free(d_pr);
    gin_mem_free(d_pe);
    gin_mem_free(d_in);
    gin_epn_destroy(ep); /* frees locally on an aborted communicator */
    gin_comm_destroy(sub);
  }
  return fails;
}

int main(int argc, char **argv) {
  world_t w;
  memset(&w, 0, sizeof w);
  test_require_device();
  w.comm = test_world_init(&w.me, &w.R, 2);
  w.T = arg_int(argc, argv, "-t", 96);
  w.H = arg_int(argc, argv, "-H", 256);
  w.K = arg_int(argc, argv, "-k", 4);
  w.E = arg_int(argc, argv, "-e", 4 * w.R);
  w.C = arg_int(argc, argv, "-c", 3);
  w.S = arg_int(argc, argv, "-s", 8);
  int iters = arg_int(argc, argv, "-i", 2);
  TASSERT(w.E % w.R == 0 && w.K <= w.E && w.H % 128 == 0 && w.T >= 10 &&
              w.C >= 2 && w.S >= 2,
          "-e %d (a multiple of %d ranks, >= -k %d), -H %d (a multiple of "
          "128), -t %d (>= 10), -c %d (>= 2), -s %d (>= 2)",
          w.E, w.R, w.K, w.H, w.T, w.C, w.S);
  w.L = w.E / w.R;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--bad-input") || !strcmp(argv[i], "--liar")) {
      int fails = bad_input(&w, !strcmp(argv[i], "--liar"));
      TCHECK(gin_comm_destroy(w.comm));
      if (w.me == 0)
        printf("test_epn --bad-input: %s\n", fails ? "FAILED" : "passed");
      return fails ? 1 : 0;
    }
  gin_epn_config_t cfg = {w.H, w.K, w.E, w.C, w.S};
  TCHECK(gin_epn_create(w.comm, &cfg, &w.ep));
  if (w.me == 0)
    printf("test_epn: %d ranks, %d experts, %d tokens, hidden %d, top-%d, "
           "%d channels of %d rows, %d iterations\n",
           w.R, w.E, w.T, w.H, w.K, w.C, w.S, iters);
  int S = w.S;
  const tcase_t cases[] = {
      {"bf16", 0, 0, w.C, S / 2, 0, 0, 0, 0},
      {"fp8_idx64_cached", 1, 1, w.C, 1, 1, 0, 1, 0},
      {"bf16_worst_onechannel", 0, 0, 1, S, 0, 1, 0, 1},
      {"fp8_worst_cached_bias", 1, 0, w.C - 1, 2, 1, 1, 1, 0},
      {"fp8_rank1_empty", 1, 1, w.C, 3, 0, 0, 0, 1},
  };
  for (int it = 0; it < iters; it++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
      run_case(&w, &cases[i], it);

  int bad = w.bad != 0, failed = 0;
  int *allbad = (int *)calloc((size_t)w.R, sizeof(int));
  TASSERT(allbad, "out of memory");
  TCHECK(gin_comm_allgather(w.comm, &bad, allbad, sizeof bad));
  for (int r = 0; r < w.R; r++)
    failed |= allbad[r];
  free(allbad);
  TCHECK(gin_epn_destroy(w.ep));
  TCHECK(gin_comm_destroy(w.comm));
  if (w.me == 0) printf("test_epn: %s\n", failed ? "FAILED" : "passed");
  return failed ? 1 : 0;
}
