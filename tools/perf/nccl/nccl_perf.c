/*
 * nccl_perf: NCCL's host-initiated send/recv measured the way gin-perf
 * measures gin's puts, so that the two tables join (the multi-GPU
 * comparison, scripts/multigpu-run.sh).
 *
 *   ginrun -n 2 nccl_perf [pingpong|bw|all] [gin-perf's options]
 *
 * Two ranks, one GPU each (gin's bootstrap picks the GPU from the local
 * rank). A single rank sends to itself: that checks the program, it
 * measures nothing between GPUs. gin's host bootstrap
 * (gin_comm_init_from_env, so ginrun, mpirun, srun or torchrun) carries
 * NCCL's unique id from rank 0 to the others; gin's communicator is
 * destroyed once NCCL is up, so nothing of gin runs while NCCL is timed.
 *
 * Tests, as a host-initiated user writes them (ncclSend / ncclRecv of
 * bytes, one call per message, on one stream of each rank):
 *   pingpong       rank 0 sends, rank 1 receives then sends back, rank 0
 *                  receives; all calls enqueued ahead, so the round trip
 *                  runs on the GPUs without the host in the loop. Per
 *                  round trip: CUDA events on rank 0's stream.
 *   pingpong_sync  the same, but each rank waits (cudaStreamQuery spin)
 *                  for every message before it issues the next call, as a
 *                  host that must see a message before answering. Per
 *                  round trip: host wall clock on rank 0.
 *   bw             rank 1 sends a "ready" message, rank 0 then sends up to
 *                  100 messages of `bytes` (each to its own offset, as many
 *                  as the buffer holds, like gin-perf's bw), and rank 1
 *                  acknowledges with 8 bytes. Time on rank 0 from the ready
 *                  message's arrival until the acknowledgement's (CUDA
 *                  events); median and max of --reps runs.
 * Rows: a terminal table and gin-perf's CSV columns (path "nccl", or
 * "nccl-self" for one rank; granularity "host"; floor columns empty).
 * Options, statistics and rows are gin-perf's, shared through
 * ../peer_common.h. Every wait is bounded (NP_WAIT_LIMIT_S); NCCL's errors
 * end the program.
 * Only this program links NCCL; the gin library never does.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "gin/gin.h"
#include "perf/peer_common.h"

#define NP_BUFFER_BUDGET ((size_t)1 << 30) /* as gin-perf's bw window */
#define NP_WAIT_LIMIT_S 300.0              /* bound on one stream wait */

#define NP_CUDA(call)                                                          \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "nccl_perf: %s: %s\n", #call, cudaGetErrorString(e_));   \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#define NP_NCCL(call)                                                          \
  do {                                                                         \
    ncclResult_t n_ = (call);                                                  \
    if (n_ != ncclSuccess) {                                                   \
      fprintf(stderr, "nccl_perf: %s: %s\n", #call, ncclGetErrorString(n_));   \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#define NP_GIN(call)                                                           \
  do {                                                                         \
    gin_result_t r_ = (call);                                                  \
    if (r_ != GIN_SUCCESS) {                                                   \
      fprintf(stderr, "nccl_perf: %s: %s: %s\n", #call, gin_strerror(r_),      \
              gin_last_error());                                               \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* What every test runs on. With one rank, peer == me. */
typedef struct np_env {
  peer_opts_t o;
  int me, nranks, peer;
  ncclComm_t comm;
  cudaStream_t stream;
  char *sbuf, *rbuf; /* device, buf_bytes each */
  size_t buf_bytes;
  peer_report_t rep; /* rank 0's table and CSV */
} np_env_t;

/* Waits until the stream is idle, spinning (a host-initiated user that
 * waits for a message does not sleep), bounded: a peer that died leaves
 * NCCL's kernel waiting, and this aborts the communicator and exits. */
static void np_wait(np_env_t *env, const char *what) {
  double t0 = peer_now_s();
  for (unsigned k = 0;; k++) {
    cudaError_t e = cudaStreamQuery(env->stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) NP_CUDA(e);
    if ((k & 1023) != 1023) continue;
    ncclResult_t async = ncclSuccess;
    NP_NCCL(ncclCommGetAsyncError(env->comm, &async));
    if (async != ncclSuccess && async != ncclInProgress) NP_NCCL(async);
    if (peer_now_s() - t0 > NP_WAIT_LIMIT_S) {
      fprintf(stderr, "nccl_perf: rank %d: %s did not finish in %.0f s\n",
              env->me, what, NP_WAIT_LIMIT_S);
      ncclCommAbort(env->comm);
      exit(1);
    }
  }
}

/* One message of `bytes` to the peer, or with one rank, to itself (a send
 * to oneself needs its receive in the same group). */
static void np_send(np_env_t *env, const char *src, char *self_dst,
                    size_t bytes) {
  if (env->nranks == 1) NP_NCCL(ncclGroupStart());
  NP_NCCL(ncclSend(src, bytes, ncclUint8, env->peer, env->comm, env->stream));
  if (env->nranks == 1) {
    NP_NCCL(
        ncclRecv(self_dst, bytes, ncclUint8, env->me, env->comm, env->stream));
    NP_NCCL(ncclGroupEnd());
  }
}

/* The matching receive; nothing to do alone (np_send received it). */
static void np_recv(np_env_t *env, char *dst, size_t bytes) {
  if (env->nranks == 1) return;
  NP_NCCL(ncclRecv(dst, bytes, ncclUint8, env->peer, env->comm, env->stream));
}

/* One round trip as rank 0 or 1 sees it. `sync`: wait for each message
 * before the next call. */
static void np_round_trip(np_env_t *env, size_t bytes, int sync) {
  if (env->me == 0) {
    np_send(env, env->sbuf, env->rbuf, bytes);
    if (sync) np_wait(env, "send");
    np_recv(env, env->rbuf, bytes);
    if (sync) np_wait(env, "receive");
  } else {
    np_recv(env, env->rbuf, bytes);
    if (sync) np_wait(env, "receive");
    np_send(env, env->sbuf, env->rbuf, bytes);
    if (sync) np_wait(env, "send");
  }
}

/* One result on rank 0: a table row and a CSV line (path "nccl", or
 * "nccl-self" for one rank; granularity "host"). Negative numbers are
 * left empty. */
static void np_emit(np_env_t *env, const char *test, size_t bytes, double med,
                    double p99, double gbps) {
  double v[] = {med, p99, gbps, -1};
  if (env->me == 0) peer_emit(&env->rep, test, "host", bytes, v);
}

/* Round trips at one size: per-iteration us on rank 0, events (stream
 * order, sync == 0) or wall clock (sync == 1); median and p99. */
static void np_pingpong_size(np_env_t *env, size_t bytes, int sync, double *med,
                             double *p99) {
  int n = env->o.iters, w = env->o.warmup;
  double *t = (double *)malloc(sizeof(double) * (size_t)n);
  cudaEvent_t *ev = (cudaEvent_t *)calloc((size_t)n + 1, sizeof *ev);
  if (!t || !ev) exit(1);
  for (int i = 0; i <= n; i++)
    NP_CUDA(cudaEventCreate(&ev[i]));
  for (int i = 0; i < w; i++)
    np_round_trip(env, bytes, sync);
  np_wait(env, "warm-up");
  for (int i = 0; i < n; i++) {
    double t0 = peer_now_s();
    NP_CUDA(cudaEventRecord(ev[i], env->stream));
    np_round_trip(env, bytes, sync);
    t[i] = (peer_now_s() - t0) * 1e6;
  }
  NP_CUDA(cudaEventRecord(ev[n], env->stream));
  np_wait(env, "pingpong");
  for (int i = 0; i < n && !sync; i++) {
    float ms = 0;
    NP_CUDA(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
    t[i] = (double)ms * 1e3;
  }
  peer_stats(t, n, 0.99, med, p99);
  for (int i = 0; i <= n; i++)
    cudaEventDestroy(ev[i]);
  free(ev);
  free(t);
}

static void np_pingpong(np_env_t *env, int sync) {
  const peer_opts_t *o = &env->o;
  for (size_t bytes = o->b; bytes <= o->e && bytes <= env->buf_bytes;
       bytes = peer_next_size(bytes, o->f)) {
    double med, p99;
    np_pingpong_size(env, bytes, sync, &med, &p99);
    np_emit(env, sync ? "pingpong_sync" : "pingpong", bytes, med, p99, -1);
  }
}

/* One timed bw run: `count` messages of `bytes` from rank 0 to rank 1
 * between a ready message and an acknowledgement. Rank 0's us. */
static double np_bw_once(np_env_t *env, size_t bytes, int count, cudaEvent_t a,
                         cudaEvent_t b) {
  char *flag_s = env->sbuf, *flag_r = env->rbuf; /* 8 bytes, first line */
  if (env->me == 1) {
    np_send(env, flag_s, flag_r, 8);
    for (int i = 0; i < count; i++)
      np_recv(env, env->rbuf + (size_t)i * bytes, bytes);
    np_send(env, flag_s, flag_r, 8);
    np_wait(env, "bw");
    return 0;
  }
  np_recv(env, flag_r, 8);
  NP_CUDA(cudaEventRecord(a, env->stream));
  for (int i = 0; i < count; i++)
    np_send(env, env->sbuf + (size_t)i * bytes, env->rbuf + (size_t)i * bytes,
            bytes);
  np_recv(env, flag_r, 8);
  NP_CUDA(cudaEventRecord(b, env->stream));
  np_wait(env, "bw");
  float ms = 0;
  NP_CUDA(cudaEventElapsedTime(&ms, a, b));
  return (double)ms * 1e3;
}

static void np_bw(np_env_t *env) {
  const peer_opts_t *o = &env->o;
  int most = PEER_PUTS(o->iters);
  cudaEvent_t a, b;
  NP_CUDA(cudaEventCreate(&a));
  NP_CUDA(cudaEventCreate(&b));
  double t[64];
  int reps = o->reps < 64 ? o->reps : 64;
  if (env->me == 0)
    printf("# bw: up to %d messages per run, each to its own offset (as "
           "many as %zu bytes hold), median of %d\n",
           most, env->buf_bytes, reps);
  for (size_t bytes = o->b; bytes <= o->e && bytes <= env->buf_bytes;
       bytes = peer_next_size(bytes, o->f)) {
    size_t fit = env->buf_bytes / bytes;
    int count = fit < (size_t)most ? (int)fit : most;
    np_bw_once(env, bytes, count, a, b); /* warm-up */
    for (int k = 0; k < reps; k++)
      t[k] = np_bw_once(env, bytes, count, a, b);
    double med, max;
    peer_stats(t, reps, 1.0, &med, &max);
    np_emit(env, "bw", bytes, med, max,
            med > 0 ? (double)bytes * count / (med * 1e3) : -1);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
}

static void np_usage(FILE *f) {
  fprintf(f, "usage: ginrun -n 2 nccl_perf [pingpong|bw|all] [options]\n"
             "  NCCL's host-initiated ncclSend/ncclRecv, gin-perf's columns:\n"
             "  pingpong  round trip per size: stream-ordered (pingpong) and\n"
             "            with the host waiting for each message "
             "(pingpong_sync)\n"
             "  bw        one-way bandwidth, up to 100 messages per run\n"
             "  all       pingpong and bw (the default)\n"
             "  -b MIN -e MAX -f FACTOR   sizes, default 8 .. 1 MiB x 2\n"
             "  -n ITERS -w WARMUP        default 1000 and 100\n"
             "  --reps R                  timed runs of bw (5)\n"
             "  -g G, -c N, --blocks B, --threads T, --launches L   accepted\n"
             "                            for gin-perf's\n"
             "                            command lines, unused\n"
             "  --csv FILE                gin-perf's CSV columns\n");
}

/* gin's bootstrap hands rank 0's NCCL unique id to every rank; NCCL then
 * starts on the GPU gin selected, and gin's communicator goes away. */
static void np_init(np_env_t *env) {
  gin_comm_t gc;
  NP_GIN(gin_comm_init_from_env(&gc, NULL));
  NP_GIN(gin_comm_rank(gc, &env->me));
  NP_GIN(gin_comm_size(gc, &env->nranks));
  if (env->nranks > 2) {
    if (env->me == 0) fprintf(stderr, "nccl_perf: run with 1 or 2 ranks\n");
    exit(2);
  }
  ncclUniqueId id, *ids = (ncclUniqueId *)calloc(2, sizeof id);
  memset(&id, 0, sizeof id);
  if (!ids) exit(1);
  if (env->me == 0) NP_NCCL(ncclGetUniqueId(&id));
  NP_GIN(gin_comm_allgather(gc, &id, ids, sizeof id));
  NP_NCCL(ncclCommInitRank(&env->comm, env->nranks, ids[0], env->me));
  free(ids);
  NP_GIN(gin_comm_destroy(gc));
  env->peer = env->nranks == 1 ? 0 : 1 - env->me;
}

int main(int argc, char **argv) {
  np_env_t env;
  memset(&env, 0, sizeof env);
  static const char *const tests[] = {"pingpong", "bw", "all", NULL};
  peer_opts_parse(argc, argv, "nccl_perf", tests, PEER_OPTS_GRID_UNUSED,
                  np_usage, &env.o);
  peer_opts_t *o = &env.o;
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
    printf("SKIP: no CUDA device\n");
    return 77;
  }
  /* NVLink multicast stays off (it is for collectives; p2p never needs
   * it), unless the environment says otherwise. */
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  np_init(&env);

  env.buf_bytes = peer_bw_bytes(1, o->e, NP_BUFFER_BUDGET);
  NP_CUDA(cudaMalloc((void **)&env.sbuf, env.buf_bytes));
  NP_CUDA(cudaMalloc((void **)&env.rbuf, env.buf_bytes));
  NP_CUDA(cudaMemset(env.sbuf, 1, env.buf_bytes));
  NP_CUDA(cudaMemset(env.rbuf, 0, env.buf_bytes));
  NP_CUDA(cudaStreamCreateWithFlags(&env.stream, cudaStreamNonBlocking));
  NP_CUDA(cudaDeviceSynchronize());
  env.rep.path = env.nranks == 1 ? "nccl-self" : "nccl";
  env.rep.test_w = 14;
  env.rep.gran_w = 6;
  env.rep.bytes_w = 10;
  env.rep.nv = 3;
  if (env.me == 0 && o->csv) env.rep.csv = peer_csv_open("nccl_perf", o->csv);
  int version = 0, dev = 0;
  NP_NCCL(ncclGetVersion(&version));
  NP_CUDA(cudaGetDevice(&dev));
  if (env.me == 0)
    printf("# nccl_perf, NCCL %d.%d.%d (headers %d.%d.%d), %d rank%s%s, GPU "
           "%d, %d iterations (+%d warm-up)\n",
           version / 10000, version / 100 % 100, version % 100, NCCL_MAJOR,
           NCCL_MINOR, NCCL_PATCH, env.nranks, env.nranks == 1 ? "" : "s",
           env.nranks == 1 ? " (sends to itself: a check, not a measurement)"
                           : "",
           dev, o->iters, o->warmup);

  int all = !strcmp(o->test, "all");
  if (all || !strcmp(o->test, "pingpong")) {
    np_pingpong(&env, 0);
    np_pingpong(&env, 1);
  }
  if (all || !strcmp(o->test, "bw")) np_bw(&env);

  if (env.rep.csv) fclose(env.rep.csv);
  np_wait(&env, "the last operation");
  NP_NCCL(ncclCommDestroy(env.comm));
  NP_CUDA(cudaStreamDestroy(env.stream));
  NP_CUDA(cudaFree(env.sbuf));
  NP_CUDA(cudaFree(env.rbuf));
  return 0;
}
