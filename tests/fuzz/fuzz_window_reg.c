/*
 * Fuzzes gin_win_recs_check, the check of the registration records every
 * rank of a job receives from gin_window_register's all-gather
 * (src/comm/records.h): each rank's status, window slot, memory kind,
 * size, offset in its allocation, allocation size and memory handle, 120
 * bytes a rank.
 *
 * Input: byte 0 picks the job (nranks 1..8 from its low 3 bits) and the
 * `why` buffer (bits 4..6: none, or a heap buffer of 1..7 * 24 bytes so
 * ASan sees any overrun); bits 3 and 7 are ignored. Byte 1's low 2 bits
 * pick the receiver's window table (max_windows 4, 5, 64 or 65536, the
 * range GIN_MAX_WINDOWS allows); the rest of it is ignored. The rest is
 * the all-gathered records as received; they end where libFuzzer's input
 * buffer (a heap copy of exactly its size) ends, so ASan sees any read past
 * them, and they are decoded into a heap array of exactly nranks records,
 * so it sees any write past that too.
 * Invariants: no crash or sanitizer report; results are only GIN_SUCCESS,
 * GIN_ERR_INVALID, GIN_ERR_INTERNAL or GIN_ERR_PROTOCOL, the same without
 * outputs, and the one this harness's own walk of the records expects (a
 * wrong length, else the first failed status, else the first rank that
 * disagrees with rank 0 on size, slot or kind, else the first bad kind,
 * padding, slot, size or range in rank order); why is NUL-terminated on
 * failure; the records are written only on success. On success every
 * rank succeeded, all agree on size, slot and kind, the kind is 0 or 1;
 * the harness then **writes** the slot's entry of a heap table of exactly
 * max_windows bytes and, for every allocation of at most 4096 bytes, the
 * window's [offset, offset + size) of a heap buffer of exactly alloc_size
 * bytes (so ASan proves both inside), and every record re-encodes
 * (gin_win_rec_encode) to exactly the bytes it was sent as.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/records.h"
#include "fuzz_common.h"

static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p) {
  return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* What the check must return for the n records in t[0, len). */
static gin_result_t expected(const uint8_t *t, size_t len, int n,
                             uint32_t maxw) {
  if (len != (size_t)n * 120) return GIN_ERR_PROTOCOL;
  for (int r = 0; r < n; r++)
    if (get32(t + (size_t)r * 120)) return GIN_ERR_INVALID;
  for (int r = 1; r < n; r++) {
    const uint8_t *e = t + (size_t)r * 120;
    if (get64(e + 16) != get64(t + 16)) return GIN_ERR_INVALID;
    if (get32(e + 4) != get32(t + 4)) return GIN_ERR_INVALID;
    if (get32(e + 8) != get32(t + 8)) return GIN_ERR_INTERNAL;
  }
  for (int r = 0; r < n; r++) {
    const uint8_t *e = t + (size_t)r * 120;
    uint64_t size = get64(e + 16), off = get64(e + 24), asz = get64(e + 32);
    if (get32(e + 8) > 1 || get32(e + 12) || get32(e + 4) >= maxw ||
        size == 0 || off > asz || off + size > asz || off + size < off)
      return GIN_ERR_PROTOCOL;
  }
  return GIN_SUCCESS;
}

/* Read back after the harness's writes, so that the compiler keeps them
 * (a write into memory freed unread could be dropped, and ASan with it). */
static volatile uint8_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const uint32_t maxws[4] = {4, 5, 64, 65536};
  if (size < 2) return 0;
  int n = 1 + (data[0] & 7);
  size_t why_len = (size_t)((data[0] >> 4) & 7) * 24;
  uint32_t maxw = maxws[data[1] & 3];
  const uint8_t *t = data + 2;
  size_t len = size - 2;

  fuzz_bufs_t b;
  if (!fuzz_bufs_make(&b, why_len, (size_t)n * sizeof(gin_win_rec_t))) return 0;
  char *why = b.why;
  gin_win_rec_t *out = (gin_win_rec_t *)b.out;
  gin_result_t res = gin_win_recs_check(t, len, n, maxw, why, why_len, out);
  FUZZ_ASSERT(res == GIN_SUCCESS || res == GIN_ERR_INVALID ||
              res == GIN_ERR_INTERNAL || res == GIN_ERR_PROTOCOL);
  FUZZ_ASSERT(gin_win_recs_check(t, len, n, maxw, NULL, 0, NULL) == res);
  FUZZ_ASSERT(res == expected(t, len, n, maxw));
  if (res != GIN_SUCCESS) {
    fuzz_bufs_failed(&b);
    return 0;
  }
  free(why);
  uint8_t *table = malloc(maxw);
  if (!table) {
    free(out);
    return 0;
  }
  ((volatile uint8_t *)table)[out[0].slot] = 1; /* the receiver's slot */
  free(table);
  uint8_t again[GIN_WIN_REC_BYTES];
  for (int r = 0; r < n; r++) {
    const gin_win_rec_t *o = &out[r];
    FUZZ_ASSERT(o->status == GIN_SUCCESS && o->pad_ == 0 && o->host_kind <= 1);
    FUZZ_ASSERT(o->size == out[0].size && o->slot == out[0].slot &&
                o->host_kind == out[0].host_kind && o->size > 0);
    if (o->alloc_size <= 4096) { /* map it: the window inside */
      uint8_t *mem = malloc(o->alloc_size ? o->alloc_size : 1);
      if (mem) {
        memset(mem + o->offset, 0x5a, o->size);
        sink = ((volatile uint8_t *)mem)[o->offset + o->size - 1];
        free(mem);
      }
    } else {
      FUZZ_ASSERT(o->offset <= o->alloc_size &&
                  o->size <= o->alloc_size - o->offset);
    }
    gin_win_rec_encode(o, again);
    FUZZ_ASSERT(memcmp(again, t + (size_t)r * GIN_WIN_REC_BYTES,
                       GIN_WIN_REC_BYTES) == 0);
  }
  free(out);
  return 0;
}
