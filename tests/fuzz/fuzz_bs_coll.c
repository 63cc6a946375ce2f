/*
 * Fuzzes gin_bs_coll_check, the check of the 16-byte header each rank of
 * a bootstrap all-gather (and barrier) receives from the previous rank on
 * the ring before the data.
 *
 * Input: byte 0 picks what this rank expects (bits 0..1: the collective's
 * sequence number, one of seqs; bits 2..4: the bytes per rank, one of
 * sizes) and the `why` buffer (bits 5..7: none, or a heap buffer of 1..7 *
 * 20 bytes so ASan sees any overrun); the rest is the header as received
 * (ending where libFuzzer's exact-size input buffer ends, so ASan sees any
 * read past it). Invariants: no crash or sanitizer report; results are
 * only GIN_SUCCESS or GIN_ERR_PROTOCOL, the same without why; why is
 * NUL-terminated on failure; an accepted header is exactly
 * GIN_BS_COLL_BYTES long and is what gin_bs_coll_encode writes for the
 * expected sequence number and size (so: the magic, that sequence number,
 * that size).
 */
#include <stdlib.h>
#include <string.h>

#include "comm/bootstrap.h"
#include "fuzz_common.h"

static const uint32_t seqs[4] = {0, 1, 0x80000000u, 0xffffffffu};
static const uint64_t sizes[8] = {0,        1,          8,          4096,
                                  1u << 20, 1ull << 32, 1ull << 63, ~0ull};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint32_t seq = seqs[data[0] & 3];
  uint64_t bytes = sizes[(data[0] >> 2) & 7];
  size_t why_len = (size_t)((data[0] >> 5) & 7) * 20;
  char *why = why_len ? malloc(why_len) : NULL;
  if (why_len && !why) return 0;
  const uint8_t *msg = data + 1;
  size_t len = size - 1;

  gin_result_t res = gin_bs_coll_check(msg, len, seq, bytes, why, why_len);
  FUZZ_ASSERT(res == GIN_SUCCESS || res == GIN_ERR_PROTOCOL);
  FUZZ_ASSERT(gin_bs_coll_check(msg, len, seq, bytes, NULL, 0) == res);
  if (res != GIN_SUCCESS) {
    fuzz_check_why(why, why_len);
    free(why);
    return 0;
  }
  free(why);
  FUZZ_ASSERT(len == GIN_BS_COLL_BYTES);
  uint8_t again[GIN_BS_COLL_BYTES];
  gin_bs_coll_encode(seq, bytes, again);
  FUZZ_ASSERT(memcmp(again, msg, GIN_BS_COLL_BYTES) == 0);
  return 0;
}
