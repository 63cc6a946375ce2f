/*
 * Shared by the libFuzzer harnesses: the fixed job secret the decoders are
 * checked against, and the invariant check (a violated invariant traps, so
 * libFuzzer records the input as a crash).
 */
#ifndef GIN_FUZZ_COMMON_H
#define GIN_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The job secret every harness uses; the seed corpus carries it. */
static const uint8_t gin_fuzz_secret[16] = {0x5e, 0xc7, 0x01, 0x02, 0x03, 0x04,
                                            0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
                                            0x0b, 0x0c, 0x0d, 0x0e};

/* Traps unless cond holds. */
#define FUZZ_ASSERT(cond)                                                      \
  do {                                                                         \
    if (!(cond)) __builtin_trap();                                             \
  } while (0)

/* Traps unless the `why` text in buf[0, len) is NUL-terminated (len > 0). */
static inline void fuzz_check_why(const char *buf, size_t len) {
  if (!buf || !len) return;
  for (size_t i = 0; i < len; i++)
    if (!buf[i]) return;
  __builtin_trap();
}

/* What a check function may write: its `why` text (why_len bytes, none
 * when 0) and its outputs (out_len bytes, filled with FUZZ_POISON so that
 * any write shows). */
#define FUZZ_POISON 0xa5
typedef struct fuzz_bufs {
  char *why;
  size_t why_len;
  void *out;
  size_t out_len;
} fuzz_bufs_t;

/* Makes b's buffers; 0 when out of memory (nothing left allocated). */
static inline int fuzz_bufs_make(fuzz_bufs_t *b, size_t why_len,
                                 size_t out_len) {
  b->why_len = why_len;
  b->out_len = out_len;
  b->why = why_len ? (char *)malloc(why_len) : NULL;
  b->out = malloc(out_len);
  if ((why_len && !b->why) || !b->out) {
    free(b->why);
    free(b->out);
    return 0;
  }
  memset(b->out, FUZZ_POISON, out_len);
  return 1;
}

/* After a check failed: traps unless its why text is NUL-terminated and
 * its outputs untouched; frees both buffers. */
static inline void fuzz_bufs_failed(fuzz_bufs_t *b) {
  fuzz_check_why(b->why, b->why_len);
  for (size_t i = 0; i < b->out_len; i++)
    FUZZ_ASSERT(((const uint8_t *)b->out)[i] == FUZZ_POISON);
  free(b->why);
  free(b->out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
