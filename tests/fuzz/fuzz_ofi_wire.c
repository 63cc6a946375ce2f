/*
 * Fuzzes the ofi transport's decoders of what arrives from peers
 * (transport/ofi.h): gin_ofi_prefix_check (every message's first bytes),
 * gin_ofi_token_decode (every RMA write's remote CQ data) and
 * gin_ofi_entries_check (the setup entries all-gathered at init).
 *
 * Input: byte 0 picks the job (nranks 1..8 from its low 3 bits, plus 62
 * when bit 3 is set: 63..70, on both sides of 64 ranks) and the decoder
 * (bits 4..5: prefix, 8-byte token, 4-byte token, entries); byte 1 is
 * this rank (modulo nranks); byte 2 says which ranks use ofi (bit r % 8
 * for rank r). For a token, the next 4 bytes are the sequence number
 * expected next from every rank and the 8 after them the CQ data. The
 * rest is the message or the entries, ending where libFuzzer's buffer
 * ends, so ASan sees any read past it.
 * Invariants: no crash or sanitizer report; results are only those the
 * decoders document, the same without a `why` buffer; `why` is
 * NUL-terminated and outputs untouched on failure; on success a prefix
 * and a token name an ofi peer other than this rank, a prefix re-encodes
 * to the bytes it was read from, a token re-encodes to its CQ data, and a
 * 4-byte token's sequence number lies within 2^19 of the expected one;
 * every name of checked entries lies inside them.
 */
#include <stdlib.h>
#include <string.h>

#include "base/net.h"
#include "fuzz_common.h"
#include "transport/ofi.h"

#define HEAD 88 /* the transport's prefix and header: what it asks for */

static uint32_t fuzz_next;
static uint32_t next_seq(void *arg, int rank) {
  (void)arg;
  (void)rank;
  return fuzz_next;
}

static void prefix(const uint8_t *t, size_t len, int n, int self,
                   const uint8_t *use) {
  char why[64];
  gin_ofi_prefix_t p;
  memset(&p, FUZZ_POISON, sizeof p);
  gin_result_t res =
      gin_ofi_prefix_check(t, len, HEAD, self, n, use, why, sizeof why, &p);
  FUZZ_ASSERT(res == GIN_SUCCESS || res == GIN_ERR_PROTOCOL);
  FUZZ_ASSERT(gin_ofi_prefix_check(t, len, HEAD, self, n, use, NULL, 0, NULL) ==
              res);
  if (res != GIN_SUCCESS) {
    fuzz_check_why(why, sizeof why);
    const uint8_t *q = (const uint8_t *)&p;
    for (size_t i = 0; i < sizeof p; i++)
      FUZZ_ASSERT(q[i] == FUZZ_POISON);
    return;
  }
  FUZZ_ASSERT(len >= HEAD && p.rank >= 0 && p.rank < n && p.rank != self &&
              use[p.rank]);
  uint8_t again[GIN_OFI_PREFIX_BYTES];
  gin_ofi_prefix_encode(&p, again);
  FUZZ_ASSERT(memcmp(again, t, sizeof again) == 0);
}

static void token(const uint8_t *t, size_t len, int n, int self,
                  const uint8_t *use, size_t bytes) {
  if (len < 12) return;
  fuzz_next = gin_le_get32(t);
  uint64_t data = gin_le_get64(t + 4);
  char why[64];
  int rank = -7;
  uint32_t seq = 0x5a5a5a5au;
  gin_result_t res = gin_ofi_token_decode(data, bytes, self, n, use, next_seq,
                                          NULL, why, sizeof why, &rank, &seq);
  FUZZ_ASSERT(res == GIN_SUCCESS || res == GIN_ERR_PROTOCOL);
  int r2;
  uint32_t s2;
  FUZZ_ASSERT(gin_ofi_token_decode(data, bytes, self, n, use, next_seq, NULL,
                                   NULL, 0, &r2, &s2) == res);
  if (res != GIN_SUCCESS) {
    fuzz_check_why(why, sizeof why);
    FUZZ_ASSERT(rank == -7 && seq == 0x5a5a5a5au);
    return;
  }
  FUZZ_ASSERT(rank >= 0 && rank < n && rank != self && use[rank]);
  FUZZ_ASSERT(r2 == rank && s2 == seq);
  FUZZ_ASSERT(gin_ofi_token_encode(rank, seq, bytes) == data);
  if (bytes < 8) {
    int32_t d = (int32_t)(seq - fuzz_next);
    FUZZ_ASSERT(d >= -(1 << 19) && d < (1 << 19));
  }
}

static void entries(const uint8_t *t, size_t len, int n) {
  char why[64];
  gin_result_t res = gin_ofi_entries_check(t, len, n, why, sizeof why);
  FUZZ_ASSERT(res == GIN_SUCCESS || res == GIN_ERR_REMOTE ||
              res == GIN_ERR_INVALID || res == GIN_ERR_PROTOCOL);
  FUZZ_ASSERT(gin_ofi_entries_check(t, len, n, NULL, 0) == res);
  if (res != GIN_SUCCESS) {
    fuzz_check_why(why, sizeof why);
    return;
  }
  FUZZ_ASSERT(len == (size_t)n * gin_ofi_entry_bytes(n));
  for (int r = 0; r < n; r++) {
    size_t nl = 0;
    const uint8_t *name = gin_ofi_entry_name(t, n, r, &nl);
    FUZZ_ASSERT(nl <= GIN_OFI_NAME_MAX);
    if (nl) FUZZ_ASSERT(name >= t && name + nl <= t + len);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  int n = 1 + (data[0] & 7) + ((data[0] & 8) ? 62 : 0);
  int mode = (data[0] >> 4) & 3;
  int self = data[1] % n;
  uint8_t use[70];
  for (int r = 0; r < n; r++)
    use[r] = (uint8_t)((data[2] >> (r % 8)) & 1);
  const uint8_t *t = data + 3;
  size_t len = size - 3;
  switch (mode) {
  case 0: prefix(t, len, n, self, use); break;
  case 1: token(t, len, n, self, use, 8); break;
  case 2: token(t, len, n, self, use, 4); break;
  default: entries(t, len, n); break;
  }
  return 0;
}
