/*
 * Latency tests between the two ranks: put+signal ping-pong (-g thread,
 * warp, block), signal-only ping-pong, barrier latency, the raw flag
 * ping-pong floor, and the "ladder": the same exchange built up from the
 * raw floor one library piece at a time, so every microsecond of the gap
 * is attributed to a piece (what a missed target in docs/PERFORMANCE.md
 * needs explained).
 *
 * Times are per-iteration SM cycles (clock64), calibrated against the
 * global timer over the whole loop; rank 0 records them.
 */
#include <stdlib.h>
#include <string.h>

#include "perf/floors_host.h"
#include "perf/peer_common.h"
#include "perf/perf.h"

enum {
  V_RAW_STORE = 0,   /* payload-free flag, st.release (the floor) */
  V_RAW_RED,         /* flag bumped with red.release.add instead */
  V_RAW_DATA,        /* 8-byte payload store, then st.release flag */
  V_RAW_DATA_RED,    /* 8-byte payload, then red.release.add flag */
  V_RAW_COPY,        /* payload loaded from this rank's window (the bytes the
                        peer just wrote there), stored, red.release.add flag */
  V_RAW_COPY_COLD,   /* the same from a line the peer does not write */
  V_RAW_TABLE,       /* raw_copy, the destination base read from the window
                        base table each time (gin_put's one lookup) */
  V_RAW_PEERSIG,     /* raw_data_red to the signal, its pointer read from the
                        devcomm (kernel parameters) each time, as gin_signal */
  V_RAW_PEERSIG_IMM, /* the same, the pointer read from a fixed parameter
                        offset (no indexed constant load) */
  V_RAW_GPU,         /* raw_data_red at GPU scope (release add, acquire
                        poll): the two ranks share one GPU */
  V_RAW_GPU_COPY,    /* raw_copy at GPU scope: the least a put to a peer on
                        this GPU does (gin's near path) */
  V_GPU_WEAK,        /* raw_gpu_copy with plain (weak) load and store, as
                        gin_put copies */
  V_GPU_GATE,        /* raw_gpu_copy that also reads the abort gate before
                        the copy and tests it after, as gin_put */
  V_GPU_TREE,        /* raw_gpu_copy to the destination gin_put computes
                        (the window handle's compare tree) */
  V_GPU_WAIT,        /* raw_gpu_copy's send to signal 0, gin_signal_wait */
  V_GPU_PUT,         /* gin_put + signal, the waiter polls signal 0 at GPU
                        scope as raw_gpu_copy */
  V_LIB_WAIT,        /* raw payload + red.add on the signal, gin_signal_wait */
  V_LIB_PUT,         /* gin_put + signal, the waiter spins on the word */
  V_PUT,             /* gin_put + gin_signal_wait: the API (any coop) */
  V_SIGNAL,          /* gin_signal + gin_signal_wait */
  V_COUNT
};

static const char *const ladder_names[V_COUNT] = {
    "raw_store",       "raw_red",       "raw_data",     "raw_data_red",
    "raw_copy",        "raw_copy_cold", "raw_table",    "raw_peersig",
    "raw_peersig_imm", "raw_gpu",       "raw_gpu_copy", "gpu_weak",
    "gpu_gate",        "gpu_tree",      "gpu_wait",     "gpu_put",
    "lib_wait",        "lib_put",       "put",          "signal"};

#define V_RAW_LAST V_GPU_TREE /* variants up to here bypass the library */
/* The rungs at GPU scope (release add and poll): both ranks on one GPU. */
#define V_GPU_RUNG(v) ((v) >= V_RAW_GPU && (v) <= V_GPU_PUT)

/* GPU-scope flavours of the release add and acquire load (the ladder's
 * question: what does system scope cost when both ranks share a GPU). */
#if GIN_ARCH_CUDA
GIN_DEVICE_FN void add_release_gpu(uint64_t *p, uint64_t v) {
  asm volatile("red.release.gpu.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
GIN_DEVICE_FN uint64_t load_acquire_gpu(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
#else
GIN_DEVICE_FN void add_release_gpu(uint64_t *p, uint64_t v) {
  gin_add_release_u64(p, v);
}
GIN_DEVICE_FN uint64_t load_acquire_gpu(const uint64_t *p) {
  return gin_load_acquire_u64(p);
}
#endif

#define FLAG_SLOT 7    /* env->sig_base index of the raw flag */
#define PEERSIG_SLOT 6 /* signal (and sig_base index) of raw_peersig */

typedef struct lat_args {
  gin_devcomm_t dc;
  gin_window_t win;
  size_t bytes;
  int iters, warmup, variant;
  gin_coop_t coop;
  uint64_t base;       /* flag or signal 0 value before this run */
  uint64_t *samples;   /* [iters] cycles, then total ns, total cycles */
  uint64_t *issue;     /* NULL, or [iters] cycles rank 0 spent sending */
  const uint64_t *src; /* this rank's window + PERF_DATA (raw copies) */
  uint64_t *sm;        /* the SM the coop's lead ran on (device word) */
  uint32_t flag_off;   /* raw variants: the flag this many bytes into the
                          window (floorscan; 0 otherwise) */
  int on_sig;          /* raw variants: the flag is signal PEERSIG_SLOT of
                          the devcomm instead (floorscan) */
} lat_args_t;

/* The SM this thread runs on (0 on the host target). */
#if GIN_ARCH_CUDA
GIN_DEVICE_FN uint32_t lat_smid(void) {
  uint32_t s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}
#else
GIN_DEVICE_FN uint32_t lat_smid(void) { return 0; }
#endif

/* Bounded spin on a word (the raw variants do not use the library); on
 * the host target it yields only where the ranks may lack a CPU each
 * (perf_raw_spin_only). */
#if GIN_ARCH_CUDA
GIN_DEVICE_FN void raw_pause(uint32_t i) { (void)i; }
#else
GIN_DEVICE_FN void raw_pause(uint32_t i) {
  gin_spin_pause(perf_raw_spin_only() ? 0 : i);
}
#endif
GIN_DEVICE_FN void spin_until(const uint64_t *p, uint64_t want) {
  uint64_t t0 = gin_time_ns();
  for (uint32_t i = 0; gin_load_acquire_u64(p) < want; i++) {
    if ((i & 1023) == 1023 && gin_time_ns() - t0 > PERF_SPIN_LIMIT_NS) return;
    raw_pause(i);
  }
}

/* The raw copies' payload: the 8-byte word at src into the window at
 * win + PERF_DATA (volatile: one load and one store, kept in order). */
GIN_DEVICE_FN void copy_word(uint64_t *win, const uint64_t *src) {
  *(volatile uint64_t *)(win + PERF_DATA / 8) = *(const volatile uint64_t *)src;
}

/* One side's send in variant v by coop c (its thread 0 for raw ones); v
 * and c are constants in each loop, so the switch folds away. */
GIN_DEVICE_FN void lat_send(const lat_args_t *a, int v, gin_coop_t c, int peer,
                            uint64_t want, uint64_t *theirs,
                            uint64_t *their_sig) {
  const gin_devcomm_t *dc = &a->dc;
  int lead = gin_coop_rank(c) == 0;
  switch (v) {
  case V_RAW_STORE:
    if (lead) gin_store_release_u64(theirs, want);
    break;
  case V_RAW_RED:
    if (lead) gin_add_release_u64(theirs, 1);
    break;
  case V_RAW_DATA:
    if (lead) {
      *(volatile uint64_t *)(theirs + PERF_DATA / 8) = want;
      gin_store_release_u64(theirs, want);
    }
    break;
  case V_RAW_DATA_RED:
    if (lead) {
      *(volatile uint64_t *)(theirs + PERF_DATA / 8) = want;
      gin_add_release_u64(theirs, 1);
    }
    break;
  case V_RAW_COPY:
  case V_RAW_COPY_COLD:
    if (lead) {
      copy_word(theirs, a->src + (v == V_RAW_COPY_COLD ? 512 : 0));
      gin_add_release_u64(theirs, 1);
    }
    break;
  case V_RAW_PEERSIG:
    if (lead) {
      uint64_t *sig = gin_dev_peer_sig_(dc, peer);
      *(volatile uint64_t *)(theirs + PERF_DATA / 8) = want;
      gin_add_release_u64(sig + PEERSIG_SLOT, 1);
    }
    break;
  case V_RAW_PEERSIG_IMM:
    if (lead) {
      uint64_t *sig =
          dc->rank == 0 ? dc->peer_sig_inline[1] : dc->peer_sig_inline[0];
      *(volatile uint64_t *)(theirs + PERF_DATA / 8) = want;
      gin_add_release_u64(sig + PEERSIG_SLOT, 1);
    }
    break;
  case V_RAW_GPU:
    if (lead) {
      *(volatile uint64_t *)(theirs + PERF_DATA / 8) = want;
      add_release_gpu(theirs, 1);
    }
    break;
  case V_RAW_GPU_COPY:
    if (lead) {
      copy_word(theirs, a->src);
      add_release_gpu(theirs, 1);
    }
    break;
  case V_GPU_WEAK:
    if (lead) {
      theirs[PERF_DATA / 8] = *a->src;
      add_release_gpu(theirs, 1);
    }
    break;
  case V_GPU_GATE:
    if (lead) {
      int shut = gin_load_cached_u32(dc->gate) != 0;
      copy_word(theirs, a->src);
      if (!shut) add_release_gpu(theirs, 1);
    }
    break;
  case V_GPU_TREE:
    if (lead) {
      uint64_t *t = (uint64_t *)gin_dev_base_(dc, a->win, peer);
      copy_word(t, a->src);
      add_release_gpu(t, 1);
    }
    break;
  case V_GPU_WAIT:
    if (lead) {
      copy_word(theirs, a->src);
      add_release_gpu(their_sig, 1);
    }
    break;
  case V_RAW_TABLE:
    if (lead) {
      uint64_t *t = (uint64_t *)gin_dev_base_(dc, a->win, peer);
      copy_word(t, a->src);
      gin_add_release_u64(t, 1);
    }
    break;
  case V_LIB_WAIT:
    if (lead) {
      *(volatile uint64_t *)(theirs + PERF_DATA / 8) = want;
      gin_add_release_u64(their_sig, 1);
    }
    break;
  case V_SIGNAL:
    gin_signal(dc, 0, gin_team_world(dc), peer, gin_remote_signal_inc(0), c);
    break;
  default: /* V_GPU_PUT, V_LIB_PUT, V_PUT */
    gin_put(dc, 0, gin_team_world(dc), peer, a->win, PERF_DATA, a->win,
            PERF_DATA, a->bytes, gin_remote_signal_inc(0), gin_local_none(), c);
  }
}

GIN_DEVICE_FN void lat_wait(const lat_args_t *a, int v, gin_coop_t c,
                            uint64_t want, const uint64_t *mine) {
  const gin_devcomm_t *dc = &a->dc;
  if (v == V_RAW_PEERSIG || v == V_RAW_PEERSIG_IMM) {
    spin_until(&dc->signals[PEERSIG_SLOT], want);
    gin_coop_sync(c);
  } else if (V_GPU_RUNG(v) && v != V_GPU_WAIT) {
    const uint64_t *w = v == V_GPU_PUT ? &dc->signals[0] : mine;
    uint64_t t0 = gin_time_ns();
    for (uint32_t i = 0; load_acquire_gpu(w) < want; i++)
      if ((i & 1023) == 1023 && gin_time_ns() - t0 > PERF_SPIN_LIMIT_NS) break;
    gin_coop_sync(c);
  } else if (v <= V_RAW_LAST) {
    spin_until(mine, want);
    gin_coop_sync(c);
  } else if (v == V_LIB_PUT) {
    spin_until(&dc->signals[0], want);
    gin_coop_sync(c);
  } else {
    gin_signal_wait(dc, 0, want, c);
  }
}

/* The ping-pong loop of variant v by coop c. Each variant gets its own
 * kernel (LAT_KERNEL below), which holds one loop per coop kind, v and c
 * constants in each: as in a user's kernel, where the coop is a literal,
 * no variant or coop pays for the code of the others between its wait
 * and its send. In one kernel switching over twenty variants with the
 * coop a runtime value, ~580 cycles pass between a wait's return and the
 * next put, and a change to one variant's code moves the others' round
 * trips (docs/PERFORMANCE.md, "Design figures"). */
GIN_DEVICE_FN void lat_loop(const lat_args_t *a, int v, gin_coop_t c) {
  const gin_devcomm_t *dc = &a->dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank, peer = 1 - me, lead = gin_coop_rank(c) == 0;
  uint64_t *mine =
      (uint64_t *)gin_window_peer_ptr(dc, a->win, world, me, a->flag_off);
  uint64_t *theirs =
      (uint64_t *)gin_window_peer_ptr(dc, a->win, world, peer, a->flag_off);
  if (a->on_sig) {
    mine = &dc->signals[PEERSIG_SLOT];
    theirs = gin_dev_peer_sig_(dc, peer) + PEERSIG_SLOT;
  }
  uint64_t *their_sig = dc->peer_signals[peer];
  uint64_t t_start = 0, c_start = 0;
  for (int i = 0; i < a->warmup + a->iters; i++) {
    uint64_t want = a->base + (uint64_t)i + 1;
    if (i == a->warmup) {
      t_start = gin_time_ns();
      c_start = gin_cycles();
    }
    uint64_t c0 = gin_cycles();
    if (me == 1) lat_wait(a, v, c, want, mine);
    uint64_t c1 = gin_cycles();
    lat_send(a, v, c, peer, want, theirs, their_sig);
    if (a->issue && me == 0 && lead && i >= a->warmup)
      a->issue[i - a->warmup] = gin_cycles() - c1;
    if (me == 0) lat_wait(a, v, c, want, mine);
    if (me == 0 && lead && i >= a->warmup)
      a->samples[i - a->warmup] = gin_cycles() - c0;
  }
  if (me == 0 && lead) {
    a->samples[a->iters] = gin_time_ns() - t_start;
    a->samples[a->iters + 1] = gin_cycles() - c_start;
  }
  if (lead) *a->sm = lat_smid(); /* after the loop: nothing live across it */
}

/* clang-format off */
#define LAT_VARIANTS(X)                                                        \
  X(V_RAW_STORE) X(V_RAW_RED) X(V_RAW_DATA) X(V_RAW_DATA_RED) X(V_RAW_COPY)    \
  X(V_RAW_COPY_COLD) X(V_RAW_TABLE) X(V_RAW_PEERSIG) X(V_RAW_PEERSIG_IMM)      \
  X(V_RAW_GPU) X(V_RAW_GPU_COPY) X(V_GPU_WEAK) X(V_GPU_GATE) X(V_GPU_TREE)     \
  X(V_GPU_WAIT) X(V_GPU_PUT) X(V_LIB_WAIT) X(V_LIB_PUT) X(V_PUT) X(V_SIGNAL)
/* clang-format on */
#define LAT_KERNEL(V)                                                          \
  GIN_KERNEL(k_lat_##V, lat_args_t) {                                          \
    if (args.coop == GIN_COOP_THREAD)                                          \
      lat_loop(&args, V, GIN_COOP_THREAD);                                     \
    else if (args.coop == GIN_COOP_WARP)                                       \
      lat_loop(&args, V, GIN_COOP_WARP);                                       \
    else                                                                       \
      lat_loop(&args, V, GIN_COOP_BLOCK);                                      \
  }
LAT_VARIANTS(LAT_KERNEL)

/* Starts variant a->variant's kernel: one block of `threads`. */
static gin_result_t lat_launch(const lat_args_t *a, int threads) {
  switch (a->variant) {
#define LAT_CASE(V)                                                            \
  case V: return gin_launch(k_lat_##V, 1, threads, 0, a);
    LAT_VARIANTS(LAT_CASE)
  }
  return GIN_ERR_INVALID;
}

/* Runs variant v once at `bytes` with coop c; median and p99 (us), and
 * where `issue` is not NULL the median time rank 0 spent in each send
 * (until the send returned: fences included, not the flight); where `sm`
 * is not NULL the SM this rank's coop ran on. Raw variants only: the flag
 * flag_off bytes into the window (a multiple of 128 below PERF_DATA; its
 * own running count per line), or with on_sig signal PEERSIG_SLOT. */
static void lat_run_at(perf_env_t *env, int v, gin_coop_t c, size_t bytes,
                       double *med, double *p99, double *issue, unsigned *sm,
                       uint32_t flag_off, int on_sig) {
  if (flag_off % 128 || flag_off >= PERF_DATA) {
    fprintf(stderr, "gin-perf: flag offset %u outside [0, %d) by 128\n",
            flag_off, PERF_DATA);
    exit(2);
  }
  lat_args_t a;
  memset(&a, 0, sizeof a);
  a.flag_off = flag_off;
  a.on_sig = on_sig;
  a.dc = env->dc;
  a.win = env->win;
  a.bytes = bytes;
  a.iters = env->o.iters;
  a.warmup = env->o.warmup;
  a.variant = v;
  a.coop = c;
  a.samples = env->samples;
  if (issue) a.issue = env->samples + a.iters + 2;
  a.sm = env->samples + 2 * a.iters + 2;
  a.src = (const uint64_t *)((const char *)env->win.local + PERF_DATA);
  int slot = v == V_RAW_PEERSIG || v == V_RAW_PEERSIG_IMM || on_sig
                 ? PEERSIG_SLOT
             : v <= V_RAW_LAST ? FLAG_SLOT
                               : 0;
  /* A flag elsewhere in the window counts on its own. */
  uint64_t *base = v <= V_RAW_LAST && !on_sig && flag_off
                       ? &env->scan_base[flag_off / 128]
                       : &env->sig_base[slot];
  a.base = *base;
  PERF_CHECK(gin_comm_barrier(env->comm));
  PERF_CHECK(lat_launch(&a, perf_coop_threads(c)));
  perf_sync(env);
  *base += (uint64_t)(a.warmup + a.iters);
  *med = *p99 = 0;
  if (env->rank == 0) perf_samples(env, a.iters, med, p99);
  if (issue && env->rank == 0) {
    size_t n = (size_t)a.iters;
    uint64_t *s = (uint64_t *)malloc(sizeof(uint64_t) * (2 * n + 2));
    if (!s) exit(1);
    PERF_CHECK(gin_mem_copy(s, env->samples, sizeof(uint64_t) * (2 * n + 2)));
    double nspc = s[n + 1] ? (double)s[n] / (double)s[n + 1] : 1, p;
    perf_stats(s + n + 2, a.iters, nspc, issue, &p);
    free(s);
  }
  if (sm) {
    uint64_t w = 0;
    PERF_CHECK(gin_mem_copy(&w, a.sm, sizeof w));
    *sm = (unsigned)w;
  }
}

static void lat_run_issue(perf_env_t *env, int v, gin_coop_t c, size_t bytes,
                          double *med, double *p99, double *issue,
                          unsigned *sm) {
  lat_run_at(env, v, c, bytes, med, p99, issue, sm, 0, 0);
}

static void lat_run(perf_env_t *env, int v, gin_coop_t c, size_t bytes,
                    double *med, double *p99) {
  lat_run_issue(env, v, c, bytes, med, p99, NULL, NULL);
}

/* Emits a latency row with its ratio to `floor`, named `fname` (no
 * ratio where the floor is not positive; "" and -1: no floor at all). */
static void emit_lat(perf_env_t *env, const char *test, const char *gran,
                     size_t bytes, double med, double p99, const char *fname,
                     double floor) {
  perf_row_t r = perf_row(test, gran, bytes);
  r.median_us = med;
  r.p99_us = p99;
  r.floor = fname;
  r.floor_value = floor;
  r.ratio = floor > 0 ? med / floor : -1;
  perf_emit(env, &r);
}

void perf_raw_pingpong(perf_env_t *env, int variant, double *med, double *p99) {
  lat_run(env, variant, GIN_COOP_THREAD, 8, med, p99);
}

static void ensure_raw_floor(perf_env_t *env) {
  if (env->raw_floor_done) return;
  double med, p99;
  perf_raw_pingpong(env, V_RAW_STORE, &med, &p99);
  env->raw_floor_us = med;
  env->raw_floor_done = 1;
  perf_row_t r = perf_row("floor_raw_flag_pp", "thread", 8);
  r.median_us = med;
  r.p99_us = p99;
  r.floor = "raw_flag_pingpong";
  perf_emit(env, &r);
}

/* With --floors on a network path (tcp, ofi): its raw ping-pong of the
 * same size measured in this run (rank 0's); else -1. */
static double lat_net_floor(const perf_env_t *env, size_t bytes) {
  return perf_net_pp(env, bytes);
}

/* --launches L > 1: L kernels of variant v at `bytes`, each after a raw
 * floor kernel (its own launch, as ensure_raw_floor's): the medians over
 * the launches of their medians and p99s, and of the floors' medians.
 * Between single launches the floor moves 1.5-2.2 us with no code
 * changed; one suspect is where the two ranks' blocks land on the GPU, so
 * every launch's SMs are printed. On a network path the floor before each
 * launch is its raw ping-pong of the same size (tcp: rank 0's over
 * loopback; ofi: libfabric writes between the ranks), so each pair is
 * measured close in time: on a 16-core host that floor moves 6.8-10.8 us
 * from run to run, and 7.6-10.4 us within one run of 21 pairs while
 * gin's stays 10.5-12.6 (docs/PERFORMANCE.md, "Design figures"). */
static void lat_launches(perf_env_t *env, int v, size_t bytes, double *med,
                         double *p99, double *floor) {
  int n = env->o.launches, net = perf_net_path(env) != PERF_NET_NONE;
  double gm[PEER_MAX_LAUNCHES], gp[PEER_MAX_LAUNCHES], fm[PEER_MAX_LAUNCHES],
      fp[PEER_MAX_LAUNCHES], fp99;
  for (int k = 0; k < n; k++) {
    unsigned sm[2] = {0, 0}, all[4];
    fm[k] = fp[k] = 0;
    if (!net)
      lat_run_issue(env, V_RAW_STORE, GIN_COOP_THREAD, 8, &fm[k], &fp[k], NULL,
                    &sm[0]);
    else if (perf_net_floor_pp(env, bytes, &fm[k], &fp[k]) != 0)
      fm[k] = fp[k] = -1; /* it said why; no ratio for this launch */
    lat_run_issue(env, v, env->o.coop, bytes, &gm[k], &gp[k], NULL, &sm[1]);
    PERF_CHECK(gin_comm_allgather(env->comm, sm, all, sizeof sm));
    if (net)
      perf_note(env, "launch %d, %zu B: raw %s %.3f us, gin %.3f us (%.3f x)",
                k, bytes, perf_net_path(env) == PERF_NET_OFI ? "ofi" : "tcp",
                fm[k], gm[k], fm[k] > 0 ? gm[k] / fm[k] : -1.0);
    else
      perf_note(env,
                "launch %d, %zu B: floor %.3f us (SMs %u, %u), gin %.3f us "
                "(SMs %u, %u)",
                k, bytes, fm[k], all[0], all[2], gm[k], all[1], all[3]);
  }
  peer_launch_medians(gm, gp, n, med, p99);
  peer_launch_medians(fm, fp, n, floor, &fp99);
}

static void lat_sweep(perf_env_t *env, const char *test, int v) {
  ensure_raw_floor(env);
  for (size_t bytes = env->o.b; bytes <= env->o.e;
       bytes = perf_next_size(bytes, env->o.f)) {
    if (bytes > env->win_bytes - PERF_DATA) break;
    double med, p99, floor = env->raw_floor_us;
    const char *fname = "raw_flag_pingpong";
    if (env->o.launches > 1) {
      lat_launches(env, v, bytes, &med, &p99, &floor);
      if (perf_net_pp_name(env)) fname = perf_net_pp_name(env);
    } else {
      lat_run(env, v, env->o.coop, bytes, &med, &p99);
      double net = lat_net_floor(env, bytes);
      if (net > 0) {
        floor = net;
        fname = perf_net_pp_name(env);
      }
    }
    perf_row_t r = perf_row(test, perf_coop_name(env->o.coop), bytes);
    r.median_us = med;
    r.p99_us = p99;
    r.floor = fname;
    r.floor_value = floor;
    r.ratio = floor > 0 ? med / floor : -1;
    perf_emit(env, &r);
    if (v == V_PUT) perf_by_size_put(&env->pp, bytes, med);
    if (v == V_SIGNAL) break; /* no payload: one size */
  }
}

void perf_pingpong(perf_env_t *env) { lat_sweep(env, "pingpong", V_PUT); }

void perf_sigpp(perf_env_t *env) { lat_sweep(env, "sigpp", V_SIGNAL); }

void perf_ladder(perf_env_t *env) {
  ensure_raw_floor(env);
  perf_note(env, "ladder: the 8-byte exchange built up from the raw floor, "
                 "one library piece per step (thread-issued)");
  /* The GPU-scope rungs need the two ranks on one GPU (a release at GPU
   * scope orders nothing for another GPU's reader); both ranks see the
   * same near bit, so they skip the same rungs. */
  int peer = 1 - env->rank;
  int route = perf_route(env, peer), near = route & GIN_PATH_NEAR;
  if (!near)
    perf_note(env, "ladder: the peer is not on this GPU: GPU-scope rungs "
                   "(raw_gpu .. gpu_put) skipped");
  /* The raw and lib_ rungs are the load/store path's exchange in pieces;
   * through a proxy gin does not exchange that way, and lib_put's waiter
   * polls a word the proxy never adds to (each of its polls ran to
   * PERF_SPIN_LIMIT_NS: the ladder outlived ginrun's timeout). The put
   * and signal rungs' ratios stay to the raw floor, a load/store ping-pong
   * where the peer's window is mapped (the host target maps it even with
   * GIN_BACKEND=proxy). */
  int direct = perf_direct(env, peer);
  if (!direct)
    perf_note(env, "ladder: the peer is not reached by load/store: only the "
                   "API rungs (put, signal) run");
  double issue[V_COUNT];
  for (int v = 0; v < V_COUNT; v++) {
    double med, p99;
    issue[v] = -1;
    if ((!near && V_GPU_RUNG(v)) || (!direct && v < V_PUT)) continue;
    lat_run_issue(env, v, GIN_COOP_THREAD, 8, &med, &p99, &issue[v], NULL);
    emit_lat(env, "ladder", ladder_names[v], 8, med, p99, "raw_flag_pingpong",
             env->raw_floor_us);
  }
  /* Where the time goes within a round trip: the sender's own cost. */
  for (int v = 0; v < V_COUNT && env->rank == 0; v++) {
    if (issue[v] < 0) continue;
    perf_row_t r = perf_row("ladder_issue", ladder_names[v], 8);
    r.median_us = issue[v];
    r.p99_us = issue[v];
    perf_emit(env, &r);
  }
}

static int cmp_us(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The raw floor with its flag in each 128-byte line of the window's flag
 * area in turn, and on signal PEERSIG_SLOT (in signal 0's 128-byte line:
 * the ping-pong's), twice over: whether the floor depends on where its
 * flag lives (it does, by 256-byte granule, both of a granule's lines
 * alike: docs/PERFORMANCE.md, "Design figures"), and the floor on the
 * memory gin's ping-pong signals through. Then the put round trip
 * at 8 B against the floor on its signal line and the lines' median and
 * range. */
void perf_floorscan(perf_env_t *env) {
  ensure_raw_floor(env);
  enum { LINES = PERF_DATA / 128 };
  for (int pass = 1; pass <= 2; pass++) {
    char gran[16];
    double med, p99, line[LINES];
    snprintf(gran, sizeof gran, "line%d", pass);
    for (int k = 0; k < LINES; k++) {
      lat_run_at(env, V_RAW_STORE, GIN_COOP_THREAD, 8, &med, &p99, NULL, NULL,
                 (uint32_t)k * 128, 0);
      line[k] = med;
      emit_lat(env, "floor_scan", gran, (size_t)k * 128, med, p99,
               "raw_flag_pingpong", env->raw_floor_us);
    }
    qsort(line, LINES, sizeof line[0], cmp_us);
    double mid = (line[LINES / 2 - 1] + line[LINES / 2]) / 2;
    snprintf(gran, sizeof gran, "signal%d", pass);
    double sig, sigp;
    lat_run_at(env, V_RAW_STORE, GIN_COOP_THREAD, 8, &sig, &sigp, NULL, NULL, 0,
               1);
    emit_lat(env, "floor_scan", gran, 0, sig, sigp, "", -1);
    double put, putp;
    lat_run(env, V_PUT, GIN_COOP_THREAD, 8, &put, &putp);
    emit_lat(env, "pingpong", "thread", 8, put, putp, "raw_flag_on_signal",
             sig);
    if (env->rank == 0) /* the others' figures are 0: no quotients of them */
      perf_note(env,
                "floorscan pass %d: raw floor over %d flag lines %.3f .. "
                "%.3f us (median %.3f), on the signal line %.3f us; put 8 B "
                "%.3f us = %.3f x the floor on its signal line, %.3f x the "
                "lines' median (%.3f .. %.3f x)",
                pass, (int)LINES, line[0], line[LINES - 1], mid, sig, put,
                put / sig, put / mid, put / line[LINES - 1], put / line[0]);
  }
}

/* ------------------------------------------------------------ barrier */

typedef struct bar_args {
  gin_devcomm_t dc;
  int iters, warmup;
  gin_coop_t coop;
  uint64_t *samples;
} bar_args_t;

GIN_KERNEL(k_barrier, bar_args_t) {
  const gin_devcomm_t *dc = &args.dc;
  int lead = gin_coop_rank(args.coop) == 0 && dc->rank == 0;
  uint64_t t_start = 0, c_start = 0;
  for (int i = 0; i < args.warmup + args.iters; i++) {
    if (i == args.warmup) {
      t_start = gin_time_ns();
      c_start = gin_cycles();
    }
    uint64_t c0 = gin_cycles();
    gin_barrier(dc, gin_team_world(dc), 0, args.coop);
    if (lead && i >= args.warmup)
      args.samples[i - args.warmup] = gin_cycles() - c0;
  }
  if (lead) {
    args.samples[args.iters] = gin_time_ns() - t_start;
    args.samples[args.iters + 1] = gin_cycles() - c_start;
  }
}

void perf_barrier(perf_env_t *env) {
  ensure_raw_floor(env);
  bar_args_t a;
  memset(&a, 0, sizeof a);
  a.dc = env->dc;
  a.iters = env->o.iters;
  a.warmup = env->o.warmup;
  a.coop = env->o.coop;
  a.samples = env->samples;
  PERF_CHECK(gin_comm_barrier(env->comm));
  PERF_CHECK(gin_launch(k_barrier, 1, perf_coop_threads(a.coop), 0, &a));
  perf_sync(env);
  double med = 0, p99 = 0;
  if (env->rank == 0) perf_samples(env, a.iters, &med, &p99);
  perf_row_t r = perf_row("barrier", perf_coop_name(a.coop), 0);
  r.median_us = med;
  r.p99_us = p99;
  /* A two-rank barrier is one flag exchange each way at once: half a
   * ping-pong round trip is its floor. */
  r.floor = "half_raw_flag_pingpong";
  r.floor_value = env->raw_floor_us / 2;
  r.ratio = env->raw_floor_us > 0 ? med / (env->raw_floor_us / 2) : -1;
  perf_emit(env, &r);
}
