/*
 * ofi transport wire format: the messages' prefix and the setup entries
 * all-gathered at init, and the pure checks of what arrives (declared in
 * ofi.h; fuzzed and unit tested on their own). No I/O, no logging, no
 * libfabric.
 */
#include <stdio.h>
#include <string.h>

#include "base/net.h"
#include "transport/ofi.h"

void gin_ofi_prefix_encode(const gin_ofi_prefix_t *p, uint8_t *out) {
  gin_le_put32(out, p->magic);
  gin_le_put16(out + 4, p->version);
  gin_le_put16(out + 6, p->reserved);
  gin_le_put32(out + 8, (uint32_t)p->rank);
  gin_le_put32(out + 12, p->seq);
}

gin_result_t gin_ofi_prefix_check(const void *buf, size_t len, size_t least,
                                  int self, int nranks, const uint8_t *use,
                                  char *why, size_t why_len,
                                  gin_ofi_prefix_t *out) {
  if (!buf || !use) return GIN_ERR_INVALID;
  gin_result_t bad = GIN_ERR_PROTOCOL;
  if (least < GIN_OFI_PREFIX_BYTES) least = GIN_OFI_PREFIX_BYTES;
  if (len < least)
    return gin_net_why(why, why_len, bad,
                       "message of %zu bytes, expected at least %zu", len,
                       least);
  const uint8_t *b = (const uint8_t *)buf;
  gin_ofi_prefix_t p = {gin_le_get32(b), gin_le_get16(b + 4),
                        gin_le_get16(b + 6), (int32_t)gin_le_get32(b + 8),
                        gin_le_get32(b + 12)};
  if (p.magic != GIN_OFI_MAGIC)
    return gin_net_why(why, why_len, bad, "bad magic 0x%08x", p.magic);
  if (p.version != GIN_OFI_VERSION)
    return gin_net_why(why, why_len, bad, "wire version %u, expected %d",
                       p.version, GIN_OFI_VERSION);
  if (p.reserved)
    return gin_net_why(why, why_len, bad, "reserved field 0x%x set",
                       p.reserved);
  if (p.rank < 0 || p.rank >= nranks || p.rank == self || !use[p.rank])
    return gin_net_why(why, why_len, bad,
                       "sender rank %d is not an ofi peer of rank %d (%d "
                       "ranks)",
                       (int)p.rank, self, nranks);
  if (out) *out = p;
  return GIN_SUCCESS;
}

#define TOKEN4_SEQ_BITS 20

uint64_t gin_ofi_token_encode(int rank, uint32_t seq, size_t cq_data_bytes) {
  if (cq_data_bytes >= 8) return (uint64_t)(uint32_t)rank << 32 | seq;
  return (uint64_t)(uint32_t)rank << TOKEN4_SEQ_BITS |
         (seq & ((1u << TOKEN4_SEQ_BITS) - 1));
}

gin_result_t gin_ofi_token_decode(uint64_t data, size_t cq_data_bytes, int self,
                                  int nranks, const uint8_t *use,
                                  uint32_t (*next_seq)(void *arg, int rank),
                                  void *arg, char *why, size_t why_len,
                                  int *rank_out, uint32_t *seq_out) {
  if (!use || !next_seq) return GIN_ERR_INVALID;
  int wide = cq_data_bytes >= 8;
  uint64_t rank = wide ? data >> 32 : data >> TOKEN4_SEQ_BITS;
  if (!wide && data >> 32)
    return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                       "write token 0x%llx wider than 4 bytes",
                       (unsigned long long)data);
  if (rank >= (uint64_t)nranks || (int)rank == self || !use[rank])
    return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                       "write token from rank %llu, not an ofi peer of rank "
                       "%d (%d ranks)",
                       (unsigned long long)rank, self, nranks);
  uint32_t seq = (uint32_t)data;
  if (!wide) {
    /* The value with these low bits nearest the expected one. */
    const uint32_t span = 1u << TOKEN4_SEQ_BITS;
    uint32_t next = next_seq(arg, (int)rank);
    uint32_t delta = ((uint32_t)data - next) & (span - 1);
    seq = delta < span / 2 ? next + delta : next - (span - delta);
  }
  *rank_out = (int)rank;
  *seq_out = seq;
  return GIN_SUCCESS;
}

void gin_ofi_key_encode(uint32_t status, uint32_t gen, uint64_t addr,
                        uint64_t key, uint8_t *out) {
  gin_le_put32(out, status);
  gin_le_put32(out + 4, gen);
  gin_le_put64(out + 8, addr);
  gin_le_put64(out + 16, key);
}

int gin_ofi_key_decode(const uint8_t *in, uint32_t *gen, uint64_t *addr,
                       uint64_t *key) {
  if (gin_le_get32(in) != 1) return 0;
  *gen = gin_le_get32(in + 4);
  *addr = gin_le_get64(in + 8);
  *key = gin_le_get64(in + 16);
  return 1;
}

size_t gin_ofi_entry_bytes(int nranks) {
  size_t n = nranks > 0 ? (size_t)nranks : 0;
  return (GIN_OFI_ENTRY_HEAD + (n + 7) / 8 + 7) & ~(size_t)7;
}

void gin_ofi_entry_encode(int32_t status, const void *name, size_t name_len,
                          const uint8_t *use, int nranks, uint8_t *out) {
  memset(out, 0, gin_ofi_entry_bytes(nranks));
  if (!name || name_len > GIN_OFI_NAME_MAX) name_len = 0;
  gin_le_put32(out, (uint32_t)status);
  gin_le_put32(out + 4, (uint32_t)name_len);
  if (name_len) memcpy(out + 8, name, name_len);
  for (int r = 0; use && r < nranks; r++)
    if (use[r]) out[GIN_OFI_ENTRY_HEAD + r / 8] |= (uint8_t)(1u << (r % 8));
}

/* Bit r of entry e: its sender uses ofi with rank r. */
static int entry_uses(const uint8_t *e, int r) {
  return (e[GIN_OFI_ENTRY_HEAD + r / 8] >> (r % 8)) & 1;
}

gin_result_t gin_ofi_entries_check(const void *all, size_t len, int nranks,
                                   char *why, size_t why_len) {
  if (!all || nranks < 1)
    return gin_net_why(why, why_len, GIN_ERR_INVALID, "no entries (%d ranks)",
                       nranks);
  const uint8_t *p = (const uint8_t *)all;
  size_t esz = gin_ofi_entry_bytes(nranks), n = (size_t)nranks;
  if (len % esz || len / esz != n)
    return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                       "entries of %zu bytes, expected %d of %zu", len, nranks,
                       esz);
  for (int a = 0; a < nranks; a++) {
    const uint8_t *ea = p + (size_t)a * esz;
    if ((int32_t)gin_le_get32(ea) != GIN_SUCCESS)
      return gin_net_why(why, why_len, GIN_ERR_REMOTE,
                         "rank %d could not open its libfabric endpoint", a);
    uint32_t alen = gin_le_get32(ea + 4);
    if (alen > GIN_OFI_NAME_MAX)
      return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                         "rank %d's endpoint name of %u bytes (at most %d)", a,
                         alen, GIN_OFI_NAME_MAX);
    for (int b = a + 1; b < nranks; b++) {
      const uint8_t *eb = p + (size_t)b * esz;
      int ab = entry_uses(ea, b), ba = entry_uses(eb, a);
      if (ab != ba)
        return gin_net_why(
            why, why_len, GIN_ERR_INVALID,
            "rank %d reaches rank %d through ofi but not the other way "
            "round (GIN_BACKEND or GIN_TRANSPORT differ?)",
            ab ? a : b, ab ? b : a);
      uint32_t blen = gin_le_get32(eb + 4);
      if (ab && (alen == 0 || blen == 0 || blen > GIN_OFI_NAME_MAX))
        return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                           "rank %d or %d has no endpoint name", a, b);
    }
  }
  return GIN_SUCCESS;
}

const uint8_t *gin_ofi_entry_name(const void *all, int nranks, int r,
                                  size_t *len_out) {
  const uint8_t *e =
      (const uint8_t *)all + (size_t)r * gin_ofi_entry_bytes(nranks);
  *len_out = gin_le_get32(e + 4);
  return e + 8;
}
