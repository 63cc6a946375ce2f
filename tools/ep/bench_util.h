/*
 * What the EP benchmarks (gin-ep-bench, gin-epn-bench) share: ending on a
 * failed gin call with the call, gin's error and its message, and sorting
 * timings for medians and percentiles.
 */
#ifndef GIN_TOOLS_EP_BENCH_UTIL_H
#define GIN_TOOLS_EP_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "gin/gin.h"

/* Runs call; on an error prints "PROG: call: error: message" and exits 1. */
#define BENCH_CK(prog, call)                                                   \
  do {                                                                         \
    gin_result_t r_ = (call);                                                  \
    if (r_ != GIN_SUCCESS) {                                                   \
      fprintf(stderr, "%s: %s: %s: %s\n", prog, #call, gin_strerror(r_),       \
              gin_last_error());                                               \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* qsort's comparison of doubles, ascending. */
static inline int bench_cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of v[0..n) (n >= 1), sorting v. */
static inline double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp_d);
  return v[n / 2];
}

#endif
