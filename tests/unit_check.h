/*
 * Non-fatal checks for unit tests of host code: a failed CHECK prints where
 * and why (with gin's last error) and counts; main returns
 * failures ? 1 : 0. Tests that do not link gin define UNIT_CHECK_NO_GIN
 * first (no last error then).
 */
#ifndef GIN_TEST_UNIT_CHECK_H
#define GIN_TEST_UNIT_CHECK_H

#include <stdio.h>

#ifdef UNIT_CHECK_NO_GIN
#define UNIT_CHECK_END() fprintf(stderr, "\n")
#else
#include "gin/gin.h"
#define UNIT_CHECK_END()                                                       \
  fprintf(stderr, " (last error: %s)\n", gin_last_error())
#endif

static int failures;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);          \
      fprintf(stderr, __VA_ARGS__);                                            \
      UNIT_CHECK_END();                                                        \
      failures++;                                                              \
    }                                                                          \
  } while (0)

#endif
