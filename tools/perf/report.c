/*
 * gin-perf results: a table on the terminal (one header per test), CSV and
 * JSON files, and the sample statistics behind each row. Only rank 0
 * reports.
 */
#include <stdarg.h>
#include <string.h>

#include "perf/peer_common.h"
#include "perf/perf.h"

static FILE *csv_f, *json_f;
static int json_rows;
static const char *last_test;

perf_row_t perf_row(const char *test, const char *gran, size_t bytes) {
  perf_row_t r;
  memset(&r, 0, sizeof r);
  r.test = test;
  r.gran = gran;
  r.bytes = bytes;
  r.median_us = r.p99_us = r.gbps = r.mops = -1;
  r.floor = "";
  r.floor_value = r.ratio = -1;
  return r;
}

void perf_report_open(perf_env_t *env) {
  if (env->rank != 0) return;
  if (env->o.csv) csv_f = peer_csv_open("gin-perf", env->o.csv);
  if (env->o.json) {
    json_f = fopen(env->o.json, "w");
    if (!json_f)
      fprintf(stderr, "gin-perf: cannot write %s\n", env->o.json);
    else
      fprintf(json_f, "{\"target\": \"%s\", \"path\": \"%s\", \"rows\": [",
              perf_target_name(), env->path);
  }
}

void perf_report_close(perf_env_t *env) {
  if (csv_f) fclose(csv_f);
  if (json_f) {
    fprintf(json_f, "\n]}\n");
    fclose(json_f);
  }
  csv_f = json_f = NULL;
}

void perf_note(perf_env_t *env, const char *fmt, ...) {
  if (env->rank != 0) return;
  va_list ap;
  va_start(ap, fmt);
  printf("# ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
}

void perf_emit(perf_env_t *env, const perf_row_t *r) {
  if (env->rank != 0) return;
  /* A header when the test group (the name up to '_') changes. */
  size_t g = strcspn(r->test, "_");
  if (!last_test || strncmp(last_test, r->test, g) != 0 ||
      (last_test[g] != '_' && last_test[g] != '\0')) {
    printf("%-19s %-12s %9s %10s %10s %10s %10s %8s  %s\n", "test", "gran",
           "bytes", "median_us", "p99_us", "GB/s", "Mops/s", "ratio",
           "ratio to");
    last_test = r->test;
  }
  printf("%-19s %-12s %9zu ", r->test, r->gran, r->bytes);
  double v[] = {r->median_us, r->p99_us, r->gbps, r->mops, r->ratio};
  for (int i = 0; i < 5; i++) {
    int w = i == 4 ? 8 : 10;
    if (v[i] < 0)
      printf("%*s ", w, "-");
    else
      printf("%*.3f ", w, v[i]);
  }
  printf(" %s", r->floor);
  if (r->floor_value >= 0) printf(" (%.3f)", r->floor_value);
  printf("\n");
  fflush(stdout);
  if (csv_f)
    peer_csv_row(csv_f, perf_target_name(), env->path, r->test, r->gran,
                 r->bytes, v, r->floor, r->floor_value, r->ratio);
  if (json_f) {
    const char *names[] = {"median_us", "p99_us", "gbps", "mops", "ratio"};
    fprintf(json_f,
            "%s\n  {\"test\": \"%s\", \"granularity\": \"%s\", \"bytes\": %zu",
            json_rows++ ? "," : "", r->test, r->gran, r->bytes);
    for (int i = 0; i < 5; i++)
      if (v[i] >= 0) fprintf(json_f, ", \"%s\": %.6g", names[i], v[i]);
    if (r->floor[0]) fprintf(json_f, ", \"floor\": \"%s\"", r->floor);
    if (r->floor_value >= 0)
      fprintf(json_f, ", \"floor_value\": %.6g", r->floor_value);
    fprintf(json_f, "}");
  }
}

void perf_stats(uint64_t *s, int n, double ns_per_cycle, double *med,
                double *p99) {
  peer_stats_cycles(s, n, ns_per_cycle, med, p99);
}

void perf_stats_d(double *s, int n, double *med, double *max) {
  peer_stats(s, n, 1.0, med, max);
}

void perf_samples(perf_env_t *env, int iters, double *med, double *p99) {
  size_t bytes = sizeof(uint64_t) * (size_t)(iters + 2);
  uint64_t *s = (uint64_t *)malloc(bytes);
  if (!s) exit(1);
  PERF_CHECK(gin_mem_copy(s, env->samples, bytes));
  double nspc = s[iters + 1] ? (double)s[iters] / (double)s[iters + 1] : 1;
  perf_stats(s, iters, nspc, med, p99);
  free(s);
}

const char *perf_coop_name(gin_coop_t c) {
  return c == GIN_COOP_THREAD ? "thread"
         : c == GIN_COOP_WARP ? "warp"
                              : "block";
}

int perf_coop_threads(gin_coop_t c) {
  if (strcmp(perf_target_name(), "cuda") != 0) return 1;
  return c == GIN_COOP_THREAD ? 1 : c == GIN_COOP_WARP ? 32 : 512;
}

size_t perf_next_size(size_t bytes, double f) {
  return peer_next_size(bytes, f);
}

void perf_sync(perf_env_t *env) {
  PERF_CHECK(gin_stream_synchronize(0));
  PERF_CHECK(gin_comm_get_async_error(env->comm));
  PERF_CHECK(gin_comm_barrier(env->comm));
}
