/*
 * gin EP: dispatch and combine against the CPU reference (ep_ref.h), for
 * every routing (random, skewed, masked), topk 1..8, bf16 and fp8, several
 * token counts (0 to max_tokens, also different on each rank), hidden 256
 * (and 100 with bf16, 384 with fp8), 4 experts per rank, with the
 * phases issued together and split (send, then receive), the experts'
 * outputs in memory of their own or in the buffer's combine input
 * (gin_ep_combine_buffer; half the ranks each step), several steps in a
 * row on each buffer (its two buffer sets alternate), a dispatch combined
 * twice (step 2); and the options of
 * gin_ep_dispatch_ex / gin_ep_combine_ex (int64 routing, power-of-two
 * scales, the scales in columns or as UE8M0 bytes, the packed layout, the
 * received-count statistics, and a buffer whose dispatches choose bf16 or
 * fp8 each time). Every rank
 * generates every rank's inputs from (seed, rank), so no exchange is
 * needed. Dispatch must match exactly (fp8 bytes and scales bit for bit,
 * slots past count are not compared, nor the offset of an empty range);
 * combine within |got - want| <= |want| / 128 + 1e-3, since the device may
 * fuse multiply-adds. Launch with N ranks:
 *   ginrun -n N test_ep_host      (host target)
 *   ginrun -n N test_ep_cuda      (cuda target)
 * Results are agreed over the bootstrap network; exit 0 pass, 1 fail,
 * 77 skip (no GPU on the cuda target).
 *   test_ep --seconds S   a soak: the case list again and again with new
 * inputs each pass (the buffers reused), until S seconds passed on rank 0;
 * the descriptor count must not change after the first pass and
 * anonymous memory must grow by less than 16 MiB after the first quarter
 * of the run.
 *   test_ep --mixed-pull  odd ranks create their buffers with
 * GIN_EP_PULL=0 (they push every row), even ranks with the default (their
 * mapped receivers copy rows from them): both kinds of message in one
 * dispatch.
 */
#include <time.h>

#include "ep/ep_ref.h"
#include "gin/ep_format.h"
#include "gin/gin_ep.h"
#include "test_common.h"

#define MAX_TOKENS 32
#define HIDDEN 256     /* unless a case says otherwise */
#define MAX_HIDDEN 640 /* the largest a case uses */
#define MAX_BUFS 16
#define EXPERTS_PER_RANK 4
#define MAX_TOPK 8
#define STEPS 4 /* dispatch + combine pairs per case */

/* Options a case's dispatches use (step_opts). */
enum {
  OPT_NONE = 0, /* gin_ep_dispatch, gin_ep_combine */
  OPT_DEEPEP,   /* int64 routing, packed layout, statistics, fp8 scales
                   in columns */
  OPT_POW2,     /* power-of-two scales in rows; int64 routing every other
                   step */
  OPT_UE8M0,    /* DeepEP's use_ue8m0: power-of-two scales as bytes */
  OPT_ANY       /* a GIN_EP_FP8_ANY buffer: bf16, fp8 in columns, UE8M0,
                   fp8 in rows in turn */
};

typedef struct ep_case {
  ep_route_t route;
  int topk, fp8, tokens;
  int uneven; /* token counts differ between ranks */
  int hidden;
  int opt; /* OPT_* */
} ep_case_t;

static const ep_case_t cases[] = {
    /* route, topk, fp8, tokens, uneven, hidden, options */
    {EP_ROUTE_RANDOM, 1, 0, 1, 0, HIDDEN, OPT_NONE},
    {EP_ROUTE_RANDOM, 2, 1, 17, 0, HIDDEN, OPT_NONE},
    {EP_ROUTE_RANDOM, 4, 0, 32, 0, HIDDEN, OPT_NONE},
    {EP_ROUTE_RANDOM, 8, 1, 32, 0, HIDDEN, OPT_NONE},
    {EP_ROUTE_RANDOM, 4, 1, 0, 0, HIDDEN, OPT_NONE},
    {EP_ROUTE_RANDOM, 2, 0, 17, 1, HIDDEN, OPT_NONE},
    {EP_ROUTE_SKEWED, 2, 0, 32, 0, HIDDEN, OPT_NONE},
    {EP_ROUTE_SKEWED, 4, 1, 17, 1, HIDDEN, OPT_NONE},
    {EP_ROUTE_SKEWED, 1, 1, 32, 0, HIDDEN, OPT_NONE},
    {EP_ROUTE_MASKED, 1, 1, 17, 0, HIDDEN, OPT_NONE},
    {EP_ROUTE_MASKED, 8, 0, 32, 1, HIDDEN, OPT_NONE},
    {EP_ROUTE_MASKED, 4, 1, 32, 0, HIDDEN, OPT_NONE},
    /* rows of 200 bytes (bf16 needs no multiple of 128), 3 fp8 groups */
    {EP_ROUTE_RANDOM, 2, 0, 17, 1, 100, OPT_NONE},
    {EP_ROUTE_MASKED, 2, 1, 32, 1, 384, OPT_NONE},
    /* 16 bytes of scales a row: the receive's fp8 copy takes them with
     * the row (the other cases' scales are 8 or 12 bytes) */
    {EP_ROUTE_RANDOM, 4, 1, 32, 0, 512, OPT_NONE},
    /* the options (OPT_*); H = 640: five groups, two UE8M0 words */
    {EP_ROUTE_MASKED, 4, 1, 32, 1, 384, OPT_DEEPEP},
    {EP_ROUTE_RANDOM, 2, 0, 17, 0, HIDDEN, OPT_DEEPEP},
    {EP_ROUTE_MASKED, 8, 1, 32, 0, HIDDEN, OPT_POW2},
    {EP_ROUTE_RANDOM, 4, 1, 17, 1, 640, OPT_UE8M0},
    {EP_ROUTE_MASKED, 4, GIN_EP_FP8_ANY, 32, 1, 384, OPT_ANY},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* Phases of step s: (dispatch, combine) split or not, every mix. */
static int step_split_dispatch(int s) { return s % 4 == 1 || s % 4 == 3; }
static int step_split_combine(int s) { return s % 4 == 1 || s % 4 == 2; }
/* Whether rank r's experts write into the buffer's combine input
 * (gin_ep_combine_buffer) at step s: half the ranks in each step, every
 * rank both ways over the four steps. */
static int step_zero_copy(int s, int r) { return (s + r) % 4 >= 2; }

/* What a case's step s asks of dispatch (*o; combine takes o->idx64) and
 * the reference's payload (0 bf16, 1 fp8, EP_REF_FP8_POW2). */
static int step_opts(const ep_case_t *cs, int s, gin_ep_dispatch_opts_t *o) {
  memset(o, 0, sizeof *o);
  int fp8 = cs->fp8 == 1;
  switch (cs->opt) {
  case OPT_DEEPEP:
    o->idx64 = 1;
    o->layout = GIN_EP_LAYOUT_PACKED;
    o->scale_layout = fp8 ? GIN_EP_SCALES_COLS : GIN_EP_SCALES_ROWS;
    break;
  case OPT_POW2:
    o->round_scale = 1;
    o->idx64 = s % 2;
    return EP_REF_FP8_POW2;
  case OPT_UE8M0:
    o->round_scale = 1;
    o->scale_layout = GIN_EP_SCALES_UE8M0;
    o->idx64 = 1;
    o->layout = GIN_EP_LAYOUT_PACKED;
    return EP_REF_FP8_POW2;
  case OPT_ANY:
    o->idx64 = s % 2;
    o->layout = s % 2 ? GIN_EP_LAYOUT_PACKED : GIN_EP_LAYOUT_PAIRS;
    o->payload = s % 4 ? GIN_EP_PAYLOAD_FP8 : GIN_EP_PAYLOAD_BF16;
    o->scale_layout = s % 4 == 1   ? GIN_EP_SCALES_COLS
                      : s % 4 == 2 ? GIN_EP_SCALES_UE8M0
                                   : GIN_EP_SCALES_ROWS;
    o->round_scale = s % 4 == 2;
    return s % 4 == 0 ? 0 : s % 4 == 2 ? EP_REF_FP8_POW2 : 1;
  }
  return fp8;
}

/* One buffer per (topk, fp8, hidden), kept across cases. */
typedef struct ep_buf {
  int topk, fp8, hidden;
  gin_ep_t ep;
  ep_ref_recv_t got; /* host copy of what dispatch delivered */
  ep_ref_recv_t want;
  int ref_fp8; /* the payload got and want are made for */
} ep_buf_t;

typedef struct ctx {
  gin_comm_t comm;
  int rank, nranks, experts, local;
  /* device arrays */
  uint16_t *d_x;          /* [MAX_TOKENS][MAX_HIDDEN] */
  int32_t *d_idx;         /* [MAX_TOKENS][MAX_TOPK] */
  float *d_w;             /* [MAX_TOKENS][MAX_TOPK] */
  uint16_t *d_y;          /* [L][R * MAX_TOKENS][MAX_HIDDEN] */
  uint16_t *d_out;        /* [MAX_TOKENS][MAX_HIDDEN] */
  int64_t *d_idx64;       /* [MAX_TOKENS][MAX_TOPK] */
  int32_t *d_stats;       /* [L] received-count statistics */
  int32_t *h_stats;       /* [L] what they must be */
  int64_t *h_idx64;       /* [MAX_TOKENS][MAX_TOPK] */
  void *h_raw;            /* device scales or layout as they came */
  uint16_t *h_y;          /* host copies */
  uint16_t *h_out;        /* [MAX_TOKENS][MAX_HIDDEN] */
  uint16_t *h_want;       /* [MAX_TOKENS][MAX_HIDDEN] */
  ep_ref_input_t *inputs; /* [R] */
  ep_buf_t bufs[MAX_BUFS];
  int nbufs;
  int failed;
} ctx_t;

static size_t y_elems(const ctx_t *c, int hidden) {
  return (size_t)c->local * (size_t)c->nranks * MAX_TOKENS * (size_t)hidden;
}

static ep_buf_t *get_buf(ctx_t *c, int topk, int fp8, int hidden) {
  for (int i = 0; i < c->nbufs; i++)
    if (c->bufs[i].topk == topk && c->bufs[i].fp8 == fp8 &&
        c->bufs[i].hidden == hidden)
      return &c->bufs[i];
  TASSERT(c->nbufs < MAX_BUFS, "too many buffers");
  ep_buf_t *b = &c->bufs[c->nbufs++];
  memset(b, 0, sizeof *b);
  b->topk = topk;
  b->fp8 = fp8;
  b->hidden = hidden;
  gin_ep_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.max_tokens = MAX_TOKENS;
  cfg.hidden = hidden;
  cfg.topk = topk;
  cfg.num_experts = c->experts;
  cfg.fp8 = fp8;
  size_t bytes = 0;
  TCHECK(gin_ep_size_hint(&cfg, c->nranks, &bytes));
  TASSERT(bytes > 0, "size hint 0");
  TCHECK(gin_ep_create(c->comm, &cfg, &b->ep));
  b->ref_fp8 = -1;
  return b;
}

/* b's host recvs for a dispatch whose reference payload is ref_fp8. */
static void ref_ensure(const ctx_t *c, ep_buf_t *b, int ref_fp8) {
  if (b->ref_fp8 == ref_fp8) return;
  ep_ref_recv_free(&b->got);
  ep_ref_recv_free(&b->want);
  TASSERT(ep_ref_recv_alloc(c->local, c->nranks, MAX_TOKENS, b->hidden, ref_fp8,
                            &b->got) == 0 &&
              ep_ref_recv_alloc(c->local, c->nranks, MAX_TOKENS, b->hidden,
                                ref_fp8, &b->want) == 0,
          "out of memory");
  b->ref_fp8 = ref_fp8;
}

static int tokens_of(const ep_case_t *cs, int r) {
  if (!cs->uneven) return cs->tokens;
  return (cs->tokens * (r + 1) + 3 * r) % (MAX_TOKENS + 1);
}

/* Outcome of a step: 0 ok, 1 mismatch (msg says where), 2 an API error
 * (the ranks may be out of step: stop). */
typedef struct step_res {
  int status;
  char msg[512];
} step_res_t;

static void api_fail(step_res_t *res, const char *what, gin_result_t rc) {
  res->status = 2;
  snprintf(res->msg, sizeof res->msg, "%s -> %s: %s", what, gin_strerror(rc),
           gin_last_error());
}

/* Dispatch with the step's options: plain gin_ep_dispatch when they are
 * all zero, so both entry points are driven. */
static gin_result_t do_dispatch(ep_buf_t *b, const ctx_t *c, int T, int split,
                                const gin_ep_dispatch_opts_t *o,
                                gin_ep_recv_t *recv) {
  gin_ep_dispatch_opts_t zero;
  memset(&zero, 0, sizeof zero);
  const void *idx = o->idx64 ? (const void *)c->d_idx64 : c->d_idx;
  int plain = !memcmp(o, &zero, sizeof zero);
  int phase[2] = {split ? GIN_EP_SEND : GIN_EP_BOTH, split ? GIN_EP_RECV : 0};
  gin_result_t rc = GIN_SUCCESS;
  for (int i = 0; i < 2 && phase[i] && rc == GIN_SUCCESS; i++)
    rc = plain
             ? gin_ep_dispatch(b->ep, c->d_x, c->d_idx, T, recv, NULL, phase[i])
             : gin_ep_dispatch_ex(b->ep, c->d_x, idx, T, o, recv, NULL,
                                  phase[i]);
  return rc;
}

static gin_result_t do_combine(ep_buf_t *b, const ctx_t *c, const uint16_t *y,
                               int T, int split, int idx64) {
  gin_ep_combine_opts_t o = {idx64};
  int phase[2] = {split ? GIN_EP_SEND : GIN_EP_BOTH, split ? GIN_EP_RECV : 0};
  gin_result_t rc = GIN_SUCCESS;
  for (int i = 0; i < 2 && phase[i] && rc == GIN_SUCCESS; i++)
    rc = idx64 ? gin_ep_combine_ex(b->ep, y, c->d_idx64, c->d_w, T, &o,
                                   c->d_out, NULL, phase[i])
               : gin_ep_combine(b->ep, y, c->d_idx, c->d_w, T, c->d_out, NULL,
                                phase[i]);
  return rc;
}

/* Scales as they came (scale_layout) into b->got's rows: fp32 in columns
 * moved, UE8M0 bytes made the powers of two they stand for. */
static void scales_to_rows(ep_buf_t *b, int scale_layout, const void *raw) {
  ep_ref_recv_t *g = &b->got;
  size_t L = (size_t)g->local_experts, S = (size_t)g->slots;
  size_t G = (size_t)(g->hidden / GIN_EP_FP8_GROUP), W = (G + 3) / 4;
  for (size_t le = 0; le < L; le++)
    for (size_t sl = 0; sl < S; sl++)
      for (size_t i = 0; i < G; i++) {
        float *to = &g->scales[(le * S + sl) * G + i];
        if (scale_layout == GIN_EP_SCALES_COLS) {
          *to = ((const float *)raw)[(le * G + i) * S + sl];
        } else {
          uint8_t e =
              ((const uint8_t *)raw)[((le * W + i / 4) * S + sl) * 4 + i % 4];
          uint32_t bits = (uint32_t)e << 23;
          memcpy(to, &bits, 4);
        }
      }
}

/* Copies what dispatch left in recv (with options o) into b->got, in the
 * reference's forms (scales in rows as fp32, layout as pairs). */
static gin_result_t fetch_recv(ep_buf_t *b, const ctx_t *c,
                               const gin_ep_dispatch_opts_t *o,
                               const gin_ep_recv_t *recv, step_res_t *res) {
  ep_ref_recv_t *g = &b->got;
  int fp8 = b->ref_fp8 != 0;
  if (recv->local_experts != g->local_experts || recv->ranks != g->ranks ||
      recv->slots_per_expert != g->slots || !recv->x || !recv->src_rank ||
      !recv->src_token || !recv->count || !recv->layout || recv->fp8 != fp8 ||
      recv->scale_layout != o->scale_layout ||
      (fp8 ? !recv->scales : recv->scales != NULL)) {
    res->status = 2; /* cannot go on to combine: stop */
    snprintf(res->msg, sizeof res->msg,
             "recv description: L %d R %d slots %d fp8 %d scale layout %d "
             "scales %p (want %d %d %d %d %d, scales %s)",
             recv->local_experts, recv->ranks, recv->slots_per_expert,
             recv->fp8, recv->scale_layout, (void *)recv->scales,
             g->local_experts, g->ranks, g->slots, fp8, o->scale_layout,
             fp8 ? "set" : "NULL");
    return GIN_ERR_INVALID;
  }
  size_t L = (size_t)g->local_experts, R = (size_t)g->ranks;
  gin_result_t rc = gin_mem_copy(g->x, recv->x, ep_ref_recv_x_bytes(g));
  if (rc == GIN_SUCCESS && fp8 && o->scale_layout == GIN_EP_SCALES_ROWS)
    rc = gin_mem_copy(g->scales, recv->scales, ep_ref_recv_scales_bytes(g));
  else if (rc == GIN_SUCCESS && fp8) {
    /* UE8M0 takes fewer bytes than fp32; both fit h_raw */
    size_t words = (size_t)(g->hidden / GIN_EP_FP8_GROUP);
    if (o->scale_layout == GIN_EP_SCALES_UE8M0) words = (words + 3) / 4;
    rc = gin_mem_copy(c->h_raw, recv->scales, L * (size_t)g->slots * words * 4);
    if (rc == GIN_SUCCESS) scales_to_rows(b, o->scale_layout, c->h_raw);
  }
  if (rc == GIN_SUCCESS)
    rc = gin_mem_copy(g->src_rank, recv->src_rank, ep_ref_recv_slot_bytes(g));
  if (rc == GIN_SUCCESS)
    rc = gin_mem_copy(g->src_token, recv->src_token, ep_ref_recv_slot_bytes(g));
  if (rc == GIN_SUCCESS)
    rc = gin_mem_copy(g->count, recv->count, L * sizeof(int32_t));
  if (rc == GIN_SUCCESS && o->layout == GIN_EP_LAYOUT_PACKED) {
    rc = gin_mem_copy(c->h_raw, recv->layout, L * R * sizeof(int64_t));
    for (size_t i = 0; rc == GIN_SUCCESS && i < L * R; i++) {
      int64_t v = ((const int64_t *)c->h_raw)[i];
      g->layout[2 * i] = (int32_t)(v >> 32);
      g->layout[2 * i + 1] = (int32_t)(v & 0xffffffff);
    }
  } else if (rc == GIN_SUCCESS) {
    rc = gin_mem_copy(g->layout, recv->layout, L * R * 2 * sizeof(int32_t));
  }
  if (rc != GIN_SUCCESS) api_fail(res, "copying recv back", rc);
  return rc;
}

/* Combine of b's last dispatch with the experts' outputs c->h_y (in the
 * buffer's combine input, or apart), checked against c->h_want; a
 * mismatch or an API error goes to *res, unless it holds one already
 * (from dispatch). Outputs for a dispatch's second combine go to the
 * combine buffer after gin_ep_combine_fence. */
static void combine_check(ctx_t *c, ep_buf_t *b, int zero_copy, int T,
                          int split, int idx64, const char *what,
                          step_res_t *res) {
  int H = b->hidden;
  uint16_t *y = c->d_y;
  if (zero_copy) {
    /* The fence is on the stream; the copy below is not (gin_mem_copy is
     * ordered with no stream): wait for the fence before rewriting rows
     * that peers may still be reading. */
    TCHECK(gin_ep_combine_fence(b->ep, NULL));
    TCHECK(gin_stream_synchronize(NULL));
    TCHECK(gin_ep_combine_buffer(b->ep, &y));
  }
  TCHECK(gin_mem_copy(y, c->h_y, y_elems(c, H) * 2));
  /* Poison out: unwritten rows show up (and rows past T must stay). */
  TCHECK(gin_mem_set(c->d_out, 0xff, (size_t)MAX_TOKENS * H * 2));
  gin_result_t rc = do_combine(b, c, y, T, split, idx64);
  if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
  if (rc == GIN_SUCCESS) rc = gin_comm_get_async_error(c->comm);
  if (rc != GIN_SUCCESS) {
    api_fail(res, what, rc);
    return;
  }
  TCHECK(gin_mem_copy(c->h_out, c->d_out, (size_t)MAX_TOKENS * H * 2));
  if (res->status) return; /* dispatch already wrong */
  char msg[400];
  if (ep_ref_check_out(c->h_want, c->h_out, T, H, msg, sizeof msg)) {
    res->status = 1;
    snprintf(res->msg, sizeof res->msg, "rank %d %s: %s", c->rank, what, msg);
    return;
  }
  for (size_t i = (size_t)T * H; i < (size_t)MAX_TOKENS * H; i++)
    if (c->h_out[i] != 0xffff) {
      res->status = 1;
      snprintf(res->msg, sizeof res->msg,
               "rank %d %s: wrote row %d past num_tokens %d", c->rank, what,
               (int)(i / (size_t)H), T);
      return;
    }
}

/* One dispatch + combine on buffer b with the inputs of (seed, rank). */
static void run_step(ctx_t *c, ep_buf_t *b, const ep_case_t *cs, int step,
                     uint64_t seed, step_res_t *res) {
  int R = c->nranks, me = c->rank, K = cs->topk, H = b->hidden;
  res->status = 0;
  res->msg[0] = 0;
  for (int r = 0; r < R; r++) {
    ep_ref_input_free(&c->inputs[r]);
    TASSERT(ep_ref_input_make(seed, r, tokens_of(cs, r), H, K, c->experts,
                              cs->route, &c->inputs[r]) == 0,
            "inputs");
  }
  const ep_ref_input_t *in = &c->inputs[me];
  int T = in->num_tokens;
  gin_ep_dispatch_opts_t o;
  int ref_fp8 = step_opts(cs, step, &o);
  ref_ensure(c, b, ref_fp8);
  if (cs->opt == OPT_DEEPEP || cs->opt == OPT_UE8M0 || cs->opt == OPT_ANY)
    o.recv_stats = c->d_stats;
  if (T > 0) {
    TCHECK(gin_mem_copy(c->d_x, in->x, (size_t)T * H * 2));
    TCHECK(gin_mem_copy(c->d_idx, in->topk_idx, (size_t)T * K * 4));
    TCHECK(gin_mem_copy(c->d_w, in->weights, (size_t)T * K * 4));
    for (int i = 0; i < T * K; i++) /* -1 stays -1 */
      c->h_idx64[i] = in->topk_idx[i];
    TCHECK(gin_mem_copy(c->d_idx64, c->h_idx64, (size_t)T * K * 8));
  }

  gin_ep_recv_t recv;
  memset(&recv, 0, sizeof recv);
  gin_result_t rc = do_dispatch(b, c, T, step_split_dispatch(step), &o, &recv);
  if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
  if (rc == GIN_SUCCESS) rc = gin_comm_get_async_error(c->comm);
  if (rc != GIN_SUCCESS) {
    api_fail(res, "dispatch", rc);
    return;
  }
  if (fetch_recv(b, c, &o, &recv, res) != GIN_SUCCESS) return;
  ep_ref_dispatch(c->inputs, R, me, &b->want);
  if (ep_ref_check_recv(&b->want, &b->got, me, res->msg, sizeof res->msg)) {
    res->status = 1;
    size_t n = strlen(res->msg);
    snprintf(res->msg + n, sizeof res->msg - n, " [dispatch]");
  }
  if (o.recv_stats) { /* every dispatch's counts, added up */
    int32_t got[EXPERTS_PER_RANK];
    TCHECK(gin_mem_copy(got, c->d_stats, sizeof got));
    for (int le = 0; le < c->local; le++) {
      c->h_stats[le] += b->want.count[le];
      if (got[le] != c->h_stats[le] && !res->status) {
        res->status = 1;
        snprintf(res->msg, sizeof res->msg,
                 "rank %d: recv_stats[%d] %d, want %d (counts added up)", me,
                 le, got[le], c->h_stats[le]);
      }
    }
  }

  /* The experts, on what was delivered. */
  memset(c->h_y, 0, y_elems(c, H) * 2);
  ep_ref_experts(&b->got, me, c->h_y);
  ep_ref_combine(in, ref_fp8, c->h_want);
  combine_check(c, b, step_zero_copy(step, me), T, step_split_combine(step),
                o.idx64, "combine", res);
  /* Step 2 combines its dispatch twice: the second time the outputs
   * negated, in the buffer's combine input, where a rank still reading
   * the first combine's rows (half the ranks' came from there) would find
   * them. */
  if (step == 2 && res->status != 2) { /* every rank, to stay in step */
    for (size_t i = 0; i < y_elems(c, H); i++)
      c->h_y[i] ^= 0x8000;
    for (size_t i = 0; i < (size_t)T * H; i++)
      c->h_want[i] ^= 0x8000;
    combine_check(c, b, 1, T, 1, o.idx64, "second combine", res);
  }
}

static void run_case(ctx_t *c, int ci, int pass) {
  const ep_case_t *cs = &cases[ci];
  char name[80];
  int hidden = cs->hidden;
  static const char *const opt_names[] = {"", " deepep", " pow2", " ue8m0",
                                          " any"};
  snprintf(name, sizeof name, "%s K=%d %s T=%d H=%d%s%s",
           ep_route_name(cs->route), cs->topk,
           cs->fp8 == GIN_EP_FP8_ANY ? "fp8|bf16"
           : cs->fp8                 ? "fp8"
                                     : "bf16",
           cs->tokens, hidden, cs->uneven ? " uneven" : "", opt_names[cs->opt]);
  if (cs->topk > c->experts) {
    if (c->rank == 0) printf("%-34s skipped (%d experts)\n", name, c->experts);
    return;
  }
  ep_buf_t *b = get_buf(c, cs->topk, cs->fp8, hidden);
  /* The statistics start from zero in each case. */
  TCHECK(gin_mem_set(c->d_stats, 0, EXPERTS_PER_RANK * sizeof(int32_t)));
  memset(c->h_stats, 0, EXPERTS_PER_RANK * sizeof(int32_t));
  step_res_t res, first;
  memset(&first, 0, sizeof first);
  int first_step = -1;
  for (int s = 0; s < STEPS; s++) {
    uint64_t seed = test_mix((uint64_t)(ci + 1) * 1000003u + (uint64_t)s +
                             (uint64_t)pass * 0x9e3779b97f4a7c15ull);
    run_step(c, b, cs, s, seed, &res);
    if (res.status && first_step < 0) {
      first = res;
      first_step = s;
    }
    if (res.status == 2) break;
  }
  if (first_step >= 0)
    fprintf(stderr,
            "rank %d: case %s step %d (dispatch %s, combine %s, y %s): %s\n",
            c->rank, name, first_step,
            step_split_dispatch(first_step) ? "split" : "both",
            step_split_combine(first_step) ? "split" : "both",
            step_zero_copy(first_step, c->rank) ? "in the buffer" : "apart",
            first.msg);
  int bad = first.status;
  int *all = (int *)calloc((size_t)c->nranks, sizeof(int));
  TCHECK(gin_comm_allgather(c->comm, &bad, all, sizeof(int)));
  int nbad = 0, fatal = 0;
  for (int r = 0; r < c->nranks; r++) {
    nbad += all[r] != 0;
    fatal |= all[r] == 2;
  }
  free(all);
  if (c->rank == 0 && (pass == 0 || nbad))
    printf("%-34s %s (%d ranks)%s\n", name, nbad ? "FAIL" : "ok", c->nranks,
           pass ? " (soak pass)" : "");
  fflush(stdout);
  if (nbad) c->failed = 1;
  if (fatal) { /* an API error: the buffers are out of step */
    if (c->rank == 0) printf("test_ep: FAILED (stopped)\n");
    exit(1);
  }
}

static double ep_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define EP_SOAK_ANON_BOUND (16ll << 20)
/* Under ASan freed memory sits in its quarantine (up to 256 MiB), so
 * anonymous memory grows without a leak; LeakSanitizer checks leaks at
 * exit there instead. */
#if defined(__SANITIZE_ADDRESS__)
#define EP_SOAK_ANON_CHECK 0
#else
#define EP_SOAK_ANON_CHECK 1
#endif

int main(int argc, char **argv) {
  double seconds = 0;
  int mixed_pull = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--mixed-pull"))
      mixed_pull = 1;
    else {
      fprintf(stderr, "usage: test_ep [--seconds S] [--mixed-pull]\n");
      return 2;
    }
  }
  test_require_device();
  ctx_t c;
  memset(&c, 0, sizeof c);
  TCHECK(gin_comm_init_from_env(&c.comm, NULL));
  TCHECK(gin_comm_rank(c.comm, &c.rank));
  TCHECK(gin_comm_size(c.comm, &c.nranks));
  /* Read by the first gin_ep_create (and kept). */
  if (mixed_pull && c.rank % 2) setenv("GIN_EP_PULL", "0", 1);
  c.local = EXPERTS_PER_RANK;
  c.experts = EXPERTS_PER_RANK * c.nranks;
  TCHECK(gin_mem_alloc((size_t)MAX_TOKENS * MAX_HIDDEN * 2, (void **)&c.d_x));
  TCHECK(gin_mem_alloc((size_t)MAX_TOKENS * MAX_TOPK * 4, (void **)&c.d_idx));
  TCHECK(gin_mem_alloc((size_t)MAX_TOKENS * MAX_TOPK * 4, (void **)&c.d_w));
  TCHECK(gin_mem_alloc(y_elems(&c, MAX_HIDDEN) * 2, (void **)&c.d_y));
  TCHECK(gin_mem_alloc((size_t)MAX_TOKENS * MAX_HIDDEN * 2, (void **)&c.d_out));
  TCHECK(gin_mem_alloc((size_t)MAX_TOKENS * MAX_TOPK * 8, (void **)&c.d_idx64));
  TCHECK(
      gin_mem_alloc(EXPERTS_PER_RANK * sizeof(int32_t), (void **)&c.d_stats));
  c.h_stats = (int32_t *)calloc(EXPERTS_PER_RANK, sizeof(int32_t));
  c.h_idx64 = (int64_t *)calloc((size_t)MAX_TOKENS * MAX_TOPK, 8);
  /* the largest raw array: fp32 scales of every slot */
  c.h_raw = calloc(y_elems(&c, MAX_HIDDEN / GIN_EP_FP8_GROUP) + 64, 4);
  TASSERT(c.h_stats && c.h_idx64 && c.h_raw, "out of memory");
  c.h_y = (uint16_t *)calloc(y_elems(&c, MAX_HIDDEN), 2);
  c.h_out = (uint16_t *)calloc((size_t)MAX_TOKENS * MAX_HIDDEN, 2);
  c.h_want = (uint16_t *)calloc((size_t)MAX_TOKENS * MAX_HIDDEN, 2);
  c.inputs = (ep_ref_input_t *)calloc((size_t)c.nranks, sizeof *c.inputs);
  TASSERT(c.h_y && c.h_out && c.h_want && c.inputs, "out of memory");

  double t0 = ep_now_s();
  int passes = 0, fd0 = -1, fd1 = -1, more = 1, warm = 0;
  long long anon0 = -1, anon1 = -1;
  while (more && !c.failed) {
    for (int ci = 0; ci < NCASES; ci++)
      run_case(&c, ci, passes);
    passes++;
    if (passes == 1) /* buffers and caches exist from here on */
      fd0 = test_fd_count();
    /* Memory from the first pass past a quarter of the run: the first
     * messages touch the transports' buffer pools for the first time
     * (tcp;ofi_rxm's shared receive buffers grew it by 24 MB). */
    if (passes == 1 || (!warm && ep_now_s() - t0 >= seconds / 4)) {
      warm = passes > 1;
      anon0 = test_status_bytes("RssAnon");
    }
    fd1 = test_fd_count();
    anon1 = test_status_bytes("RssAnon");
    /* Rank 0 decides whether there is another pass. */
    more = seconds > 0 && ep_now_s() - t0 < seconds;
    int *all = (int *)calloc((size_t)c.nranks, sizeof(int));
    TASSERT(all, "out of memory");
    TCHECK(gin_comm_allgather(c.comm, &more, all, sizeof(int)));
    more = all[0];
    free(all);
  }
  if (seconds > 0) {
    int leak = fd1 != fd0 || (EP_SOAK_ANON_CHECK && anon0 >= 0 &&
                              anon1 - anon0 >= EP_SOAK_ANON_BOUND);
    printf("rank %d: %d passes of %d cases, fds %d -> %d, anon %lld -> %lld "
           "KiB%s\n",
           c.rank, passes, NCASES, fd0, fd1, anon0 >> 10, anon1 >> 10,
           leak ? " LEAK" : "");
    if (leak) c.failed = 1;
  }

  for (int i = 0; i < c.nbufs; i++) {
    TCHECK(gin_ep_destroy(c.bufs[i].ep));
    ep_ref_recv_free(&c.bufs[i].got);
    ep_ref_recv_free(&c.bufs[i].want);
  }
  for (int r = 0; r < c.nranks; r++)
    ep_ref_input_free(&c.inputs[r]);
  free(c.inputs);
  free(c.h_y);
  free(c.h_out);
  free(c.h_want);
  TCHECK(gin_mem_free(c.d_x));
  TCHECK(gin_mem_free(c.d_idx));
  TCHECK(gin_mem_free(c.d_w));
  TCHECK(gin_mem_free(c.d_y));
  TCHECK(gin_mem_free(c.d_out));
  TCHECK(gin_mem_free(c.d_idx64));
  TCHECK(gin_mem_free(c.d_stats));
  free(c.h_stats);
  free(c.h_idx64);
  free(c.h_raw);
  TCHECK(gin_comm_destroy(c.comm));
  if (c.rank == 0) printf("test_ep: %s\n", c.failed ? "FAILED" : "passed");
  return c.failed ? 1 : 0;
}
