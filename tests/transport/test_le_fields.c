/*
 * The wire's little-endian fields (base/net.h): each put writes the bytes
 * of its value least significant first at any (unaligned) address and
 * touches nothing around them; each get reads them back. Built twice: as
 * the host compiles it (one load or store on a little-endian host) and
 * with GIN_LE_PORTABLE (the byte loops, as a big-endian host runs them).
 * Exit 0 pass, 1 fail.
 */
#include <stdio.h>
#include <string.h>

#include "base/net.h"

#define UNIT_CHECK_NO_GIN
#include "unit_check.h"

/* buf[at..at+n) must hold want[0..n) and every other byte 0xee. */
static void expect_bytes(const char *what, const uint8_t *buf, size_t len,
                         size_t at, const uint8_t *want, size_t n) {
  for (size_t i = 0; i < len; i++) {
    uint8_t w = i >= at && i < at + n ? want[i - at] : 0xee;
    CHECK(buf[i] == w, "%s at offset %zu: byte %zu is 0x%02x, want 0x%02x",
          what, at, i, buf[i], w);
  }
}

int main(void) {
  static const uint8_t b16[] = {0x34, 0x12};
  static const uint8_t b32[] = {0x78, 0x56, 0x34, 0x12};
  static const uint8_t b64[] = {0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01};
  uint8_t buf[24];
  for (size_t at = 0; at < 9; at++) { /* every alignment */
    memset(buf, 0xee, sizeof buf);
    gin_le_put16(buf + at, 0x1234);
    expect_bytes("put16", buf, sizeof buf, at, b16, 2);
    CHECK(gin_le_get16(buf + at) == 0x1234, "get16 at %zu", at);
    memset(buf, 0xee, sizeof buf);
    gin_le_put32(buf + at, 0x12345678u);
    expect_bytes("put32", buf, sizeof buf, at, b32, 4);
    CHECK(gin_le_get32(buf + at) == 0x12345678u, "get32 at %zu", at);
    memset(buf, 0xee, sizeof buf);
    gin_le_put64(buf + at, 0x0123456789abcdefull);
    expect_bytes("put64", buf, sizeof buf, at, b64, 8);
    CHECK(gin_le_get64(buf + at) == 0x0123456789abcdefull, "get64 at %zu", at);
  }
  /* The extremes round-trip (no sign or width loss in the byte loops). */
  memset(buf, 0, sizeof buf);
  gin_le_put16(buf, 0xffff);
  gin_le_put32(buf + 2, 0xffffffffu);
  gin_le_put64(buf + 6, ~0ull);
  CHECK(gin_le_get16(buf) == 0xffff && gin_le_get32(buf + 2) == 0xffffffffu &&
            gin_le_get64(buf + 6) == ~0ull,
        "all-ones fields do not round-trip");
  CHECK(gin_le_get64(buf + 14) == 0, "bytes past the fields written");
  if (failures) return 1;
#ifdef GIN_LE_PORTABLE
  printf("PASS (byte loops)\n");
#else
  printf("PASS (as the host compiles it)\n");
#endif
  return 0;
}
