/*
 * Fuzzes gin_bs_hello_check, the check of the first bytes every bootstrap
 * connection (rank -> root, rank -> rank) receives from the network.
 *
 * Input: byte 0 picks the job (nranks 1..8 from its low 3 bits, the hello
 * kind expected from bit 3: root or ring); the rest is the hello as
 * received. Invariants: no crash or sanitizer report; results are only
 * GIN_SUCCESS or GIN_ERR_PROTOCOL; the output is written only on success;
 * an accepted hello is exactly GIN_BS_HELLO_BYTES long, names this job
 * (magic, version, kind, secret, size), a rank in [0, nranks), a usable
 * listen address for the root, and re-encodes to the same bytes.
 */
#include <string.h>
#include <sys/socket.h>

#include "comm/bootstrap.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int nranks = 1 + (data[0] & 7);
  int kind = (data[0] & 8) ? GIN_BS_HELLO_RING : GIN_BS_HELLO_ROOT;
  const uint8_t *msg = data + 1;
  size_t len = size - 1;

  gin_bs_hello_t h, poison;
  memset(&poison, 0xa5, sizeof poison);
  h = poison;
  gin_result_t res =
      gin_bs_hello_check(msg, len, gin_fuzz_secret, nranks, kind, &h);
  FUZZ_ASSERT(res == GIN_SUCCESS || res == GIN_ERR_PROTOCOL);
  /* The same answer without an output. */
  FUZZ_ASSERT(
      gin_bs_hello_check(msg, len, gin_fuzz_secret, nranks, kind, NULL) == res);
  if (res != GIN_SUCCESS) {
    FUZZ_ASSERT(memcmp(&h, &poison, sizeof h) == 0);
    return 0;
  }
  FUZZ_ASSERT(len == GIN_BS_HELLO_BYTES);
  FUZZ_ASSERT(h.magic == GIN_BS_MAGIC && h.version == GIN_BS_VERSION);
  FUZZ_ASSERT(h.kind == kind);
  FUZZ_ASSERT(memcmp(h.secret, gin_fuzz_secret, 16) == 0);
  FUZZ_ASSERT(h.nranks == nranks && h.rank >= 0 && h.rank < nranks);
  if (kind == GIN_BS_HELLO_ROOT)
    FUZZ_ASSERT((h.family == AF_INET || h.family == AF_INET6) &&
                (h.port != 0 || nranks == 1));
  uint8_t again[GIN_BS_HELLO_BYTES];
  gin_bs_hello_encode(&h, again);
  FUZZ_ASSERT(memcmp(again, msg, GIN_BS_HELLO_BYTES) == 0);
  return 0;
}
