/*
 * Fuzzes gin_tcp_entries_check, the check of the setup entries every rank
 * of a job receives from the tcp transport's all-gather at init (each
 * rank's status, listen address and the ranks it uses tcp with).
 *
 * Input: byte 0 picks the job (nranks 1..8 from its low 3 bits, plus 62
 * when bit 3 is set: 63..70, on both sides of the 64 ranks where an entry
 * grows from 32 to 40 bytes) and the `why` buffer (bits 4..6: none, or a
 * heap buffer of 1..7 * 9 bytes so ASan sees any overrun); bit 7 is
 * ignored. The rest is the all-gathered entries as received; it ends where
 * libFuzzer's input buffer (a heap copy of exactly its size) ends, so ASan
 * sees any read past it, and the addresses are decoded into a heap array
 * of exactly nranks entries, so it sees any write past that too.
 * Invariants: no crash or sanitizer report; results are only GIN_SUCCESS,
 * GIN_ERR_REMOTE, GIN_ERR_INVALID or GIN_ERR_PROTOCOL, the same without
 * outputs, and the one this harness's own walk of the entries expects (a
 * wrong length, else the first failed status, asymmetric pair or bad
 * address in rank order); why is NUL-terminated on failure; addresses are
 * written only on success; on success every address a lower rank connects
 * to is AF_INET or AF_INET6 with a port, and every entry re-encodes
 * (gin_tcp_entry_encode) to the bytes it was sent as, but for a rank's bit
 * for itself, bits past nranks and the padding, which are not looked at.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/net.h"
#include "fuzz_common.h"
#include "transport/tcp.h"

/* Bit r of the entry at e: its rank uses tcp with rank r. */
static int uses(const uint8_t *e, int r) {
  return (e[24 + r / 8] >> (r % 8)) & 1;
}

/* What the check must return for the n entries in t[0, len). */
static gin_result_t expected(const uint8_t *t, size_t len, int n, size_t esz) {
  if (len != (size_t)n * esz) return GIN_ERR_PROTOCOL;
  for (int a = 0; a < n; a++) {
    const uint8_t *ea = t + (size_t)a * esz;
    if (ea[0] | ea[1] | ea[2] | ea[3]) return GIN_ERR_REMOTE;
    for (int b = a + 1; b < n; b++) {
      const uint8_t *eb = t + (size_t)b * esz;
      if (uses(ea, b) != uses(eb, a)) return GIN_ERR_INVALID;
      unsigned family = eb[4] | eb[5] << 8, port = eb[6] | eb[7] << 8;
      if (uses(ea, b) && (!port || (family != AF_INET && family != AF_INET6)))
        return GIN_ERR_PROTOCOL;
    }
  }
  return GIN_SUCCESS;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int n = 1 + (data[0] & 7) + ((data[0] & 8) ? 62 : 0);
  size_t why_len = (size_t)((data[0] >> 4) & 7) * 9;
  const uint8_t *t = data + 1;
  size_t len = size - 1;
  size_t esz = (24 + ((size_t)n + 7) / 8 + 7) / 8 * 8;
  FUZZ_ASSERT(gin_tcp_entry_bytes(n) == esz);

  fuzz_bufs_t b;
  if (!fuzz_bufs_make(&b, why_len, (size_t)n * sizeof(gin_net_addr_t)))
    return 0;
  char *why = b.why;
  gin_net_addr_t *addrs = (gin_net_addr_t *)b.out;
  gin_result_t res = gin_tcp_entries_check(t, len, n, why, why_len, addrs);
  FUZZ_ASSERT(res == GIN_SUCCESS || res == GIN_ERR_REMOTE ||
              res == GIN_ERR_INVALID || res == GIN_ERR_PROTOCOL);
  FUZZ_ASSERT(gin_tcp_entries_check(t, len, n, NULL, 0, NULL) == res);
  FUZZ_ASSERT(res == expected(t, len, n, esz));
  if (res != GIN_SUCCESS) {
    fuzz_bufs_failed(&b);
    return 0;
  }
  free(why);
  uint8_t use[70], again[40];
  size_t bits = 24 + ((size_t)n + 7) / 8; /* bytes up to the padding */
  for (int r = 0; r < n; r++) {
    const uint8_t *e = t + (size_t)r * esz;
    for (int k = 0; k < r; k++)
      if (uses(t + (size_t)k * esz, r))
        FUZZ_ASSERT(addrs[r].port != 0 && (addrs[r].family == AF_INET ||
                                           addrs[r].family == AF_INET6));
    for (int k = 0; k < n; k++)
      use[k] = (uint8_t)uses(e, k);
    gin_tcp_entry_encode(0, &addrs[r], use, n, again);
    if (n % 8) /* bits past nranks */
      again[bits - 1] |= (uint8_t)(e[bits - 1] & (0xffu << (n % 8)));
    FUZZ_ASSERT(memcmp(again, e, bits) == 0);
    for (size_t i = bits; i < esz; i++)
      FUZZ_ASSERT(again[i] == 0);
  }
  free(addrs);
  return 0;
}
