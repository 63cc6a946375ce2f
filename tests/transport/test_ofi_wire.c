/*
 * ofi transport wire checks (src/transport/ofi.h): gin_ofi_prefix_check,
 * which judges every message's prefix before its header is read, and
 * gin_ofi_entries_check, the check of the setup entries all ranks
 * all-gather at init, the RMA writes' tokens (both widths, the 4-byte
 * form's sequence widened around the expected one, across the wrap) and
 * window keys. Every rejection kind with its reason, the valid cases, the
 * encoding (little endian, fixed offsets) and outputs left untouched on
 * failure. Exit 0 pass, 1 fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ofi.h"

#include "unit_check.h"

#define N 4

static const uint8_t use_all[N] = {1, 1, 1, 1};

/* Checks a prefix as rank 2 of N would, in a message of len bytes (at
 * least 88 wanted); expects `want` and, on rejection, `word` in the
 * reason, and *out untouched then. */
static void prefix_case(const char *name, const gin_ofi_prefix_t *p, size_t len,
                        const uint8_t *use, gin_result_t want,
                        const char *word) {
  uint8_t buf[128];
  memset(buf, 0, sizeof buf);
  gin_ofi_prefix_encode(p, buf);
  char why[160] = "";
  gin_ofi_prefix_t out;
  memset(&out, 0x5a, sizeof out);
  gin_result_t got =
      gin_ofi_prefix_check(buf, len, 88, 2, N, use, why, sizeof why, &out);
  CHECK(got == want, "%s: got %d, want %d (%s)", name, got, want, why);
  if (want != GIN_SUCCESS) {
    CHECK(strstr(why, word) != NULL, "%s: reason \"%s\" lacks \"%s\"", name,
          why, word);
    CHECK(out.magic == 0x5a5a5a5au, "%s: output written on failure", name);
  } else {
    CHECK(out.rank == p->rank && out.seq == p->seq, "%s: decoded %d/%u", name,
          out.rank, out.seq);
  }
}

static void prefixes(void) {
  gin_ofi_prefix_t ok = {GIN_OFI_MAGIC, GIN_OFI_VERSION, 0, 1, 0xfffffffeu};
  uint8_t b[GIN_OFI_PREFIX_BYTES];
  gin_ofi_prefix_encode(&ok, b);
  const uint8_t want[GIN_OFI_PREFIX_BYTES] = {
      0x4f, 0x4e, 0x49, 0x47, 1, 0, 0, 0, 1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff};
  CHECK(memcmp(b, want, sizeof b) == 0, "prefix encoding");

  prefix_case("valid", &ok, 88, use_all, GIN_SUCCESS, "");
  prefix_case("valid, longer", &ok, 128, use_all, GIN_SUCCESS, "");
  prefix_case("short", &ok, 87, use_all, GIN_ERR_PROTOCOL, "87 bytes");
  gin_ofi_prefix_t p = ok;
  p.magic ^= 1;
  prefix_case("magic", &p, 88, use_all, GIN_ERR_PROTOCOL, "magic");
  p = ok;
  p.version = 2;
  prefix_case("version", &p, 88, use_all, GIN_ERR_PROTOCOL, "version 2");
  p = ok;
  p.reserved = 4;
  prefix_case("reserved", &p, 88, use_all, GIN_ERR_PROTOCOL, "reserved");
  p = ok;
  p.rank = 2;
  prefix_case("from itself", &p, 88, use_all, GIN_ERR_PROTOCOL, "rank 2");
  p.rank = N;
  prefix_case("rank past the job", &p, 88, use_all, GIN_ERR_PROTOCOL, "rank 4");
  p.rank = -1;
  prefix_case("negative rank", &p, 88, use_all, GIN_ERR_PROTOCOL, "rank -1");
  const uint8_t use_not1[N] = {1, 0, 1, 1};
  prefix_case("not an ofi peer", &ok, 88, use_not1, GIN_ERR_PROTOCOL,
              "not an ofi peer");
  CHECK(gin_ofi_prefix_check(NULL, 88, 88, 2, N, use_all, NULL, 0, NULL) ==
            GIN_ERR_INVALID,
        "NULL buffer");
  CHECK(gin_ofi_prefix_check(b, 88, 88, 2, N, NULL, NULL, 0, NULL) ==
            GIN_ERR_INVALID,
        "NULL use");
}

/* ------------------------------------------------------------ entries */

static uint8_t all[N * 512];

/* A valid set: every rank uses ofi with every other, names "epR". */
static size_t entries_ok(void) {
  size_t esz = gin_ofi_entry_bytes(N);
  memset(all, 0, sizeof all);
  for (int r = 0; r < N; r++) {
    char name[8];
    int len = snprintf(name, sizeof name, "ep%d", r);
    uint8_t use[N] = {1, 1, 1, 1};
    use[r] = 0;
    gin_ofi_entry_encode(GIN_SUCCESS, name, (size_t)len, use, N,
                         all + (size_t)r * esz);
  }
  return esz;
}

static void entry_case(const char *name, size_t len, gin_result_t want,
                       const char *word) {
  char why[192] = "";
  gin_result_t got = gin_ofi_entries_check(all, len, N, why, sizeof why);
  CHECK(got == want, "%s: got %d, want %d (%s)", name, got, want, why);
  if (want != GIN_SUCCESS)
    CHECK(strstr(why, word) != NULL, "%s: reason \"%s\" lacks \"%s\"", name,
          why, word);
}

static void entries(void) {
  size_t esz = entries_ok();
  CHECK(esz == 256, "entry of %zu bytes for 4 ranks", esz);
  CHECK(gin_ofi_entry_bytes(1000) == ((8 + 240 + 125 + 7) & ~7u),
        "entry bytes for 1000 ranks");
  entry_case("valid", N * esz, GIN_SUCCESS, "");
  size_t len;
  const uint8_t *nm = gin_ofi_entry_name(all, N, 3, &len);
  CHECK(len == 3 && memcmp(nm, "ep3", 3) == 0, "rank 3's name");
  /* The bits: byte 248 of rank 0's entry has ranks 1-3. */
  CHECK(all[GIN_OFI_ENTRY_HEAD] == 0x0e, "rank 0's bits 0x%02x",
        all[GIN_OFI_ENTRY_HEAD]);

  entry_case("short", N * esz - 8, GIN_ERR_PROTOCOL, "expected 4");
  entries_ok();
  all[2 * esz] = (uint8_t)GIN_ERR_SYSTEM; /* rank 2's status */
  entry_case("a rank failed", N * esz, GIN_ERR_REMOTE, "rank 2 could not");
  entries_ok();
  all[1 * esz + GIN_OFI_ENTRY_HEAD] &= (uint8_t) ~(1u << 3); /* 1 drops 3 */
  entry_case("asymmetric", N * esz, GIN_ERR_INVALID,
             "rank 3 reaches rank 1 through ofi but not the other way");
  entries_ok();
  all[3 * esz + 4] = 0; /* rank 3's name length */
  entry_case("no name", N * esz, GIN_ERR_PROTOCOL, "no endpoint name");
  entries_ok();
  all[0 * esz + 4] = 0xff; /* rank 0's name of 255 bytes */
  entry_case("long name", N * esz, GIN_ERR_PROTOCOL, "255 bytes");
  /* Ranks that use ofi with nobody need no name. */
  memset(all, 0, sizeof all);
  for (int r = 0; r < N; r++)
    gin_ofi_entry_encode(GIN_SUCCESS, NULL, 0, NULL, N, all + (size_t)r * esz);
  entry_case("nobody uses ofi", N * esz, GIN_SUCCESS, "");
  CHECK(gin_ofi_entries_check(NULL, 0, N, NULL, 0) == GIN_ERR_INVALID,
        "NULL entries");
}

/* The sequence number rank 2 expects next from each rank. */
static uint32_t expect[N];
static uint32_t next_of(void *arg, int rank) {
  (void)arg;
  return expect[rank];
}

/* Decodes `data` as rank 2 of N with cq data of `bytes`; expects `want`,
 * then rank and seq, or on rejection `word` and the outputs untouched. */
static void token_case(const char *name, uint64_t data, size_t bytes,
                       gin_result_t want, int rank, uint32_t seq,
                       const char *word) {
  char why[160] = "";
  int r = -7;
  uint32_t q = 0x5a5a5a5au;
  gin_result_t got = gin_ofi_token_decode(data, bytes, 2, N, use_all, next_of,
                                          NULL, why, sizeof why, &r, &q);
  CHECK(got == want, "%s: got %d, want %d (%s)", name, got, want, why);
  if (want == GIN_SUCCESS) {
    CHECK(r == rank && q == seq, "%s: decoded rank %d seq %u, want %d %u", name,
          r, q, rank, seq);
  } else {
    CHECK(strstr(why, word) != NULL, "%s: reason \"%s\" lacks \"%s\"", name,
          why, word);
    CHECK(r == -7 && q == 0x5a5a5a5au, "%s: output written on failure", name);
  }
}

static void tokens(void) {
  CHECK(gin_ofi_token_encode(3, 0x89abcdefu, 8) == 0x0000000389abcdefull,
        "8-byte token layout");
  CHECK(gin_ofi_token_encode(3, 0x89abcdefu, 4) == ((3u << 20) | 0xbcdefu),
        "4-byte token layout");
  token_case("8 bytes", gin_ofi_token_encode(1, 77, 8), 8, GIN_SUCCESS, 1, 77,
             "");
  expect[1] = 1000;
  token_case("4 bytes, expected", gin_ofi_token_encode(1, 1000, 4), 4,
             GIN_SUCCESS, 1, 1000, "");
  token_case("4 bytes, ahead", gin_ofi_token_encode(1, 1040, 4), 4, GIN_SUCCESS,
             1, 1040, "");
  /* Already applied (behind): widened below, so the caller sees a repeat. */
  token_case("4 bytes, behind", gin_ofi_token_encode(1, 990, 4), 4, GIN_SUCCESS,
             1, 990, "");
  expect[3] = 0xfffffff0u; /* the 32-bit count wraps past 2^20 steps too */
  token_case("4 bytes, across the wrap", gin_ofi_token_encode(3, 5, 4), 4,
             GIN_SUCCESS, 3, 5, "");
  expect[3] = 0x000ffff0u; /* the low 20 bits wrap */
  token_case("4 bytes, low bits wrap", gin_ofi_token_encode(3, 0x100010u, 4), 4,
             GIN_SUCCESS, 3, 0x100010u, "");
  token_case("from self", gin_ofi_token_encode(2, 1, 8), 8, GIN_ERR_PROTOCOL, 0,
             0, "not an ofi peer");
  token_case("rank out of range", gin_ofi_token_encode(9, 1, 8), 8,
             GIN_ERR_PROTOCOL, 0, 0, "rank 9");
  token_case("4-byte token too wide", 1ull << 40, 4, GIN_ERR_PROTOCOL, 0, 0,
             "wider than 4 bytes");
  static const uint8_t use_some[N] = {1, 0, 1, 1};
  char why[160] = "";
  int r;
  uint32_t q;
  CHECK(gin_ofi_token_decode(gin_ofi_token_encode(1, 1, 8), 8, 2, N, use_some,
                             next_of, NULL, why, sizeof why, &r,
                             &q) == GIN_ERR_PROTOCOL &&
            strstr(why, "not an ofi peer"),
        "token from a rank that does not use ofi: %s", why);
  CHECK(gin_ofi_token_decode(0, 8, 2, N, NULL, next_of, NULL, NULL, 0, &r,
                             &q) == GIN_ERR_INVALID,
        "NULL use");
  CHECK(gin_ofi_token_decode(0, 8, 2, N, use_all, NULL, NULL, NULL, 0, &r,
                             &q) == GIN_ERR_INVALID,
        "NULL next_seq");
}

static void keys(void) {
  uint8_t b[GIN_OFI_KEY_BYTES];
  gin_ofi_key_encode(1, 7, 0x1122334455667788ull, 0x99aabbccddeeff00ull, b);
  static const uint8_t want[GIN_OFI_KEY_BYTES] = {
      1,    0,    0,    0,    7,    0,    0,    0,    0x88, 0x77, 0x66, 0x55,
      0x44, 0x33, 0x22, 0x11, 0x00, 0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99};
  CHECK(memcmp(b, want, sizeof b) == 0, "key encoding");
  uint32_t gen = 0;
  uint64_t addr = 0, key = 0;
  CHECK(gin_ofi_key_decode(b, &gen, &addr, &key) == 1 && gen == 7 &&
            addr == 0x1122334455667788ull && key == 0x99aabbccddeeff00ull,
        "key decoded");
  gin_ofi_key_encode(0, 7, 1, 2, b);
  gen = 3;
  CHECK(gin_ofi_key_decode(b, &gen, &addr, &key) == 0 && gen == 3,
        "a rank without the window registered: no key, outputs untouched");
  gin_ofi_key_encode(2, 7, 1, 2, b);
  CHECK(gin_ofi_key_decode(b, &gen, &addr, &key) == 0,
        "a status other than 1 is no key");
}

int main(void) {
  prefixes();
  entries();
  tokens();
  keys();
  if (failures)
    fprintf(stderr, "%d failure(s)\n", failures);
  else
    printf("ofi wire: all cases pass\n");
  return failures ? 1 : 0;
}
