/*
 * gin EP driven as DeepEP's low-latency test drives it through
 * gin_comm.deep_ep, at DeepEP's shape by default (128 tokens, hidden 7168,
 * top-8, 8 experts a rank): two buffers of one shape taken in turn by the
 * dispatches (gin_comm.deep_ep's pair, as DeepEP's two buffers); every
 * other iteration two dispatches, the first of which is never combined
 * (two dispatches held; with hooks, both sends before either receive);
 * the last dispatch combined twice, the second time with the outputs
 * written into its combine buffer after
 * gin_ep_combine_fence (zero copy); phases issued together or split (the
 * receive hook) and bf16 or fp8 payloads, in turn. No barrier between
 * ranks: each rank checks its own results against the CPU reference
 * (ep_ref.h: dispatch exactly, combine within its tolerance) and goes on,
 * so the ranks drift apart as DeepEP's do; the verdicts are agreed at the
 * end. Launch with N ranks:
 *   ginrun -n N test_ep_deepep [-e EXPERTS] [-t TOKENS] [-H HIDDEN]
 *                              [-k TOPK] [-i ITERATIONS]
 * (defaults 8 x N, 128, 7168, 8, 8). Exit 0 pass, 1 fail, 77 skip (no GPU
 * on the cuda target).
 */
#include "ep/ep_ref.h"
#include "gin/ep_format.h"
#include "gin/gin_ep.h"
#include "test_common.h"

typedef struct deepep {
  gin_comm_t comm;
  int rank, nranks, E, L, T, H, K, iters;
  gin_ep_t ep[2];
  int turn; /* the buffer the next dispatch takes */
  uint16_t *d_x, *d_y, *d_out, *h_y, *h_out, *h_want;
  int32_t *d_idx;
  float *d_w;
  ep_ref_input_t *inputs;        /* [R] */
  ep_ref_recv_t got[2], want[2]; /* [bf16, fp8] */
  long bad;                      /* mismatches seen */
} deepep_t;

static int arg_int(int argc, char **argv, const char *flag, int dflt) {
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], flag)) return atoi(argv[i + 1]);
  return dflt;
}

/* Copies what a dispatch left in recv into got (rows of fp32 scales,
 * layout as pairs: what the reference holds). */
static void fetch(const gin_ep_recv_t *recv, ep_ref_recv_t *got) {
  TASSERT(recv->local_experts == got->local_experts &&
              recv->slots_per_expert == got->slots && recv->fp8 == got->fp8,
          "recv description: L %d slots %d fp8 %d", recv->local_experts,
          recv->slots_per_expert, recv->fp8);
  TCHECK(gin_mem_copy(got->x, recv->x, ep_ref_recv_x_bytes(got)));
  if (got->fp8)
    TCHECK(
        gin_mem_copy(got->scales, recv->scales, ep_ref_recv_scales_bytes(got)));
  TCHECK(
      gin_mem_copy(got->src_rank, recv->src_rank, ep_ref_recv_slot_bytes(got)));
  TCHECK(gin_mem_copy(got->src_token, recv->src_token,
                      ep_ref_recv_slot_bytes(got)));
  TCHECK(gin_mem_copy(got->count, recv->count,
                      (size_t)got->local_experts * sizeof(int32_t)));
  TCHECK(gin_mem_copy(got->layout, recv->layout,
                      (size_t)got->local_experts * got->ranks * 2 * 4));
}

/* One call in one or two phases; errors (the kernels' too) end the test. */
static void check_call(deepep_t *d, gin_result_t rc, const char *what, int it) {
  if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
  if (rc == GIN_SUCCESS) rc = gin_comm_get_async_error(d->comm);
  TASSERT(rc == GIN_SUCCESS, "rank %d: iteration %d: %s -> %s: %s", d->rank, it,
          what, gin_strerror(rc), gin_last_error());
}

/* One phase of a dispatch (GIN_EP_SEND, _RECV or _BOTH). */
static void dispatch(deepep_t *d, gin_ep_t ep, int fp8, int phases, int it,
                     gin_ep_recv_t *recv) {
  gin_ep_dispatch_opts_t o;
  memset(&o, 0, sizeof o);
  o.payload = fp8 ? GIN_EP_PAYLOAD_FP8 : GIN_EP_PAYLOAD_BF16;
  check_call(
      d, gin_ep_dispatch_ex(ep, d->d_x, d->d_idx, d->T, &o, recv, NULL, phases),
      phases == GIN_EP_RECV ? "dispatch receive" : "dispatch", it);
}

/* Combines ep's last dispatch (outputs h_y, written where zc says) and
 * checks it against h_want. */
static void combine(deepep_t *d, gin_ep_t ep, int zc, int split, int it) {
  uint16_t *y = d->d_y;
  size_t ybytes = (size_t)d->L * d->nranks * d->T * d->H * 2;
  if (zc) {
    /* Peers may still read the last combine's rows from there: the fence,
     * then (gin_mem_copy is ordered with no stream) its completion. */
    TCHECK(gin_ep_combine_fence(ep, NULL));
    TCHECK(gin_stream_synchronize(NULL));
    TCHECK(gin_ep_combine_buffer(ep, &y));
  }
  TCHECK(gin_mem_copy(y, d->h_y, ybytes));
  TCHECK(gin_mem_set(d->d_out, 0xff, (size_t)d->T * d->H * 2));
  gin_result_t rc = gin_ep_combine(ep, y, d->d_idx, d->d_w, d->T, d->d_out,
                                   NULL, split ? GIN_EP_SEND : GIN_EP_BOTH);
  if (rc == GIN_SUCCESS && split)
    rc = gin_ep_combine(ep, y, d->d_idx, d->d_w, d->T, d->d_out, NULL,
                        GIN_EP_RECV);
  check_call(d, rc, zc ? "second combine (zero copy)" : "combine", it);
  TCHECK(gin_mem_copy(d->h_out, d->d_out, (size_t)d->T * d->H * 2));
  char msg[400];
  long n = ep_ref_check_out(d->h_want, d->h_out, d->T, d->H, msg, sizeof msg);
  if (n) {
    printf("rank %d: iteration %d: %s: %ld mismatches: %s\n", d->rank, it,
           zc ? "second combine (zero copy)" : "combine", n, msg);
    d->bad += n;
  }
}

static void iteration(deepep_t *d, int it) {
  int R = d->nranks, me = d->rank, fp8 = it / 2 % 2, split = it % 2;
  /* Every rank's inputs from (iteration, rank): the reference needs all. */
  for (int r = 0; r < R; r++) {
    ep_ref_input_free(&d->inputs[r]);
    TASSERT(ep_ref_input_make(0x5eed0000u + (uint64_t)it, r, d->T, d->H, d->K,
                              d->E, EP_ROUTE_MASKED, &d->inputs[r]) == 0,
            "inputs");
  }
  const ep_ref_input_t *in = &d->inputs[me];
  TCHECK(gin_mem_copy(d->d_x, in->x, (size_t)d->T * d->H * 2));
  TCHECK(gin_mem_copy(d->d_idx, in->topk_idx, (size_t)d->T * d->K * 4));
  TCHECK(gin_mem_copy(d->d_w, in->weights, (size_t)d->T * d->K * 4));

  /* DeepEP dispatches twice every other time; only the last is used.
   * With hooks, both send phases go out before either receive (the order
   * DeepEP's hooks allow: send A, send B, receive A, receive B). */
  int nd = 1 + (it + 1) % 2;
  gin_ep_t eps[2];
  gin_ep_recv_t recv;
  for (int i = 0; i < nd; i++) {
    eps[i] = d->ep[d->turn];
    d->turn ^= 1;
    memset(&recv, 0, sizeof recv);
    dispatch(d, eps[i], fp8, split ? GIN_EP_SEND : GIN_EP_BOTH, it, &recv);
  }
  for (int i = 0; split && i < nd; i++) {
    memset(&recv, 0, sizeof recv);
    dispatch(d, eps[i], fp8, GIN_EP_RECV, it, &recv);
  }
  gin_ep_t ep = eps[nd - 1];
  fetch(&recv, &d->got[fp8]);
  ep_ref_dispatch(d->inputs, R, me, &d->want[fp8]);
  char msg[400];
  long n = ep_ref_check_recv(&d->want[fp8], &d->got[fp8], me, msg, sizeof msg);
  if (n) {
    printf("rank %d: iteration %d: dispatch: %ld mismatches: %s\n", me, it, n,
           msg);
    d->bad += n;
  }
  memset(d->h_y, 0, (size_t)d->L * R * d->T * d->H * 2);
  ep_ref_experts(&d->got[fp8], me, d->h_y);
  ep_ref_combine(in, fp8, d->h_want);
  combine(d, ep, 0, split, it);
  combine(d, ep, 1, split, it);
}

int main(int argc, char **argv) {
  deepep_t d;
  memset(&d, 0, sizeof d);
  test_require_device();
  d.comm = test_world_init(&d.rank, &d.nranks, 2);
  d.E = arg_int(argc, argv, "-e", 8 * d.nranks);
  d.T = arg_int(argc, argv, "-t", 128);
  d.H = arg_int(argc, argv, "-H", 7168);
  d.K = arg_int(argc, argv, "-k", 8);
  d.iters = arg_int(argc, argv, "-i", 8);
  TASSERT(d.E % d.nranks == 0 && d.K <= d.E && d.H % 128 == 0 && d.T > 0,
          "-e %d (a multiple of %d ranks, >= -k %d), -H %d (a multiple of "
          "128), -t %d",
          d.E, d.nranks, d.K, d.H, d.T);
  d.L = d.E / d.nranks;
  gin_ep_config_t cfg = {d.T, d.H, d.K, d.E, GIN_EP_FP8_ANY};
  for (int i = 0; i < 2; i++) {
    TCHECK(gin_ep_create(d.comm, &cfg, &d.ep[i]));
    TASSERT(ep_ref_recv_alloc(d.L, d.nranks, d.T, d.H, i, &d.got[i]) == 0 &&
                ep_ref_recv_alloc(d.L, d.nranks, d.T, d.H, i, &d.want[i]) == 0,
            "out of memory");
  }
  size_t rows = (size_t)d.L * d.nranks * d.T;
  TCHECK(gin_mem_alloc((size_t)d.T * d.H * 2, (void **)&d.d_x));
  TCHECK(gin_mem_alloc(rows * d.H * 2, (void **)&d.d_y));
  TCHECK(gin_mem_alloc((size_t)d.T * d.H * 2, (void **)&d.d_out));
  TCHECK(gin_mem_alloc((size_t)d.T * d.K * 4, (void **)&d.d_idx));
  TCHECK(gin_mem_alloc((size_t)d.T * d.K * 4, (void **)&d.d_w));
  d.h_y = (uint16_t *)calloc(rows * d.H, 2);
  d.h_out = (uint16_t *)calloc((size_t)d.T * d.H, 2);
  d.h_want = (uint16_t *)calloc((size_t)d.T * d.H, 2);
  d.inputs = (ep_ref_input_t *)calloc((size_t)d.nranks, sizeof *d.inputs);
  TASSERT(d.h_y && d.h_out && d.h_want && d.inputs, "out of memory");
  if (d.rank == 0)
    printf("test_ep_deepep: %d ranks, %d experts, %d tokens, hidden %d, "
           "top-%d, %d iterations\n",
           d.nranks, d.E, d.T, d.H, d.K, d.iters);

  for (int it = 0; it < d.iters; it++)
    iteration(&d, it);

  int mine = d.bad != 0, failed = 0;
  int *all = (int *)calloc((size_t)d.nranks, sizeof(int));
  TASSERT(all, "out of memory");
  TCHECK(gin_comm_allgather(d.comm, &mine, all, sizeof mine));
  for (int r = 0; r < d.nranks; r++)
    failed |= all[r];
  free(all);
  for (int i = 0; i < 2; i++) {
    TCHECK(gin_ep_destroy(d.ep[i]));
    ep_ref_recv_free(&d.got[i]);
    ep_ref_recv_free(&d.want[i]);
  }
  for (int r = 0; r < d.nranks; r++)
    ep_ref_input_free(&d.inputs[r]);
  free(d.inputs);
  free(d.h_y);
  free(d.h_out);
  free(d.h_want);
  TCHECK(gin_mem_free(d.d_x));
  TCHECK(gin_mem_free(d.d_y));
  TCHECK(gin_mem_free(d.d_out));
  TCHECK(gin_mem_free(d.d_idx));
  TCHECK(gin_mem_free(d.d_w));
  TCHECK(gin_comm_destroy(d.comm));
  if (d.rank == 0) printf("test_ep_deepep: %s\n", failed ? "FAILED" : "passed");
  return failed ? 1 : 0;
}
