/*
 * peer_common.h: what gin-perf and its peer benchmarks (nccl/nccl_perf.c,
 * nvshmem/nvshmem_perf.cu) share so that their rows join: gin-perf's
 * common options and their defaults, the size sweep, the sample
 * statistics, and gin-perf's CSV columns.
 *
 * Static inline C (C11 + POSIX), usable from C and from CUDA C++. It
 * depends on the C library only: nothing of gin, of CUDA or of a peer
 * library. gin-perf uses its option defaults (gin_perf.c), statistics and
 * CSV writer (report.c); the peer programs use all of it.
 */
#ifndef GIN_PERF_PEER_COMMON_H
#define GIN_PERF_PEER_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PEER_MAX_ITERS (1 << 20) /* -n at most, as gin-perf */
#define PEER_MAX_LAUNCHES 64     /* --launches at most */
/* Puts per thread (rate) or per block (bw) at most, each to its own
 * destination; PEER_PUTS(-n) is how many a run makes. */
#define PEER_MOST_PUTS 100
#define PEER_PUTS(iters) ((iters) < PEER_MOST_PUTS ? (iters) : PEER_MOST_PUTS)
/* Bytes the rate test puts to: one 8-byte slot per put. */
#define PEER_RATE_BYTES(blocks, threads, iters)                                \
  ((size_t)(blocks) * (size_t)(threads) * (size_t)PEER_PUTS(iters) * 8)
/* Bytes for bw's distinct destinations: PEER_MOST_PUTS of the largest
 * size per block, within `budget`, and at least one per block. */
static inline size_t peer_bw_bytes(int blocks, size_t largest, size_t budget) {
  size_t one = (size_t)blocks * largest, b = one * PEER_MOST_PUTS;
  if (b > budget) b = budget;
  return b < one ? one : b;
}

/* Who issues a ping-pong (-g), as gin-perf's coops. */
enum { PEER_GRAN_THREAD = 0, PEER_GRAN_WARP, PEER_GRAN_BLOCK };

/* gin-perf's options that a peer benchmark takes. */
typedef struct peer_opts {
  const char *test, *csv;
  size_t b, e; /* sizes: -b MIN -e MAX, times -f FACTOR */
  double f;
  int iters, warmup, blocks, threads, reps, gran, contexts;
  int launches; /* --launches: kernels per ping-pong size (1) */
} peer_opts_t;

/* gin-perf's option defaults, set on *o of any options struct with these
 * fields (peer_opts_t; gin-perf's perf_opts_t), everything else zero. A
 * macro so that gin-perf and its peers share one set of defaults. */
#define PEER_OPTS_INIT(o)                                                      \
  do {                                                                         \
    memset((o), 0, sizeof *(o));                                               \
    (o)->test = "all";                                                         \
    (o)->b = 8;                                                                \
    (o)->e = 1 << 20;                                                          \
    (o)->f = 2;                                                                \
    (o)->iters = 1000;                                                         \
    (o)->warmup = 100;                                                         \
    (o)->threads = 128;                                                        \
    (o)->reps = 5;                                                             \
    (o)->launches = 1;                                                         \
  } while (0)

/* peer_opts_parse flags. PEER_OPTS_GRID_UNUSED: -g, -c, --blocks,
 * --threads and --floors are accepted for gin-perf's command lines and
 * unused (-g takes any value; --blocks and --threads are not checked). */
#define PEER_OPTS_GRID_UNUSED 1u

/* Monotonic wall clock, seconds. */
static inline double peer_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Next size of a -b/-e/-f sweep (at least one byte more). */
static inline size_t peer_next_size(size_t bytes, double f) {
  size_t n = (size_t)((double)bytes * f);
  return n > bytes ? n : bytes + 1;
}

static inline int peer_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static inline int peer_cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median and p99 of n cycle samples (sorted in place), in us through
 * ns_per_cycle. n >= 1. */
static inline void peer_stats_cycles(uint64_t *s, int n, double ns_per_cycle,
                                     double *med_out, double *p99_out) {
  qsort(s, (size_t)n, sizeof *s, peer_cmp_u64);
  *med_out = (double)s[n / 2] * ns_per_cycle / 1000.0;
  *p99_out = (double)s[(size_t)(n * 0.99)] * ns_per_cycle / 1000.0;
}

/* Median and the q quantile (1.0: the maximum) of n samples, sorted in
 * place. n >= 1. */
static inline void peer_stats(double *s, int n, double q, double *med_out,
                              double *hi_out) {
  qsort(s, (size_t)n, sizeof *s, peer_cmp_d);
  *med_out = s[n / 2];
  size_t i = (size_t)(n * q);
  *hi_out = s[i < (size_t)n ? i : (size_t)n - 1];
}

/* The medians of `n` launches' per-launch medians and p99s (sorted in
 * place): what a ping-pong size reports with --launches. n >= 1. */
static inline void peer_launch_medians(double *med, double *p99, int n,
                                       double *med_out, double *p99_out) {
  double hi;
  peer_stats(med, n, 1.0, med_out, &hi);
  peer_stats(p99, n, 1.0, p99_out, &hi);
}

/* Stores option `a` with its value `v` in *o, any options struct with
 * these fields (peer_opts_t; gin-perf's perf_opts_t), when it is one of
 * the valued options every benchmark takes but -g (whose field differs):
 * 1 when stored, else 0. A macro for the same reason as PEER_OPTS_INIT. */
#define PEER_OPTS_SET_VALUED(o, a, v)                                          \
  (!strcmp((a), "-b")           ? ((o)->b = strtoull((v), NULL, 0), 1)         \
   : !strcmp((a), "-e")         ? ((o)->e = strtoull((v), NULL, 0), 1)         \
   : !strcmp((a), "-f")         ? ((o)->f = atof(v), 1)                        \
   : !strcmp((a), "-n")         ? ((o)->iters = atoi(v), 1)                    \
   : !strcmp((a), "-w")         ? ((o)->warmup = atoi(v), 1)                   \
   : !strcmp((a), "-c")         ? ((o)->contexts = atoi(v), 1)                 \
   : !strcmp((a), "--blocks")   ? ((o)->blocks = atoi(v), 1)                   \
   : !strcmp((a), "--threads")  ? ((o)->threads = atoi(v), 1)                  \
   : !strcmp((a), "--reps")     ? ((o)->reps = atoi(v), 1)                     \
   : !strcmp((a), "--launches") ? ((o)->launches = atoi(v), 1)                 \
   : !strcmp((a), "--csv")      ? ((o)->csv = (v), 1)                          \
                                : 0)

/* Stores option `a` with its value `v` when it is one of the common
 * valued options (-g: thread, warp or block only). Returns 1 when stored,
 * 0 when not one of them. */
static inline int peer_opts_set(peer_opts_t *o, const char *a, const char *v) {
  if (PEER_OPTS_SET_VALUED(o, a, v))
    return 1;
  else if (!strcmp(a, "-g") && !strcmp(v, "thread"))
    o->gran = PEER_GRAN_THREAD;
  else if (!strcmp(a, "-g") && !strcmp(v, "warp"))
    o->gran = PEER_GRAN_WARP;
  else if (!strcmp(a, "-g") && !strcmp(v, "block"))
    o->gran = PEER_GRAN_BLOCK;
  else
    return 0;
  return 1;
}

/* Parses a peer benchmark's command line with gin-perf's defaults: a test
 * name out of `tests` (NULL-terminated), -h/--help (usage on stdout, exit
 * 0), the common valued options, `flags` (PEER_OPTS_*). Anything else, or
 * values out of range, ends the program with status 2 and a message
 * starting with `prog`. */
static inline void peer_opts_parse(int argc, char **argv, const char *prog,
                                   const char *const *tests, unsigned flags,
                                   void (*usage)(FILE *), peer_opts_t *o) {
  int grid = !(flags & PEER_OPTS_GRID_UNUSED);
  PEER_OPTS_INIT(o);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int t = 0;
    while (tests[t] && strcmp(a, tests[t]))
      t++;
    if (tests[t]) {
      o->test = a;
      continue;
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      exit(0);
    }
    if (!grid && !strcmp(a, "--floors")) continue;
    if (!v) {
      fprintf(stderr, "%s: unknown test or option: %s\n", prog, a);
      usage(stderr);
      exit(2);
    }
    i++;
    if (!peer_opts_set(o, a, v) && (grid || strcmp(a, "-g"))) {
      fprintf(stderr, "%s: unknown option %s %s\n", prog, a, v);
      usage(stderr);
      exit(2);
    }
  }
  if (o->b < 1 || o->e < o->b || o->f <= 1 || o->iters < 1 ||
      o->iters > PEER_MAX_ITERS || o->warmup < 0 || o->reps < 1 ||
      o->launches < 1 || o->launches > PEER_MAX_LAUNCHES ||
      (grid && (o->threads < 1 || o->threads > 1024 || o->blocks < 0))) {
    fprintf(stderr,
            "%s: need 1 <= -b <= -e, -f > 1, 1 <= -n <= %d, -w >= 0, "
            "%s--reps >= 1, 1 <= --launches <= %d\n",
            prog, PEER_MAX_ITERS, grid ? "1 <= --threads <= 1024, " : "",
            PEER_MAX_LAUNCHES);
    exit(2);
  }
}

/* ------------------------------------------------- gin-perf's columns */

/* Opens `path` for writing with gin-perf's CSV header; NULL (and a message
 * starting with `prog`) when it cannot. */
static inline FILE *peer_csv_open(const char *prog, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f)
    fprintf(stderr, "%s: cannot write %s\n", prog, path);
  else
    fputs("target,path,test,granularity,bytes,median_us,p99_us,gbps,mops,"
          "floor,floor_value,ratio\n",
          f);
  return f;
}

static inline void peer_csv_num(FILE *f, double v) {
  if (v < 0)
    fputc(',', f);
  else
    fprintf(f, ",%.4g", v);
}

/* One CSV row in gin-perf's columns, flushed. v: median_us, p99_us, gbps,
 * mops. Negative numbers are left empty. */
static inline void peer_csv_row(FILE *f, const char *target, const char *path,
                                const char *test, const char *gran,
                                size_t bytes, const double *v,
                                const char *floor, double floor_value,
                                double ratio) {
  fprintf(f, "%s,%s,%s,%s,%zu", target, path, test, gran, bytes);
  for (int i = 0; i < 4; i++)
    peer_csv_num(f, v[i]);
  fprintf(f, ",%s", floor);
  peer_csv_num(f, floor_value);
  peer_csv_num(f, ratio);
  fputc('\n', f);
  fflush(f);
}

/* A peer benchmark's results: a terminal table and, when csv is set,
 * gin-perf's CSV columns (target "cuda", floor columns empty). */
typedef struct peer_report {
  FILE *csv;
  const char *path;            /* the CSV's path column: "nccl", ... */
  int test_w, gran_w, bytes_w; /* terminal column widths */
  int nv;                      /* numbers shown: median, p99, GB/s, Mops/s */
  const char *last;            /* the test under the last header */
} peer_report_t;

/* One result: a header when the test changes, a table row, a CSV row.
 * v: median_us, p99_us, gbps, mops; negative numbers show as "-" and are
 * left empty. Call on the reporting rank only. */
static inline void peer_emit(peer_report_t *r, const char *test,
                             const char *gran, size_t bytes, const double *v) {
  static const char *const names[] = {"median_us", "p99_us", "GB/s", "Mops/s"};
  if (!r->last || strcmp(r->last, test) != 0) {
    printf("%-*s %-*s %*s", r->test_w, "test", r->gran_w, "gran", r->bytes_w,
           "bytes");
    for (int i = 0; i < r->nv; i++)
      printf(" %10s", names[i]);
    printf("\n");
  }
  r->last = test;
  printf("%-*s %-*s %*zu ", r->test_w, test, r->gran_w, gran, r->bytes_w,
         bytes);
  for (int i = 0; i < r->nv; i++)
    if (v[i] < 0)
      printf("%10s ", "-");
    else
      printf("%10.3f ", v[i]);
  printf("\n");
  fflush(stdout);
  if (r->csv)
    peer_csv_row(r->csv, "cuda", r->path, test, gran, bytes, v, "", -1, -1);
}

#endif
