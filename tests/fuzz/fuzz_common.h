/*
 * Shared by the libFuzzer harnesses: the fixed job secret the decoders are
 * checked against, and the invariant check (a violated invariant traps, so
 * libFuzzer records the input as a crash).
 */
#ifndef GIN_FUZZ_COMMON_H
#define GIN_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
