/*
 * Writes the fuzzers' seed corpus with the real encoders: a few valid
 * messages of each kind and a few truncated or invalid ones, each behind
 * the harness's prefix bytes (see the comment at the top of each harness).
 * Usage: gen_corpus DIR  (writes DIR/fuzz_bs_hello/..., etc.; the committed
 * corpus is tests/fuzz/corpus). Exit 0 on success, 1 on an I/O error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "core/bootstrap.h"
#include "core/watch_msg.h"
#include "fuzz_common.h"
#include "transport/tcp.h"

static const char *root;

/* Writes prefix[0, np) then msg[0, n) to root/fuzzer/name. */
static int put(const char *fuzzer, const char *name, const uint8_t *prefix,
               size_t np, const uint8_t *msg, size_t n) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", root, fuzzer);
  if (mkdir(path, 0755) && errno != EEXIST) return -1;
  snprintf(path, sizeof path, "%s/%s/%s", root, fuzzer, name);
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  int ok = fwrite(prefix, 1, np, f) == np && fwrite(msg, 1, n, f) == n;
  return (fclose(f) == 0 && ok) ? 0 : -1;
}

static int bs_hello(void) {
  const char *fz = "fuzz_bs_hello";
  gin_bs_hello_t h = {.magic = GIN_BS_MAGIC,
                      .version = GIN_BS_VERSION,
                      .kind = GIN_BS_HELLO_ROOT,
                      .rank = 2,
                      .nranks = 4,
                      .family = AF_INET,
                      .port = 5000};
  memcpy(h.secret, gin_fuzz_secret, 16);
  inet_pton(AF_INET, "127.0.0.1", h.addr);
  uint8_t m[GIN_BS_HELLO_BYTES + 1] = {0};
  uint8_t root4 = 3, ring4 = 8 | 3, root1 = 0; /* nranks - 1 | ring bit */
  int rc = 0;
  gin_bs_hello_encode(&h, m);
  rc |= put(fz, "ok_root_v4", &root4, 1, m, GIN_BS_HELLO_BYTES);
  rc |= put(fz, "truncated", &root4, 1, m, 20);
  rc |= put(fz, "too_long", &root4, 1, m, GIN_BS_HELLO_BYTES + 1);
  rc |= put(fz, "empty", &root4, 1, m, 0);
  rc |= put(fz, "wrong_kind", &ring4, 1, m, GIN_BS_HELLO_BYTES);
  h.kind = GIN_BS_HELLO_RING, h.rank = 1, h.family = AF_INET6, h.port = 0;
  inet_pton(AF_INET6, "::1", h.addr);
  gin_bs_hello_encode(&h, m);
  rc |= put(fz, "ok_ring_v6", &ring4, 1, m, GIN_BS_HELLO_BYTES);
  h.kind = GIN_BS_HELLO_ROOT, h.rank = 0, h.nranks = 1, h.family = AF_INET;
  gin_bs_hello_encode(&h, m);
  rc |= put(fz, "ok_single_rank", &root1, 1, m, GIN_BS_HELLO_BYTES);
  h.nranks = 4, h.port = 0;
  gin_bs_hello_encode(&h, m);
  rc |= put(fz, "bad_port_zero", &root4, 1, m, GIN_BS_HELLO_BYTES);
  h.port = 5000, h.version = GIN_BS_VERSION + 1;
  gin_bs_hello_encode(&h, m);
  rc |= put(fz, "bad_version", &root4, 1, m, GIN_BS_HELLO_BYTES);
  h.version = GIN_BS_VERSION, h.secret[15] ^= 1;
  gin_bs_hello_encode(&h, m);
  rc |= put(fz, "bad_secret", &root4, 1, m, GIN_BS_HELLO_BYTES);
  return rc;
}

static int tcp_hello(void) {
  const char *fz = "fuzz_tcp_hello";
  gin_tcp_hello_t h = {.magic = GIN_TCP_HELLO_MAGIC,
                       .version = GIN_TCP_VERSION,
                       .rank = 1,
                       .nranks = 4};
  memcpy(h.secret, gin_fuzz_secret, 16);
  uint8_t m[GIN_TCP_HELLO_BYTES];
  /* nranks 4, self 3, why of 63 bytes, expect ranks 0..3 / NULL / not 1 */
  uint8_t all[3] = {3, 0x73, 0x0f}, any[3] = {3, 0x80 | 0x13, 0};
  uint8_t not1[3] = {3, 0x13, 0x0d};
  int rc = 0;
  gin_tcp_hello_encode(&h, m);
  rc |= put(fz, "ok_rank1", all, 3, m, sizeof m);
  rc |= put(fz, "ok_expect_null", any, 3, m, sizeof m);
  rc |= put(fz, "not_expected", not1, 3, m, sizeof m);
  rc |= put(fz, "truncated", all, 3, m, sizeof m - 1);
  h.rank = 3;
  gin_tcp_hello_encode(&h, m);
  rc |= put(fz, "rank_not_below_self", all, 3, m, sizeof m);
  h.rank = 0, h.reserved = 7;
  gin_tcp_hello_encode(&h, m);
  rc |= put(fz, "bad_reserved", all, 3, m, sizeof m);
  h.reserved = 0, h.nranks = 5;
  gin_tcp_hello_encode(&h, m);
  rc |= put(fz, "bad_nranks", all, 3, m, sizeof m);
  return rc;
}

static int tcp_header(void) {
  const char *fz = "fuzz_tcp_header";
  uint8_t pre = 6 | (3 << 3); /* all 6 slots, why of 33 bytes */
  uint8_t m[GIN_TCP_HDR_BYTES];
  gin_tcp_hdr_t base = {.magic = GIN_TCP_HDR_MAGIC, .version = GIN_TCP_VERSION};
  gin_tcp_hdr_t h = base;
  int rc = 0;
  h.op = GIN_TCP_OP_PUT, h.dst_win = 0, h.dst_gen = 1, h.bytes = 4096;
  gin_tcp_hdr_encode(&h, m);
  rc |= put(fz, "put_whole_window", &pre, 1, m, sizeof m);
  rc |= put(fz, "truncated", &pre, 1, m, sizeof m - 1);
  h.dst_off = 4000, h.bytes = 96, h.flags = GIN_TCP_F_SIGNAL;
  h.sig_win = 1, h.sig_gen = 3, h.sig_off = 56, h.sig_add = 1;
  h.mode_off = 52, h.mode_bit = 1;
  gin_tcp_hdr_encode(&h, m);
  rc |= put(fz, "put_signal_mode", &pre, 1, m, sizeof m);
  h = base;
  h.op = GIN_TCP_OP_SIGNAL, h.flags = GIN_TCP_F_SIGNAL;
  h.sig_win = 3, h.sig_gen = 0xffffffffu, h.sig_off = 16, h.sig_add = 5;
  gin_tcp_hdr_encode(&h, m);
  rc |= put(fz, "signal_wrapped_gen", &pre, 1, m, sizeof m);
  h = base;
  h.op = GIN_TCP_OP_BYE;
  gin_tcp_hdr_encode(&h, m);
  rc |= put(fz, "bye", &pre, 1, m, sizeof m);
  h = base;
  h.op = GIN_TCP_OP_PUT, h.dst_win = 2, h.dst_gen = 2, h.bytes = 8;
  gin_tcp_hdr_encode(&h, m);
  rc |= put(fz, "put_dead_window_again", &pre, 1, m, sizeof m);
  h.dst_win = 1, h.dst_gen = 3, h.dst_off = 60;
  gin_tcp_hdr_encode(&h, m);
  rc |= put(fz, "put_past_end", &pre, 1, m, sizeof m);
  h.dst_win = 4, h.dst_gen = 7, h.dst_off = 0, h.bytes = 0;
  gin_tcp_hdr_encode(&h, m);
  rc |= put(fz, "put_empty_window", &pre, 1, m, sizeof m);
  return rc;
}

static int watch_msg(void) {
  const char *fz = "fuzz_watch_msg";
  /* nranks 4 (3 + 1), the link's peer rank 1 */
  uint8_t pre[2] = {3, 1};
  uint8_t m[GIN_WATCH_MSG_BYTES + 1] = {0};
  gin_watch_msg_t w = {GIN_WATCH_BYE, 0, 0, 1, 1};
  int rc = 0;
  gin_watch_msg_encode(&w, m);
  rc |= put(fz, "ok_bye", pre, 2, m, GIN_WATCH_MSG_BYTES);
  rc |= put(fz, "truncated", pre, 2, m, GIN_WATCH_MSG_BYTES - 1);
  rc |= put(fz, "too_long", pre, 2, m, GIN_WATCH_MSG_BYTES + 1);
  w.rank = 2; /* a goodbye on behalf of another rank */
  gin_watch_msg_encode(&w, m);
  rc |= put(fz, "bye_not_sender", pre, 2, m, GIN_WATCH_MSG_BYTES);
  w = (gin_watch_msg_t){GIN_WATCH_DEAD, GIN_WATCH_HOW_CLOSED, 0, 3, 1};
  gin_watch_msg_encode(&w, m);
  rc |= put(fz, "ok_dead_closed", pre, 2, m, GIN_WATCH_MSG_BYTES);
  w = (gin_watch_msg_t){GIN_WATCH_DEAD, GIN_WATCH_HOW_ERROR, 110, 2, 0};
  gin_watch_msg_encode(&w, m);
  rc |= put(fz, "ok_dead_passed_on", pre, 2, m, GIN_WATCH_MSG_BYTES);
  w.rank = 1; /* the sender reports itself dead */
  gin_watch_msg_encode(&w, m);
  rc |= put(fz, "dead_sender", pre, 2, m, GIN_WATCH_MSG_BYTES);
  w.rank = 4; /* out of range */
  gin_watch_msg_encode(&w, m);
  rc |= put(fz, "dead_out_of_range", pre, 2, m, GIN_WATCH_MSG_BYTES);
  w = (gin_watch_msg_t){GIN_WATCH_DEAD, 3, 0, 2, 0};
  gin_watch_msg_encode(&w, m);
  rc |= put(fz, "bad_how", pre, 2, m, GIN_WATCH_MSG_BYTES);
  w = (gin_watch_msg_t){7, 0, 0, 1, 1};
  gin_watch_msg_encode(&w, m);
  rc |= put(fz, "bad_type", pre, 2, m, GIN_WATCH_MSG_BYTES);
  w = (gin_watch_msg_t){GIN_WATCH_ABORT, 0, 0, 3, 1}; /* rank 3 aborted */
  gin_watch_msg_encode(&w, m);
  rc |= put(fz, "ok_abort_passed_on", pre, 2, m, GIN_WATCH_MSG_BYTES);
  w.by = 2; /* passed on in another rank's name */
  gin_watch_msg_encode(&w, m);
  rc |= put(fz, "abort_not_sender", pre, 2, m, GIN_WATCH_MSG_BYTES);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 1;
  }
  root = argv[1];
  if (mkdir(root, 0755) && errno != EEXIST) return 1;
  if (bs_hello() || tcp_hello() || tcp_header() || watch_msg()) {
    perror("gen_corpus");
    return 1;
  }
  return 0;
}
