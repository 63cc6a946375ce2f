/*
 * Throughput tests: put bandwidth (one direction or both at once, block-
 * issued, one context per block up to -c), message rate (every thread puts
 * 8-byte messages), and the proxy ring alone (run with GIN_BACKEND=proxy
 * GIN_TRANSPORT=null). Rank 0 times from the start of its kernel until the
 * receiver acknowledged everything.
 */
#include <string.h>

#include "perf/peer_common.h"
#include "perf/perf.h"

enum { SIG_DATA = 1, SIG_ACK = 2 };

typedef struct bw_args {
  gin_devcomm_t dc;
  gin_window_t win;
  size_t bytes;
  int iters, bidir, rate;
  uint64_t base_data, base_ack; /* this rank's signals before the run */
  uint64_t *samples;
} bw_args_t;

/* Each block puts `iters` messages to the peer (bw: the block's own
 * region, block-issued; rate: 8 bytes per thread, thread-issued, each put
 * to its own slot, so that no two stores could be merged), then one
 * signal per block. The receiver waits for every block's signal and
 * acknowledges; with bidir both ranks do both. */
GIN_KERNEL(k_bw, bw_args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank, peer = 1 - me, b = gin_block_idx(), nb = gin_grid_dim();
  int ctx = b % dc->nctx, lead = gin_thread_idx() == 0 && b == 0;
  uint64_t t0 = gin_time_ns();
  int sends = me == 0 || args.bidir, receives = me == 1 || args.bidir;
  if (sends) {
    if (args.rate) {
      int t = gin_thread_idx(), nt = gin_block_dim();
      size_t slot = (size_t)b * (size_t)nt + (size_t)t;
      size_t every = (size_t)nb * (size_t)nt; /* one put of each thread */
      /* A running offset (nvshmem_perf's loop is the same): the compiler
       * does not always reduce (slot + i * every) * 8 to an add itself. */
      size_t off = PERF_DATA + slot * 8;
      for (int i = 0; i < args.iters; i++, off += every * 8)
        gin_put(dc, ctx, world, peer, args.win, off, args.win, off, 8,
                gin_remote_none(), gin_local_none(), GIN_COOP_THREAD);
      gin_signal(dc, ctx, world, peer, gin_remote_signal_inc(SIG_DATA),
                 GIN_COOP_BLOCK);
    } else {
      /* Every put has its own destination (and source): nothing a
       * transport could merge. */
      for (int i = 0; i < args.iters; i++) {
        size_t off = PERF_DATA +
                     ((size_t)b * (size_t)args.iters + (size_t)i) * args.bytes;
        gin_put(dc, ctx, world, peer, args.win, off, args.win, off, args.bytes,
                i == args.iters - 1 ? gin_remote_signal_inc(SIG_DATA)
                                    : gin_remote_none(),
                gin_local_none(), GIN_COOP_BLOCK);
      }
    }
  }
  if (b != 0) return;
  if (receives) {
    gin_signal_wait(dc, SIG_DATA, args.base_data + (uint64_t)nb,
                    GIN_COOP_BLOCK);
    gin_signal(dc, 0, world, peer, gin_remote_signal_inc(SIG_ACK),
               GIN_COOP_BLOCK);
  }
  if (sends) {
    gin_signal_wait(dc, SIG_ACK, args.base_ack + 1, GIN_COOP_BLOCK);
    if (lead) args.samples[0] = gin_time_ns() - t0;
  }
}

/* bw's pattern with no library call (--raw): block b copies the same
 * `iters` regions its puts would, from this rank's window straight into
 * the peer's as mapped here, with the copy gin_put uses and a block
 * barrier before each (as a block put has): the floor of that pattern
 * over the same memory. With args.rate, rate's pattern instead: every
 * thread loads and stores the same 8-byte slots its puts would, then
 * the block's first thread releases at GPU scope (waiting for the block's
 * stores) and records the time: samples[1] gets the latest end and
 * samples[2] the complement of the earliest start (both zeroed by the
 * caller). Rate's own time runs on to the peer's acknowledgement of
 * system-scope signals, a round trip more: the floor is the lower for
 * it. Direct-path peers only (else it does nothing: no time recorded). */
GIN_KERNEL(k_bw_raw, bw_args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  char *dst = (char *)gin_window_peer_ptr(dc, args.win, world, 1 - dc->rank, 0);
  char *src = (char *)gin_window_peer_ptr(dc, args.win, world, dc->rank, 0);
  if (!dst || !src) return;
  int b = gin_block_idx(), t = gin_thread_idx(), nt = gin_block_dim();
  if (args.rate) {
    uint64_t t0 = gin_time_ns();
    size_t slot = (size_t)b * (size_t)nt + (size_t)t;
    size_t every = (size_t)gin_grid_dim() * (size_t)nt;
    size_t off = PERF_DATA + slot * 8; /* a running offset, as k_bw's */
    for (int i = 0; i < args.iters; i++, off += every * 8)
      *(uint64_t *)(dst + off) = *(const uint64_t *)(src + off);
    gin_coop_sync(GIN_COOP_BLOCK);
    if (t == 0) {
      gin_max_release_u64(&args.samples[2], ~t0);
      gin_max_release_u64(&args.samples[1], gin_time_ns());
    }
    return;
  }
  for (int i = 0; i < args.iters; i++) {
    size_t off =
        PERF_DATA + ((size_t)b * (size_t)args.iters + (size_t)i) * args.bytes;
    gin_coop_sync(GIN_COOP_BLOCK);
    gin_copy_coop(dst + off, src + off, args.bytes, t, nt);
  }
}

/* Launches k_bw_raw `reps` times after one warm-up launch (rank 0 alone;
 * the peer only keeps its window) and puts launch k's time in t[k], in
 * ns: with a's rate pattern from the kernel's own marks (earliest block
 * start to latest block end), else on the host around launch and sync.
 * Returns 0 if a rate launch recorded no time (the peer's window not
 * mapped here), else 1. reps <= 64. */
static int bw_raw_times(bw_args_t *a, int blocks, int threads, int reps,
                        double *t) {
  for (int k = -1; k < reps; k++) {
    uint64_t ends[2] = {0, 0};
    if (a->rate) PERF_CHECK(gin_mem_set(&a->samples[1], 0, sizeof ends));
    double t0 = perf_now_us();
    PERF_CHECK(gin_launch(k_bw_raw, blocks, threads, 0, a));
    PERF_CHECK(gin_stream_synchronize(0));
    double host_ns = (perf_now_us() - t0) * 1000.0;
    if (a->rate) {
      PERF_CHECK(gin_mem_copy(ends, &a->samples[1], sizeof ends));
      if (ends[0] == 0 || ends[1] == 0) return 0;
    }
    if (k >= 0) t[k] = a->rate ? (double)(ends[0] - ~ends[1]) : host_ns;
  }
  return 1;
}

/* The median us of `reps` launches of k_bw_raw with a's bw pattern,
 * timed on the host around launch and sync. */
static double bw_raw_us(const bw_args_t *a, int blocks, int reps) {
  bw_args_t k_args = *a;
  double t[64], med, max;
  if (reps > 64) reps = 64;
  /* The host target runs a block as one thread. */
  bw_raw_times(&k_args, blocks, perf_coop_threads(GIN_COOP_BLOCK), reps, t);
  perf_stats_d(t, reps, &med, &max);
  return med / 1000.0;
}

/* Whether rank 0's peer (rank 1) is on the direct path (bw_raw needs its
 * window mapped here). */
static int bw_peer_direct(const perf_env_t *env) { return perf_direct(env, 1); }

/* One timed run; returns rank 0's ns (0 elsewhere). */
static uint64_t bw_once(perf_env_t *env, bw_args_t *a, int blocks,
                        int threads) {
  int sends = env->rank == 0 || a->bidir, receives = env->rank == 1 || a->bidir;
  a->base_data = env->sig_base[SIG_DATA];
  a->base_ack = env->sig_base[SIG_ACK];
  PERF_CHECK(gin_comm_barrier(env->comm));
  PERF_CHECK(gin_launch(k_bw, blocks, threads, 0, a));
  perf_sync(env);
  if (receives) env->sig_base[SIG_DATA] += (uint64_t)blocks;
  if (sends) env->sig_base[SIG_ACK] += 1;
  uint64_t ns = 0;
  if (env->rank == 0) PERF_CHECK(gin_mem_copy(&ns, env->samples, sizeof ns));
  return ns;
}

void perf_bw(perf_env_t *env, int bidir) {
  const perf_opts_t *o = &env->o;
  int most = PEER_PUTS(o->iters);
  const char *test = bidir ? "bibw" : "bw";
  perf_note(env,
            "%s: %d blocks, each up to %d puts to distinct destinations "
            "(as many as the window holds), %d contexts, median of %d",
            test, o->blocks, most, env->dc.nctx, o->reps);
  if (o->raw && !bidir)
    perf_note(env,
              "bw_raw: the same copies by a kernel with no library "
              "call, timed on the host (launch to sync)%s",
              bw_peer_direct(env) ? "" : "; skipped: the peer is not direct");
  size_t data = env->win_bytes - PERF_DATA;
  for (size_t bytes = o->b; bytes <= o->e;
       bytes = perf_next_size(bytes, o->f)) {
    size_t fit = data / (bytes * (size_t)o->blocks);
    if (fit < 1) break;
    int iters = fit < (size_t)most ? (int)fit : most;
    bw_args_t a;
    memset(&a, 0, sizeof a);
    a.dc = env->dc;
    a.win = env->win;
    a.bytes = bytes;
    a.iters = iters;
    a.bidir = bidir;
    a.samples = env->samples;
    double t[64];
    int reps = o->reps < 64 ? o->reps : 64;
    for (int k = 0; k < reps; k++)
      t[k] = (double)bw_once(env, &a, o->blocks,
                             perf_coop_threads(GIN_COOP_BLOCK));
    if (env->rank != 0) continue;
    double med, max;
    perf_stats_d(t, reps, &med, &max);
    double total = (double)bytes * o->blocks * iters * (bidir ? 2 : 1);
    double cus = perf_copy_us((char *)env->copy_dst + PERF_DATA,
                              (char *)env->mem + PERF_DATA,
                              bytes * (size_t)o->blocks, 20);
    double cgbps = (double)bytes * o->blocks / (cus * 1000.0);
    perf_row_t r = perf_row(test, "block", bytes);
    r.median_us = med / 1000.0;
    r.p99_us = max / 1000.0;
    r.gbps = med > 0 ? total / med : -1;
    r.floor = "device_copy_gbps";
    r.floor_value = cgbps;
    /* Through the proxy and tcp or ofi on one machine, with --floors: the
     * raw stream of the same message size is the floor, not a copy. */
    double net = perf_net_bw(env, bytes);
    if (net > 0) {
      r.floor = perf_net_bw_name(env);
      r.floor_value = net;
    }
    r.ratio = r.gbps > 0 ? r.gbps / r.floor_value : -1;
    perf_emit(env, &r);
    if (o->raw && !bidir && bw_peer_direct(env)) {
      double us = bw_raw_us(&a, o->blocks, reps);
      perf_row_t q = perf_row("bw_raw", "block", bytes);
      q.median_us = us;
      q.gbps = us > 0 ? total / (us * 1000.0) : -1;
      q.floor = "device_copy_gbps";
      q.floor_value = cgbps;
      q.ratio = q.gbps > 0 ? q.gbps / cgbps : -1;
      perf_emit(env, &q);
    }
  }
  /* The peer's window stays until rank 0's last copy into it is done. */
  if (o->raw) PERF_CHECK(gin_comm_barrier(env->comm));
}

/* A rate row (`test`) from the times of `reps` launches in t (ns), each
 * of `ops` 8-byte puts or stores. */
static perf_row_t rate_row(const char *test, double *t, int reps, double ops) {
  double med, max;
  perf_stats_d(t, reps, &med, &max);
  perf_row_t r = perf_row(test, "thread", 8);
  r.median_us = med / 1000.0;
  r.p99_us = max / 1000.0;
  r.mops = med > 0 ? ops / med * 1e3 : -1;
  return r;
}

void perf_rate(perf_env_t *env) {
  const perf_opts_t *o = &env->o;
  int threads = perf_coop_threads(GIN_COOP_BLOCK) > 1 ? o->threads : 1;
  size_t need = PEER_RATE_BYTES(o->blocks, threads, o->iters);
  if (need > env->win_bytes - PERF_DATA) {
    perf_note(env, "rate: window too small for %d x %d threads", o->blocks,
              threads);
    return;
  }
  bw_args_t a;
  memset(&a, 0, sizeof a);
  a.dc = env->dc;
  a.win = env->win;
  a.bytes = 8;
  a.iters = PEER_PUTS(o->iters);
  a.rate = 1;
  a.samples = env->samples;
  double t[64];
  int reps = o->reps < 64 ? o->reps : 64;
  for (int k = 0; k < reps; k++)
    t[k] = (double)bw_once(env, &a, o->blocks, threads);
  if (env->rank == 0) {
    double ops = (double)o->blocks * threads * a.iters;
    perf_note(env,
              "rate: %d blocks x %d threads x %d puts of 8 bytes (each to "
              "its own slot), %d contexts, median of %d",
              o->blocks, threads, a.iters, env->dc.nctx, reps);
    perf_row_t r = rate_row("rate", t, reps, ops), q;
    int raw = o->raw && bw_peer_direct(env) &&
              bw_raw_times(&a, o->blocks, threads, reps, t);
    if (o->raw)
      perf_note(env,
                "rate_raw: the same slots by plain 8-byte loads and stores "
                "(no library call), from the first block's start to the "
                "last block's release%s",
                raw ? "" : "; skipped: the peer's window is not mapped here");
    if (raw) {
      q = rate_row("rate_raw", t, reps, ops);
      r.floor = "rate_raw_mops";
      r.floor_value = q.mops;
      r.ratio = r.mops > 0 && q.mops > 0 ? r.mops / q.mops : -1;
    }
    perf_emit(env, &r);
    if (raw) perf_emit(env, &q);
  }
  /* The peer's window stays until rank 0's raw stores into it are done. */
  if (o->raw) PERF_CHECK(gin_comm_barrier(env->comm));
}

/* ------------------------------------------------------------- ring */

typedef struct ring_args {
  gin_devcomm_t dc;
  gin_window_t win;
  int iters, warmup, raw;
  uint64_t *samples;
} ring_args_t;

/* Puts to this rank through the ring. raw == 0: one thread, put + flush
 * per iteration (the GPU -> proxy -> GPU round trip); raw == 1: every
 * thread of every block posts `iters` puts, then each block flushes (the
 * descriptor rate). */
GIN_KERNEL(k_ring, ring_args_t) {
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
      gin_put(dc, 0, world, me, args.win, PERF_DATA + 64, args.win, PERF_DATA,
              8, gin_remote_none(), gin_local_none(), GIN_COOP_THREAD);
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
    gin_put(dc, ctx, world, me, args.win, PERF_DATA + 64, args.win, PERF_DATA,
            8, gin_remote_none(), gin_local_none(), GIN_COOP_THREAD);
  gin_flush(dc, ctx, GIN_COOP_BLOCK);
  if (gin_block_idx() == 0 && gin_thread_idx() == 0)
    args.samples[0] = gin_time_ns() - t0;
}

void perf_ring(perf_env_t *env) {
  const perf_opts_t *o = &env->o;
  ring_args_t a;
  memset(&a, 0, sizeof a);
  a.dc = env->dc;
  a.win = env->win;
  a.iters = o->iters;
  a.warmup = o->warmup;
  a.samples = env->samples;
  PERF_CHECK(gin_launch(k_ring, 1, 1, 0, &a));
  perf_sync(env);
  double med = 0, p99 = 0;
  perf_samples(env, o->iters, &med, &p99);
  perf_row_t r = perf_row("ring", "thread", 8);
  r.median_us = med;
  r.p99_us = p99;
  if (env->hostflag_us > 0) {
    r.floor = "gpu_host_flag_rtt";
    r.floor_value = env->hostflag_us;
    r.ratio = med / env->hostflag_us;
  }
  perf_emit(env, &r);

  a.raw = 1;
  int threads = perf_coop_threads(GIN_COOP_BLOCK) > 1 ? o->threads : 1;
  double t[64];
  int reps = o->reps < 64 ? o->reps : 64;
  for (int k = 0; k < reps; k++) {
    PERF_CHECK(gin_comm_barrier(env->comm));
    PERF_CHECK(gin_launch(k_ring, o->blocks, threads, 0, &a));
    perf_sync(env);
    uint64_t ns = 0;
    PERF_CHECK(gin_mem_copy(&ns, env->samples, sizeof ns));
    t[k] = (double)ns;
  }
  double tm, tmax;
  perf_stats_d(t, reps, &tm, &tmax);
  perf_note(env,
            "ring rate: %d blocks x %d threads x %d puts, %d contexts, "
            "median of %d",
            o->blocks, threads, o->iters, env->dc.nctx, reps);
  perf_row_t q = perf_row("ring_rate", "thread", 8);
  q.median_us = tm / 1000.0;
  q.p99_us = tmax / 1000.0;
  q.mops = (double)o->blocks * threads * o->iters / tm * 1e3;
  perf_emit(env, &q);
}
