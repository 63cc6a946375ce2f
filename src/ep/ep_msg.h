/*
 * What an EP receive makes of the words a peer wrote into its window,
 * before it uses them: pure functions (no memory but their arguments),
 * shared by the kernels (ep_kernels.c) and their unit test
 * (tests/ep/test_ep_msg.c). A correct peer never writes anything they
 * refuse; a refused word is reported as GIN_ERR_REMOTE naming the peer.
 */
#ifndef GIN_EP_MSG_H
#define GIN_EP_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "gin/device/arch.h"

/* In a dispatch header's top-k word, and (shifted up 32) in a combine
 * `where` word: the payload stayed in the sender's window. */
#define GIN_EP_PULLED 0x80000000u

/* In a dispatch header's top-k word: the payload is FP8 (the sender's
 * dispatch cast it), and its scales are powers of two (round_scale). */
#define GIN_EP_HDR_FP8 0x40000000u
#define GIN_EP_HDR_POW2 0x20000000u
#define GIN_EP_HDR_FORMAT (GIN_EP_HDR_FP8 | GIN_EP_HDR_POW2)
#define GIN_EP_HDR_FLAGS (GIN_EP_PULLED | GIN_EP_HDR_FORMAT)

enum {
  GIN_EP_MSG_BAD = 0,
  GIN_EP_MSG_HERE = 1,
  GIN_EP_MSG_PULL = 2,
  GIN_EP_MSG_FORMAT = 3
};

/* A dispatch header: token h0 and top-k slot h1 (with GIN_EP_PULLED when
 * the payload is to be read from the sender's window, which must then be
 * mapped here; with the format bits GIN_EP_HDR_FP8 and GIN_EP_HDR_POW2 as
 * the sender's dispatch made the payload), for a receive whose dispatch
 * takes rows of format `format` (the same bits). HERE: the payload
 * follows the header; PULL: it is in the sender's send slot of token h0;
 * BAD: a token outside [0, M) or a slot outside [0, K) (both go back to
 * the sender in combine), or a pull from a window not mapped here;
 * FORMAT: a well-formed header whose payload is of another format (the
 * sender's dispatch asked for another payload or round_scale than this
 * rank's). */
GIN_HD_FN int gin_ep_header_check(uint32_t h0, uint32_t h1, int M, int K,
                                  int mapped, uint32_t format) {
  int pulled = (h1 & GIN_EP_PULLED) != 0;
  uint32_t k = h1 & ~GIN_EP_HDR_FLAGS;
  if (h0 >= (uint32_t)M || k >= (uint32_t)K || (pulled && !mapped))
    return GIN_EP_MSG_BAD;
  if ((h1 & GIN_EP_HDR_FORMAT) != format) return GIN_EP_MSG_FORMAT;
  return pulled ? GIN_EP_MSG_PULL : GIN_EP_MSG_HERE;
}

/* The format bits of a dispatch's rows. */
GIN_HD_FN uint32_t gin_ep_format(int fp8, int pow2) {
  return (fp8 ? GIN_EP_HDR_FP8 : 0) | (fp8 && pow2 ? GIN_EP_HDR_POW2 : 0);
}

/* Format bits as reported to the host (GIN_DEVERR_EP_ROUTING, why 5):
 * 1 fp8, | 2 power-of-two scales; 0 bf16. */
GIN_HD_FN uint64_t gin_ep_format_code(uint32_t bits) {
  return ((bits & GIN_EP_HDR_FP8) ? 1u : 0u) |
         ((bits & GIN_EP_HDR_POW2) ? 2u : 0u);
}

/* A combine `where` word for a top-k slot routed to local expert le of a
 * rank whose combine input holds `rows` rows per local expert (R x M):
 * 0 (HERE: the row came into this window), or GIN_EP_PULLED << 32 | s
 * (PULL: row s of that rank's combine input, *slot = s), which must be
 * one of expert le's rows, in a window mapped here; anything else is
 * BAD. */
GIN_HD_FN int gin_ep_where_check(uint64_t w, int le, size_t rows, int mapped,
                                 uint64_t *slot) {
  if (w == 0) return GIN_EP_MSG_HERE;
  uint64_t s = w & ~((uint64_t)GIN_EP_PULLED << 32);
  if (!(w >> 32 & GIN_EP_PULLED) || !mapped || rows == 0 ||
      s / rows != (uint64_t)le)
    return GIN_EP_MSG_BAD;
  *slot = s;
  return GIN_EP_MSG_PULL;
}

#endif
