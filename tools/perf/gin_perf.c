/*
 * gin-perf: microbenchmarks of the device API between two ranks, with the
 * machine's floors measured in the same run so every figure is a ratio.
 *
 *   ginrun -n 2 gin-perf_cuda [pingpong|bw|all] [-b MIN] [-e MAX] [-f F]
 *                             [-n ITERS] [-w WARMUP] [-g thread|warp|block]
 *                             [--blocks B] [--csv FILE]
 *
 * pingpong: put+signal round trip (rank 0 puts, rank 1 answers), per-
 *   iteration times from the SM cycle counter calibrated against the global
 *   timer over the whole loop; median and p99.
 * bw: rank 0's B blocks each put ITERS messages, the last with a signal;
 *   rank 1 acknowledges; bytes / time.
 * Floors, same run: raw flag ping-pong between the two processes through
 *   the same mapping (no library calls in the loop), GPU <-> pinned host
 *   flag round trip answered by a CPU thread, and a device copy of the same
 *   bytes (cudaMemcpy on cuda, memcpy on host).
 * The path follows GIN_BACKEND / GIN_TRANSPORT. Absolute times count only
 * on a GPU; on the host target this is a smoke test.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gin/device/gin_device.h"
#include "gin/gin.h"
#include "perf/perf_target.h"

#define DATA 4096 /* window: [0, DATA) flags, then data */
#define SPIN_LIMIT_NS 10000000000ull

#define CHECK(call)                                                            \
  do {                                                                         \
    gin_result_t r_ = (call);                                                  \
    if (r_ != GIN_SUCCESS) {                                                   \
      fprintf(stderr, "gin-perf: %s: %s: %s\n", #call, gin_strerror(r_),       \
              gin_last_error());                                               \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

typedef struct perf_args {
  gin_devcomm_t dc;
  gin_window_t win;
  size_t bytes;
  int iters, warmup, raw;
  gin_coop_t coop;
  uint64_t base;     /* signal value before this run */
  uint64_t *samples; /* [iters] cycles, then [iters] = total ns, cycles */
  volatile uint64_t *hostflag; /* device view, for the host-flag floor */
} perf_args_t;

/* Bounded spin on a word (the floors do not go through the library). */
GIN_DEVICE_FN void spin_until(const uint64_t *p, uint64_t want) {
  uint64_t t0 = gin_time_ns();
  for (uint32_t i = 0; gin_load_acquire_u64(p) < want; i++)
    if ((i & 1023) == 1023 && gin_time_ns() - t0 > SPIN_LIMIT_NS) return;
}

GIN_KERNEL(k_pingpong, perf_args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank, peer = 1 - me, lead = gin_coop_rank(args.coop) == 0;
  uint64_t *mine = (uint64_t *)gin_window_peer_ptr(dc, args.win, world, me, 0);
  uint64_t *theirs =
      (uint64_t *)gin_window_peer_ptr(dc, args.win, world, peer, 0);
  uint64_t t_start = 0, c_start = 0;
  for (int i = 0; i < args.warmup + args.iters; i++) {
    uint64_t want = args.base + (uint64_t)i + 1;
    if (i == args.warmup) {
      t_start = gin_time_ns();
      c_start = gin_cycles();
    }
    uint64_t c0 = gin_cycles();
    if (args.raw) {
      if (me == 1) spin_until(mine, want);
      if (lead) gin_store_release_u64(theirs, want);
      if (me == 0) spin_until(mine, want);
      gin_coop_sync(args.coop);
    } else {
      if (me == 1) gin_signal_wait(dc, 0, want, args.coop);
      gin_put(dc, 0, world, peer, args.win, DATA, args.win, DATA, args.bytes,
              gin_remote_signal_inc(0), gin_local_none(), args.coop);
      if (me == 0) gin_signal_wait(dc, 0, want, args.coop);
    }
    if (me == 0 && lead && i >= args.warmup)
      args.samples[i - args.warmup] = gin_cycles() - c0;
  }
  if (me == 0 && lead) {
    args.samples[args.iters] = gin_time_ns() - t_start;
    args.samples[args.iters + 1] = gin_cycles() - c_start;
  }
}

GIN_KERNEL(k_bw, perf_args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank, b = gin_block_idx(), nb = gin_grid_dim();
  int lead = gin_coop_rank(args.coop) == 0;
  uint64_t t0 = gin_time_ns();
  if (me == 0) {
    size_t off = DATA + (size_t)b * args.bytes;
    for (int i = 0; i < args.iters; i++)
      gin_put(
          dc, b % dc->nctx, world, 1, args.win, off, args.win, off, args.bytes,
          i == args.iters - 1 ? gin_remote_signal_inc(1) : gin_remote_none(),
          gin_local_none(), args.coop);
    if (b == 0) {
      gin_signal_wait(dc, 2, args.base + 1, args.coop);
      if (lead) args.samples[0] = gin_time_ns() - t0;
    }
  } else if (b == 0) {
    gin_signal_wait(dc, 1, args.base * (uint64_t)nb + (uint64_t)nb, args.coop);
    gin_signal(dc, 0, world, 0, gin_remote_signal_inc(2), args.coop);
  }
}

/* The ring alone (run with GIN_BACKEND=proxy GIN_TRANSPORT=null): puts to
 * this rank. raw == 0: one thread, put + flush per iteration (the GPU ->
 * proxy -> GPU round trip); raw == 1: every thread of every block posts
 * `iters` puts, then each block flushes (the descriptor rate). */
GIN_KERNEL(k_ring, perf_args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank;
  if (!args.raw) {
    uint64_t t_start = 0, c_start = 0;
    for (int i = 0; i < args.warmup + args.iters; i++) {
      if (i == args.warmup) {
        t_start = gin_time_ns();
        c_start = gin_cycles();
      }
      uint64_t c0 = gin_cycles();
      gin_put(dc, 0, world, me, args.win, DATA + 64, args.win, DATA, 8,
              gin_remote_none(), gin_local_none(), GIN_COOP_THREAD);
      gin_flush(dc, 0, GIN_COOP_THREAD);
      if (i >= args.warmup) args.samples[i - args.warmup] = gin_cycles() - c0;
    }
    args.samples[args.iters] = gin_time_ns() - t_start;
    args.samples[args.iters + 1] = gin_cycles() - c_start;
    return;
  }
  uint64_t t0 = gin_time_ns();
  int ctx = gin_block_idx() % dc->nctx;
  for (int i = 0; i < args.iters; i++)
    gin_put(dc, ctx, world, me, args.win, DATA + 64, args.win, DATA, 8,
            gin_remote_none(), gin_local_none(), GIN_COOP_THREAD);
  gin_flush(dc, ctx, GIN_COOP_BLOCK);
  if (gin_block_idx() == 0 && gin_thread_idx() == 0)
    args.samples[0] = gin_time_ns() - t0;
}

/* GPU writes a pinned host word, a CPU thread answers in another. */
GIN_KERNEL(k_hostflag, perf_args_t) {
  uint64_t *ping = (uint64_t *)(args.hostflag), *pong = ping + 8;
  uint64_t t0 = gin_time_ns();
  for (int i = 1; i <= args.warmup + args.iters; i++) {
    if (i == args.warmup + 1) t0 = gin_time_ns();
    gin_store_release_u64(ping, (uint64_t)i);
    spin_until(pong, (uint64_t)i);
  }
  args.samples[0] = gin_time_ns() - t0;
}

typedef struct responder {
  volatile uint64_t *flags;
  int n;
} responder_t;

static void *respond(void *p) {
  responder_t *r = (responder_t *)p;
  double t0 = perf_now_us();
  for (int i = 1; i <= r->n; i++) {
    while (__atomic_load_n(&r->flags[0], __ATOMIC_ACQUIRE) < (uint64_t)i)
      if (perf_now_us() - t0 > 1e7) return NULL;
    __atomic_store_n(&r->flags[8], (uint64_t)i, __ATOMIC_RELEASE);
  }
  return NULL;
}

/* ------------------------------------------------------------------ host */

typedef struct opts {
  const char *test;
  size_t b, e;
  double f;
  int iters, warmup, blocks;
  gin_coop_t coop;
  const char *csv;
} opts_t;

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static inline int threads_for(gin_coop_t c) {
  return perf_have_device() && strcmp(perf_target_name(), "cuda") == 0
             ? (c == GIN_COOP_THREAD ? 1
                : c == GIN_COOP_WARP ? 32
                                     : 512)
             : 1;
}

/* Runs a ping-pong; writes median, p99 (us) from calibrated cycles. */
static void run_pingpong(perf_args_t *a, uint64_t *dev_samples, int rank,
                         gin_comm_t comm, double *med, double *p99) {
  CHECK(gin_comm_barrier(comm));
  CHECK(gin_launch(k_pingpong, 1, threads_for(a->coop), 0, a));
  CHECK(gin_stream_synchronize(0));
  CHECK(gin_comm_get_async_error(comm));
  a->base += (uint64_t)(a->warmup + a->iters);
  if (rank != 0) return;
  uint64_t *s = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)(a->iters + 2));
  CHECK(
      gin_mem_copy(s, dev_samples, sizeof(uint64_t) * (size_t)(a->iters + 2)));
  double ns_per_cycle =
      s[a->iters + 1] ? (double)s[a->iters] / s[a->iters + 1] : 1;
  qsort(s, (size_t)a->iters, sizeof *s, cmp_u64);
  *med = s[a->iters / 2] * ns_per_cycle / 1000.0;
  *p99 = s[(size_t)(a->iters * 0.99)] * ns_per_cycle / 1000.0;
  free(s);
}

static void parse(int argc, char **argv, opts_t *o) {
  o->test = "all";
  o->b = 8;
  o->e = 1 << 20;
  o->f = 2;
  o->iters = 1000;
  o->warmup = 100;
  o->blocks = 0;
  o->coop = GIN_COOP_THREAD;
  o->csv = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int has = v != NULL;
    if (!strcmp(a, "pingpong") || !strcmp(a, "bw") || !strcmp(a, "all") ||
        !strcmp(a, "ring"))
      o->test = a;
    else if (!strcmp(a, "-b") && has)
      o->b = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(a, "-e") && has)
      o->e = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(a, "-f") && has)
      o->f = atof(argv[++i]);
    else if (!strcmp(a, "-n") && has)
      o->iters = atoi(argv[++i]);
    else if (!strcmp(a, "-w") && has)
      o->warmup = atoi(argv[++i]);
    else if (!strcmp(a, "--blocks") && has)
      o->blocks = atoi(argv[++i]);
    else if (!strcmp(a, "--csv") && has)
      o->csv = argv[++i];
    else if (!strcmp(a, "-g") && has) {
      v = argv[++i];
      o->coop = !strcmp(v, "warp")    ? GIN_COOP_WARP
                : !strcmp(v, "block") ? GIN_COOP_BLOCK
                                      : GIN_COOP_THREAD;
    } else {
      fprintf(stderr,
              "usage: ginrun -n 2 gin-perf [pingpong|bw|all] [-b MIN] [-e MAX] "
              "[-f FACTOR] [-n ITERS] [-w WARMUP] [-g thread|warp|block] "
              "[--blocks B] [--csv FILE]\n");
      exit(2);
    }
  }
  if (o->b < 1 || o->e < o->b || o->f <= 1 || o->iters < 1 || o->warmup < 0) {
    fprintf(stderr, "gin-perf: need 1 <= -b <= -e, -f > 1, -n >= 1\n");
    exit(2);
  }
  if (o->blocks <= 0) o->blocks = perf_default_blocks();
}

int main(int argc, char **argv) {
  opts_t o;
  parse(argc, argv, &o);
  if (!perf_have_device()) {
    printf("SKIP: no CUDA device\n");
    return 77;
  }
  gin_comm_t comm;
  int rank, n;
  CHECK(gin_comm_init_from_env(&comm, NULL));
  CHECK(gin_comm_rank(comm, &rank));
  CHECK(gin_comm_size(comm, &n));
  if (n != 2) {
    if (rank == 0) fprintf(stderr, "gin-perf: run with 2 ranks\n");
    return 2;
  }
  size_t win_bytes = DATA + (size_t)o.blocks * o.e;
  void *mem, *copy_dst;
  gin_window_t win;
  gin_devcomm_t dc;
  uint64_t *samples;
  CHECK(gin_mem_alloc(win_bytes, &mem));
  CHECK(gin_mem_alloc(win_bytes, &copy_dst));
  CHECK(gin_mem_alloc(sizeof(uint64_t) * (size_t)(o.iters + 2),
                      (void **)&samples));
  CHECK(gin_window_register(comm, mem, win_bytes, &win));
  gin_devcomm_reqs_t reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.contexts = o.blocks < 64 ? o.blocks : 64;
  CHECK(gin_devcomm_create(comm, &reqs, &dc));
  FILE *csv = NULL;
  if (rank == 0 && o.csv) {
    csv = fopen(o.csv, "w");
    if (csv)
      fprintf(csv, "target,test,granularity,bytes,median_us,p99_us,gbps,floor,"
                   "floor_value,ratio\n");
  }
  const char *backend = getenv("GIN_BACKEND"),
             *gname[] = {"thread", "warp", "block"};
  if (rank == 0)
    printf("# gin-perf %s, 2 ranks, GIN_BACKEND=%s, issue by %s, %d iterations "
           "(+%d warm-up)\n",
           perf_target_name(), backend ? backend : "auto", gname[o.coop],
           o.iters, o.warmup);

  perf_args_t a;
  memset(&a, 0, sizeof a);
  a.dc = dc;
  a.win = win;
  a.iters = o.iters;
  a.warmup = o.warmup;
  a.coop = o.coop;
  a.samples = samples;
  int all = !strcmp(o.test, "all");
  if (all || !strcmp(o.test, "pingpong")) {
    /* Floors first: raw flag ping-pong and the host-flag round trip. */
    double raw_med = 0, raw_p99 = 0, hf = 0;
    uint64_t rawbase = 0;
    a.raw = 1;
    uint64_t keep = a.base;
    a.base = rawbase;
    run_pingpong(&a, samples, rank, comm, &raw_med, &raw_p99);
    a.raw = 0;
    a.base = keep;
    if (rank == 0) {
      void *hh, *hd;
      if (perf_hostflag_alloc(128, &hh, &hd) == 0) {
        responder_t r = {(volatile uint64_t *)hh, o.warmup + o.iters};
        pthread_t th;
        pthread_create(&th, NULL, respond, &r);
        perf_args_t h = a;
        h.hostflag = (volatile uint64_t *)hd;
        CHECK(gin_launch(k_hostflag, 1, 1, 0, &h));
        CHECK(gin_stream_synchronize(0));
        pthread_join(th, NULL);
        uint64_t ns = 0;
        CHECK(gin_mem_copy(&ns, samples, sizeof ns));
        hf = ns / 1000.0 / o.iters;
        perf_hostflag_free(hh);
      }
      printf(
          "# floor: raw flag ping-pong between the ranks %.2f us (p99 %.2f); "
          "GPU<->host flag round trip %.2f us (mean)\n",
          raw_med, raw_p99, hf);
      printf("%-9s %10s %10s %10s %10s\n", "pingpong", "bytes", "median_us",
             "p99_us", "x_floor");
    }
    for (size_t bytes = o.b; bytes <= o.e && bytes <= win_bytes - DATA;
         bytes = (size_t)(bytes * o.f) > bytes ? (size_t)(bytes * o.f)
                                               : bytes + 1) {
      double med = 0, p99 = 0;
      a.bytes = bytes;
      run_pingpong(&a, samples, rank, comm, &med, &p99);
      if (rank == 0) {
        printf("%-9s %10zu %10.2f %10.2f %10.2f\n", "", bytes, med, p99,
               raw_med > 0 ? med / raw_med : 0);
        if (csv)
          fprintf(csv,
                  "%s,pingpong,%s,%zu,%.3f,%.3f,,raw_flag_pingpong,%.3f,%.3f\n",
                  perf_target_name(), gname[o.coop], bytes, med, p99, raw_med,
                  raw_med > 0 ? med / raw_med : 0);
      }
    }
  }
  if (all || !strcmp(o.test, "bw")) {
    int bw_iters = o.iters < 100 ? o.iters : 100;
    if (rank == 0)
      printf("%-9s %10s %10s %10s %10s   (%d blocks x %d puts)\n", "bw",
             "bytes", "GB/s", "copy_GB/s", "x_copy", o.blocks, bw_iters);
    uint64_t bwbase = 0;
    for (size_t bytes = o.b < 4096 ? 4096 : o.b; bytes <= o.e;
         bytes = (size_t)(bytes * o.f) > bytes ? (size_t)(bytes * o.f)
                                               : bytes + 1) {
      perf_args_t w = a;
      w.coop = GIN_COOP_BLOCK; /* each block issues its puts as one coop */
      w.bytes = bytes;
      w.iters = bw_iters;
      w.base = bwbase++;
      CHECK(gin_comm_barrier(comm));
      CHECK(gin_launch(k_bw, o.blocks, threads_for(GIN_COOP_BLOCK), 0, &w));
      CHECK(gin_stream_synchronize(0));
      CHECK(gin_comm_get_async_error(comm));
      if (rank != 0) continue;
      uint64_t ns = 0;
      CHECK(gin_mem_copy(&ns, samples, sizeof ns));
      double total = (double)bytes * o.blocks * bw_iters;
      double gbps = total / (double)ns;
      double cus = perf_copy_us((char *)copy_dst + DATA, (char *)mem + DATA,
                                bytes * (size_t)o.blocks, 20);
      double cgbps = (double)bytes * o.blocks / (cus * 1000.0);
      printf("%-9s %10zu %10.1f %10.1f %10.2f\n", "", bytes, gbps, cgbps,
             gbps / cgbps);
      if (csv)
        fprintf(csv, "%s,bw,block,%zu,,,%.3f,device_copy_gbps,%.3f,%.3f\n",
                perf_target_name(), bytes, gbps, cgbps, gbps / cgbps);
    }
  }
  if (!strcmp(o.test, "ring")) {
    /* Calibrate cycles against the clock over the latency loop. */
    perf_args_t r = a;
    r.raw = 0;
    CHECK(gin_launch(k_ring, 1, 1, 0, &r));
    CHECK(gin_stream_synchronize(0));
    CHECK(gin_comm_get_async_error(comm));
    size_t ns_bytes = sizeof(uint64_t) * (size_t)(o.iters + 2);
    uint64_t *s = (uint64_t *)malloc(ns_bytes);
    CHECK(gin_mem_copy(s, samples, ns_bytes));
    double nspc = s[o.iters + 1] ? (double)s[o.iters] / s[o.iters + 1] : 1;
    qsort(s, (size_t)o.iters, sizeof *s, cmp_u64);
    r.raw = 1;
    int threads = threads_for(GIN_COOP_BLOCK) > 1 ? 128 : 1;
    CHECK(gin_comm_barrier(comm));
    CHECK(gin_launch(k_ring, o.blocks, threads, 0, &r));
    CHECK(gin_stream_synchronize(0));
    CHECK(gin_comm_get_async_error(comm));
    uint64_t ns = 0;
    CHECK(gin_mem_copy(&ns, samples, sizeof ns));
    double rate = (double)o.blocks * threads * o.iters / (double)ns * 1e3;
    if (rank == 0)
      printf("ring: put+flush round trip median %.2f us (p99 %.2f); %d "
             "blocks x %d threads x %d puts: %.1f M descriptors/s\n",
             s[o.iters / 2] * nspc / 1000.0,
             s[(size_t)(o.iters * 0.99)] * nspc / 1000.0, o.blocks, threads,
             o.iters, rate);
    free(s);
  }
  if (csv) fclose(csv);
  CHECK(gin_comm_barrier(comm));
  CHECK(gin_devcomm_destroy(comm, &dc));
  CHECK(gin_window_deregister(comm, win));
  CHECK(gin_mem_free(samples));
  CHECK(gin_mem_free(copy_dst));
  CHECK(gin_mem_free(mem));
  CHECK(gin_comm_destroy(comm));
  return 0;
}
