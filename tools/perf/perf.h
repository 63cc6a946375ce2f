/*
 * gin-perf's shared harness: options, the two-rank set-up every test runs
 * on, sample statistics, and result rows (terminal table, CSV, JSON).
 * Each test family lives in its own file (lat.c, bw.c, floors.c,
 * baseline.c) with its kernels; gin_perf.c parses options and runs them.
 */
#ifndef GIN_PERF_H
#define GIN_PERF_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gin/device/gin_device.h"
#include "gin/gin.h"
#include "perf/perf_target.h"

#define PERF_DATA 4096 /* window: [0, PERF_DATA) flags, then data */
#define PERF_SPIN_LIMIT_NS 10000000000ull
#define PERF_MAX_SAMPLES (1 << 20)

#define PERF_CHECK(call)                                                       \
  do {                                                                         \
    gin_result_t r_ = (call);                                                  \
    if (r_ != GIN_SUCCESS) {                                                   \
      fprintf(stderr, "gin-perf: %s: %s: %s\n", #call, gin_strerror(r_),       \
              gin_last_error());                                               \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

typedef struct perf_opts {
  const char *test;
  size_t b, e;
  double f;
  int iters, warmup, blocks, threads, contexts, reps;
  int launches; /* --launches: kernels per ping-pong size, with the floor */
  gin_coop_t coop;
  int floors; /* --floors: also the CPU-side floors */
  int raw;    /* --raw: bw also runs its pattern as a plain copy kernel */
  const char *csv, *json;
} perf_opts_t;

/* Figures by message size (medians in us, or GB/s), up to 64 sizes: one
 * test's figures kept for another's ratios. */
typedef struct perf_by_size {
  int n;
  size_t bytes[64];
  double v[64];
} perf_by_size_t;

/* Records `v` for `bytes` (nothing past 64 sizes). */
static inline void perf_by_size_put(perf_by_size_t *t, size_t bytes, double v) {
  if (t->n < 64) {
    t->bytes[t->n] = bytes;
    t->v[t->n++] = v;
  }
}

/* The figure recorded for `bytes`, or -1 where none is. */
static inline double perf_by_size_get(const perf_by_size_t *t, size_t bytes) {
  for (int i = 0; i < t->n; i++)
    if (t->bytes[i] == bytes) return t->v[i];
  return -1;
}

/* What every test runs on: two ranks, one window of `win_bytes` (flags in
 * the first PERF_DATA bytes, then data), a device communicator, and a
 * device buffer for samples. */
typedef struct perf_env {
  perf_opts_t o;
  gin_comm_t comm;
  int rank;
  void *mem, *copy_dst; /* window memory; a second buffer for copy floors */
  size_t win_bytes;
  gin_window_t win;
  gin_devcomm_t dc;
  uint64_t *samples;    /* device memory, 2 * o.iters + 3 words */
  uint64_t sig_base[8]; /* signal values consumed so far, per signal */
  uint64_t scan_base[PERF_DATA / 128]; /* floorscan: per flag line */
  const char *path;      /* "direct", "proxy-ipc", ... from the settings */
  int raw_floor_done;    /* the same on both ranks */
  double raw_floor_us;   /* raw flag ping-pong, once measured (rank 0) */
  double hostflag_us;    /* GPU <-> pinned host flag, once measured */
  perf_by_size_t tcp_pp; /* --floors: raw TCP ping-pong (polling) medians */
  perf_by_size_t tcp_bw; /* --floors: raw TCP stream GB/s */
  perf_by_size_t ofi_pp; /* --floors on ofi: raw libfabric write ping-pong */
  perf_by_size_t ofi_bw; /* --floors on ofi: raw libfabric write stream */
  void *ofi_floor;       /* the libfabric floors' endpoint, once opened */
  perf_by_size_t pp;     /* gin ping-pong medians, for ratios */
} perf_env_t;

/* The devcomm's route byte to world rank w (0 or 1): its GIN_PATH_* with
 * GIN_PATH_NEAR where signals to w are ordered at GPU scope
 * (GIN_NEAR_SCOPE), as device code reads it: what the ladder's GPU-scope
 * rungs ask. */
static inline int perf_route(const perf_env_t *env, int w) {
  return (int)((env->dc.path_inline >> (8 * w)) & 0xff);
}

/* Whether this rank reaches rank w by load/store (gin_comm_peer_path). */
static inline int perf_direct(const perf_env_t *env, int w) {
  int path = GIN_PATH_NONE;
  if (gin_comm_peer_path(env->comm, w, &path) != GIN_SUCCESS) return 0;
  path &= ~GIN_PATH_NEAR;
  return path == GIN_PATH_DIRECT || path == GIN_PATH_SELF;
}

/* Whether the run goes through the proxy and a network transport between
 * two ranks of one machine (both in the lsa team), and so which floors
 * its figures are read against: PERF_NET_TCP (GIN_TRANSPORT=tcp: raw TCP
 * over loopback), PERF_NET_OFI (ofi: raw libfabric writes over the same
 * provider), else PERF_NET_NONE. */
enum { PERF_NET_NONE, PERF_NET_TCP, PERF_NET_OFI };
static inline int perf_net_path(const perf_env_t *env) {
  if (perf_direct(env, 1 - env->rank) || env->dc.lsa_size != 2)
    return PERF_NET_NONE;
  if (!strcmp(env->path, "proxy-tcp")) return PERF_NET_TCP;
  if (!strcmp(env->path, "proxy-ofi")) return PERF_NET_OFI;
  return PERF_NET_NONE;
}
static inline int perf_tcp_path(const perf_env_t *env) {
  return perf_net_path(env) == PERF_NET_TCP;
}
/* The network path's ping-pong and stream floors (names, figures by size
 * from --floors), or NULL / -1 off one. */
static inline const char *perf_net_pp_name(const perf_env_t *env) {
  int n = perf_net_path(env);
  return n == PERF_NET_TCP   ? "raw_tcp_pingpong"
         : n == PERF_NET_OFI ? "raw_ofi_write_pingpong"
                             : NULL;
}
static inline const char *perf_net_bw_name(const perf_env_t *env) {
  int n = perf_net_path(env);
  return n == PERF_NET_TCP   ? "raw_tcp_stream_gbps"
         : n == PERF_NET_OFI ? "raw_ofi_write_stream_gbps"
                             : NULL;
}
static inline double perf_net_pp(const perf_env_t *env, size_t bytes) {
  int n = perf_net_path(env);
  return n == PERF_NET_TCP   ? perf_by_size_get(&env->tcp_pp, bytes)
         : n == PERF_NET_OFI ? perf_by_size_get(&env->ofi_pp, bytes)
                             : -1;
}
static inline double perf_net_bw(const perf_env_t *env, size_t bytes) {
  int n = perf_net_path(env);
  return n == PERF_NET_TCP   ? perf_by_size_get(&env->tcp_bw, bytes)
         : n == PERF_NET_OFI ? perf_by_size_get(&env->ofi_bw, bytes)
                             : -1;
}

/* One result. Unused numbers are negative (left empty in CSV/JSON). */
typedef struct perf_row {
  const char *test, *gran;
  size_t bytes;
  double median_us, p99_us, gbps, mops;
  const char *floor; /* what the ratio is to */
  double floor_value, ratio;
} perf_row_t;

perf_row_t perf_row(const char *test, const char *gran, size_t bytes);
/* Prints the row (rank 0) under a header for its test, adds it to CSV and
 * JSON output. */
void perf_emit(perf_env_t *env, const perf_row_t *row);
void perf_note(perf_env_t *env, const char *fmt, ...);
void perf_report_open(perf_env_t *env);
void perf_report_close(perf_env_t *env);

/* Median and p99 of n cycle samples, turned into us by ns_per_cycle. */
void perf_stats(uint64_t *s, int n, double ns_per_cycle, double *med,
                double *p99);
/* Median and max of n doubles (sorted in place). */
void perf_stats_d(double *s, int n, double *med, double *max);
/* Copies `iters` cycle samples plus [total ns, total cycles] back from the
 * device and reduces them to median/p99 us. */
void perf_samples(perf_env_t *env, int iters, double *med, double *p99);

const char *perf_coop_name(gin_coop_t c);
/* Threads a coop of this kind needs in a 1-block launch. */
int perf_coop_threads(gin_coop_t c);
/* Next size of a -b/-e/-f sweep. */
size_t perf_next_size(size_t bytes, double f);
/* Barrier, then checks the async error after a test kernel. */
void perf_sync(perf_env_t *env);

/* Test families. Each returns after emitting its rows on rank 0. */
void perf_floors_gpu(perf_env_t *env); /* raw flag, host flag, copies */
void perf_floors_cpu(perf_env_t *env); /* tcp, shm (floors_host.c) */
/* The network path's ping-pong floor of `bytes`, measured now: both ranks
 * call it; rank 0 gets the median and p99 (us). Returns 0, or -1 where it
 * failed (said why) or the path has none. */
int perf_net_floor_pp(perf_env_t *env, size_t bytes, double *med, double *p99);
void perf_floors_close(perf_env_t *env); /* what the floors left open */
#if GIN_PERF_OFI
/* The libfabric floors' endpoint (net_floor.c), opened at first use with
 * a buffer for the largest size asked (-e), or NULL (said why). Both
 * ranks call. */
struct floor_ofi *perf_ofi_floor(perf_env_t *env);
#endif
void perf_pingpong(perf_env_t *env);  /* put+signal, -g */
void perf_sigpp(perf_env_t *env);     /* signal only */
void perf_ladder(perf_env_t *env);    /* latency decomposition */
void perf_floorscan(perf_env_t *env); /* the raw floor per flag line */
void perf_barrier(perf_env_t *env);   /* gin_barrier */
void perf_bw(perf_env_t *env, int bidir);
void perf_rate(perf_env_t *env);     /* message rate */
void perf_ring(perf_env_t *env);     /* ring alone (null transport) */
void perf_baseline(perf_env_t *env); /* host-initiated ping-pong */

/* The raw flag ping-pong kernel's driver (lat.c), also the floor. */
void perf_raw_pingpong(perf_env_t *env, int variant, double *med, double *p99);

#endif
