/*
 * gin EP: dispatch and combine against the CPU reference (ep_ref.h), for
 * every routing (random, skewed, masked), topk 1..8, bf16 and fp8, several
 * token counts (0 to max_tokens, also different on each rank), hidden 256
 * (and 100 with bf16, 384 with fp8), 4 experts per rank, with the
 * phases issued together and split (send, then receive), the experts'
 * outputs in memory of their own or in the buffer's combine input
 * (gin_ep_combine_buffer; half the ranks each step), several steps in a
 * row on each buffer (its two buffer sets alternate). Every rank
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
#include "gin/gin_ep.h"
#include "test_common.h"

#define MAX_TOKENS 32
#define HIDDEN 256     /* unless a case says otherwise */
#define MAX_HIDDEN 512 /* the largest a case uses */
#define MAX_BUFS 16
#define EXPERTS_PER_RANK 4
#define MAX_TOPK 8
#define STEPS 4 /* dispatch + combine pairs per case */

typedef struct ep_case {
  ep_route_t route;
  int topk, fp8, tokens;
  int uneven; /* token counts differ between ranks */
  int hidden;
} ep_case_t;

static const ep_case_t cases[] = {
    /* route, topk, fp8, tokens, uneven, hidden */
    {EP_ROUTE_RANDOM, 1, 0, 1, 0, HIDDEN},
    {EP_ROUTE_RANDOM, 2, 1, 17, 0, HIDDEN},
    {EP_ROUTE_RANDOM, 4, 0, 32, 0, HIDDEN},
    {EP_ROUTE_RANDOM, 8, 1, 32, 0, HIDDEN},
    {EP_ROUTE_RANDOM, 4, 1, 0, 0, HIDDEN},
    {EP_ROUTE_RANDOM, 2, 0, 17, 1, HIDDEN},
    {EP_ROUTE_SKEWED, 2, 0, 32, 0, HIDDEN},
    {EP_ROUTE_SKEWED, 4, 1, 17, 1, HIDDEN},
    {EP_ROUTE_SKEWED, 1, 1, 32, 0, HIDDEN},
    {EP_ROUTE_MASKED, 1, 1, 17, 0, HIDDEN},
    {EP_ROUTE_MASKED, 8, 0, 32, 1, HIDDEN},
    {EP_ROUTE_MASKED, 4, 1, 32, 0, HIDDEN},
    /* rows of 200 bytes (bf16 needs no multiple of 128), 3 fp8 groups */
    {EP_ROUTE_RANDOM, 2, 0, 17, 1, 100},
    {EP_ROUTE_MASKED, 2, 1, 32, 1, 384},
    /* 16 bytes of scales a row: the receive's fp8 copy takes them with
     * the row (the other cases' scales are 8 or 12 bytes) */
    {EP_ROUTE_RANDOM, 4, 1, 32, 0, 512},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* Phases of step s: (dispatch, combine) split or not, every mix. */
static int step_split_dispatch(int s) { return s % 4 == 1 || s % 4 == 3; }
static int step_split_combine(int s) { return s % 4 == 1 || s % 4 == 2; }
/* Whether rank r's experts write into the buffer's combine input
 * (gin_ep_combine_buffer) at step s: half the ranks in each step, every
 * rank both ways over the four steps. */
static int step_zero_copy(int s, int r) { return (s + r) % 4 >= 2; }

/* One buffer per (topk, fp8, hidden), kept across cases. */
typedef struct ep_buf {
  int topk, fp8, hidden;
  gin_ep_t ep;
  ep_ref_recv_t got; /* host copy of what dispatch delivered */
  ep_ref_recv_t want;
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
  TASSERT(ep_ref_recv_alloc(c->local, c->nranks, MAX_TOKENS, hidden, fp8,
                            &b->got) == 0 &&
              ep_ref_recv_alloc(c->local, c->nranks, MAX_TOKENS, hidden, fp8,
                                &b->want) == 0,
          "out of memory");
  return b;
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

static gin_result_t do_dispatch(ep_buf_t *b, const ctx_t *c, int T, int split,
                                gin_ep_recv_t *recv) {
  if (!split)
    return gin_ep_dispatch(b->ep, c->d_x, c->d_idx, T, recv, NULL, GIN_EP_BOTH);
  gin_result_t rc =
      gin_ep_dispatch(b->ep, c->d_x, c->d_idx, T, recv, NULL, GIN_EP_SEND);
  if (rc != GIN_SUCCESS) return rc;
  return gin_ep_dispatch(b->ep, c->d_x, c->d_idx, T, recv, NULL, GIN_EP_RECV);
}

static gin_result_t do_combine(ep_buf_t *b, const ctx_t *c, const uint16_t *y,
                               int T, int split) {
  if (!split)
    return gin_ep_combine(b->ep, y, c->d_idx, c->d_w, T, c->d_out, NULL,
                          GIN_EP_BOTH);
  gin_result_t rc = gin_ep_combine(b->ep, y, c->d_idx, c->d_w, T, c->d_out,
                                   NULL, GIN_EP_SEND);
  if (rc != GIN_SUCCESS) return rc;
  return gin_ep_combine(b->ep, y, c->d_idx, c->d_w, T, c->d_out, NULL,
                        GIN_EP_RECV);
}

/* Copies what dispatch left in recv into b->got. */
static gin_result_t fetch_recv(ep_buf_t *b, const gin_ep_recv_t *recv,
                               step_res_t *res) {
  ep_ref_recv_t *g = &b->got;
  if (recv->local_experts != g->local_experts || recv->ranks != g->ranks ||
      recv->slots_per_expert != g->slots || !recv->x || !recv->src_rank ||
      !recv->src_token || !recv->count || !recv->layout ||
      (b->fp8 ? !recv->scales : recv->scales != NULL)) {
    res->status = 2; /* cannot go on to combine: stop */
    snprintf(res->msg, sizeof res->msg,
             "recv description: L %d R %d slots %d scales %p (want %d %d %d, "
             "scales %s)",
             recv->local_experts, recv->ranks, recv->slots_per_expert,
             (void *)recv->scales, g->local_experts, g->ranks, g->slots,
             b->fp8 ? "set" : "NULL");
    return GIN_ERR_INVALID;
  }
  gin_result_t rc = gin_mem_copy(g->x, recv->x, ep_ref_recv_x_bytes(g));
  if (rc == GIN_SUCCESS && b->fp8)
    rc = gin_mem_copy(g->scales, recv->scales, ep_ref_recv_scales_bytes(g));
  if (rc == GIN_SUCCESS)
    rc = gin_mem_copy(g->src_rank, recv->src_rank, ep_ref_recv_slot_bytes(g));
  if (rc == GIN_SUCCESS)
    rc = gin_mem_copy(g->src_token, recv->src_token, ep_ref_recv_slot_bytes(g));
  if (rc == GIN_SUCCESS)
    rc = gin_mem_copy(g->count, recv->count,
                      (size_t)g->local_experts * sizeof(int32_t));
  if (rc == GIN_SUCCESS)
    rc = gin_mem_copy(g->layout, recv->layout,
                      (size_t)g->local_experts * (size_t)g->ranks * 2 *
                          sizeof(int32_t));
  if (rc != GIN_SUCCESS) api_fail(res, "copying recv back", rc);
  return rc;
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
  if (T > 0) {
    TCHECK(gin_mem_copy(c->d_x, in->x, (size_t)T * H * 2));
    TCHECK(gin_mem_copy(c->d_idx, in->topk_idx, (size_t)T * K * 4));
    TCHECK(gin_mem_copy(c->d_w, in->weights, (size_t)T * K * 4));
  }

  gin_ep_recv_t recv;
  memset(&recv, 0, sizeof recv);
  gin_result_t rc = do_dispatch(b, c, T, step_split_dispatch(step), &recv);
  if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
  if (rc == GIN_SUCCESS) rc = gin_comm_get_async_error(c->comm);
  if (rc != GIN_SUCCESS) {
    api_fail(res, "dispatch", rc);
    return;
  }
  if (fetch_recv(b, &recv, res) != GIN_SUCCESS) return;
  ep_ref_dispatch(c->inputs, R, me, &b->want);
  if (ep_ref_check_recv(&b->want, &b->got, me, res->msg, sizeof res->msg)) {
    res->status = 1;
    size_t n = strlen(res->msg);
    snprintf(res->msg + n, sizeof res->msg - n, " [dispatch]");
  }

  /* The experts, on what was delivered. */
  memset(c->h_y, 0, y_elems(c, H) * 2);
  ep_ref_experts(&b->got, me, c->h_y);
  uint16_t *y = c->d_y;
  if (step_zero_copy(step, me)) TCHECK(gin_ep_combine_buffer(b->ep, &y));
  TCHECK(gin_mem_copy(y, c->h_y, y_elems(c, H) * 2));
  /* Poison out: unwritten rows show up (and rows past T must stay). */
  TCHECK(gin_mem_set(c->d_out, 0xff, (size_t)MAX_TOKENS * H * 2));
  rc = do_combine(b, c, y, T, step_split_combine(step));
  if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
  if (rc == GIN_SUCCESS) rc = gin_comm_get_async_error(c->comm);
  if (rc != GIN_SUCCESS) {
    api_fail(res, "combine", rc);
    return;
  }
  TCHECK(gin_mem_copy(c->h_out, c->d_out, (size_t)MAX_TOKENS * H * 2));
  if (res->status) return; /* dispatch already wrong */
  ep_ref_combine(in, b->fp8, c->h_want);
  char msg[400];
  if (ep_ref_check_out(c->h_want, c->h_out, T, H, msg, sizeof msg)) {
    res->status = 1;
    snprintf(res->msg, sizeof res->msg, "rank %d combine: %s", me, msg);
    return;
  }
  for (size_t i = (size_t)T * H; i < (size_t)MAX_TOKENS * H; i++)
    if (c->h_out[i] != 0xffff) {
      res->status = 1;
      snprintf(res->msg, sizeof res->msg,
               "rank %d combine: wrote row %d past num_tokens %d", me,
               (int)(i / (size_t)H), T);
      return;
    }
}

static void run_case(ctx_t *c, int ci, int pass) {
  const ep_case_t *cs = &cases[ci];
  char name[80];
  int hidden = cs->hidden;
  snprintf(name, sizeof name, "%s K=%d %s T=%d H=%d%s",
           ep_route_name(cs->route), cs->topk, cs->fp8 ? "fp8" : "bf16",
           cs->tokens, hidden, cs->uneven ? " uneven" : "");
  if (cs->topk > c->experts) {
    if (c->rank == 0) printf("%-34s skipped (%d experts)\n", name, c->experts);
    return;
  }
  ep_buf_t *b = get_buf(c, cs->topk, cs->fp8, hidden);
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
  TCHECK(gin_comm_destroy(c.comm));
  if (c.rank == 0) printf("test_ep: %s\n", c.failed ? "FAILED" : "passed");
  return c.failed ? 1 : 0;
}
