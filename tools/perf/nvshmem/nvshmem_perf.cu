/*
 * nvshmem_perf: gin-perf's put+signal ping-pong, put bandwidth and message
 * rate written with NVSHMEM's own device calls, so that gin and NVSHMEM are
 * measured the same way on the same GPU in the same run
 * (scripts/nvshmem-compare.sh).
 *
 *   ginrun -n 2 nvshmem_perf [pingpong|bw|rate|all] [gin-perf's options]
 *
 * Two PEs, normally on one GPU under MPS. gin's host bootstrap
 * (gin_comm_init_from_env, so ginrun, mpirun, srun or torchrun) carries
 * NVSHMEM's unique id from PE 0 to PE 1; gin's communicator is destroyed
 * right after NVSHMEM is up, so nothing of gin runs while NVSHMEM is timed.
 *
 * The method is gin-perf's (tools/perf/lat.c, bw.c, report.c), so rows
 * join: ping-pong times are per-iteration clock64 cycles on PE 0,
 * calibrated against %globaltimer over the whole loop, median and p99; bw
 * and rate are the median (and max) of --reps runs, each timed by block 0
 * of PE 0 from its start until the receiver acknowledged; the data area is
 * sized as gin-perf sizes its window, so every size has the same put count;
 * the CSV columns are gin-perf's (path "nvshmem", floor columns empty).
 * Options, statistics and rows come from ../peer_common.h, shared with
 * gin-perf and nccl_perf.
 * Only this program needs NVSHMEM; the gin library never does.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include "gin/gin.h"
#include "perf/peer_common.h"

#define NVP_BW_BUDGET ((size_t)1 << 30) /* as perf_bw_budget() on cuda */
#define NVP_KERNEL_LIMIT_S 300          /* host bound on one kernel */

enum { SIG_PP = 0, SIG_DATA, SIG_ACK, SIG_CHK }; /* symmetric signal words */

#define NVP_CUDA(call)                                                         \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "nvshmem_perf: %s: %s\n", #call,                         \
              cudaGetErrorString(e_));                                         \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#define NVP_GIN(call)                                                          \
  do {                                                                         \
    gin_result_t r_ = (call);                                                  \
    if (r_ != GIN_SUCCESS) {                                                   \
      fprintf(stderr, "nvshmem_perf: %s: %s: %s\n", #call, gin_strerror(r_),   \
              gin_last_error());                                               \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* What every test runs on. data and sig are symmetric (nvshmem_malloc);
 * sig_base counts what this PE's signals received so far. */
typedef struct nvp_env {
  peer_opts_t o;
  int me;
  char *data;
  size_t data_bytes;
  uint64_t *sig;
  uint64_t sig_base[4];
  uint64_t *samples; /* device: iters + 2 words */
  cudaStream_t stream;
  peer_report_t rep; /* PE 0's table and CSV */
} nvp_env_t;

/* ------------------------------------------------------------ device */

__device__ static uint64_t nvp_time_ns(void) {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ static void nvp_gran_sync(int gran) {
  if (gran == PEER_GRAN_WARP)
    __syncwarp();
  else if (gran == PEER_GRAN_BLOCK)
    __syncthreads();
}

typedef struct nvp_lat_args {
  char *data;    /* payload: the same offset on both PEs, as gin-perf's */
  uint64_t *sig; /* SIG_PP */
  size_t bytes;
  int iters, warmup, gran, me;
  uint64_t base;     /* SIG_PP before this run */
  uint64_t *samples; /* [iters] cycles, then total ns, total cycles */
} nvp_lat_args_t;

/* Put+signal ping-pong, one coop (1, 32 or 512 threads) per PE: PE 1
 * waits then answers, PE 0 sends then waits, as lat_loop in lat.c. Every
 * thread of the coop waits, then the coop syncs (gin_signal_wait). gran
 * is a constant in each of k_pingpong's three loops, as the coop is in
 * gin-perf's: both harnesses run one loop per issuer. */
__device__ static __forceinline__ void pp_loop(const nvp_lat_args_t *a,
                                               int gran) {
  int peer = 1 - a->me, lead = threadIdx.x == 0;
  uint64_t t_start = 0, c_start = 0;
  for (int i = 0; i < a->warmup + a->iters; i++) {
    uint64_t want = a->base + (uint64_t)i + 1;
    if (i == a->warmup) {
      t_start = nvp_time_ns();
      c_start = (uint64_t)clock64();
    }
    uint64_t c0 = (uint64_t)clock64();
    if (a->me == 1) {
      nvshmem_signal_wait_until(a->sig, NVSHMEM_CMP_GE, want);
      nvp_gran_sync(gran);
    }
    switch (gran) {
    case PEER_GRAN_THREAD:
      nvshmem_putmem_signal_nbi(a->data, a->data, a->bytes, a->sig, 1,
                                NVSHMEM_SIGNAL_ADD, peer);
      break;
    case PEER_GRAN_WARP:
      nvshmemx_putmem_signal_nbi_warp(a->data, a->data, a->bytes, a->sig, 1,
                                      NVSHMEM_SIGNAL_ADD, peer);
      break;
    default:
      nvshmemx_putmem_signal_nbi_block(a->data, a->data, a->bytes, a->sig, 1,
                                       NVSHMEM_SIGNAL_ADD, peer);
    }
    if (a->me == 0) {
      nvshmem_signal_wait_until(a->sig, NVSHMEM_CMP_GE, want);
      nvp_gran_sync(gran);
    }
    if (a->me == 0 && lead && i >= a->warmup)
      a->samples[i - a->warmup] = (uint64_t)clock64() - c0;
  }
  if (a->me == 0 && lead) {
    a->samples[a->iters] = nvp_time_ns() - t_start;
    a->samples[a->iters + 1] = (uint64_t)clock64() - c_start;
  }
}

__global__ void k_pingpong(nvp_lat_args_t a) {
  if (a.gran == PEER_GRAN_THREAD)
    pp_loop(&a, PEER_GRAN_THREAD);
  else if (a.gran == PEER_GRAN_WARP)
    pp_loop(&a, PEER_GRAN_WARP);
  else
    pp_loop(&a, PEER_GRAN_BLOCK);
}

typedef struct nvp_bw_args {
  char *data;
  uint64_t *sig; /* the signal array: SIG_DATA, SIG_ACK */
  size_t bytes;
  int iters, rate, me;
  uint64_t base_data, base_ack;
  uint64_t *samples; /* [0]: PE 0's ns */
} nvp_bw_args_t;

/* PE 0 sends, PE 1 acknowledges, as k_bw in bw.c. bw: each block puts
 * `iters` messages of `bytes` to distinct destinations, block-issued; the
 * last one carries the block's signal, after nvshmem_quiet (NVSHMEM orders
 * a put-with-signal after its own payload only; gin's signal also follows
 * the earlier puts of its context). rate: every thread puts `iters`
 * 8-byte messages, each to its own slot (as gin-perf: no two stores the
 * compiler could merge), quiets, and the block signals once. */
__global__ void k_bw(nvp_bw_args_t a) {
  int peer = 1 - a.me, b = blockIdx.x, nb = gridDim.x;
  uint64_t t0 = nvp_time_ns();
  if (a.me == 0 && a.rate) {
    size_t slot = (size_t)b * blockDim.x + threadIdx.x;
    size_t every = (size_t)nb * blockDim.x; /* one put of each thread */
    /* A running pointer, as gin-perf's loop. */
    char *p = a.data + slot * 8;
    for (int i = 0; i < a.iters; i++, p += every * 8)
      nvshmem_putmem_nbi(p, p, 8, peer);
    nvshmem_quiet();
    __syncthreads();
    if (threadIdx.x == 0)
      nvshmemx_signal_op(&a.sig[SIG_DATA], 1, NVSHMEM_SIGNAL_ADD, peer);
  } else if (a.me == 0) {
    for (int i = 0; i < a.iters; i++) {
      char *p = a.data + ((size_t)b * (size_t)a.iters + (size_t)i) * a.bytes;
      if (i < a.iters - 1) {
        nvshmemx_putmem_nbi_block(p, p, a.bytes, peer);
        continue;
      }
      if (i > 0) nvshmem_quiet();
      nvshmemx_putmem_signal_nbi_block(p, p, a.bytes, &a.sig[SIG_DATA], 1,
                                       NVSHMEM_SIGNAL_ADD, peer);
    }
  }
  if (b != 0 || threadIdx.x != 0) return;
  if (a.me == 1) {
    nvshmem_signal_wait_until(&a.sig[SIG_DATA], NVSHMEM_CMP_GE,
                              a.base_data + (uint64_t)nb);
    nvshmemx_signal_op(&a.sig[SIG_ACK], 1, NVSHMEM_SIGNAL_ADD, peer);
  } else {
    nvshmem_signal_wait_until(&a.sig[SIG_ACK], NVSHMEM_CMP_GE, a.base_ack + 1);
    a.samples[0] = nvp_time_ns() - t0;
  }
}

/* Untimed check that puts arrive: PE 0 writes a pattern of `words` words,
 * puts it block-issued with a signal; PE 1 waits and counts mismatches. */
__global__ void k_check(char *data, uint64_t *sig, size_t words, uint64_t base,
                        int me, unsigned long long *bad) {
  uint64_t *w = (uint64_t *)data;
  if (me == 0) {
    for (size_t i = threadIdx.x; i < words; i += blockDim.x)
      w[i] = 0x9e3779b97f4a7c15ull * (i + 1);
    __syncthreads();
    nvshmemx_putmem_signal_nbi_block(data, data, words * 8, &sig[SIG_CHK], 1,
                                     NVSHMEM_SIGNAL_ADD, 1);
    return;
  }
  if (threadIdx.x == 0) {
    nvshmem_signal_wait_until(&sig[SIG_CHK], NVSHMEM_CMP_GE, base + 1);
    __threadfence();
  }
  __syncthreads();
  for (size_t i = threadIdx.x; i < words; i += blockDim.x)
    if (w[i] != 0x9e3779b97f4a7c15ull * (i + 1)) atomicAdd(bad, 1ull);
}

/* -------------------------------------------------------------- host */

/* Waits for the test kernel, bounded (NVSHMEM's waits are not): a peer
 * that died leaves the kernel spinning, and this exits instead. */
static void nvp_wait(nvp_env_t *env, const char *what) {
  NVP_CUDA(cudaGetLastError());
  double t0 = peer_now_s();
  for (;;) {
    cudaError_t e = cudaStreamQuery(env->stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) NVP_CUDA(e);
    if (peer_now_s() - t0 > NVP_KERNEL_LIMIT_S) {
      fprintf(stderr, "nvshmem_perf: PE %d: %s did not finish in %d s\n",
              env->me, what, NVP_KERNEL_LIMIT_S);
      exit(1);
    }
    usleep(100);
  }
}

static int nvp_threads(int gran) {
  return gran == PEER_GRAN_THREAD ? 1 : gran == PEER_GRAN_WARP ? 32 : 512;
}

static const char *nvp_gran_name(int gran) {
  return gran == PEER_GRAN_THREAD ? "thread"
         : gran == PEER_GRAN_WARP ? "warp"
                                  : "block";
}

/* One result as gin-perf prints and writes it: a table row on PE 0 and a
 * CSV line with gin-perf's columns. Negative numbers are left empty. */
static void nvp_emit(nvp_env_t *env, const char *test, const char *gran,
                     size_t bytes, double med, double p99, double gbps,
                     double mops) {
  double v[] = {med, p99, gbps, mops};
  if (env->me == 0) peer_emit(&env->rep, test, gran, bytes, v);
}

/* Ping-pong at one size: median and p99 round trip (us) on PE 0. */
static void nvp_lat_run(nvp_env_t *env, size_t bytes, double *med,
                        double *p99) {
  nvp_lat_args_t a;
  memset(&a, 0, sizeof a);
  a.data = env->data;
  a.sig = &env->sig[SIG_PP];
  a.bytes = bytes;
  a.iters = env->o.iters;
  a.warmup = env->o.warmup;
  a.gran = env->o.gran;
  a.me = env->me;
  a.base = env->sig_base[SIG_PP];
  a.samples = env->samples;
  nvshmem_barrier_all();
  k_pingpong<<<1, nvp_threads(a.gran), 0, env->stream>>>(a);
  nvp_wait(env, "pingpong");
  nvshmem_barrier_all();
  env->sig_base[SIG_PP] += (uint64_t)(a.warmup + a.iters);
  *med = *p99 = -1;
  if (env->me != 0) return;
  int n = a.iters;
  uint64_t *s = (uint64_t *)malloc(sizeof *s * (size_t)(n + 2));
  if (!s) exit(1);
  NVP_CUDA(cudaMemcpy(s, env->samples, sizeof *s * (size_t)(n + 2),
                      cudaMemcpyDeviceToHost));
  double nspc = s[n + 1] ? (double)s[n] / (double)s[n + 1] : 1;
  peer_stats_cycles(s, n, nspc, med, p99);
  free(s);
}

static void nvp_pingpong(nvp_env_t *env) {
  const peer_opts_t *o = &env->o;
  for (size_t bytes = o->b; bytes <= o->e;
       bytes = peer_next_size(bytes, o->f)) {
    if (bytes > env->data_bytes) break;
    /* --launches: the medians of L launches' medians and p99s, as
     * gin-perf's pingpong reports them. */
    double m[PEER_MAX_LAUNCHES], q[PEER_MAX_LAUNCHES], med, p99;
    for (int k = 0; k < o->launches; k++)
      nvp_lat_run(env, bytes, &m[k], &q[k]);
    peer_launch_medians(m, q, o->launches, &med, &p99);
    nvp_emit(env, "pingpong", nvp_gran_name(o->gran), bytes, med, p99, -1, -1);
  }
}

/* One timed bw/rate run; PE 0's ns (0 elsewhere). */
static double nvp_bw_once(nvp_env_t *env, nvp_bw_args_t *a, int threads) {
  a->base_data = env->sig_base[SIG_DATA];
  a->base_ack = env->sig_base[SIG_ACK];
  nvshmem_barrier_all();
  k_bw<<<env->o.blocks, threads, 0, env->stream>>>(*a);
  nvp_wait(env, a->rate ? "rate" : "bw");
  nvshmem_barrier_all();
  if (env->me == 1)
    env->sig_base[SIG_DATA] += (uint64_t)env->o.blocks;
  else
    env->sig_base[SIG_ACK] += 1;
  uint64_t ns = 0;
  if (env->me == 0)
    NVP_CUDA(cudaMemcpy(&ns, env->samples, sizeof ns, cudaMemcpyDeviceToHost));
  return (double)ns;
}

/* Median and max of --reps runs (at most 64), as gin-perf. */
static void nvp_bw_reps(nvp_env_t *env, nvp_bw_args_t *a, int threads,
                        double *med, double *max) {
  double t[64];
  int reps = env->o.reps < 64 ? env->o.reps : 64;
  for (int k = 0; k < reps; k++)
    t[k] = nvp_bw_once(env, a, threads);
  peer_stats(t, reps, 1.0, med, max);
}

static void nvp_bw(nvp_env_t *env) {
  const peer_opts_t *o = &env->o;
  int most = PEER_PUTS(o->iters);
  if (env->me == 0)
    printf("# bw: %d blocks, each up to %d puts to distinct destinations "
           "(as many as the data area holds), median of %d\n",
           o->blocks, most, o->reps);
  for (size_t bytes = o->b; bytes <= o->e;
       bytes = peer_next_size(bytes, o->f)) {
    size_t fit = env->data_bytes / (bytes * (size_t)o->blocks);
    if (fit < 1) break;
    nvp_bw_args_t a;
    memset(&a, 0, sizeof a);
    a.data = env->data;
    a.sig = env->sig;
    a.bytes = bytes;
    a.iters = fit < (size_t)most ? (int)fit : most;
    a.me = env->me;
    a.samples = env->samples;
    double med, max;
    nvp_bw_reps(env, &a, nvp_threads(PEER_GRAN_BLOCK), &med, &max);
    double total = (double)bytes * o->blocks * a.iters;
    nvp_emit(env, "bw", "block", bytes, med / 1000.0, max / 1000.0,
             med > 0 ? total / med : -1, -1);
  }
}

static void nvp_rate(nvp_env_t *env) {
  const peer_opts_t *o = &env->o;
  nvp_bw_args_t a;
  memset(&a, 0, sizeof a);
  a.data = env->data;
  a.sig = env->sig;
  a.bytes = 8;
  a.iters = PEER_PUTS(o->iters);
  a.rate = 1;
  a.me = env->me;
  a.samples = env->samples;
  double med, max;
  nvp_bw_reps(env, &a, o->threads, &med, &max);
  if (env->me != 0) return;
  printf("# rate: %d blocks x %d threads x %d puts of 8 bytes, median of %d\n",
         o->blocks, o->threads, a.iters, o->reps);
  double ops = (double)o->blocks * o->threads * a.iters;
  nvp_emit(env, "rate", "thread", 8, med / 1000.0, max / 1000.0, -1,
           med > 0 ? ops / med * 1e3 : -1);
}

/* The pattern check: 0 when PE 1 saw every word (both PEs learn it). */
static void nvp_check(nvp_env_t *env) {
  size_t bytes = env->o.e < env->data_bytes ? env->o.e : env->data_bytes;
  size_t words = bytes / 8 ? bytes / 8 : 1;
  unsigned long long *bad = NULL, nbad = 0;
  NVP_CUDA(cudaMalloc((void **)&bad, sizeof *bad));
  NVP_CUDA(cudaMemset(bad, 0, sizeof *bad));
  NVP_CUDA(cudaDeviceSynchronize());
  nvshmem_barrier_all();
  k_check<<<1, 512, 0, env->stream>>>(env->data, env->sig, words,
                                      env->sig_base[SIG_CHK], env->me, bad);
  nvp_wait(env, "check");
  nvshmem_barrier_all();
  if (env->me == 1) env->sig_base[SIG_CHK] += 1;
  NVP_CUDA(cudaMemcpy(&nbad, bad, sizeof nbad, cudaMemcpyDeviceToHost));
  NVP_CUDA(cudaFree(bad));
  if (env->me == 1 && nbad) {
    fprintf(stderr, "nvshmem_perf: check: %llu of %zu words wrong on PE 1\n",
            nbad, words);
    exit(1);
  }
}

static void nvp_usage(FILE *f) {
  fprintf(f,
          "usage: ginrun -n 2 nvshmem_perf [pingpong|bw|rate|all] [options]\n"
          "  gin-perf's tests and options, with NVSHMEM's calls:\n"
          "  pingpong  nvshmem_putmem_signal_nbi{,_warp,_block} (-g) +\n"
          "            nvshmem_signal_wait_until, round trip per size\n"
          "  bw        nvshmemx_putmem_nbi_block, the last put of each block\n"
          "            nvshmemx_putmem_signal_nbi_block after nvshmem_quiet\n"
          "  rate      nvshmem_putmem_nbi of 8 bytes by every thread,\n"
          "            nvshmem_quiet, one nvshmemx_signal_op per block\n"
          "  all       pingpong, bw, rate (the default)\n"
          "  -b MIN -e MAX -f FACTOR   sizes, default 8 .. 1 MiB x 2\n"
          "  -n ITERS -w WARMUP        default 1000 and 100\n"
          "  -g thread|warp|block      pingpong issuer (1, 32, 512 threads)\n"
          "  --blocks B --threads T    bw/rate grid (one block per SM, 128)\n"
          "  --reps R                  timed runs of bw/rate (5)\n"
          "  --launches L              pingpong: L kernels per size, medians\n"
          "                            of their medians and p99s (1)\n"
          "  -c N                      accepted for gin-perf's command "
          "lines, unused\n"
          "  --csv FILE                gin-perf's CSV columns\n");
}

/* NVSHMEM's settings for two PEs on one GPU (docs/PERFORMANCE.md, "Against
 * NVSHMEM"), each
 * unless the environment already has it, and a symmetric heap that holds
 * the data area. */
static void nvp_setenv(size_t heap) {
  char buf[32];
  snprintf(buf, sizeof buf, "%zu", heap);
  setenv("NVSHMEM_SYMMETRIC_SIZE", buf, 0);
  setenv("NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "1", 0);
  setenv("NVSHMEM_DISABLE_NCCL", "1", 0);
  setenv("NVSHMEM_REMOTE_TRANSPORT", "none", 0);
  setenv("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME", "lo", 0);
  setenv("NVSHMEM_DISABLE_NVLS", "1", 0);
}

/* gin's bootstrap hands PE 0's unique id to every PE; then NVSHMEM starts
 * on the device gin selected, and gin's communicator goes away. */
static void nvp_init(nvp_env_t *env) {
  gin_comm_t comm;
  int n;
  NVP_GIN(gin_comm_init_from_env(&comm, NULL));
  NVP_GIN(gin_comm_rank(comm, &env->me));
  NVP_GIN(gin_comm_size(comm, &n));
  if (n != 2) {
    if (env->me == 0) fprintf(stderr, "nvshmem_perf: run with 2 ranks\n");
    exit(2);
  }
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER, ids[2];
  if (env->me == 0 && nvshmemx_get_uniqueid(&id) != 0) {
    fprintf(stderr, "nvshmem_perf: nvshmemx_get_uniqueid failed\n");
    exit(1);
  }
  NVP_GIN(gin_comm_allgather(comm, &id, ids, sizeof id));
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  if (nvshmemx_set_attr_uniqueid_args(env->me, 2, &ids[0], &attr) != 0 ||
      nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0 ||
      nvshmem_my_pe() != env->me || nvshmem_n_pes() != 2) {
    fprintf(stderr, "nvshmem_perf: NVSHMEM init failed on rank %d\n", env->me);
    exit(1);
  }
  NVP_GIN(gin_comm_destroy(comm));
}

int main(int argc, char **argv) {
  nvp_env_t env;
  memset(&env, 0, sizeof env);
  static const char *const tests[] = {"pingpong", "bw", "rate", "all", NULL};
  peer_opts_parse(argc, argv, "nvshmem_perf", tests, 0, nvp_usage, &env.o);
  peer_opts_t *o = &env.o;
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
    printf("SKIP: no CUDA device\n");
    return 77;
  }
  /* The data area as gin-perf sizes its window (less the flag page). */
  if (o->blocks <= 0) {
    int dev = 0;
    NVP_CUDA(cudaGetDevice(&dev));
    NVP_CUDA(cudaDeviceGetAttribute(&o->blocks, cudaDevAttrMultiProcessorCount,
                                    dev));
  }
  size_t rate_bytes = PEER_RATE_BYTES(o->blocks, o->threads, o->iters);
  size_t bw_bytes = peer_bw_bytes(o->blocks, o->e, NVP_BW_BUDGET);
  env.data_bytes = bw_bytes > rate_bytes ? bw_bytes : rate_bytes;
  nvp_setenv(env.data_bytes + ((size_t)64 << 20));
  nvp_init(&env);

  env.data = (char *)nvshmem_malloc(env.data_bytes);
  env.sig = (uint64_t *)nvshmem_malloc(64);
  if (!env.data || !env.sig) {
    fprintf(stderr,
            "nvshmem_perf: nvshmem_malloc of %zu bytes failed "
            "(NVSHMEM_SYMMETRIC_SIZE)\n",
            env.data_bytes);
    return 1;
  }
  NVP_CUDA(cudaMemset(env.data, 0, env.data_bytes));
  NVP_CUDA(cudaMemset(env.sig, 0, 64));
  NVP_CUDA(cudaMalloc((void **)&env.samples,
                      sizeof(uint64_t) * (size_t)(o->iters + 2)));
  NVP_CUDA(cudaStreamCreateWithFlags(&env.stream, cudaStreamNonBlocking));
  NVP_CUDA(cudaDeviceSynchronize());
  env.rep.path = "nvshmem";
  env.rep.test_w = 19;
  env.rep.gran_w = 12;
  env.rep.bytes_w = 9;
  env.rep.nv = 4;
  if (env.me == 0 && o->csv)
    env.rep.csv = peer_csv_open("nvshmem_perf", o->csv);
  if (env.me == 0)
    printf("# nvshmem_perf, NVSHMEM %d.%d.%d, 2 PEs, %d iterations (+%d "
           "warm-up)%s\n",
           NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION,
           NVSHMEM_VENDOR_PATCH_VERSION, o->iters, o->warmup,
           o->contexts ? ", -c ignored (no contexts)" : "");

  nvp_check(&env);
  int all = !strcmp(o->test, "all");
  if (all || !strcmp(o->test, "pingpong")) nvp_pingpong(&env);
  if (all || !strcmp(o->test, "bw")) nvp_bw(&env);
  if (all || !strcmp(o->test, "rate")) nvp_rate(&env);

  if (env.rep.csv) fclose(env.rep.csv);
  nvshmem_barrier_all();
  NVP_CUDA(cudaStreamDestroy(env.stream));
  NVP_CUDA(cudaFree(env.samples));
  nvshmem_free(env.sig);
  nvshmem_free(env.data);
  nvshmem_finalize();
  return 0;
}
