/*
 * Fuzzes gin_tcp_header_check, the check of every operation header the
 * tcp transport receives, against a small fixed window table, before the
 * proxy writes anything into a window.
 *
 * Table: 6 slots, each backed by a heap buffer of exactly its size (so
 * ASan reports any write the check let through outside it): live windows
 * of 4096, 64, 24 and 0 bytes (one at generation 0xffffffff, where the
 * generation wraps), one deregistered slot and one never registered.
 * Input: byte 0 picks how many slots the receiver has (modulo 7) and the
 * `why` buffer (bits 3..5: none, or a heap buffer of 1..7 * 11 bytes);
 * the rest is the header as received. Invariants: no crash or sanitizer
 * report; results are only GIN_SUCCESS, GIN_ERR_AGAIN or GIN_ERR_PROTOCOL;
 * why is NUL-terminated on failure; the output is written only on
 * success; an accepted header has this wire's magic and version, a known
 * operation and flags, no stray fields, a payload of at most
 * GIN_TCP_MAX_CHUNK inside a live destination window of the same
 * generation, an aligned signal (and mode) word inside a live signal
 * window; the harness then writes exactly those bytes; and it re-encodes
 * to the same bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "transport/tcp.h"

#define NSLOTS 6

static gin_win_slot_t wins[NSLOTS];

static void wins_init(void) {
  static const struct {
    int live;
    uint32_t gen;
    size_t size;
  } spec[NSLOTS] = {{1, 1, 4096},         {1, 3, 64}, {0, 2, 128},
                    {1, 0xffffffffu, 24}, {1, 7, 0},  {0, 0, 0}};
  for (int i = 0; i < NSLOTS; i++) {
    wins[i].live = spec[i].live;
    wins[i].gen = spec[i].gen;
    wins[i].size = spec[i].size;
    wins[i].ptr = spec[i].size ? malloc(spec[i].size) : NULL;
    if (spec[i].size && !wins[i].ptr) abort();
  }
}

/* Traps unless [off, off + bytes) of window idx (generation gen) is
 * inside the table and `align`-aligned, then writes it (ASan checks). */
static void touch(uint32_t nwins, uint32_t idx, uint32_t gen, uint64_t off,
                  uint64_t bytes, uint64_t align) {
  FUZZ_ASSERT(idx < nwins);
  const gin_win_slot_t *w = &wins[idx];
  FUZZ_ASSERT(w->live && w->gen == gen);
  FUZZ_ASSERT(off <= w->size && bytes <= w->size - off && off % align == 0);
  if (bytes) memset((char *)w->ptr + off, 0x5a, bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) wins_init(), ready = 1;
  if (size < 1) return 0;
  uint32_t nwins = data[0] % (NSLOTS + 1);
  size_t why_len = (size_t)((data[0] >> 3) & 7) * 11;
  char *why = why_len ? malloc(why_len) : NULL;
  if (why_len && !why) return 0;
  const uint8_t *msg = data + 1;
  size_t len = size - 1;

  gin_tcp_hdr_t h, poison;
  memset(&poison, 0xa5, sizeof poison);
  h = poison;
  gin_result_t res =
      gin_tcp_header_check(msg, len, wins, nwins, why, why_len, &h);
  FUZZ_ASSERT(res == GIN_SUCCESS || res == GIN_ERR_AGAIN ||
              res == GIN_ERR_PROTOCOL);
  FUZZ_ASSERT(gin_tcp_header_check(msg, len, wins, nwins, NULL, 0, NULL) ==
              res);
  if (res != GIN_SUCCESS) {
    fuzz_check_why(why, why_len);
    free(why);
    FUZZ_ASSERT(memcmp(&h, &poison, sizeof h) == 0);
    return 0;
  }
  free(why);
  FUZZ_ASSERT(len == GIN_TCP_HDR_BYTES);
  FUZZ_ASSERT(h.magic == GIN_TCP_HDR_MAGIC && h.version == GIN_TCP_VERSION);
  FUZZ_ASSERT(h.op >= GIN_TCP_OP_PUT && h.op <= GIN_TCP_OP_BYE);
  FUZZ_ASSERT((h.flags & ~GIN_TCP_F_SIGNAL) == 0 && h.reserved == 0);
  FUZZ_ASSERT(h.bytes <= GIN_TCP_MAX_CHUNK);
  int sig = (h.flags & GIN_TCP_F_SIGNAL) != 0;
  FUZZ_ASSERT(h.op != GIN_TCP_OP_SIGNAL || sig);
  FUZZ_ASSERT(h.op != GIN_TCP_OP_BYE || !sig);
  if (h.op == GIN_TCP_OP_PUT)
    touch(nwins, h.dst_win, h.dst_gen, h.dst_off, h.bytes, 1);
  else
    FUZZ_ASSERT(!h.dst_win && !h.dst_gen && !h.dst_off && !h.bytes);
  if (sig) {
    touch(nwins, h.sig_win, h.sig_gen, h.sig_off, 8, 8);
    if (h.mode_off) {
      touch(nwins, h.sig_win, h.sig_gen, h.mode_off, 4, 4);
      FUZZ_ASSERT(h.mode_bit == 1 || h.mode_bit == 2);
    } else {
      FUZZ_ASSERT(h.mode_bit == 0);
    }
  } else {
    FUZZ_ASSERT(!h.sig_win && !h.sig_gen && !h.sig_off && !h.sig_add &&
                !h.mode_off && !h.mode_bit);
  }
  uint8_t again[GIN_TCP_HDR_BYTES];
  gin_tcp_hdr_encode(&h, again);
  FUZZ_ASSERT(memcmp(again, msg, GIN_TCP_HDR_BYTES) == 0);
  return 0;
}
