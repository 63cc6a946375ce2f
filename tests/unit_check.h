/*
 * Non-fatal checks for unit tests of host code: a failed CHECK prints where
 * and why (with gin's last error) and counts; main returns
 * failures ? 1 : 0.
 */
#ifndef GIN_TEST_UNIT_CHECK_H
#define GIN_TEST_UNIT_CHECK_H

#include <stdio.h>

#include "gin/gin.h"

static int failures;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);          \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, " (last error: %s)\n", gin_last_error());                \
      failures++;                                                              \
    }                                                                          \
  } while (0)

#endif
