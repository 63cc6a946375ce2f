/*
 * The all-gathered records of src/comm/records.h, case by case: the peer
 * records of gin_comm_init (gin_peer_recs_check) and the registration
 * records of gin_window_register (gin_win_recs_check). The wire layout
 * (the structs' bytes, little endian), valid jobs of several sizes, every
 * rejection with its text (the texts comm.c and window.c gave before the
 * checks moved are compared whole), the order of failures, outputs
 * untouched on failure, the same result without outputs. The fuzzers
 * (tests/fuzz/fuzz_comm_peer.c, fuzz_window_reg.c) check the invariants on
 * arbitrary bytes; this names the cases. Exit 0 pass, 1 fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/records.h"

#include "unit_check.h"

#define MAXN 64

/* ------------------------------------------------------------- peers */

static gin_peer_info_t peer_ok(int r) {
  gin_peer_info_t p;
  memset(&p, 0, sizeof p);
  snprintf(p.hostid, sizeof p.hostid, "host%d/boot-%d/4026531840", r / 2,
           r / 2);
  p.pid = 1000 + r;
  p.rank = r;
  p.watch = r % 3 != 1;
  snprintf(p.dev.bytes, sizeof p.dev.bytes, "host");
  for (int i = 0; i < GIN_ARCH_HANDLE_BYTES; i++)
    p.ctrl.bytes[i] = (uint8_t)(r * 7 + i);
  return p;
}

static void peers_ok(int n, uint8_t *all) {
  for (int r = 0; r < n; r++) {
    gin_peer_info_t p = peer_ok(r);
    gin_peer_rec_encode(&p, all + (size_t)r * GIN_PEER_REC_BYTES);
  }
}

/* Checks the n records in all (len bytes); expects `want` and, on
 * rejection, exactly `text` as the reason and the output untouched. */
static void peers_case(const char *name, const uint8_t *all, size_t len, int n,
                       gin_result_t want, const char *text) {
  static gin_peer_info_t out[MAXN + 1];
  memset(out, 0xa5, sizeof out);
  char why[200] = "";
  gin_result_t res = gin_peer_recs_check(all, len, n, why, sizeof why, out);
  CHECK(res == want, "peers %s: result %d, expected %d (%s)", name, res, want,
        why);
  CHECK(gin_peer_recs_check(all, len, n, NULL, 0, NULL) == res,
        "peers %s: the same without outputs", name);
  if (want != GIN_SUCCESS) {
    CHECK(strcmp(why, text) == 0, "peers %s: reason \"%s\", expected \"%s\"",
          name, why, text);
    CHECK(((uint8_t *)out)[0] == 0xa5 &&
              ((uint8_t *)out)[sizeof out - 1] == 0xa5,
          "peers %s: records written on failure", name);
    return;
  }
  for (int r = 0; r < n; r++) {
    gin_peer_info_t p = peer_ok(r);
    CHECK(memcmp(&out[r], &p, sizeof p) == 0,
          "peers %s: rank %d decoded "
          "differently",
          name, r);
  }
  CHECK(((uint8_t *)&out[n])[0] == 0xa5, "peers %s: written past %d records",
        name, n);
}

static void test_peers(void) {
  /* The wire bytes are the struct's (what comm.c exchanged before). */
  gin_peer_info_t p = peer_ok(5);
  uint8_t w[GIN_PEER_REC_BYTES];
  memset(w, 0x77, sizeof w);
  gin_peer_rec_encode(&p, w);
  CHECK(memcmp(w, &p, sizeof w) == 0, "peer record is not the struct's bytes");
  CHECK(w[GIN_PEER_REC_PID] == (1005 & 0xff) && w[GIN_PEER_REC_PID + 1] == 3 &&
            w[GIN_PEER_REC_RANK] == 5 && w[GIN_PEER_REC_WATCH] == 1,
        "peer record fields");
  /* The encoder writes the host id up to its NUL and zeros, padding 0. */
  memset(p.hostid + 30, 'z', 10);
  p.hostid[20] = '\0';
  p.pad_ = 9;
  gin_peer_rec_encode(&p, w);
  int tail = 0;
  for (int i = 20; i < GIN_HOSTID_BYTES; i++)
    tail |= w[i];
  CHECK(!tail && w[GIN_PEER_REC_PAD] == 0, "peer record not canonical");

  static uint8_t all[MAXN * GIN_PEER_REC_BYTES], bad[MAXN * GIN_PEER_REC_BYTES];
  const size_t B = GIN_PEER_REC_BYTES;
  int sizes[] = {1, 2, 3, 4, 8, 64};
  for (int i = 0; i < 6; i++) {
    peers_ok(sizes[i], all);
    peers_case("valid", all, (size_t)sizes[i] * B, sizes[i], GIN_SUCCESS, "");
  }
  int n = 4;
  size_t len = (size_t)n * B;
  peers_ok(n, all);
  peers_case("truncated", all, len - 1, n, GIN_ERR_PROTOCOL,
             "exchange of 1023 bytes, expected 4 records of 256");
  peers_case("too long", all, len + B, n, GIN_ERR_PROTOCOL,
             "exchange of 1280 bytes, expected 4 records of 256");
  peers_case("empty", all, 0, n, GIN_ERR_PROTOCOL,
             "exchange of 0 bytes, expected 4 records of 256");
  /* The one check comm.c made before, with its text (comm.c prefixes
   * "gin_comm_init: "). */
  memcpy(bad, all, len);
  gin_le_put32(bad + 2 * B + GIN_PEER_REC_RANK, 3);
  peers_case("slot names another rank", bad, len, n, GIN_ERR_PROTOCOL,
             "slot 2 of the exchange names rank 3");
  memcpy(bad, all, len);
  gin_le_put32(bad + 1 * B + GIN_PEER_REC_RANK, 0xffffffffu);
  peers_case("negative rank", bad, len, n, GIN_ERR_PROTOCOL,
             "slot 1 of the exchange names rank -1");
  /* The checks added with the move. */
  memcpy(bad, all, len);
  memset(bad + 3 * B, 'x', GIN_HOSTID_BYTES);
  peers_case("host id unterminated", bad, len, n, GIN_ERR_PROTOCOL,
             "the host id of rank 3 is not NUL-terminated within its 96 "
             "bytes");
  /* Order: every slot's rank before any host id. */
  gin_le_put32(bad + 3 * B + GIN_PEER_REC_RANK, 1);
  peers_case("order: rank before host id", bad, len, n, GIN_ERR_PROTOCOL,
             "slot 3 of the exchange names rank 1");
  memcpy(bad, all, len);
  bad[1 * B + GIN_HOSTID_BYTES - 1] = 'x';
  peers_case("bytes after the host id", bad, len, n, GIN_ERR_PROTOCOL,
             "the host id of rank 1 has bytes after its end (at 95)");
  memcpy(bad, all, len);
  gin_le_put32(bad + GIN_PEER_REC_PID, 0);
  peers_case("pid 0", bad, len, n, GIN_ERR_PROTOCOL, "rank 0 sent pid 0");
  gin_le_put32(bad + GIN_PEER_REC_PID, 0xfffffffeu);
  peers_case("negative pid", bad, len, n, GIN_ERR_PROTOCOL,
             "rank 0 sent pid -2");
  memcpy(bad, all, len);
  gin_le_put32(bad + 2 * B + GIN_PEER_REC_WATCH, 2);
  peers_case("watch flag 2", bad, len, n, GIN_ERR_PROTOCOL,
             "rank 2 sent watch flag 2 (0 or 1)");
  memcpy(bad, all, len);
  gin_le_put32(bad + 3 * B + GIN_PEER_REC_PAD, 0x10);
  peers_case("padding", bad, len, n, GIN_ERR_PROTOCOL,
             "rank 3 sent padding 0x10 (0)");
  /* Order among ranks: rank 1's padding before rank 2's pid. */
  gin_le_put32(bad + 1 * B + GIN_PEER_REC_PAD, 1);
  gin_le_put32(bad + 2 * B + GIN_PEER_REC_PID, 0);
  peers_case("order: lower rank first", bad, len, n, GIN_ERR_PROTOCOL,
             "rank 1 sent padding 0x1 (0)");
  /* Accepted: an empty host id, one of 95 characters, any opaque bytes. */
  memcpy(bad, all, len);
  memset(bad + 0 * B, 0, GIN_HOSTID_BYTES);
  memset(bad + 1 * B, 'h', GIN_HOSTID_BYTES - 1);
  memset(bad + 2 * B + GIN_PEER_REC_DEV, 0xff,
         GIN_ARCH_DEVINFO_BYTES + GIN_ARCH_HANDLE_BYTES);
  CHECK(gin_peer_recs_check(bad, len, n, NULL, 0, NULL) == GIN_SUCCESS,
        "peers: edge host ids and opaque bytes refused");
  /* Bad arguments, a short why. */
  CHECK(gin_peer_recs_check(NULL, B, 1, NULL, 0, NULL) == GIN_ERR_INVALID &&
            gin_peer_recs_check(all, B, 0, NULL, 0, NULL) == GIN_ERR_INVALID,
        "peers: NULL, no ranks");
  char tiny[5];
  memcpy(bad, all, len);
  gin_le_put32(bad + GIN_PEER_REC_PID, 0);
  CHECK(gin_peer_recs_check(bad, len, n, tiny, sizeof tiny, NULL) ==
                GIN_ERR_PROTOCOL &&
            strcmp(tiny, "rank") == 0,
        "peers: why truncated to its buffer");
}

/* ----------------------------------------------------------- windows */

static gin_win_rec_t win_ok(int r) {
  gin_win_rec_t w;
  memset(&w, 0, sizeof w);
  w.slot = 2;
  w.size = 1000;
  w.offset = (uint64_t)r * 64;
  w.alloc_size = w.offset + 1000 + (uint64_t)(r % 2) * 4096;
  for (int i = 0; i < GIN_ARCH_HANDLE_BYTES; i++)
    w.handle.bytes[i] = (uint8_t)(r + i);
  return w;
}

static void wins_ok(int n, uint8_t *all) {
  for (int r = 0; r < n; r++) {
    gin_win_rec_t w = win_ok(r);
    gin_win_rec_encode(&w, all + (size_t)r * GIN_WIN_REC_BYTES);
  }
}

/* Rank r's field at off in records t. */
static void put32(uint8_t *t, int r, size_t off, uint32_t v) {
  gin_le_put32(t + (size_t)r * GIN_WIN_REC_BYTES + off, v);
}
static void put64(uint8_t *t, int r, size_t off, uint64_t v) {
  gin_le_put64(t + (size_t)r * GIN_WIN_REC_BYTES + off, v);
}

/* Checks the n records in all (len bytes) against a table of 8 slots;
 * expects `want` and, on rejection, exactly `text` and the output
 * untouched. */
static void wins_case(const char *name, const uint8_t *all, size_t len, int n,
                      gin_result_t want, const char *text) {
  static gin_win_rec_t out[MAXN + 1];
  memset(out, 0xa5, sizeof out);
  char why[256] = "";
  gin_result_t res = gin_win_recs_check(all, len, n, 8, why, sizeof why, out);
  CHECK(res == want, "windows %s: result %d, expected %d (%s)", name, res, want,
        why);
  CHECK(gin_win_recs_check(all, len, n, 8, NULL, 0, NULL) == res,
        "windows %s: the same without outputs", name);
  if (want != GIN_SUCCESS) {
    CHECK(strcmp(why, text) == 0, "windows %s: reason \"%s\", expected \"%s\"",
          name, why, text);
    CHECK(((uint8_t *)out)[0] == 0xa5 &&
              ((uint8_t *)out)[sizeof out - 1] == 0xa5,
          "windows %s: records written on failure", name);
    return;
  }
  for (int r = 0; r < n; r++) {
    gin_win_rec_t w;
    memcpy(&w, all + (size_t)r * GIN_WIN_REC_BYTES, sizeof w);
    CHECK(memcmp(&out[r], &w, sizeof w) == 0,
          "windows %s: rank %d decoded differently", name, r);
  }
  CHECK(((uint8_t *)&out[n])[0] == 0xa5, "windows %s: written past %d records",
        name, n);
}

static void test_windows(void) {
  gin_win_rec_t w = win_ok(3);
  w.status = GIN_ERR_AGAIN;
  w.host_kind = 1;
  uint8_t b[GIN_WIN_REC_BYTES];
  memset(b, 0x77, sizeof b);
  gin_win_rec_encode(&w, b);
  CHECK(memcmp(b, &w, sizeof b) == 0,
        "window record is not the struct's bytes");
  CHECK(b[0] == 0xf9 && b[3] == 0xff && b[GIN_WIN_REC_SLOT] == 2 &&
            b[GIN_WIN_REC_KIND] == 1 && b[GIN_WIN_REC_SIZE] == (1000 & 0xff) &&
            b[GIN_WIN_REC_OFFSET] == 192 && b[GIN_WIN_REC_HANDLE] == 3,
        "window record fields");
  w.pad_ = 5;
  gin_win_rec_encode(&w, b);
  CHECK(b[GIN_WIN_REC_PAD] == 0, "window record padding not 0");

  static uint8_t all[MAXN * GIN_WIN_REC_BYTES], bad[MAXN * GIN_WIN_REC_BYTES];
  const size_t B = GIN_WIN_REC_BYTES;
  int sizes[] = {1, 2, 3, 4, 8, 64};
  for (int i = 0; i < 6; i++) {
    wins_ok(sizes[i], all);
    wins_case("valid", all, (size_t)sizes[i] * B, sizes[i], GIN_SUCCESS, "");
  }
  int n = 4;
  size_t len = (size_t)n * B;
  wins_ok(n, all);
  wins_case("truncated", all, len - 1, n, GIN_ERR_PROTOCOL,
            "window registration: exchange of 479 bytes, expected 4 records "
            "of 120");
  wins_case("other job size", all, len, 5, GIN_ERR_PROTOCOL,
            "window registration: exchange of 480 bytes, expected 5 records "
            "of 120");
  /* The checks window.c made before, with their texts and codes. */
  memcpy(bad, all, len);
  put32(bad, 2, 0, (uint32_t)GIN_ERR_AGAIN);
  put32(bad, 2, GIN_WIN_REC_SLOT, 8); /* a rank with no free slot */
  wins_case("a rank failed", bad, len, n, GIN_ERR_INVALID,
            "gin_window_register: rank 2 failed its part (resource "
            "temporarily unavailable)");
  put32(bad, 3, 0, 77);
  wins_case("order: lowest failed rank", bad, len, n, GIN_ERR_INVALID,
            "gin_window_register: rank 2 failed its part (resource "
            "temporarily unavailable)");
  memcpy(bad, all, len);
  put32(bad, 3, 0, 77);
  put64(bad, 1, GIN_WIN_REC_SIZE, 5); /* statuses before sizes */
  wins_case("unknown status", bad, len, n, GIN_ERR_INVALID,
            "gin_window_register: rank 3 failed its part (unknown error)");
  memcpy(bad, all, len);
  put64(bad, 3, GIN_WIN_REC_SIZE, 2000);
  wins_case("sizes differ", bad, len, n, GIN_ERR_INVALID,
            "gin_window_register: sizes differ: rank 0 registers 1000 bytes, "
            "rank 3 2000 (windows are symmetric)");
  memcpy(bad, all, len);
  put32(bad, 1, GIN_WIN_REC_SLOT, 3);
  wins_case("slots differ", bad, len, n, GIN_ERR_INVALID,
            "gin_window_register: ranks disagree on the window slot (rank 0: "
            "2, rank 1: 3): register and deregister in the same order on "
            "every rank");
  put64(bad, 1, GIN_WIN_REC_SIZE, 1); /* a rank's size before its slot */
  wins_case("order: size before slot", bad, len, n, GIN_ERR_INVALID,
            "gin_window_register: sizes differ: rank 0 registers 1000 bytes, "
            "rank 1 1 (windows are symmetric)");
  memcpy(bad, all, len);
  put32(bad, 2, GIN_WIN_REC_KIND, 1);
  wins_case("kinds differ", bad, len, n, GIN_ERR_INTERNAL,
            "window registration: ranks disagree on the memory kind (rank 0: "
            "0, rank 2: 1)");
  put32(bad, 3, GIN_WIN_REC_SLOT, 9); /* lower rank first */
  wins_case("order: lower rank first", bad, len, n, GIN_ERR_INTERNAL,
            "window registration: ranks disagree on the memory kind (rank 0: "
            "0, rank 2: 1)");
  /* The checks added with the move: after all of the above. */
  memcpy(bad, all, len);
  for (int r = 0; r < n; r++)
    put32(bad, r, GIN_WIN_REC_KIND, 2);
  wins_case("kind 2", bad, len, n, GIN_ERR_PROTOCOL,
            "gin_window_register: rank 0 sent memory kind 2 (0 or 1)");
  memcpy(bad, all, len);
  put32(bad, 1, GIN_WIN_REC_PAD, 0x40);
  wins_case("padding", bad, len, n, GIN_ERR_PROTOCOL,
            "gin_window_register: rank 1 sent padding 0x40 (0)");
  put64(bad, 3, GIN_WIN_REC_SIZE, 7); /* disagreement first */
  wins_case("order: disagreement before padding", bad, len, n, GIN_ERR_INVALID,
            "gin_window_register: sizes differ: rank 0 registers 1000 bytes, "
            "rank 3 7 (windows are symmetric)");
  memcpy(bad, all, len);
  for (int r = 0; r < n; r++)
    put32(bad, r, GIN_WIN_REC_SLOT, 8);
  wins_case("slot out of range", bad, len, n, GIN_ERR_PROTOCOL,
            "gin_window_register: rank 0 names window slot 8, outside [0, 8)");
  memcpy(bad, all, len);
  for (int r = 0; r < n; r++)
    put64(bad, r, GIN_WIN_REC_SIZE, 0);
  wins_case("size 0", bad, len, n, GIN_ERR_PROTOCOL,
            "gin_window_register: rank 0 registers 0 bytes");
  memcpy(bad, all, len);
  put64(bad, 2, GIN_WIN_REC_ALLOC, 128 + 999);
  wins_case("past the allocation by one", bad, len, n, GIN_ERR_PROTOCOL,
            "gin_window_register: rank 2's window (offset 128, 1000 bytes) "
            "runs past its allocation of 1127 bytes");
  put64(bad, 2, GIN_WIN_REC_ALLOC, 128 + 1000);
  wins_case("exactly its allocation", bad, len, n, GIN_SUCCESS, "");
  put64(bad, 1, GIN_WIN_REC_OFFSET, 1u << 20);
  wins_case("offset past the allocation", bad, len, n, GIN_ERR_PROTOCOL,
            "gin_window_register: rank 1's window (offset 1048576, 1000 "
            "bytes) runs past its allocation of 5160 bytes");
  put64(bad, 1, GIN_WIN_REC_OFFSET, ~0ull - 99); /* offset + size wraps */
  put64(bad, 1, GIN_WIN_REC_ALLOC, ~0ull);
  wins_case("offset + size wraps", bad, len, n, GIN_ERR_PROTOCOL,
            "gin_window_register: rank 1's window (offset "
            "18446744073709551516, 1000 bytes) runs past its allocation of "
            "18446744073709551615 bytes");
  /* A huge window in the last slot of the largest table. */
  memcpy(bad, all, len);
  for (int r = 0; r < n; r++) {
    put32(bad, r, GIN_WIN_REC_SLOT, 65535);
    put64(bad, r, GIN_WIN_REC_SIZE, 1ull << 63);
    put64(bad, r, GIN_WIN_REC_OFFSET, (1ull << 63) - 1);
    put64(bad, r, GIN_WIN_REC_ALLOC, ~0ull);
  }
  CHECK(gin_win_recs_check(bad, len, n, 65536, NULL, 0, NULL) == GIN_SUCCESS,
        "windows: huge window in the last slot refused");
  CHECK(gin_win_recs_check(bad, len, n, 65535, NULL, 0, NULL) ==
            GIN_ERR_PROTOCOL,
        "windows: slot 65535 of 65535 taken");
  /* Bad arguments, a short why. */
  CHECK(gin_win_recs_check(NULL, B, 1, 8, NULL, 0, NULL) == GIN_ERR_INVALID &&
            gin_win_recs_check(all, B, 0, 8, NULL, 0, NULL) == GIN_ERR_INVALID,
        "windows: NULL, no ranks");
  char tiny[4];
  memcpy(bad, all, len);
  put64(bad, 3, GIN_WIN_REC_SIZE, 2000);
  CHECK(gin_win_recs_check(bad, len, n, 8, tiny, sizeof tiny, NULL) ==
                GIN_ERR_INVALID &&
            strcmp(tiny, "gin") == 0,
        "windows: why truncated to its buffer");
}

int main(void) {
  test_peers();
  test_windows();
  if (failures) {
    printf("records: %d failures\n", failures);
    return 1;
  }
  printf("records: passed\n");
  return 0;
}
