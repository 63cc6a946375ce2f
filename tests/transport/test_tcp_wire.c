/*
 * tcp transport wire checks: gin_tcp_hello_check and gin_tcp_header_check,
 * the pure functions that judge every byte a peer sends before anything is
 * written, and gin_tcp_entries_check, the check of the setup entries all
 * ranks all-gather at init. Every rejection kind, the valid cases, the encoding
 * (little endian, fixed offsets), outputs untouched on failure, and a seeded
 * mutation loop: whatever the checker accepts lies inside a live window.
 * Exit 0 pass, 1 fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/bootstrap.h" /* GIN_BS_MAGIC: the other hello */
#include "transport/tcp.h"

#include "unit_check.h"

static const uint8_t secret[16] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66,
                                   0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc,
                                   0xdd, 0xee, 0xff, 0x01};

/* ------------------------------------------------------------- hello */

static gin_tcp_hello_t hello_ok(int rank) {
  gin_tcp_hello_t h = {.magic = GIN_TCP_HELLO_MAGIC,
                       .version = GIN_TCP_VERSION,
                       .rank = rank,
                       .nranks = 4};
  memcpy(h.secret, secret, 16);
  return h;
}

/* Checks hello h (len bytes of its encoding) as rank 2 of 4 would; expects
 * `want` and, on rejection, `word` in the reason. */
static void hello_case(const char *name, const gin_tcp_hello_t *h, size_t len,
                       const uint8_t *expect, gin_result_t want,
                       const char *word) {
  uint8_t buf[GIN_TCP_HELLO_BYTES + 8];
  memset(buf, 0, sizeof buf);
  gin_tcp_hello_encode(h, buf);
  char why[160] = "";
  int rank = -77;
  gin_result_t res = gin_tcp_hello_check(buf, len, secret, 2, 4, expect, why,
                                         sizeof why, &rank);
  CHECK(res == want, "hello %s: result %d, expected %d (%s)", name, res, want,
        why);
  if (want == GIN_SUCCESS) {
    CHECK(rank == h->rank, "hello %s: rank %d, expected %d", name, rank,
          (int)h->rank);
  } else {
    CHECK(rank == -77, "hello %s: rank_out written on failure", name);
    CHECK(strstr(why, word) != NULL, "hello %s: reason \"%s\" lacks \"%s\"",
          name, why, word);
  }
}

static void test_hello(void) {
  uint8_t expect[4] = {1, 0, 0, 1};
  gin_tcp_hello_t h = hello_ok(0);
  hello_case("valid rank 0", &h, GIN_TCP_HELLO_BYTES, NULL, GIN_SUCCESS, "");
  hello_case("valid, expected", &h, GIN_TCP_HELLO_BYTES, expect, GIN_SUCCESS,
             "");
  h = hello_ok(1);
  hello_case("valid rank 1", &h, GIN_TCP_HELLO_BYTES, NULL, GIN_SUCCESS, "");
  hello_case("not a tcp peer", &h, GIN_TCP_HELLO_BYTES, expect,
             GIN_ERR_PROTOCOL, "does not use tcp");
  h = hello_ok(0);
  hello_case("truncated", &h, GIN_TCP_HELLO_BYTES - 1, NULL, GIN_ERR_PROTOCOL,
             "bytes");
  hello_case("empty", &h, 0, NULL, GIN_ERR_PROTOCOL, "bytes");
  hello_case("too long", &h, GIN_TCP_HELLO_BYTES + 1, NULL, GIN_ERR_PROTOCOL,
             "bytes");
  h.magic = GIN_BS_MAGIC; /* the bootstrap's hello is not ours */
  hello_case("bad magic", &h, GIN_TCP_HELLO_BYTES, NULL, GIN_ERR_PROTOCOL,
             "magic");
  h = hello_ok(0);
  h.version = GIN_TCP_VERSION + 1;
  hello_case("bad version", &h, GIN_TCP_HELLO_BYTES, NULL, GIN_ERR_PROTOCOL,
             "version");
  for (int i = 0; i < 16; i += 15) {
    h = hello_ok(0);
    h.secret[i] ^= 0x80;
    hello_case("bad secret", &h, GIN_TCP_HELLO_BYTES, NULL, GIN_ERR_PROTOCOL,
               "secret");
  }
  h = hello_ok(0);
  h.reserved = 1;
  hello_case("reserved", &h, GIN_TCP_HELLO_BYTES, NULL, GIN_ERR_PROTOCOL,
             "reserved");
  h = hello_ok(0);
  h.nranks = 5;
  hello_case("job size", &h, GIN_TCP_HELLO_BYTES, NULL, GIN_ERR_PROTOCOL,
             "job size");
  int ranks[] = {-1, 4, 1 << 30, -2147483647 - 1};
  for (int i = 0; i < 4; i++) {
    h = hello_ok(ranks[i]);
    hello_case("rank out of range", &h, GIN_TCP_HELLO_BYTES, NULL,
               GIN_ERR_PROTOCOL, "out of range");
  }
  for (int r = 2; r <= 3; r++) { /* only lower ranks connect */
    h = hello_ok(r);
    hello_case("rank not lower", &h, GIN_TCP_HELLO_BYTES, NULL,
               GIN_ERR_PROTOCOL, "only lower ranks");
  }
  /* NULL arguments; reasons optional. */
  uint8_t buf[GIN_TCP_HELLO_BYTES];
  h = hello_ok(0);
  gin_tcp_hello_encode(&h, buf);
  CHECK(gin_tcp_hello_check(NULL, sizeof buf, secret, 2, 4, NULL, NULL, 0,
                            NULL) == GIN_ERR_INVALID,
        "NULL buffer");
  CHECK(gin_tcp_hello_check(buf, sizeof buf, NULL, 2, 4, NULL, NULL, 0, NULL) ==
            GIN_ERR_INVALID,
        "NULL secret");
  CHECK(gin_tcp_hello_check(buf, sizeof buf, secret, 2, 4, NULL, NULL, 0,
                            NULL) == GIN_SUCCESS,
        "no why, no rank_out");
  CHECK(gin_tcp_hello_check(buf, 3, secret, 2, 4, NULL, NULL, 0, NULL) ==
            GIN_ERR_PROTOCOL,
        "short, no why");
  /* The wire layout: little endian at fixed offsets. */
  h = hello_ok(0x01020304);
  gin_tcp_hello_encode(&h, buf);
  CHECK(memcmp(buf, "HNIG", 4) == 0 && buf[4] == GIN_TCP_VERSION &&
            buf[5] == 0 && memcmp(buf + 8, secret, 16) == 0 && buf[24] == 4 &&
            buf[27] == 1 && buf[28] == 4,
        "hello encoding");
}

/* ------------------------------------------------------------ header */

/* The receiver's table: 0 data (4 KiB), 1 signals (1 KiB, generation 3),
 * 2 never registered, 3 retired (now generation 5), 4 big (4 MiB). */
#define NWINS 5
static gin_win_slot_t wins[NWINS];

static void wins_init(void) {
  memset(wins, 0, sizeof wins);
  wins[0] = (gin_win_slot_t){.live = 1, .gen = 1, .size = 4096};
  wins[1] = (gin_win_slot_t){.live = 1, .gen = 3, .size = 1024};
  wins[2] = (gin_win_slot_t){.live = 0, .gen = 1};
  wins[3] = (gin_win_slot_t){.live = 0, .gen = 5};
  wins[4] = (gin_win_slot_t){.live = 1, .gen = 1, .size = 4u << 20};
}

static gin_tcp_hdr_t put_ok(uint64_t off, uint64_t bytes) {
  return (gin_tcp_hdr_t){.magic = GIN_TCP_HDR_MAGIC,
                         .version = GIN_TCP_VERSION,
                         .op = GIN_TCP_OP_PUT,
                         .dst_win = 0,
                         .dst_gen = 1,
                         .dst_off = off,
                         .bytes = bytes};
}

static gin_tcp_hdr_t with_signal(gin_tcp_hdr_t h, uint64_t sig_off,
                                 uint64_t mode_off, uint32_t bit) {
  h.flags = GIN_TCP_F_SIGNAL;
  h.sig_win = 1;
  h.sig_gen = 3;
  h.sig_off = sig_off;
  h.sig_add = 7;
  h.mode_off = mode_off;
  h.mode_bit = bit;
  return h;
}

static gin_tcp_hdr_t signal_ok(void) {
  gin_tcp_hdr_t h = {.magic = GIN_TCP_HDR_MAGIC,
                     .version = GIN_TCP_VERSION,
                     .op = GIN_TCP_OP_SIGNAL};
  return with_signal(h, 16, 512, 2);
}

static void hdr_case_len(const char *name, const gin_tcp_hdr_t *h, size_t len,
                         gin_result_t want, const char *word) {
  uint8_t buf[GIN_TCP_HDR_BYTES + 8];
  memset(buf, 0, sizeof buf);
  gin_tcp_hdr_encode(h, buf);
  char why[200] = "";
  gin_tcp_hdr_t out;
  memset(&out, 0xa5, sizeof out);
  gin_result_t res =
      gin_tcp_header_check(buf, len, wins, NWINS, why, sizeof why, &out);
  CHECK(res == want, "header %s: result %d, expected %d (%s)", name, res, want,
        why);
  if (want == GIN_SUCCESS) {
    CHECK(memcmp(&out, h, sizeof out) == 0, "header %s: decoded differs", name);
  } else {
    gin_tcp_hdr_t untouched;
    memset(&untouched, 0xa5, sizeof untouched);
    CHECK(memcmp(&out, &untouched, sizeof out) == 0,
          "header %s: out written on failure", name);
    CHECK(strstr(why, word) != NULL, "header %s: reason \"%s\" lacks \"%s\"",
          name, why, word);
  }
}

static void hdr_case(const char *name, gin_tcp_hdr_t h, gin_result_t want,
                     const char *word) {
  hdr_case_len(name, &h, GIN_TCP_HDR_BYTES, want, word);
}

static void test_header_valid(void) {
  hdr_case("put whole window", put_ok(0, 4096), GIN_SUCCESS, "");
  hdr_case("put last byte", put_ok(4095, 1), GIN_SUCCESS, "");
  hdr_case("put 0 bytes at the end", put_ok(4096, 0), GIN_SUCCESS, "");
  hdr_case("put + signal", with_signal(put_ok(8, 8), 0, 0, 0), GIN_SUCCESS, "");
  hdr_case("put + signal + mode INC", with_signal(put_ok(8, 8), 1016, 1020, 1),
           GIN_SUCCESS, "");
  hdr_case("signal + mode ADD", signal_ok(), GIN_SUCCESS, "");
  gin_tcp_hdr_t h = put_ok(0, GIN_TCP_MAX_CHUNK);
  h.dst_win = 4;
  hdr_case("largest chunk", h, GIN_SUCCESS, "");
  hdr_case("bye",
           (gin_tcp_hdr_t){.magic = GIN_TCP_HDR_MAGIC,
                           .version = GIN_TCP_VERSION,
                           .op = GIN_TCP_OP_BYE},
           GIN_SUCCESS, "");
}

static void test_header_format(void) {
  gin_tcp_hdr_t h = put_ok(0, 8);
  hdr_case_len("truncated", &h, GIN_TCP_HDR_BYTES - 1, GIN_ERR_PROTOCOL,
               "bytes");
  hdr_case_len("empty", &h, 0, GIN_ERR_PROTOCOL, "bytes");
  hdr_case_len("too long", &h, GIN_TCP_HDR_BYTES + 1, GIN_ERR_PROTOCOL,
               "bytes");
  h.magic = GIN_TCP_HELLO_MAGIC;
  hdr_case("bad magic", h, GIN_ERR_PROTOCOL, "magic");
  h = put_ok(0, 8);
  h.version = 0;
  hdr_case("bad version", h, GIN_ERR_PROTOCOL, "version");
  int ops[] = {0, GIN_TCP_OP_BYE + 1, 255};
  for (int i = 0; i < 3; i++) {
    h = put_ok(0, 8);
    h.op = (uint8_t)ops[i];
    hdr_case("unknown op", h, GIN_ERR_PROTOCOL, "unknown operation");
  }
  h = put_ok(0, 8);
  h.flags = 2;
  hdr_case("unknown flag", h, GIN_ERR_PROTOCOL, "flags");
  h = put_ok(0, 8);
  h.reserved = 1;
  hdr_case("reserved", h, GIN_ERR_PROTOCOL, "does not use");
  h = signal_ok();
  h.bytes = 8;
  hdr_case("signal with bytes", h, GIN_ERR_PROTOCOL, "does not use");
  h = signal_ok();
  h.dst_win = 1;
  hdr_case("signal with a window", h, GIN_ERR_PROTOCOL, "does not use");
  h = put_ok(0, 8);
  h.sig_add = 1;
  hdr_case("signal fields without the flag", h, GIN_ERR_PROTOCOL,
           "does not use");
  h = put_ok(0, 8);
  h.mode_bit = 1;
  hdr_case("mode without the flag", h, GIN_ERR_PROTOCOL, "does not use");
  h = signal_ok();
  h.flags = 0;
  h.sig_win = h.sig_gen = 0;
  h.sig_off = h.sig_add = h.mode_off = h.mode_bit = 0;
  hdr_case("signal without a signal", h, GIN_ERR_PROTOCOL, "without");
  h = signal_ok();
  h.op = GIN_TCP_OP_BYE;
  hdr_case("bye with a signal", h, GIN_ERR_PROTOCOL, "with");
  h = put_ok(0, GIN_TCP_MAX_CHUNK + 1);
  h.dst_win = 4;
  hdr_case("oversized chunk", h, GIN_ERR_PROTOCOL, "in one chunk");
  h = put_ok(0, ~0ull);
  hdr_case("huge size", h, GIN_ERR_PROTOCOL, "in one chunk");
  CHECK(gin_tcp_header_check(NULL, GIN_TCP_HDR_BYTES, wins, NWINS, NULL, 0,
                             NULL) == GIN_ERR_INVALID,
        "NULL buffer");
  /* The wire layout: little endian at the struct's offsets. */
  uint8_t buf[GIN_TCP_HDR_BYTES];
  h = with_signal(put_ok(0x0102030405060708ull, 0x10), 8, 12, 1);
  gin_tcp_hdr_encode(&h, buf);
  CHECK(memcmp(buf, "TNIG", 4) == 0 && buf[4] == GIN_TCP_VERSION &&
            buf[6] == GIN_TCP_OP_PUT && buf[7] == GIN_TCP_F_SIGNAL &&
            buf[16] == 8 && buf[23] == 1 && buf[24] == 0x10 && buf[32] == 1 &&
            buf[36] == 3 && buf[40] == 8 && buf[48] == 7 && buf[56] == 12 &&
            buf[64] == 1,
        "header encoding");
  h = with_signal(put_ok(16, 0x10), 8, 12, 1);
  gin_tcp_hdr_encode(&h, buf);
  CHECK(gin_tcp_header_check(buf, sizeof buf, wins, NWINS, NULL, 0, NULL) ==
            GIN_SUCCESS,
        "no why, no out");
}

static void test_header_windows(void) {
  gin_tcp_hdr_t h = put_ok(0, 8);
  h.dst_win = NWINS;
  hdr_case("window outside the table", h, GIN_ERR_PROTOCOL, "outside the");
  h.dst_win = 0xffffffffu;
  hdr_case("window ~0", h, GIN_ERR_PROTOCOL, "outside the");
  h = put_ok(0, 8);
  h.dst_win = 2;
  hdr_case("window not registered yet", h, GIN_ERR_AGAIN, "not registered");
  h = put_ok(0, 8);
  h.dst_gen = 2;
  hdr_case("window generation ahead", h, GIN_ERR_AGAIN, "not registered");
  h = put_ok(0, 8);
  h.dst_win = 3;
  h.dst_gen = 4;
  hdr_case("window retired", h, GIN_ERR_PROTOCOL, "deregistered");
  h = put_ok(0, 8);
  h.dst_win = 1;
  h.dst_gen = 1;
  hdr_case("stale generation of a live window", h, GIN_ERR_PROTOCOL,
           "deregistered");
  hdr_case("offset past the end", put_ok(4097, 0), GIN_ERR_PROTOCOL,
           "outside window");
  hdr_case("one byte too many", put_ok(4090, 7), GIN_ERR_PROTOCOL,
           "outside window");
  hdr_case("offset wraps", put_ok(~0ull - 3, 8), GIN_ERR_PROTOCOL,
           "outside window");
  hdr_case("bytes larger than the window", put_ok(0, 4097), GIN_ERR_PROTOCOL,
           "outside window");
}

static void test_header_signals(void) {
  gin_tcp_hdr_t base = put_ok(0, 8), h;
  hdr_case("signal word past the end", with_signal(base, 1024, 0, 0),
           GIN_ERR_PROTOCOL, "outside window");
  hdr_case("signal word straddles the end", with_signal(base, 1020, 0, 0),
           GIN_ERR_PROTOCOL, "outside window");
  hdr_case("signal word wraps", with_signal(base, ~0ull - 7, 0, 0),
           GIN_ERR_PROTOCOL, "outside window");
  hdr_case("signal word unaligned", with_signal(base, 12, 0, 0),
           GIN_ERR_PROTOCOL, "aligned");
  h = with_signal(base, 8, 0, 0);
  h.sig_win = NWINS;
  hdr_case("signal window outside the table", h, GIN_ERR_PROTOCOL,
           "outside the");
  h = with_signal(base, 8, 0, 0);
  h.sig_win = 3;
  h.sig_gen = 1;
  hdr_case("signal window retired", h, GIN_ERR_PROTOCOL, "deregistered");
  h = with_signal(base, 8, 0, 0);
  h.sig_gen = 4;
  hdr_case("signal window not registered yet", h, GIN_ERR_AGAIN,
           "not registered");
  h = with_signal(base, 8, 0, 0);
  h.sig_win = 0; /* a data window of 4 KiB: offset 8 fits, generation not */
  hdr_case("signal in another window's generation", h, GIN_ERR_AGAIN,
           "not registered");
  hdr_case("mode word past the end", with_signal(base, 8, 1024, 1),
           GIN_ERR_PROTOCOL, "outside window");
  hdr_case("mode word straddles the end", with_signal(base, 8, 1022, 1),
           GIN_ERR_PROTOCOL, "outside window");
  hdr_case("mode word unaligned", with_signal(base, 8, 514, 1),
           GIN_ERR_PROTOCOL, "aligned");
  hdr_case("mode bit 3", with_signal(base, 8, 512, 3), GIN_ERR_PROTOCOL,
           "mode bit");
  hdr_case("mode bit 0 with a mode word", with_signal(base, 8, 512, 0),
           GIN_ERR_PROTOCOL, "mode bit");
  hdr_case("mode bit without a mode word", with_signal(base, 8, 0, 1),
           GIN_ERR_PROTOCOL, "mode bit");
  hdr_case("stray mode bit without a mode word (fuzz find)",
           with_signal(base, 8, 0, 0xa2), GIN_ERR_PROTOCOL, "mode bit");
  /* Data and signal each checked: a good signal does not excuse the data. */
  hdr_case("bad data, good signal", with_signal(put_ok(4090, 7), 8, 512, 1),
           GIN_ERR_PROTOCOL, "destination");
}

/* ----------------------------------------------------------- entries */

static int all_zero(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return 0;
  return 1;
}

/* A job of n ranks (n <= 70) where every rank uses tcp with every other,
 * each listening on 127.0.0.1:(5000 + rank), rank 1 on [::1]. */
static void entries_ok(int n, uint8_t *all) {
  size_t esz = gin_tcp_entry_bytes(n);
  for (int r = 0; r < n; r++) {
    uint8_t use[70];
    for (int k = 0; k < n; k++)
      use[k] = k != r;
    gin_net_addr_t a = {AF_INET, (uint16_t)(5000 + r), {127, 0, 0, 1}};
    if (r == 1) a = (gin_net_addr_t){AF_INET6, 5001, {[15] = 1}};
    gin_tcp_entry_encode(GIN_SUCCESS, &a, use, n, all + (size_t)r * esz);
  }
}

/* Checks the n entries in all (len bytes); expects `want` and, on
 * rejection, `word` in the reason and the addresses untouched. */
static void entries_case(const char *name, const uint8_t *all, size_t len,
                         int n, gin_result_t want, const char *word) {
  gin_net_addr_t addrs[70];
  memset(addrs, 0xa5, sizeof addrs);
  char why[160] = "";
  gin_result_t res = gin_tcp_entries_check(all, len, n, why, sizeof why, addrs);
  CHECK(res == want, "entries %s: result %d, expected %d (%s)", name, res, want,
        why);
  CHECK(gin_tcp_entries_check(all, len, n, NULL, 0, NULL) == res,
        "entries %s: the same without outputs", name);
  if (want != GIN_SUCCESS) {
    CHECK(strstr(why, word) != NULL, "entries %s: reason \"%s\" lacks \"%s\"",
          name, why, word);
    CHECK(((uint8_t *)addrs)[0] == 0xa5 &&
              ((uint8_t *)addrs)[sizeof addrs - 1] == 0xa5,
          "entries %s: addresses written on failure", name);
    return;
  }
  size_t esz = gin_tcp_entry_bytes(n);
  for (int r = 0; r < n; r++) {
    const uint8_t *e = all + (size_t)r * esz;
    CHECK(addrs[r].family == (e[4] | e[5] << 8) &&
              addrs[r].port == (e[6] | e[7] << 8) &&
              memcmp(addrs[r].addr, e + 8, 16) == 0,
          "entries %s: address of rank %d as sent", name, r);
  }
}

static void test_entries(void) {
  /* Sizes: the head, a bit per rank, rounded up to 8. */
  CHECK(gin_tcp_entry_bytes(1) == 32 && gin_tcp_entry_bytes(8) == 32 &&
            gin_tcp_entry_bytes(64) == 32 && gin_tcp_entry_bytes(65) == 40 &&
            gin_tcp_entry_bytes(128) == 40 && gin_tcp_entry_bytes(129) == 48,
        "entry sizes");
  /* The wire layout: little endian at fixed offsets, padding zero. */
  uint8_t e[48];
  memset(e, 0x77, sizeof e);
  gin_net_addr_t a = {AF_INET6, 0x1234, {0xfe, 0x80, [15] = 9}};
  uint8_t use[10] = {1, 0, 0, 1, 0, 0, 0, 0, 1, 1};
  gin_tcp_entry_encode(-3, &a, use, 10, e);
  CHECK(e[0] == 0xfd && e[1] == 0xff && e[2] == 0xff && e[3] == 0xff &&
            e[4] == AF_INET6 && e[5] == 0 && e[6] == 0x34 && e[7] == 0x12 &&
            memcmp(e + 8, a.addr, 16) == 0 && e[24] == 0x09 && e[25] == 0x03 &&
            all_zero(e + 26, 6) && e[32] == 0x77,
        "entry encoding");
  gin_tcp_entry_encode(0, NULL, NULL, 10, e);
  CHECK(all_zero(e, 32), "entry without address or peers");

  static uint8_t all[70 * 40], bad[70 * 40];
  int sizes[] = {1, 2, 3, 4, 8, 9, 64, 65, 70};
  for (int i = 0; i < 9; i++) {
    entries_ok(sizes[i], all);
    entries_case("all to all", all,
                 (size_t)sizes[i] * gin_tcp_entry_bytes(sizes[i]), sizes[i],
                 GIN_SUCCESS, "");
  }
  int n = 4;
  size_t esz = gin_tcp_entry_bytes(n), len = (size_t)n * esz;
  entries_ok(n, all);
  entries_case("truncated", all, len - 1, n, GIN_ERR_PROTOCOL, "bytes");
  entries_case("too long", all, len + esz, n, GIN_ERR_PROTOCOL, "bytes");
  entries_case("empty", all, 0, n, GIN_ERR_PROTOCOL, "bytes");
  entries_case("other job size", all, len, 5, GIN_ERR_PROTOCOL, "bytes");
  memcpy(bad, all, len);
  gin_le_put32(bad + 2 * esz, (uint32_t)GIN_ERR_SYSTEM);
  entries_case("setup failed", bad, len, n, GIN_ERR_REMOTE,
               "rank 2 could not set up its listening socket");
  memcpy(bad, all, len);
  bad[3 * esz + GIN_TCP_ENTRY_HEAD] &= (uint8_t) ~(1u << 1); /* 3 not with 1 */
  entries_case("asymmetric", bad, len, n, GIN_ERR_INVALID,
               "rank 1 reaches rank 3 through tcp but not the other way");
  memcpy(bad, all, len);
  bad[0 * esz + GIN_TCP_ENTRY_HEAD] &= (uint8_t) ~(1u << 2); /* 0 not with 2 */
  entries_case("asymmetric, other side", bad, len, n, GIN_ERR_INVALID,
               "rank 2 reaches rank 0");
  memcpy(bad, all, len);
  gin_le_put16(bad + 3 * esz + 4, 99);
  entries_case("bad family", bad, len, n, GIN_ERR_PROTOCOL,
               "bad address of rank 3 (family 99, port 5003)");
  memcpy(bad, all, len);
  gin_le_put16(bad + 1 * esz + 6, 0);
  entries_case("port 0", bad, len, n, GIN_ERR_PROTOCOL,
               "bad address of rank 1 (family 10, port 0)");
  /* The first failure in rank order (rank a's status, then its pairs with
   * the higher ranks): rank 0's pairs before rank 3's status, rank 0's
   * status before rank 3's address, rank 0's pair with rank 3 (its
   * address) before rank 2's status. */
  memcpy(bad, all, len);
  gin_le_put32(bad + 3 * esz, 1);
  bad[0 * esz + GIN_TCP_ENTRY_HEAD] &= (uint8_t) ~(1u << 1);
  entries_case("order: pair before status", bad, len, n, GIN_ERR_INVALID,
               "rank 1 reaches rank 0");
  memcpy(bad, all, len);
  gin_le_put32(bad, 1);
  gin_le_put16(bad + 3 * esz + 6, 0);
  entries_case("order: status before address", bad, len, n, GIN_ERR_REMOTE,
               "rank 0 could not");
  gin_le_put32(bad, 0);
  gin_le_put32(bad + 2 * esz, 1);
  entries_case("order: address before a later status", bad, len, n,
               GIN_ERR_PROTOCOL, "bad address of rank 3");
  /* Not looked at: a rank's bit for itself, bits past nranks, padding, and
   * the address of rank 0 (no lower rank connects to it) or of a rank only
   * higher ranks use tcp with. */
  memcpy(bad, all, len);
  bad[2 * esz + GIN_TCP_ENTRY_HEAD] |= 1u << 2 | 0xf0;
  bad[2 * esz + GIN_TCP_ENTRY_HEAD + 3] = 0xff;
  memset(bad + 4, 0, 4); /* rank 0: family 0, port 0 */
  entries_case("ignored fields", bad, len, n, GIN_SUCCESS, "");
  /* Two islands: 0-1 and 2-3, no tcp across (ranks 2 and 3 on one host);
   * rank 2's address then matters to nobody. */
  for (int r = 0; r < n; r++) {
    uint8_t u[4] = {0};
    u[r ^ 1] = 1;
    gin_net_addr_t ad = {AF_INET, (uint16_t)(7000 + r), {10, 0, 0, 1}};
    gin_tcp_entry_encode(0, r == 2 ? NULL : &ad, u, n, bad + (size_t)r * esz);
  }
  entries_case("islands", bad, len, n, GIN_SUCCESS, "");
  /* One rank that uses tcp with nobody. */
  gin_tcp_entry_encode(0, NULL, NULL, 1, all);
  entries_case("single rank", all, 32, 1, GIN_SUCCESS, "");
  /* Bad arguments. */
  CHECK(gin_tcp_entries_check(NULL, 32, 1, NULL, 0, NULL) == GIN_ERR_INVALID &&
            gin_tcp_entries_check(all, 32, 0, NULL, 0, NULL) ==
                GIN_ERR_INVALID &&
            gin_tcp_entries_check(all, 0, -1, NULL, 0, NULL) == GIN_ERR_INVALID,
        "entries: NULL, no ranks");
  char tiny[4];
  entries_ok(n, all);
  gin_le_put16(all + 3 * esz + 6, 0);
  CHECK(gin_tcp_entries_check(all, len, n, tiny, sizeof tiny, NULL) ==
                GIN_ERR_PROTOCOL &&
            strcmp(tiny, "bad") == 0,
        "entries: why truncated to its buffer");
}

/* ------------------------------------------------------------- fuzz */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Flips random bits and bytes of valid messages; whatever passes must be
 * inside the table (headers) or a lower rank (hellos). */
static void test_mutations(void) {
  gin_tcp_hdr_t seeds[4] = {put_ok(0, 4096),
                            with_signal(put_ok(4000, 96), 1016, 1020, 1),
                            signal_ok(), put_ok(100, 0)};
  int accepted = 0, again = 0;
  for (int i = 0; i < 400000; i++) {
    uint8_t buf[GIN_TCP_HDR_BYTES];
    gin_tcp_hdr_encode(&seeds[i % 4], buf);
    int flips = 1 + (int)(next_rand() % 4);
    for (int f = 0; f < flips; f++) {
      uint64_t r = next_rand();
      if (r & 1)
        buf[(r >> 8) % sizeof buf] ^= (uint8_t)(1u << ((r >> 16) % 8));
      else
        buf[(r >> 8) % sizeof buf] = (uint8_t)(r >> 32);
    }
    gin_tcp_hdr_t h;
    gin_result_t res =
        gin_tcp_header_check(buf, sizeof buf, wins, NWINS, NULL, 0, &h);
    again += res == GIN_ERR_AGAIN;
    if (res != GIN_SUCCESS) continue;
    accepted++;
    if (h.op == GIN_TCP_OP_PUT) {
      const gin_win_slot_t *w = &wins[h.dst_win];
      CHECK(h.dst_win < NWINS && w->live && w->gen == h.dst_gen &&
                h.dst_off <= w->size && h.bytes <= w->size - h.dst_off,
            "accepted a put outside its window (win %u off %llu bytes %llu)",
            h.dst_win, (unsigned long long)h.dst_off,
            (unsigned long long)h.bytes);
    }
    if (h.flags & GIN_TCP_F_SIGNAL) {
      const gin_win_slot_t *w = &wins[h.sig_win];
      CHECK(h.sig_win < NWINS && w->live && w->gen == h.sig_gen &&
                h.sig_off % 8 == 0 && h.sig_off + 8 <= w->size &&
                h.mode_off % 4 == 0 && h.mode_off + 4 <= w->size,
            "accepted a signal outside its window (win %u off %llu mode %llu)",
            h.sig_win, (unsigned long long)h.sig_off,
            (unsigned long long)h.mode_off);
    }
  }
  CHECK(accepted > 0 && again > 0, "mutations: %d accepted, %d waiting",
        accepted, again);
  int hellos = 0;
  for (int i = 0; i < 200000; i++) {
    uint8_t buf[GIN_TCP_HELLO_BYTES];
    gin_tcp_hello_t h = hello_ok((int)(i % 2));
    gin_tcp_hello_encode(&h, buf);
    uint64_t r = next_rand();
    buf[(r >> 8) % sizeof buf] ^= (uint8_t)(1u << ((r >> 16) % 8));
    int rank = -1;
    if (gin_tcp_hello_check(buf, sizeof buf, secret, 2, 4, NULL, NULL, 0,
                            &rank) != GIN_SUCCESS)
      continue;
    hellos++;
    CHECK(rank >= 0 && rank < 2, "accepted hello from rank %d", rank);
  }
  CHECK(hellos > 0, "hello mutations: some flip a rank bit and still pass");
}

int main(void) {
  wins_init();
  test_hello();
  test_header_valid();
  test_header_format();
  test_header_windows();
  test_header_signals();
  test_entries();
  test_mutations();
  if (failures) {
    printf("tcp wire: %d failures\n", failures);
    return 1;
  }
  printf("tcp wire: passed\n");
  return 0;
}
