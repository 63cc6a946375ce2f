/*
 * Fuzzes gin_tcp_hello_check, the check of the hello that opens each tcp
 * transport connection (a lower rank connecting to this one).
 *
 * Input: byte 0 picks the receiver (nranks 1..8 from its low 3 bits, self
 * = the next byte's value modulo nranks); byte 1's high bits pick the
 * `expect` table (bit 7: NULL, else expect[r] = bit r of byte 2) and the
 * `why` buffer (bits 4..6: none, or a heap buffer of 1..7 * 9 bytes so
 * ASan sees any overrun); the rest is the hello as received. Invariants:
 * no crash or sanitizer report; results are only GIN_SUCCESS or
 * GIN_ERR_PROTOCOL; why is NUL-terminated on failure; the rank is written
 * only on success; an accepted hello is GIN_TCP_HELLO_BYTES long with this
 * job's magic, version, secret and size, a zero reserved field, and a rank
 * below self that expect allows, and re-encodes to the same bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "base/net.h"
#include "fuzz_common.h"
#include "transport/tcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  int nranks = 1 + (data[0] & 7);
  int self = (data[1] & 15) % nranks;
  uint8_t expect_tab[8];
  for (int r = 0; r < 8; r++)
    expect_tab[r] = (uint8_t)((data[2] >> r) & 1);
  const uint8_t *expect = (data[1] & 0x80) ? NULL : expect_tab;
  size_t why_len = (size_t)((data[1] >> 4) & 7) * 9;
  char *why = why_len ? malloc(why_len) : NULL;
  if (why_len && !why) return 0;
  const uint8_t *msg = data + 3;
  size_t len = size - 3;

  int rank = -12345;
  gin_result_t res = gin_tcp_hello_check(msg, len, gin_fuzz_secret, self,
                                         nranks, expect, why, why_len, &rank);
  FUZZ_ASSERT(res == GIN_SUCCESS || res == GIN_ERR_PROTOCOL);
  FUZZ_ASSERT(gin_tcp_hello_check(msg, len, gin_fuzz_secret, self, nranks,
                                  expect, NULL, 0, NULL) == res);
  if (res != GIN_SUCCESS) {
    fuzz_check_why(why, why_len);
    free(why);
    FUZZ_ASSERT(rank == -12345);
    return 0;
  }
  free(why);
  FUZZ_ASSERT(len == GIN_TCP_HELLO_BYTES);
  FUZZ_ASSERT(rank >= 0 && rank < self && rank < nranks);
  FUZZ_ASSERT(!expect || expect[rank]);
  gin_tcp_hello_t h = {.magic = GIN_TCP_HELLO_MAGIC,
                       .version = GIN_TCP_VERSION,
                       .reserved = 0,
                       .rank = rank,
                       .nranks = nranks};
  memcpy(h.secret, gin_fuzz_secret, 16);
  uint8_t again[GIN_TCP_HELLO_BYTES];
  gin_tcp_hello_encode(&h, again);
  FUZZ_ASSERT(memcmp(again, msg, GIN_TCP_HELLO_BYTES) == 0);
  return 0;
}
