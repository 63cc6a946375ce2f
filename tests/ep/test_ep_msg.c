/*
 * The EP receives' checks of what peers wrote (src/ep/ep_msg.h): every
 * boundary of a dispatch header and a combine `where` word, accepted and
 * refused. Pure functions, no library.
 */
#define UNIT_CHECK_NO_GIN
#include "ep/ep_msg.h"
#include "unit_check.h"

#define P GIN_EP_PULLED
#define PW ((uint64_t)GIN_EP_PULLED << 32)
#define F GIN_EP_HDR_FP8
#define W GIN_EP_HDR_POW2

int main(void) {
  enum { M = 128, K = 8 };
  /* Dispatch headers: token h0, slot h1 (| P: read from the sender). */
  CHECK(gin_ep_header_check(0, 0, M, K, 0, 0) == GIN_EP_MSG_HERE, "first");
  CHECK(gin_ep_header_check(M - 1, K - 1, M, K, 0, 0) == GIN_EP_MSG_HERE,
        "last token and slot");
  CHECK(gin_ep_header_check(M, 0, M, K, 1, 0) == GIN_EP_MSG_BAD, "token M");
  CHECK(gin_ep_header_check(0xffffffffu, 0, M, K, 1, 0) == GIN_EP_MSG_BAD,
        "token -1");
  CHECK(gin_ep_header_check(0, K, M, K, 1, 0) == GIN_EP_MSG_BAD, "slot K");
  CHECK(gin_ep_header_check(0, K | P, M, K, 1, 0) == GIN_EP_MSG_BAD,
        "slot K, pulled");
  CHECK(gin_ep_header_check(0, 0x7fffffffu, M, K, 1, 0) == GIN_EP_MSG_BAD,
        "slot huge");
  CHECK(gin_ep_header_check(5, 3 | P, M, K, 1, 0) == GIN_EP_MSG_PULL, "pull");
  CHECK(gin_ep_header_check(M - 1, (K - 1) | P, M, K, 1, 0) == GIN_EP_MSG_PULL,
        "pull, last token and slot");
  CHECK(gin_ep_header_check(5, 3 | P, M, K, 0, 0) == GIN_EP_MSG_BAD,
        "pull from a window not mapped here");
  CHECK(gin_ep_header_check(M, 3 | P, M, K, 1, 0) == GIN_EP_MSG_BAD,
        "pull, token M");
  /* The payload's format against the receive's. */
  CHECK(gin_ep_header_check(5, 3 | F, M, K, 0, F) == GIN_EP_MSG_HERE,
        "fp8 row, fp8 receive");
  CHECK(gin_ep_header_check(5, 3 | P | F, M, K, 1, F) == GIN_EP_MSG_PULL,
        "fp8 pull, fp8 receive");
  CHECK(gin_ep_header_check(5, 3 | F, M, K, 0, 0) == GIN_EP_MSG_FORMAT,
        "fp8 row, bf16 receive");
  CHECK(gin_ep_header_check(5, 3 | P, M, K, 1, F) == GIN_EP_MSG_FORMAT,
        "bf16 pull, fp8 receive");
  CHECK(gin_ep_header_check(M, 3 | F, M, K, 0, 0) == GIN_EP_MSG_BAD,
        "a bad token is BAD whatever its format");
  CHECK(gin_ep_header_check(0, K | F, M, K, 0, F) == GIN_EP_MSG_BAD,
        "slot K with the fp8 flag");
  /* Power-of-two scales against the receive's. */
  CHECK(gin_ep_header_check(5, 3 | F | W, M, K, 0, F | W) == GIN_EP_MSG_HERE,
        "pow2 row, pow2 receive");
  CHECK(gin_ep_header_check(5, 3 | P | F | W, M, K, 1, F | W) ==
            GIN_EP_MSG_PULL,
        "pow2 pull, pow2 receive");
  CHECK(gin_ep_header_check(5, 3 | F, M, K, 0, F | W) == GIN_EP_MSG_FORMAT,
        "plain scales, pow2 receive");
  CHECK(gin_ep_header_check(5, 3 | F | W, M, K, 0, F) == GIN_EP_MSG_FORMAT,
        "pow2 scales, plain receive");
  CHECK(gin_ep_format(0, 1) == 0 && gin_ep_format(1, 0) == F &&
            gin_ep_format(1, 1) == (F | W),
        "format bits (pow2 only with fp8)");
  CHECK(gin_ep_format_code(F | W | P | 7) == 3 && gin_ep_format_code(F) == 1 &&
            gin_ep_format_code(0) == 0,
        "format codes");

  /* Combine where words: 0, or PW | s with s one of expert le's rows. */
  const size_t rows = 8 * M; /* R = 8 */
  uint64_t s = 77;
  CHECK(gin_ep_where_check(0, 3, rows, 0, &s) == GIN_EP_MSG_HERE && s == 77,
        "0: the row is here, slot untouched");
  CHECK(gin_ep_where_check(PW | (3 * rows), 3, rows, 1, &s) ==
                GIN_EP_MSG_PULL &&
            s == 3 * rows,
        "first row of expert 3");
  CHECK(gin_ep_where_check(PW | (4 * rows - 1), 3, rows, 1, &s) ==
                GIN_EP_MSG_PULL &&
            s == 4 * rows - 1,
        "last row of expert 3");
  CHECK(gin_ep_where_check(PW | (4 * rows), 3, rows, 1, &s) == GIN_EP_MSG_BAD,
        "a row of expert 4");
  CHECK(gin_ep_where_check(PW | (3 * rows - 1), 3, rows, 1, &s) ==
            GIN_EP_MSG_BAD,
        "a row of expert 2");
  CHECK(gin_ep_where_check(PW | (3 * rows), 3, rows, 0, &s) == GIN_EP_MSG_BAD,
        "window not mapped here");
  CHECK(gin_ep_where_check(3 * rows, 3, rows, 1, &s) == GIN_EP_MSG_BAD,
        "nonzero without the flag");
  CHECK(gin_ep_where_check(PW | ((uint64_t)1 << 62), 0, rows, 1, &s) ==
            GIN_EP_MSG_BAD,
        "a slot past every expert");
  CHECK(gin_ep_where_check(PW, 0, 0, 1, &s) == GIN_EP_MSG_BAD, "no rows");
  if (!failures) printf("test_ep_msg: passed\n");
  return failures ? 1 : 0;
}
