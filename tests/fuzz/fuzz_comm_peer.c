/*
 * Fuzzes gin_peer_recs_check, the check of the peer records every rank of
 * a job receives from gin_comm_init's all-gather (src/comm/records.h):
 * each rank's host id, pid, rank, watch flag, device identity and control
 * page handle, 256 bytes a rank.
 *
 * Input: byte 0 picks the job (nranks 1..8 from its low 3 bits) and the
 * `why` buffer (bits 4..6: none, or a heap buffer of 1..7 * 9 bytes so
 * ASan sees any overrun); bits 3 and 7 are ignored. The rest is the
 * all-gathered records as received; they end where libFuzzer's input
 * buffer (a heap copy of exactly its size) ends, so ASan sees any read past
 * them, and they are decoded into a heap array of exactly nranks records,
 * so it sees any write past that too.
 * Invariants: no crash or sanitizer report; results are only GIN_SUCCESS
 * or GIN_ERR_PROTOCOL, the same without outputs, and the one this
 * harness's own walk of the records expects (a wrong length, else the
 * first slot naming another rank, else the first bad host id, pid, watch
 * flag or padding in rank order); why is NUL-terminated on failure; the
 * records are written only on success; on success every record names its
 * slot's rank, has a host id NUL-terminated within its 96 bytes, a pid
 * above 0, a watch flag 0 or 1, and re-encodes (gin_peer_rec_encode) to
 * exactly the bytes it was sent as.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/records.h"
#include "fuzz_common.h"

static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* What the check must return for the n records in t[0, len). */
static gin_result_t expected(const uint8_t *t, size_t len, int n) {
  if (len != (size_t)n * 256) return GIN_ERR_PROTOCOL;
  for (int r = 0; r < n; r++)
    if (get32(t + (size_t)r * 256 + 100) != (uint32_t)r)
      return GIN_ERR_PROTOCOL;
  for (int r = 0; r < n; r++) {
    const uint8_t *e = t + (size_t)r * 256;
    const uint8_t *nul = memchr(e, 0, 96);
    if (!nul) return GIN_ERR_PROTOCOL;
    for (const uint8_t *q = nul; q < e + 96; q++)
      if (*q) return GIN_ERR_PROTOCOL;
    if ((int32_t)get32(e + 96) <= 0 || get32(e + 104) > 1 || get32(e + 108))
      return GIN_ERR_PROTOCOL;
  }
  return GIN_SUCCESS;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int n = 1 + (data[0] & 7);
  size_t why_len = (size_t)((data[0] >> 4) & 7) * 9;
  const uint8_t *t = data + 1;
  size_t len = size - 1;

  fuzz_bufs_t b;
  if (!fuzz_bufs_make(&b, why_len, (size_t)n * sizeof(gin_peer_info_t)))
    return 0;
  char *why = b.why;
  gin_peer_info_t *out = (gin_peer_info_t *)b.out;
  gin_result_t res = gin_peer_recs_check(t, len, n, why, why_len, out);
  FUZZ_ASSERT(res == GIN_SUCCESS || res == GIN_ERR_PROTOCOL);
  FUZZ_ASSERT(gin_peer_recs_check(t, len, n, NULL, 0, NULL) == res);
  FUZZ_ASSERT(res == expected(t, len, n));
  if (res != GIN_SUCCESS) {
    fuzz_bufs_failed(&b);
    return 0;
  }
  free(why);
  uint8_t again[GIN_PEER_REC_BYTES];
  for (int r = 0; r < n; r++) {
    const gin_peer_info_t *o = &out[r];
    FUZZ_ASSERT(o->rank == r && o->pid > 0 && (o->watch == 0 || o->watch == 1));
    FUZZ_ASSERT(o->pad_ == 0);
    FUZZ_ASSERT(memchr(o->hostid, 0, sizeof o->hostid) != NULL);
    gin_peer_rec_encode(o, again);
    FUZZ_ASSERT(memcmp(again, t + (size_t)r * GIN_PEER_REC_BYTES,
                       GIN_PEER_REC_BYTES) == 0);
  }
  free(out);
  return 0;
}
