/*
 * gin-ep-bench: DeepEP-style low-latency dispatch/combine benchmark.
 *
 *   ginrun -n R gin_ep_bench_{cuda,host} [-t TOKENS] [-H HIDDEN] [-k TOPK]
 *          [-e EXPERTS] [--bf16] [--routing random|skewed|masked]
 *          [-n ITERS] [-w WARMUP] [--no-baseline] [--zero-copy] [--csv FILE]
 *
 * Defaults are DeepEP's low-latency test: 128 tokens per rank, hidden 7168,
 * top-8, 288 experts, FP8 dispatch, BF16 combine. Every run first checks
 * dispatch and combine against the CPU reference (tools/ep/ep_ref.c), then
 * times them; the host-initiated baseline (tools/ep/ep_baseline.c: layout
 * kernel, host sync, counts exchanged, host-issued copies, receive kernel)
 * is checked and timed the same way in the same run, and the ratio printed.
 * Bandwidth uses DeepEP's accounting: routed (token, expert) pairs times
 * the message (dispatch: 16 B header + H fp8 bytes + H / 128 fp32 scales,
 * or 2H bf16; combine: 2H). --zero-copy: gin's experts write their
 * outputs into the buffer's combine input (gin_ep_combine_buffer), which
 * saves combine's send copy; the baseline keeps its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep/bench_util.h"
#include "ep/ep_baseline.h"
#include "ep/ep_ref.h"
#include "gin/gin.h"
#include "gin/gin_ep.h"
#include "perf/perf_target.h"

#define CK(call) BENCH_CK("gin-ep-bench", call)

typedef struct opts {
  int T, H, K, E, fp8, iters, warmup, baseline, zero_copy;
  ep_route_t route;
  const char *csv;
} opts_t;

static void usage(FILE *f) {
  fprintf(f, "usage: ginrun -n R gin_ep_bench_{cuda,host} [-t TOKENS] "
             "[-H HIDDEN] [-k TOPK] [-e EXPERTS] [--bf16] [--routing "
             "random|skewed|masked] [-n ITERS] [-w WARMUP] [--no-baseline] "
             "[--zero-copy] [--csv FILE]\n");
}

static void parse(int argc, char **argv, opts_t *o) {
  o->T = 128;
  o->H = 7168;
  o->K = 8;
  o->E = 288;
  o->fp8 = 1;
  o->iters = 20;
  o->warmup = 3;
  o->baseline = 1;
  o->zero_copy = 0;
  o->route = EP_ROUTE_RANDOM;
  o->csv = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--bf16")) {
      o->fp8 = 0;
    } else if (!strcmp(a, "--no-baseline")) {
      o->baseline = 0;
    } else if (!strcmp(a, "--zero-copy")) {
      o->zero_copy = 1;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      exit(0);
    } else if (!v) {
      usage(stderr);
      exit(2);
    } else if (!strcmp(a, "-t")) {
      o->T = atoi(argv[++i]);
    } else if (!strcmp(a, "-H")) {
      o->H = atoi(argv[++i]);
    } else if (!strcmp(a, "-k")) {
      o->K = atoi(argv[++i]);
    } else if (!strcmp(a, "-e")) {
      o->E = atoi(argv[++i]);
    } else if (!strcmp(a, "-n")) {
      o->iters = atoi(argv[++i]);
    } else if (!strcmp(a, "-w")) {
      o->warmup = atoi(argv[++i]);
    } else if (!strcmp(a, "--csv")) {
      o->csv = argv[++i];
    } else if (!strcmp(a, "--routing")) {
      v = argv[++i];
      o->route = !strcmp(v, "skewed")   ? EP_ROUTE_SKEWED
                 : !strcmp(v, "masked") ? EP_ROUTE_MASKED
                                        : EP_ROUTE_RANDOM;
      if (strcmp(v, "skewed") && strcmp(v, "masked") && strcmp(v, "random")) {
        fprintf(stderr,
                "gin-ep-bench: --routing %s: random, skewed or masked\n", v);
        exit(2);
      }
    } else {
      usage(stderr);
      exit(2);
    }
  }
  if (o->T < 1 || o->iters < 1 || o->warmup < 0 || o->K < 1 || o->K > o->E) {
    fprintf(stderr, "gin-ep-bench: need -t >= 1, -n >= 1, -w >= 0, "
                    "1 <= -k <= -e\n");
    exit(2);
  }
}

/* Device arrays of one rank's inputs. */
typedef struct dev_in {
  uint16_t *x, *out, *y;
  int32_t *idx;
  float *w;
} dev_in_t;

/* Copies a recv (device arrays) to a host one of the same shape. */
static void recv_to_host(const gin_ep_recv_t *d, ep_ref_recv_t *h) {
  CK(gin_mem_copy(h->x, d->x, ep_ref_recv_x_bytes(h)));
  if (h->fp8)
    CK(gin_mem_copy(h->scales, d->scales, ep_ref_recv_scales_bytes(h)));
  CK(gin_mem_copy(h->src_rank, d->src_rank, ep_ref_recv_slot_bytes(h)));
  CK(gin_mem_copy(h->src_token, d->src_token, ep_ref_recv_slot_bytes(h)));
  CK(gin_mem_copy(h->count, d->count, sizeof(int32_t) * h->local_experts));
  CK(gin_mem_copy(h->layout, d->layout,
                  sizeof(int32_t) * 2 * h->local_experts * h->ranks));
}

/* The operations under test, gin's or the baseline's. */
typedef struct impl {
  const char *name;
  gin_ep_t ep;
  ep_baseline_t *base;
  uint16_t *y; /* where its experts' outputs go (dev_in_t.y while it runs) */
} impl_t;

static void do_dispatch(impl_t *m, dev_in_t *d, int T, gin_ep_recv_t *rv) {
  if (m->ep) {
    CK(gin_ep_dispatch(m->ep, d->x, d->idx, T, rv, NULL, GIN_EP_BOTH));
    CK(gin_stream_synchronize(0));
  } else if (ep_baseline_dispatch(m->base, d->x, d->idx, T, rv) != 0) {
    exit(1);
  }
}

static void do_combine(impl_t *m, dev_in_t *d, int T) {
  if (m->ep) {
    CK(gin_ep_combine(m->ep, d->y, d->idx, d->w, T, d->out, NULL, GIN_EP_BOTH));
    CK(gin_stream_synchronize(0));
  } else if (ep_baseline_combine(m->base, d->y, d->idx, d->w, T, d->out) != 0) {
    exit(1);
  }
}

/* Checks one dispatch + combine of m against the reference; returns the
 * number of mismatches on this rank (messages on stderr). */
static long check(impl_t *m, dev_in_t *d, const opts_t *o, int me, int R,
                  ep_ref_input_t *all, const ep_ref_recv_t *want,
                  const uint16_t *want_out, gin_comm_t comm) {
  gin_ep_recv_t rv;
  ep_ref_recv_t got;
  char msg[256];
  int L = o->E / R;
  do_dispatch(m, d, o->T, &rv);
  CK(gin_comm_get_async_error(comm));
  if (ep_ref_recv_alloc(L, R, o->T, o->H, o->fp8, &got) != 0) exit(1);
  recv_to_host(&rv, &got);
  long bad = ep_ref_check_recv(want, &got, me, msg, sizeof msg);
  if (bad) fprintf(stderr, "[%s] rank %d dispatch: %s\n", m->name, me, msg);
  /* The stand-in experts run on what arrived, on the host. */
  size_t ybytes = (size_t)L * R * o->T * o->H * 2;
  uint16_t *y = (uint16_t *)calloc(1, ybytes);
  ep_ref_experts(&got, me, y);
  CK(gin_mem_copy(d->y, y, ybytes));
  do_combine(m, d, o->T);
  CK(gin_comm_get_async_error(comm));
  uint16_t *out = (uint16_t *)malloc((size_t)o->T * o->H * 2);
  CK(gin_mem_copy(out, d->out, (size_t)o->T * o->H * 2));
  long b2 = ep_ref_check_out(want_out, out, o->T, o->H, msg, sizeof msg);
  if (b2) fprintf(stderr, "[%s] rank %d combine: %s\n", m->name, me, msg);
  free(out);
  free(y);
  ep_ref_recv_free(&got);
  return bad + b2;
}

#if GIN_ARCH_CUDA
/* A whole dispatch + combine step captured in a CUDA graph and replayed
 * `n` times: each replay must give the checked results again (the expert
 * outputs y stay those of the checked step, which were computed from the
 * same inputs). Returns the mismatches on this rank. */
static long graph_replay(gin_ep_t ep, dev_in_t *d, const opts_t *o, int R,
                         const ep_ref_recv_t *want, const uint16_t *want_out,
                         gin_comm_t comm, int n) {
  cudaStream_t s;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  gin_ep_recv_t rv;
  long bad = 0;
  char msg[256];
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
    return 1;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  CK(gin_ep_dispatch(ep, d->x, d->idx, o->T, &rv, s, GIN_EP_BOTH));
  CK(gin_ep_combine(ep, d->y, d->idx, d->w, o->T, d->out, s, GIN_EP_BOTH));
  if (cudaStreamEndCapture(s, &graph) != cudaSuccess ||
      cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
    fprintf(stderr, "gin-ep-bench: graph capture failed: %s\n",
            cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  ep_ref_recv_t got;
  if (ep_ref_recv_alloc(o->E / R, R, o->T, o->H, o->fp8, &got) != 0) return 1;
  uint16_t *out = (uint16_t *)malloc((size_t)o->T * o->H * 2);
  for (int i = 0; i < n && !bad; i++) {
    CK(gin_comm_barrier(comm));
    CK(gin_mem_set(d->out, 0, (size_t)o->T * o->H * 2));
    if (cudaGraphLaunch(exec, s) != cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess)
      return 1;
    CK(gin_comm_get_async_error(comm));
    recv_to_host(&rv, &got);
    bad += ep_ref_check_recv(want, &got, 0, msg, sizeof msg);
    CK(gin_mem_copy(out, d->out, (size_t)o->T * o->H * 2));
    bad += ep_ref_check_out(want_out, out, o->T, o->H, msg, sizeof msg);
    if (bad) fprintf(stderr, "graph replay %d: %s\n", i, msg);
  }
  free(out);
  ep_ref_recv_free(&got);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
  return bad;
}
#endif

/* Times iters dispatch+combine pairs (host wall clock around each, all
 * ranks started together); medians and p99 in us on this rank. */
static void timing(impl_t *m, dev_in_t *d, const opts_t *o, gin_comm_t comm,
                   double res[4]) {
  double *td = (double *)malloc(sizeof(double) * o->iters);
  double *tc = (double *)malloc(sizeof(double) * o->iters);
  gin_ep_recv_t rv;
  for (int i = 0; i < o->warmup + o->iters; i++) {
    CK(gin_comm_barrier(comm));
    double t0 = perf_now_us();
    do_dispatch(m, d, o->T, &rv);
    double t1 = perf_now_us();
    CK(gin_comm_barrier(comm));
    double t2 = perf_now_us();
    do_combine(m, d, o->T);
    double t3 = perf_now_us();
    if (i >= o->warmup) {
      td[i - o->warmup] = t1 - t0;
      tc[i - o->warmup] = t3 - t2;
    }
  }
  CK(gin_comm_get_async_error(comm));
  qsort(td, (size_t)o->iters, sizeof *td, bench_cmp_d);
  qsort(tc, (size_t)o->iters, sizeof *tc, bench_cmp_d);
  res[0] = td[o->iters / 2];
  res[1] = td[(size_t)(o->iters * 0.99)];
  res[2] = tc[o->iters / 2];
  res[3] = tc[(size_t)(o->iters * 0.99)];
  free(td);
  free(tc);
}

/* Issues gin's phase j of a step: dispatch send, dispatch receive,
 * combine send, combine receive (the launches of GIN_EP_BOTH, apart). */
static void gin_phase(impl_t *m, dev_in_t *d, const opts_t *o, int j,
                      gin_ep_recv_t *rv) {
  int phase = j % 2 ? GIN_EP_RECV : GIN_EP_SEND;
  if (j < 2)
    CK(gin_ep_dispatch(m->ep, d->x, d->idx, o->T, rv, NULL, phase));
  else
    CK(gin_ep_combine(m->ep, d->y, d->idx, d->w, o->T, d->out, NULL, phase));
}

/* Times iters dispatch+combine steps of gin issued back to back on the
 * stream with no host synchronisation between them (what GPU-initiated
 * exchange allows; the baseline cannot do without): a time mark after
 * every phase, read once at the end; each phase's time runs from the end
 * of the previous phase on this rank, so waiting for slower peers counts.
 * The last step's output is checked against the reference. Medians and
 * p99 in us; returns the mismatches of the check. */
static long timing_pipelined(impl_t *m, dev_in_t *d, const opts_t *o,
                             gin_comm_t comm, const uint16_t *want_out,
                             double res[8]) {
  int n = o->iters;
  perf_marks_t mk;
  if (perf_marks_make(&mk, 4 * n + 1) != 0) {
    fprintf(stderr, "gin-ep-bench: cannot make %d time marks\n", 4 * n + 1);
    exit(1);
  }
  double *td = (double *)malloc(sizeof(double) * n);
  double *tc = (double *)malloc(sizeof(double) * n);
  double *tp[4];
  for (int j = 0; j < 4; j++)
    tp[j] = (double *)malloc(sizeof(double) * n);
  gin_ep_recv_t rv;
  for (int i = 0; i < o->warmup; i++) {
    CK(gin_ep_dispatch(m->ep, d->x, d->idx, o->T, &rv, NULL, GIN_EP_BOTH));
    CK(gin_ep_combine(m->ep, d->y, d->idx, d->w, o->T, d->out, NULL,
                      GIN_EP_BOTH));
  }
  CK(gin_stream_synchronize(0));
  CK(gin_comm_barrier(comm));
  perf_mark(&mk, 0);
  /* Each operation as its two phases, with a mark after each. */
  for (int i = 0; i < n; i++)
    for (int j = 0; j < 4; j++) {
      gin_phase(m, d, o, j, &rv);
      perf_mark(&mk, 4 * i + j + 1);
    }
  CK(gin_stream_synchronize(0));
  CK(gin_comm_get_async_error(comm));
  for (int i = 0; i < n; i++) {
    td[i] = perf_marks_us(&mk, 4 * i, 4 * i + 2);
    tc[i] = perf_marks_us(&mk, 4 * i + 2, 4 * i + 4);
    for (int j = 0; j < 4; j++)
      tp[j][i] = perf_marks_us(&mk, 4 * i + j, 4 * i + j + 1);
  }
  perf_marks_free(&mk);
  qsort(td, (size_t)n, sizeof *td, bench_cmp_d);
  qsort(tc, (size_t)n, sizeof *tc, bench_cmp_d);
  res[0] = td[n / 2];
  res[1] = td[(size_t)(n * 0.99)];
  res[2] = tc[n / 2];
  res[3] = tc[(size_t)(n * 0.99)];
  for (int j = 0; j < 4; j++) {
    qsort(tp[j], (size_t)n, sizeof *tp[j], bench_cmp_d);
    res[4 + j] = tp[j][n / 2];
    free(tp[j]);
  }
  free(td);
  free(tc);
  uint16_t *out = (uint16_t *)malloc((size_t)o->T * o->H * 2);
  char msg[256];
  CK(gin_mem_copy(out, d->out, (size_t)o->T * o->H * 2));
  long bad = ep_ref_check_out(want_out, out, o->T, o->H, msg, sizeof msg);
  if (bad) fprintf(stderr, "[gin-pipelined] combine: %s\n", msg);
  free(out);
  return bad;
}

/* Times each of gin's four phases on its own: before each, the stream
 * is synchronised and the ranks meet, so every rank starts it together
 * and, on the direct path, a receive finds everything it waits for
 * already there (its time is its own work, not the wait for slower
 * senders; over the proxy it still includes the proxy's delivery). The
 * interval runs from a mark on the idle stream, so it includes the
 * phase's host call and launch. This rank's medians in us: dispatch
 * send, dispatch receive, combine send, combine receive. */
static void timing_isolated(impl_t *m, dev_in_t *d, const opts_t *o,
                            gin_comm_t comm, double res[4]) {
  int n = o->iters;
  perf_marks_t mk;
  if (perf_marks_make(&mk, 8 * n) != 0) {
    fprintf(stderr, "gin-ep-bench: cannot make %d time marks\n", 8 * n);
    exit(1);
  }
  gin_ep_recv_t rv;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < 4; j++) {
      CK(gin_stream_synchronize(0));
      CK(gin_comm_barrier(comm));
      perf_mark(&mk, 8 * i + 2 * j);
      gin_phase(m, d, o, j, &rv);
      perf_mark(&mk, 8 * i + 2 * j + 1);
    }
  CK(gin_stream_synchronize(0));
  CK(gin_comm_get_async_error(comm));
  double *t = (double *)malloc(sizeof(double) * (size_t)n);
  for (int j = 0; j < 4; j++) {
    for (int i = 0; i < n; i++)
      t[i] = perf_marks_us(&mk, 8 * i + 2 * j, 8 * i + 2 * j + 1);
    qsort(t, (size_t)n, sizeof *t, bench_cmp_d);
    res[j] = t[n / 2];
  }
  free(t);
  perf_marks_free(&mk);
}

/* The sum of v over the R ranks (collective). */
static long sum_over_ranks(gin_comm_t comm, int R, long v) {
  long total = 0;
  long *each = (long *)calloc((size_t)R, sizeof(long));
  CK(gin_comm_allgather(comm, &v, each, sizeof v));
  for (int r = 0; r < R; r++)
    total += each[r];
  free(each);
  return total;
}

int main(int argc, char **argv) {
  opts_t o;
  parse(argc, argv, &o);
  if (!perf_have_device()) {
    printf("SKIP: no CUDA device\n");
    return 77;
  }
  gin_comm_t comm;
  int me, R;
  CK(gin_comm_init_from_env(&comm, NULL));
  CK(gin_comm_rank(comm, &me));
  CK(gin_comm_size(comm, &R));
  if (o.E % R != 0) {
    if (me == 0)
      fprintf(stderr, "gin-ep-bench: -e %d is not a multiple of %d ranks\n",
              o.E, R);
    return 2;
  }
  int L = o.E / R;
  gin_ep_config_t cfg = {o.T, o.H, o.K, o.E, o.fp8};

  /* Every rank's inputs (for the reference), this rank's on the device. */
  const uint64_t seed = 20261202;
  ep_ref_input_t *all = (ep_ref_input_t *)calloc((size_t)R, sizeof *all);
  for (int r = 0; r < R; r++)
    if (ep_ref_input_make(seed, r, o.T, o.H, o.K, o.E, o.route, &all[r]) != 0)
      return 1;
  ep_ref_input_t *in = &all[me];
  dev_in_t d;
  size_t xb = (size_t)o.T * o.H * 2, ib = (size_t)o.T * o.K * 4;
  size_t yb = (size_t)L * R * o.T * o.H * 2;
  CK(gin_mem_alloc(xb, (void **)&d.x));
  CK(gin_mem_alloc(xb, (void **)&d.out));
  CK(gin_mem_alloc(yb, (void **)&d.y));
  CK(gin_mem_alloc(ib, (void **)&d.idx));
  CK(gin_mem_alloc(ib, (void **)&d.w));
  CK(gin_mem_copy(d.x, in->x, xb));
  CK(gin_mem_copy(d.idx, in->topk_idx, ib));
  CK(gin_mem_copy(d.w, in->weights, ib));

  ep_ref_recv_t want;
  if (ep_ref_recv_alloc(L, R, o.T, o.H, o.fp8, &want) != 0) return 1;
  ep_ref_dispatch(all, R, me, &want);
  uint16_t *want_out = (uint16_t *)malloc(xb);
  ep_ref_combine(in, o.fp8, want_out);
  long routed = 0;
  for (int i = 0; i < o.T * o.K; i++)
    routed += in->topk_idx[i] >= 0;
  double dmsg = o.fp8 ? 16.0 + o.H + o.H / 128 * 4.0 : 2.0 * o.H;
  double dbytes = (double)routed * dmsg, cbytes = (double)routed * 2.0 * o.H;
  if (me == 0)
    printf("# gin-ep-bench, %s target, %d ranks, %d tokens x hidden %d, "
           "top-%d of %d experts, %s dispatch, %s routing, %d iterations "
           "(+%d warm-up)%s\n",
           perf_target_name(), R, o.T, o.H, o.K, o.E, o.fp8 ? "fp8" : "bf16",
           ep_route_name(o.route), o.iters, o.warmup,
           o.zero_copy ? "; gin's experts write into its combine buffer" : "");

  impl_t impls[2];
  int nimpl = 0;
  memset(impls, 0, sizeof impls);
  impls[nimpl].name = "gin";
  CK(gin_ep_create(comm, &cfg, &impls[nimpl].ep));
  impls[nimpl].y = d.y;
  if (o.zero_copy) CK(gin_ep_combine_buffer(impls[nimpl].ep, &impls[nimpl].y));
  nimpl++;
  if (o.baseline) {
    impls[nimpl].y = d.y;
    impls[nimpl].name = "host-baseline";
    if (ep_baseline_create(comm, &cfg, &impls[nimpl].base) != 0) return 1;
    nimpl++;
  }

  double res[2][4], pipe[8] = {0, 0, 0, 0, 0, 0, 0, 0}, iso[4] = {0, 0, 0, 0};
  int failed = 0;
  uint16_t *own_y = d.y;
  for (int i = 0; i < nimpl; i++) {
    d.y = impls[i].y;
    long bad = check(&impls[i], &d, &o, me, R, all, &want, want_out, comm);
    long total = sum_over_ranks(comm, R, bad);
    if (me == 0)
      printf("# %s: dispatch and combine %s the CPU reference on all %d ranks "
             "(dispatch exact, combine within |d| <= |ref|/128 + 1e-3)\n",
             impls[i].name, total ? "DIFFER FROM" : "match", R);
    if (total) failed = 1;
#if GIN_ARCH_CUDA
    if (impls[i].ep) {
      long g = graph_replay(impls[i].ep, &d, &o, R, &want, want_out, comm, 3);
      long gt = sum_over_ranks(comm, R, g);
      if (me == 0)
        printf("# gin: a dispatch + combine step captured in a CUDA graph and "
               "replayed 3 times %s\n",
               gt ? "DIFFERS from the reference" : "gives the same results");
      if (gt) failed = 1;
    }
#endif
    timing(&impls[i], &d, &o, comm, res[i]);
    if (impls[i].ep) {
      long pb = timing_pipelined(&impls[i], &d, &o, comm, want_out, pipe);
      long pt = sum_over_ranks(comm, R, pb);
      if (me == 0)
        printf("# gin: %d steps back to back without host synchronisation; "
               "the last step's output %s the reference\n",
               o.iters, pt ? "DIFFERS from" : "matches");
      if (pt) failed = 1;
      timing_isolated(&impls[i], &d, &o, comm, iso);
    }
  }
  d.y = own_y;
  /* The slowest rank's medians. */
  double mine[4] = {res[0][0], res[0][2], nimpl > 1 ? res[1][0] : 0,
                    nimpl > 1 ? res[1][2] : 0};
  double *every = (double *)calloc((size_t)R * 4, sizeof(double));
  CK(gin_comm_allgather(comm, mine, every, sizeof mine));
  double worst[4] = {0, 0, 0, 0};
  for (int r = 0; r < R; r++)
    for (int j = 0; j < 4; j++)
      if (every[r * 4 + j] > worst[j]) worst[j] = every[r * 4 + j];
  free(every);
  /* Device copy of the dispatch bytes, the floor, on this rank alone; then
   * every rank copying its own at once (a barrier, then enough copies
   * that the ranks' start skew is small against them): the memory's
   * floor when ranks share a GPU, total bytes over the slowest rank. */
  double copy_gbps = -1, copy_all_gbps = -1;
  {
    void *a = NULL, *b = NULL;
    size_t n = (size_t)dbytes;
    double us_all = -1;
    int have = n && gin_mem_alloc(n, &a) == GIN_SUCCESS &&
               gin_mem_alloc(n, &b) == GIN_SUCCESS;
    if (have) copy_gbps = (double)n / (perf_copy_us(b, a, n, 10) * 1e3);
    CK(gin_comm_barrier(comm)); /* every rank, with or without a copy */
    if (have) us_all = perf_copy_us(b, a, n, 200);
    if (a) gin_mem_free(a);
    if (b) gin_mem_free(b);
    /* {time, bytes} of every rank: ranks route different numbers of
     * tokens. */
    double mine2[2] = {us_all, (double)n};
    double *all = (double *)calloc((size_t)R * 2, sizeof(double));
    CK(gin_comm_allgather(comm, mine2, all, sizeof mine2));
    double slowest = 0, total = 0;
    for (int r = 0; r < R && slowest >= 0; r++) {
      if (all[2 * r] < 0 || all[2 * r] > slowest) slowest = all[2 * r];
      total += all[2 * r + 1];
    }
    if (slowest > 0) copy_all_gbps = total / (slowest * 1e3);
    free(all);
  }
  if (me == 0) {
    printf("%-14s %-9s %11s %11s %11s %10s\n", "impl", "op", "median_us",
           "p99_us", "slowest_us", "GB/s");
    for (int i = 0; i < nimpl; i++) {
      printf("%-14s %-9s %11.1f %11.1f %11.1f %10.2f\n", impls[i].name,
             "dispatch", res[i][0], res[i][1], worst[2 * i],
             dbytes / (res[i][0] * 1e3));
      printf("%-14s %-9s %11.1f %11.1f %11.1f %10.2f\n", impls[i].name,
             "combine", res[i][2], res[i][3], worst[2 * i + 1],
             cbytes / (res[i][2] * 1e3));
    }
    printf("%-14s %-9s %11.1f %11.1f %11s %10.2f\n", "gin-pipelined",
           "dispatch", pipe[0], pipe[1], "-", dbytes / (pipe[0] * 1e3));
    printf("%-14s %-9s %11.1f %11.1f %11s %10.2f\n", "gin-pipelined", "combine",
           pipe[2], pipe[3], "-", cbytes / (pipe[2] * 1e3));
    printf("# gin pipelined, medians per phase: dispatch send %.1f + "
           "receive %.1f us, combine send %.1f + receive %.1f us\n",
           pipe[4], pipe[5], pipe[6], pipe[7]);
    printf("# gin, each phase on its own (host sync and a barrier before "
           "it, launch included; on the direct path a receive's data is "
           "already there), rank 0 medians: dispatch send "
           "%.1f + receive %.1f us, combine send %.1f + receive %.1f us\n",
           iso[0], iso[1], iso[2], iso[3]);
    printf("# rank 0 sends %ld routed tokens: %.0f dispatch bytes, %.0f "
           "combine bytes; device copy of the dispatch bytes: %.1f GB/s\n",
           routed, dbytes, cbytes, copy_gbps);
    printf("# every rank copying its own dispatch bytes at once: %.1f GB/s "
           "in all (%.1f a rank)\n",
           copy_all_gbps, copy_all_gbps / R);
    if (nimpl > 1)
      printf("# host-baseline / gin (rank 0 medians, wall clock with a host "
             "synchronisation on both sides): dispatch %.2f x, combine "
             "%.2f x\n",
             res[1][0] / res[0][0], res[1][2] / res[0][2]);
    if (nimpl > 1)
      printf("# host-baseline (host-synchronised, as it must be) / gin "
             "pipelined (no host synchronisation, per-phase GPU time): "
             "dispatch %.2f x, combine %.2f x\n",
             res[1][0] / pipe[0], res[1][2] / pipe[2]);
    if (o.csv) {
      FILE *f = fopen(o.csv, "w");
      if (f) {
        fprintf(f, "target,ranks,tokens,hidden,topk,experts,fp8,impl,op,"
                   "median_us,p99_us,slowest_us,gbps,copy_gbps\n");
        for (int i = 0; i < nimpl; i++)
          for (int op = 0; op < 2; op++)
            fprintf(f, "%s,%d,%d,%d,%d,%d,%d,%s,%s,%.3f,%.3f,%.3f,%.3f,%.3f\n",
                    perf_target_name(), R, o.T, o.H, o.K, o.E, o.fp8,
                    impls[i].name, op ? "combine" : "dispatch", res[i][2 * op],
                    res[i][2 * op + 1], worst[2 * i + op],
                    (op ? cbytes : dbytes) / (res[i][2 * op] * 1e3), copy_gbps);
        for (int op = 0; op < 2; op++)
          fprintf(f,
                  "%s,%d,%d,%d,%d,%d,%d,gin-pipelined,%s,%.3f,%.3f,,%.3f,"
                  "%.3f\n",
                  perf_target_name(), R, o.T, o.H, o.K, o.E, o.fp8,
                  op ? "combine" : "dispatch", pipe[2 * op], pipe[2 * op + 1],
                  (op ? cbytes : dbytes) / (pipe[2 * op] * 1e3), copy_gbps);
        static const char *const phase[4] = {"dispatch_send", "dispatch_recv",
                                             "combine_send", "combine_recv"};
        for (int j = 0; j < 4; j++)
          fprintf(f, "%s,%d,%d,%d,%d,%d,%d,gin-isolated,%s,%.3f,,,,%.3f\n",
                  perf_target_name(), R, o.T, o.H, o.K, o.E, o.fp8, phase[j],
                  iso[j], copy_gbps);
        /* The all-ranks copy floor: total GB/s in gbps. */
        fprintf(f,
                "%s,%d,%d,%d,%d,%d,%d,copy-all-ranks,dispatch,,,,%.3f,%.3f\n",
                perf_target_name(), R, o.T, o.H, o.K, o.E, o.fp8, copy_all_gbps,
                copy_gbps);
        fclose(f);
      }
    }
  }
  CK(gin_comm_barrier(comm));
  if (o.baseline) ep_baseline_destroy(impls[1].base);
  CK(gin_ep_destroy(impls[0].ep));
  for (int r = 0; r < R; r++)
    ep_ref_input_free(&all[r]);
  free(all);
  ep_ref_recv_free(&want);
  free(want_out);
  gin_mem_free(d.x);
  gin_mem_free(d.out);
  gin_mem_free(d.y);
  gin_mem_free(d.idx);
  gin_mem_free(d.w);
  CK(gin_comm_destroy(comm));
  return failed;
}
