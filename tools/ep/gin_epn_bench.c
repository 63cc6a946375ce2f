/*
 * gin-epn-bench: EP normal-mode (gin_ep_normal.h) dispatch/combine
 * benchmark, DeepEP intranode-style.
 *
 *   ginrun -n R gin_epn_bench_{cuda,host} [-t T1,T2,...] [-H HIDDEN]
 *          [-k TOPK] [-e EXPERTS] [--fp8] [-c CHANNELS] [-s RING_ROWS]
 *          [--chunk ROWS] [-n ITERS] [-w WARMUP] [--csv FILE]
 *
 * Defaults are DeepEP's intranode test: hidden 7168, top-8, 256 experts,
 * bf16 rows, 12 channels (its 24 SMs), rings of 256 rows, chunks of 6,
 * and 512 to 8192 tokens a rank. For each token count it first checks a
 * dispatch (rows, source indices, local top-k) and a combine against a
 * reference made from every rank's inputs, then times, with every rank
 * starting each call after a barrier and ending it at its stream's end:
 *   notify + host read + dispatch (what DeepEP's dispatch without a
 *     handle does), a cached dispatch (with the handle), a combine;
 *   the floor: every rank at once copying its received rows' bytes in
 *     device memory (the least a dispatch moves), in the same run.
 * Bandwidth is DeepEP's: the bytes of the rows each rank receives
 * (dispatch) or sends back (combine), over the rank's time. Medians over
 * the ranks' medians; ratio = floor / gin (1: at the floor).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep/bench_util.h"
#include "ep/ep_ref.h"
#include "gin/gin.h"
#include "gin/gin_ep.h"
#include "gin/gin_ep_normal.h"
#include "perf/perf_target.h"

#define CK(call) BENCH_CK("gin-epn-bench", call)

typedef struct opts {
  int tokens[16], ntokens, H, K, E, fp8, C, S, chunk, iters, warmup;
  const char *csv;
} opts_t;

static void usage(FILE *f) {
  fprintf(f, "usage: ginrun -n R gin_epn_bench_{cuda,host} [-t T1,T2,...] "
             "[-H HIDDEN] [-k TOPK] [-e EXPERTS] [--fp8] [-c CHANNELS] "
             "[-s RING_ROWS] [--chunk ROWS] [-n ITERS] [-w WARMUP] "
             "[--csv FILE]\n");
}

static void parse(int argc, char **argv, opts_t *o) {
  memset(o, 0, sizeof *o);
  const int dflt[] = {512, 1024, 2048, 4096, 8192};
  o->ntokens = 5;
  memcpy(o->tokens, dflt, sizeof dflt);
  o->H = 7168;
  o->K = 8;
  o->E = 256;
  o->C = 12;
  o->S = 256;
  o->chunk = 6;
  o->iters = 10;
  o->warmup = 2;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--fp8")) {
      o->fp8 = 1;
      continue;
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      exit(0);
    }
    if (!v) {
      usage(stderr);
      exit(2);
    }
    i++;
    if (!strcmp(a, "-t")) {
      o->ntokens = 0;
      for (const char *p = v; *p && o->ntokens < 16;) {
        o->tokens[o->ntokens++] = atoi(p);
        p = strchr(p, ',');
        if (!p) break;
        p++;
      }
    } else if (!strcmp(a, "-H")) {
      o->H = atoi(v);
    } else if (!strcmp(a, "-k")) {
      o->K = atoi(v);
    } else if (!strcmp(a, "-e")) {
      o->E = atoi(v);
    } else if (!strcmp(a, "-c")) {
      o->C = atoi(v);
    } else if (!strcmp(a, "-s")) {
      o->S = atoi(v);
    } else if (!strcmp(a, "--chunk")) {
      o->chunk = atoi(v);
    } else if (!strcmp(a, "-n")) {
      o->iters = atoi(v);
    } else if (!strcmp(a, "-w")) {
      o->warmup = atoi(v);
    } else if (!strcmp(a, "--csv")) {
      o->csv = v;
    } else {
      usage(stderr);
      exit(2);
    }
  }
  for (int i = 0; i < o->ntokens; i++)
    if (o->tokens[i] < 1) {
      fprintf(stderr, "gin-epn-bench: -t: token counts must be >= 1\n");
      exit(2);
    }
  if (o->iters < 1 || o->warmup < 0 || o->H % 128 || o->K < 1 || o->K > o->E) {
    fprintf(stderr, "gin-epn-bench: -n >= 1, -w >= 0, -H a multiple of "
                    "128, 1 <= -k <= -e\n");
    exit(2);
  }
}

static void *dev(size_t n) {
  void *p = NULL;
  CK(gin_mem_alloc(n ? n : 16, &p));
  return p;
}

/* Whether token t of in goes to rank r (L experts a rank). */
static int goes(const ep_ref_input_t *in, int t, int r, int L) {
  for (int k = 0; k < in->topk; k++) {
    int e = in->topk_idx[(size_t)t * in->topk + k];
    if (e >= 0 && e / L == r) return 1;
  }
  return 0;
}

/* Everything one token count needs, on the device. */
typedef struct run {
  int T, N, R, me, L, G;
  size_t xb; /* bytes a received row's payload */
  void *x, *scales, *rx, *rs, *y, *out, *floor_src, *floor_dst;
  int32_t *idx, *pr, *pe, *rc;
  uint8_t *in_rank;
  float *w, *rw, *ow;
  int64_t *ri;
  gin_epn_handle_t h;
} run_t;

/* One timed call on every rank: barrier, the call, the stream's end.
 * kind 0 notify + host read + dispatch, 1 cached dispatch, 2 combine, 3
 * the floor copy. */
static double timed(gin_comm_t comm, gin_epn_t ep, run_t *u, const opts_t *o,
                    int kind) {
  CK(gin_comm_barrier(comm));
  double t0 = perf_now_us();
  gin_epn_dispatch_args_t da;
  memset(&da, 0, sizeof da);
  da.x = u->x;
  da.fp8 = o->fp8;
  da.scales = o->fp8 ? u->scales : NULL;
  da.scale_stride_t = u->G;
  da.scale_stride_g = 1;
  da.chunk = o->chunk;
  da.recv_x = u->rx;
  da.recv_scales = o->fp8 ? u->rs : NULL;
  if (kind == 0) {
    CK(gin_epn_notify(ep, u->in_rank, u->pe, u->T, o->C, &u->h, u->rc, NULL));
    CK(gin_stream_synchronize(0));
    int32_t n = 0;
    CK(gin_mem_copy(&n, u->rc, 4));
    if (n != u->N) {
      fprintf(stderr,
              "gin-epn-bench: rank %d: %d rows announced, %d "
              "expected\n",
              u->me, n, u->N);
      exit(1);
    }
    da.topk_idx = u->idx;
    da.topk_weights = u->w;
    da.num_topk = o->K;
    da.recv_topk_idx = u->ri;
    da.recv_topk_weights = u->rw;
    CK(gin_epn_dispatch(ep, &da, &u->h, NULL));
  } else if (kind == 1) {
    CK(gin_epn_dispatch(ep, &da, &u->h, NULL));
  } else if (kind == 2) {
    gin_epn_combine_args_t ca;
    memset(&ca, 0, sizeof ca);
    ca.x = (const uint16_t *)u->y;
    ca.chunk = o->chunk;
    ca.out = (uint16_t *)u->out;
    CK(gin_epn_combine(ep, &ca, &u->h, NULL));
  } else {
    CK(gin_mem_copy(u->floor_dst, u->floor_src, (size_t)u->N * u->xb));
  }
  CK(gin_stream_synchronize(0));
  return perf_now_us() - t0;
}

/* Checks this rank's last dispatch (rows, sources, local top-k) and a
 * combine of y = the received bf16 rows (out[t] = x[t] x ranks it went
 * to, exact in fp32 for these inputs' magnitudes up to rounding).
 * Returns the mismatches. */
static long check(gin_epn_t ep, run_t *u, const opts_t *o, ep_ref_input_t *in) {
  int R = u->R, me = u->me, H = o->H, K = o->K;
  long bad = 0;
  uint16_t *rx = (uint16_t *)malloc((size_t)u->N * H * 2 + 2);
  int32_t *si = (int32_t *)malloc((size_t)u->N * 4 + 4);
  int64_t *ri = (int64_t *)malloc((size_t)u->N * K * 8 + 8);
  if (!rx || !si || !ri) exit(1);
  if (!o->fp8) CK(gin_mem_copy(rx, u->rx, (size_t)u->N * H * 2));
  CK(gin_mem_copy(si, u->h.recv_src_idx, (size_t)u->N * 4));
  CK(gin_mem_copy(ri, u->ri, (size_t)u->N * K * 8));
  int row = 0;
  for (int s = 0; s < R; s++)
    for (int t = 0; t < in[s].num_tokens; t++) {
      if (!goes(&in[s], t, me, u->L)) continue;
      bad += si[row] != t;
      if (!o->fp8)
        bad += memcmp(rx + (size_t)row * H, in[s].x + (size_t)t * H,
                      (size_t)H * 2) != 0;
      for (int k = 0; k < K; k++) {
        int e = in[s].topk_idx[(size_t)t * K + k];
        bad += ri[(size_t)row * K + k] !=
               (e >= 0 && e / u->L == me ? e - me * u->L : -1);
      }
      row++;
    }
  /* Combine the rows as they came (bf16 input) and check the sums. */
  if (!o->fp8) {
    CK(gin_mem_copy(u->y, u->rx, (size_t)u->N * H * 2));
    gin_epn_combine_args_t ca;
    memset(&ca, 0, sizeof ca);
    ca.x = (const uint16_t *)u->y;
    ca.chunk = o->chunk;
    ca.out = (uint16_t *)u->out;
    CK(gin_epn_combine(ep, &ca, &u->h, NULL));
    CK(gin_stream_synchronize(0));
    uint16_t *out = (uint16_t *)malloc((size_t)u->T * H * 2);
    if (!out) exit(1);
    CK(gin_mem_copy(out, u->out, (size_t)u->T * H * 2));
    for (int t = 0; t < u->T; t++) {
      int n = 0;
      for (int r = 0; r < R; r++)
        n += goes(&in[me], t, r, u->L);
      for (int c = 0; c < H; c += 61) {
        float want = gin_bf16_to_float(gin_float_to_bf16(
            gin_bf16_to_float(in[me].x[(size_t)t * H + c]) * (float)n));
        float got = gin_bf16_to_float(out[(size_t)t * H + c]);
        float tol = (want < 0 ? -want : want) / 64 + 1e-3f;
        bad += got - want > tol || want - got > tol;
      }
    }
    free(out);
  }
  free(rx);
  free(si);
  free(ri);
  return bad;
}

int main(int argc, char **argv) {
  opts_t o;
  parse(argc, argv, &o);
  gin_comm_t comm;
  int me, R;
  CK(gin_comm_init_from_env(&comm, NULL));
  CK(gin_comm_rank(comm, &me));
  CK(gin_comm_size(comm, &R));
  if (o.E % R) {
    fprintf(stderr, "gin-epn-bench: -e %d is not a multiple of %d ranks\n", o.E,
            R);
    return 2;
  }
  gin_epn_config_t cfg = {o.H, o.K, o.E, o.C, o.S};
  gin_epn_t ep;
  CK(gin_epn_create(comm, &cfg, &ep));
  FILE *csv = NULL;
  if (me == 0) {
    printf("gin-epn-bench: %d ranks, hidden %d, top-%d of %d experts, %s "
           "rows, %d channels, rings of %d rows, chunks of %d; %d "
           "iterations (median), %d warm-up\n",
           R, o.H, o.K, o.E, o.fp8 ? "fp8" : "bf16", o.C, o.S, o.chunk, o.iters,
           o.warmup);
    printf("%6s %7s | %9s %9s %7s %6s | %9s %7s %6s | %9s %7s | %s\n", "tokens",
           "rows", "disp us", "cached us", "GB/s", "ratio", "combine", "GB/s",
           "ratio", "floor us", "GB/s", "check");
    if (o.csv && !(csv = fopen(o.csv, "w"))) {
      fprintf(stderr, "gin-epn-bench: cannot write %s\n", o.csv);
      return 1;
    }
    if (csv)
      fprintf(csv, "ranks,tokens,rows,dispatch_us,cached_us,dispatch_gbps,"
                   "combine_us,combine_gbps,floor_us,floor_gbps,"
                   "floor_ratio_dispatch,floor_ratio_combine,mismatches\n");
  }
  int L = o.E / R, G = o.H / 128, failed = 0;
  for (int ti = 0; ti < o.ntokens; ti++) {
    run_t u;
    memset(&u, 0, sizeof u);
    u.T = o.tokens[ti];
    u.R = R;
    u.me = me;
    u.L = L;
    u.G = G;
    u.xb = o.fp8 ? (size_t)o.H + (size_t)G * 4 : (size_t)o.H * 2;
    ep_ref_input_t *in = (ep_ref_input_t *)calloc((size_t)R, sizeof *in);
    if (!in) return 1;
    for (int r = 0; r < R; r++)
      if (ep_ref_input_make(42 + (uint64_t)ti, r, u.T, o.H, o.K, o.E,
                            EP_ROUTE_RANDOM, &in[r])) {
        fprintf(stderr, "gin-epn-bench: inputs\n");
        return 1;
      }
    for (int s = 0; s < R; s++)
      for (int t = 0; t < u.T; t++)
        u.N += goes(&in[s], t, me, L);
    size_t T = (size_t)u.T, N = (size_t)u.N, H = (size_t)o.H;
    u.x = dev(T * H * 2);
    CK(gin_mem_copy(u.x, in[me].x, T * H * 2));
    if (o.fp8) { /* any bytes do: dispatch moves them as they are */
      u.scales = dev(T * G * 4);
      CK(gin_mem_set(u.scales, 0x3c, T * G * 4));
    }
    u.idx = (int32_t *)dev(T * o.K * 4);
    CK(gin_mem_copy(u.idx, in[me].topk_idx, T * o.K * 4));
    u.w = (float *)dev(T * o.K * 4);
    CK(gin_mem_copy(u.w, in[me].weights, T * o.K * 4));
    u.pr = (int32_t *)dev((size_t)R * 4);
    u.pe = (int32_t *)dev((size_t)o.E * 4);
    u.in_rank = (uint8_t *)dev(T * R);
    CK(gin_epn_layout(ep, u.idx, 0, u.T, o.K, u.pr, u.pe, u.in_rank, NULL));
    u.h.send_head = (int32_t *)dev(T * R * 4);
    u.h.chan_prefix = (int32_t *)dev((size_t)R * o.C * 4);
    u.h.rank_prefix = (int32_t *)dev((size_t)R * 4);
    u.h.recv_chan_prefix = (int32_t *)dev((size_t)R * o.C * 4);
    u.h.recv_src_idx = (int32_t *)dev(N * 4);
    u.h.capacity = u.N;
    u.rc = (int32_t *)dev((size_t)(1 + L) * 4);
    u.rx = dev(N * H * 2);
    u.rs = dev(N * G * 4);
    u.ri = (int64_t *)dev(N * o.K * 8);
    u.rw = (float *)dev(N * o.K * 4);
    u.y = dev(N * H * 2);
    u.out = dev(T * H * 2);
    u.floor_src = dev(N * u.xb);
    u.floor_dst = dev(N * u.xb);
    double *v[4];
    for (int k = 0; k < 4; k++)
      if (!(v[k] = (double *)malloc(sizeof(double) * (size_t)o.iters)))
        return 1;
    timed(comm, ep, &u, &o, 0);
    long bad = check(ep, &u, &o, in);
    for (int i = 0; i < o.warmup + o.iters; i++)
      for (int k = 0; k < 4; k++) {
        double t = timed(comm, ep, &u, &o, k);
        if (i >= o.warmup) v[k][i - o.warmup] = t;
      }
    CK(gin_comm_get_async_error(comm));
    /* Every rank's medians, and the mismatches, to rank 0. */
    double mine[5], *all = (double *)calloc((size_t)R * 5, sizeof(double));
    if (!all) return 1;
    for (int k = 0; k < 4; k++)
      mine[k] = bench_median(v[k], o.iters);
    mine[4] = (double)bad;
    CK(gin_comm_allgather(comm, mine, all, sizeof mine));
    if (me == 0) {
      double m[4], tot_bad = 0, rows = 0,
                   *col = (double *)malloc(sizeof(double) * R);
      if (!col) return 1;
      for (int k = 0; k < 4; k++) {
        for (int r = 0; r < R; r++)
          col[r] = all[(size_t)r * 5 + k];
        m[k] = bench_median(col, R);
      }
      for (int r = 0; r < R; r++)
        tot_bad += all[(size_t)r * 5 + 4];
      free(col);
      rows = (double)u.N; /* rank 0's; DeepEP reports per rank */
      double db = rows * (double)u.xb, cb = rows * (double)H * 2;
      printf("%6d %7.0f | %9.1f %9.1f %7.1f %6.2f | %9.1f %7.1f %6.2f | "
             "%9.1f %7.1f | %s\n",
             u.T, rows, m[0], m[1], db / m[1] / 1e3, m[3] / m[1], m[2],
             cb / m[2] / 1e3, m[3] / m[2], m[3], db / m[3] / 1e3,
             tot_bad ? "FAILED" : "ok");
      if (csv)
        fprintf(csv,
                "%d,%d,%.0f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.3f,%.3f,"
                "%.0f\n",
                u.T, R, rows, m[0], m[1], db / m[1] / 1e3, m[2],
                cb / m[2] / 1e3, m[3], db / m[3] / 1e3, m[3] / m[1],
                m[3] / m[2], tot_bad);
      failed |= tot_bad != 0;
    }
    free(all);
    for (int k = 0; k < 4; k++)
      free(v[k]);
    void *ptrs[] = {u.x,
                    u.scales,
                    u.idx,
                    u.w,
                    u.pr,
                    u.pe,
                    u.in_rank,
                    u.h.send_head,
                    u.h.chan_prefix,
                    u.h.rank_prefix,
                    u.h.recv_chan_prefix,
                    u.h.recv_src_idx,
                    u.rc,
                    u.rx,
                    u.rs,
                    u.ri,
                    u.rw,
                    u.y,
                    u.out,
                    u.floor_src,
                    u.floor_dst};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
      if (ptrs[i]) CK(gin_mem_free(ptrs[i]));
    for (int r = 0; r < R; r++)
      ep_ref_input_free(&in[r]);
    free(in);
  }
  if (csv) fclose(csv);
  CK(gin_epn_destroy(ep));
  CK(gin_comm_destroy(comm));
  return failed; /* rank 0's verdict over every rank's checks */
}
