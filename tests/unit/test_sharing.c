/*
 * Ranks sharing a time-sliced GPU (src/comm/sharing.h), case by case: who
 * counts as sharing, how many GPUs, which rank warns for the job, the
 * warning's counts, rank list, cost and fix, the list cut short in a
 * small buffer or a large job, and device entries out of range. Exit 0
 * pass, 1 fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/sharing.h"

#include "unit_check.h"

#define MAXN 1024

static int dev_of[MAXN];
static uint8_t sliced[MAXN];

/* n ranks, rank i on device first_rank_of(i), every device time-sliced
 * or none. */
static void job(int n, int ranks_per_gpu, int sliced_all) {
  for (int i = 0; i < n; i++) {
    dev_of[i] = i - i % ranks_per_gpu;
    sliced[i] = (uint8_t)sliced_all;
  }
}

/* Which ranks warn: exactly `want` (or none for -1), with the text. */
static void expect_warner(int n, int want, const char *what, char *msg,
                          size_t len) {
  char other[1024];
  for (int r = 0; r < n; r++) {
    int got = gin_sharing_note(n, dev_of, sliced, r, r == want ? msg : other,
                               r == want ? len : sizeof other);
    CHECK(got == (r == want), "%s: rank %d warns %d", what, r, got);
    if (r != want)
      CHECK(other[0] == '\0', "%s: rank %d wrote \"%s\"", what, r, other);
  }
}

static void expect_counts(int n, int count, int devices, int first,
                          const char *what) {
  int d = -7, f = -7;
  int c = gin_sharing_sliced(n, dev_of, sliced, &d, &f);
  CHECK(c == count && d == devices && f == first,
        "%s: %d ranks on %d devices from rank %d, expected %d on %d from %d",
        what, c, d, f, count, devices, first);
}

int main(void) {
  char msg[1024];

  /* 4 ranks on one GPU without MPS: rank 0 tells. */
  job(4, 4, 1);
  expect_counts(4, 4, 1, 0, "4 on 1, sliced");
  expect_warner(4, 0, "4 on 1, sliced", msg, sizeof msg);
  CHECK(strstr(msg, "4 ranks share 1 GPU without MPS (ranks 0-3)") == msg,
        "text: %s", msg);
  CHECK(strstr(msg, "milliseconds instead of microseconds"), "cost: %s", msg);
  CHECK(strstr(msg, "nvidia-cuda-mps-control -d"), "fix: %s", msg);
  CHECK(strstr(msg, "ginrun"), "ginrun: %s", msg);
  CHECK(strstr(msg, "GIN_MPS=0"), "setting: %s", msg);

  /* The same under MPS, or one rank per GPU, or one rank: silence. */
  job(4, 4, 0);
  expect_counts(4, 0, 0, -1, "4 on 1, MPS");
  expect_warner(4, -1, "4 on 1, MPS", msg, sizeof msg);
  job(4, 1, 1);
  expect_counts(4, 0, 0, -1, "4 on 4");
  expect_warner(4, -1, "4 on 4", msg, sizeof msg);
  job(1, 1, 1);
  expect_counts(1, 0, 0, -1, "1 rank");
  expect_counts(0, 0, 0, -1, "no ranks");

  /* 8 ranks, 2 a GPU: 4 GPUs, all shared. */
  job(8, 2, 1);
  expect_counts(8, 8, 4, 0, "8 on 4");
  expect_warner(8, 0, "8 on 4", msg, sizeof msg);
  CHECK(strstr(msg, "8 ranks share 4 GPUs without MPS (ranks 0-7)") == msg,
        "text: %s", msg);

  /* Ranks 0-1 share a GPU under MPS, 2-3 one without, 4 and 5 are alone:
   * rank 2 tells, naming 2 ranks on 1 GPU. */
  job(6, 2, 0);
  sliced[2] = sliced[3] = 1;
  dev_of[4] = 4;
  dev_of[5] = 5;
  sliced[4] = sliced[5] = 1;
  expect_counts(6, 2, 1, 2, "mixed");
  expect_warner(6, 2, "mixed", msg, sizeof msg);
  CHECK(strstr(msg, "2 ranks share 1 GPU without MPS (ranks 2-3)") == msg,
        "text: %s", msg);

  /* Ranges: ranks 1, 3-4 and 7 on one GPU, the others alone. */
  for (int i = 0; i < 8; i++) {
    dev_of[i] = i;
    sliced[i] = 1;
  }
  dev_of[3] = dev_of[4] = dev_of[7] = 1;
  expect_counts(8, 4, 1, 1, "ranges");
  expect_warner(8, 1, "ranges", msg, sizeof msg);
  CHECK(strstr(msg, "(ranks 1, 3-4, 7)"), "ranges: %s", msg);

  /* 1024 ranks, every other on one of two GPUs: 512 ranges do not fit;
   * the list ends with ", ..." and the text is whole otherwise. */
  for (int i = 0; i < MAXN; i++) {
    dev_of[i] = i % 2 ? 1 : 0;
    sliced[i] = 1;
  }
  expect_counts(MAXN, MAXN, 2, 0, "1024 alternating");
  job(MAXN, 2, 1);
  for (int i = 0; i < MAXN; i += 4) /* runs of 2 broken by MPS pairs */
    sliced[i] = sliced[i + 1] = 0;
  expect_counts(MAXN, MAXN / 2, MAXN / 4, 2, "1024 broken");
  expect_warner(MAXN, 2, "1024 broken", msg, sizeof msg);
  CHECK(strstr(msg, "512 ranks share 256 GPUs without MPS (ranks 2-3, 6-7, "),
        "long: %s", msg);
  CHECK(strstr(msg, ", ...): they take turns"), "cut: %s", msg);
  CHECK(strstr(msg, "GIN_MPS=0 silences this"), "whole text: %s", msg);

  /* A small buffer: truncated, NUL-terminated. */
  job(4, 4, 1);
  char small[16];
  memset(small, 'x', sizeof small);
  CHECK(gin_sharing_note(4, dev_of, sliced, 0, small, sizeof small) == 1,
        "small buffer");
  CHECK(memchr(small, '\0', sizeof small) != NULL, "small not terminated");
  CHECK(strncmp(small, "4 ranks share 1", sizeof small - 1) == 0, "small: %s",
        small);

  /* Device entries out of range count as alone. */
  job(4, 4, 1);
  dev_of[1] = -1;
  dev_of[2] = 99;
  expect_counts(4, 2, 1, 0, "out of range");
  expect_warner(4, 0, "out of range", msg, sizeof msg);
  CHECK(strstr(msg, "2 ranks share 1 GPU without MPS (ranks 0, 3)") == msg,
        "text: %s", msg);

  if (failures)
    fprintf(stderr, "%d failure(s)\n", failures);
  else
    printf("sharing: all cases pass\n");
  return failures ? 1 : 0;
}
