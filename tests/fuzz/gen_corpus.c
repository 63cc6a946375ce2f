/*
 * Writes the fuzzers' seed corpus with the real encoders: a few valid
 * messages of each kind and a few truncated or invalid ones, each behind
 * the harness's prefix bytes (see the comment at the top of each harness).
 * Usage: gen_corpus DIR  (writes DIR/fuzz_bs_hello/..., etc.; the committed
 * corpus is tests/fuzz/corpus). Exit 0 on success, 1 on an I/O error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "comm/bootstrap.h"
#include "comm/records.h"
#include "comm/watch_msg.h"
#include "fuzz_common.h"
#include "transport/ofi.h"
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

static int bs_reply(void) {
  const char *fz = "fuzz_bs_reply";
  /* nranks 4, stream, why of 63 bytes; rank 2 that sent 127.0.0.1:5000 */
  uint8_t pre[2] = {3 | 7 << 4, 2 | 0 << 3};
  uint8_t whole[2] = {3 | 1 << 3 | 7 << 4, 2}; /* the rest is one reply */
  gin_net_addr_t tab[4] = {{AF_INET, 5002, {127, 0, 0, 1}},
                           {AF_INET6, 5003, {[15] = 1}},
                           {AF_INET, 5000, {127, 0, 0, 1}},
                           {AF_INET, 65535, {10, 1, 2, 3}}};
  uint8_t m[GIN_BS_REPLY_BYTES + 4 * GIN_BS_ENTRY_BYTES + 1] = {0};
  size_t full = GIN_BS_REPLY_BYTES + 4 * GIN_BS_ENTRY_BYTES;
  gin_bs_reply_t r = {.status = GIN_BS_STATUS_OK, .nranks = 4};
  int rc = 0;
  gin_bs_reply_encode(&r, m);
  gin_bs_table_encode(tab, 4, m + GIN_BS_REPLY_BYTES);
  rc |= put(fz, "ok_table", pre, 2, m, full);
  rc |= put(fz, "table_truncated", pre, 2, m, full - 1);
  rc |= put(fz, "table_too_long", pre, 2, m, full + 1);
  rc |= put(fz, "table_missing", pre, 2, m, GIN_BS_REPLY_BYTES);
  rc |= put(fz, "reply_truncated", pre, 2, m, 20);
  rc |= put(fz, "empty", pre, 2, m, 0);
  rc |= put(fz, "reply_only_ok", whole, 2, m, GIN_BS_REPLY_BYTES);
  rc |= put(fz, "reply_too_long", whole, 2, m, GIN_BS_REPLY_BYTES + 1);
  pre[1] = 1; /* rank 1 sent 127.0.0.1:5000, the table says [::1]:5003 */
  rc |= put(fz, "table_not_own", pre, 2, m, full);
  pre[1] = 1 | 1 << 3; /* rank 1 that sent [::1]:5001 */
  tab[1].port = 5001;
  gin_bs_table_encode(tab, 4, m + GIN_BS_REPLY_BYTES);
  rc |= put(fz, "ok_table_own_v6", pre, 2, m, full);
  pre[1] = 2;
  tab[3].family = 99;
  gin_bs_table_encode(tab, 4, m + GIN_BS_REPLY_BYTES);
  rc |= put(fz, "table_bad_family", pre, 2, m, full);
  tab[3].family = AF_INET, tab[0].port = 0;
  gin_bs_table_encode(tab, 4, m + GIN_BS_REPLY_BYTES);
  rc |= put(fz, "table_port_zero", pre, 2, m, full);
  /* One rank, not listening (port 0), that sent 127.0.0.1:0. */
  uint8_t one[2] = {0 | 7 << 4, 0 | 3 << 3};
  gin_net_addr_t t1 = {AF_INET, 0, {127, 0, 0, 1}};
  r.nranks = 1;
  gin_bs_reply_encode(&r, m);
  gin_bs_table_encode(&t1, 1, m + GIN_BS_REPLY_BYTES);
  rc |= put(fz, "ok_single_rank", one, 2, m,
            GIN_BS_REPLY_BYTES + GIN_BS_ENTRY_BYTES);
  /* A valid stream for each other job size: the last rank receives it,
   * having sent one of the harness's first three addresses. */
  uint8_t big[GIN_BS_REPLY_BYTES + 8 * GIN_BS_ENTRY_BYTES];
  gin_net_addr_t own[3] = {{AF_INET, 5000, {127, 0, 0, 1}},
                           {AF_INET6, 5001, {[15] = 1}},
                           {AF_INET, 65535, {10, 1, 2, 3}}};
  for (int n = 2; n <= 8; n++) {
    if (n == 4) continue; /* ok_table */
    char name[32];
    gin_net_addr_t t[8];
    uint8_t p[2] = {(uint8_t)((n - 1) | 7 << 4),
                    (uint8_t)((n - 1) | (n % 3) << 3)};
    for (int k = 0; k < n; k++)
      t[k] = (gin_net_addr_t){AF_INET, (uint16_t)(6000 + k), {127, 0, 0, 1}};
    t[n - 1] = own[n % 3];
    r = (gin_bs_reply_t){.status = GIN_BS_STATUS_OK, .nranks = n};
    gin_bs_reply_encode(&r, big);
    gin_bs_table_encode(t, n, big + GIN_BS_REPLY_BYTES);
    snprintf(name, sizeof name, "ok_table_%d_ranks", n);
    rc |= put(fz, name, p, 2, big,
              GIN_BS_REPLY_BYTES + (size_t)n * GIN_BS_ENTRY_BYTES);
  }
  r = (gin_bs_reply_t){.status = GIN_BS_STATUS_OK, .nranks = 5};
  gin_bs_reply_encode(&r, m);
  rc |= put(fz, "ok_other_size", pre, 2, m, full);
  r = (gin_bs_reply_t){GIN_BS_STATUS_TIMEOUT, 4, 2, 3, 30000};
  gin_bs_reply_encode(&r, m);
  rc |= put(fz, "timeout", pre, 2, m, GIN_BS_REPLY_BYTES);
  r = (gin_bs_reply_t){GIN_BS_STATUS_TIMEOUT, -1, INT32_MIN, -1, INT32_MAX};
  gin_bs_reply_encode(&r, m);
  rc |= put(fz, "timeout_any_numbers", pre, 2, m, GIN_BS_REPLY_BYTES);
  r = (gin_bs_reply_t){GIN_BS_STATUS_REFUSED, 4, 4, 2, 0}; /* wrong secret */
  gin_bs_reply_encode(&r, m);
  rc |= put(fz, "refused", pre, 2, m, GIN_BS_REPLY_BYTES);
  r = (gin_bs_reply_t){3, 4, 0, 0, 0};
  gin_bs_reply_encode(&r, m);
  rc |= put(fz, "bad_status", pre, 2, m, GIN_BS_REPLY_BYTES);
  r = (gin_bs_reply_t){GIN_BS_STATUS_OK, 4, 0, 0, 0};
  gin_bs_reply_encode(&r, m);
  m[3] ^= 0x40;
  rc |= put(fz, "bad_magic", pre, 2, m, GIN_BS_REPLY_BYTES);
  return rc;
}

static int bs_coll(void) {
  const char *fz = "fuzz_bs_coll";
  /* seq 1, 4096 bytes per rank, why of 140 bytes */
  uint8_t pre = 1 | 3 << 2 | 7 << 5;
  uint8_t m[GIN_BS_COLL_BYTES + 1] = {0};
  int rc = 0;
  gin_bs_coll_encode(1, 4096, m);
  rc |= put(fz, "ok_seq1_4096", &pre, 1, m, GIN_BS_COLL_BYTES);
  rc |= put(fz, "truncated", &pre, 1, m, GIN_BS_COLL_BYTES - 1);
  rc |= put(fz, "too_long", &pre, 1, m, GIN_BS_COLL_BYTES + 1);
  rc |= put(fz, "empty", &pre, 1, m, 0);
  gin_bs_coll_encode(2, 4096, m);
  rc |= put(fz, "bad_seq", &pre, 1, m, GIN_BS_COLL_BYTES);
  uint8_t short_why = 1 | 3 << 2 | 1 << 5; /* why of 20 bytes */
  rc |= put(fz, "bad_seq_short_why", &short_why, 1, m, GIN_BS_COLL_BYTES);
  gin_bs_coll_encode(1, 4097, m);
  rc |= put(fz, "bad_bytes", &pre, 1, m, GIN_BS_COLL_BYTES);
  gin_bs_coll_encode(1, 4096, m);
  gin_le_put32(m, GIN_BS_MAGIC); /* a bootstrap hello's magic */
  rc |= put(fz, "bad_magic", &pre, 1, m, GIN_BS_COLL_BYTES);
  uint8_t zero = 0; /* seq 0, 0 bytes (a barrier's first), no why */
  gin_bs_coll_encode(0, 0, m);
  rc |= put(fz, "ok_seq0_empty", &zero, 1, m, GIN_BS_COLL_BYTES);
  uint8_t top = 3 | 7 << 2 | 7 << 5; /* seq 0xffffffff, ~0 bytes */
  gin_bs_coll_encode(0xffffffffu, ~0ull, m);
  rc |= put(fz, "ok_wrapped", &top, 1, m, GIN_BS_COLL_BYTES);
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

/* Writes the n entries of a job where rank r uses tcp with rank k when
 * links[r] has bit k, each listening on addr[r] (NULL: not listening),
 * status[r] (NULL: all 0), behind prefix byte pre, as name. */
static int tcp_entries_put(const char *name, uint8_t pre, int n,
                           const uint64_t *links, const gin_net_addr_t *addr,
                           const int32_t *status, size_t cut) {
  static uint8_t t[70 * 40 + 8];
  size_t esz = gin_tcp_entry_bytes(n);
  for (int r = 0; r < n; r++) {
    uint8_t use[70] = {0};
    for (int k = 0; k < n && k < 64; k++)
      use[k] = (uint8_t)((links[r] >> k) & 1);
    gin_tcp_entry_encode(status ? status[r] : 0, addr ? &addr[r] : NULL, use, n,
                         t + (size_t)r * esz);
  }
  size_t len = (size_t)n * esz;
  memset(t + len, 0, 8);
  return put("fuzz_tcp_entries", name, &pre, 1, t, len - cut);
}

static int tcp_entries(void) {
  static gin_net_addr_t a[70];
  static uint64_t all[70];
  static int32_t st[70];
  int rc = 0;
  for (int r = 0; r < 70; r++) {
    a[r] = (gin_net_addr_t){AF_INET, (uint16_t)(5000 + r), {127, 0, 0, 1}};
    if (r % 3 == 1)
      a[r] = (gin_net_addr_t){AF_INET6, (uint16_t)(5000 + r), {[15] = 1}};
  }
  /* Every job size of the low bits, all to all; why of 63 bytes. */
  for (int n = 1; n <= 8; n++) {
    char name[32];
    for (int r = 0; r < n; r++)
      all[r] = ((1ull << n) - 1) & ~(1ull << r);
    snprintf(name, sizeof name, "ok_%d_ranks", n);
    rc |=
        tcp_entries_put(name, (uint8_t)((n - 1) | 7 << 4), n, all, a, NULL, 0);
  }
  /* Around 64 ranks (entries of 32 and 40 bytes): rank 0 uses tcp with
   * everyone, nobody else (tcp.c's bits go past 64 only through use[]). */
  for (int n = 63; n <= 65; n++) {
    char name[32];
    static uint8_t u[70];
    static uint8_t t[70 * 40];
    size_t esz = gin_tcp_entry_bytes(n);
    for (int r = 0; r < n; r++) {
      memset(u, 0, sizeof u);
      for (int k = 0; k < n; k++)
        u[k] = r == 0 ? k != 0 : k == 0;
      gin_tcp_entry_encode(0, &a[r], u, n, t + (size_t)r * esz);
    }
    uint8_t pre = (uint8_t)((n - 63) | 8 | 7 << 4);
    snprintf(name, sizeof name, "ok_%d_ranks_star", n);
    rc |= put("fuzz_tcp_entries", name, &pre, 1, t, (size_t)n * esz);
    if (n == 65) { /* rank 64 does not answer rank 0 */
      t[64 * esz + 24] = 0;
      rc |= put("fuzz_tcp_entries", "asymmetric_65_ranks", &pre, 1, t,
                (size_t)n * esz);
    }
  }
  uint8_t p4 = 3 | 7 << 4, p4short = 3 | 1 << 4, p4none = 3;
  for (int r = 0; r < 4; r++)
    all[r] = 0xf & ~(1ull << r);
  rc |= tcp_entries_put("ok_4_ranks_no_why", p4none, 4, all, a, NULL, 0);
  rc |= tcp_entries_put("truncated", p4, 4, all, a, NULL, 1);
  rc |= tcp_entries_put("one_entry_short", p4, 4, all, a, NULL, 32);
  rc |= put("fuzz_tcp_entries", "empty", &p4, 1, (const uint8_t *)"", 0);
  uint8_t p5 = 4 | 7 << 4; /* 4 ranks' entries, a job of 5 */
  rc |= tcp_entries_put("other_job_size", p5, 4, all, a, NULL, 0);
  st[2] = GIN_ERR_SYSTEM;
  rc |= tcp_entries_put("setup_failed", p4, 4, all, a, st, 0);
  rc |= tcp_entries_put("setup_failed_short_why", p4short, 4, all, a, st, 0);
  st[2] = 0;
  all[3] &= ~2ull; /* rank 3 does not use tcp with rank 1 */
  rc |= tcp_entries_put("asymmetric", p4, 4, all, a, NULL, 0);
  all[3] |= 2;
  a[3].family = 99;
  rc |= tcp_entries_put("bad_family", p4, 4, all, a, NULL, 0);
  a[3].family = AF_INET, a[1].port = 0;
  rc |= tcp_entries_put("port_zero", p4, 4, all, a, NULL, 0);
  a[1].port = 5001;
  /* Two hosts, ranks 0-1 and 2-3, tcp only across: nobody connects to
   * ranks 0 and 1 (only lower ranks connect), whose address is zero. */
  uint64_t hosts[4] = {0xc, 0xc, 0x3, 0x3};
  gin_net_addr_t ha[4] = {{0}, {0}, a[2], a[3]};
  rc |= tcp_entries_put("ok_two_hosts", p4, 4, hosts, ha, NULL, 0);
  ha[3].port = 0;
  rc |= tcp_entries_put("two_hosts_port_zero", p4, 4, hosts, ha, NULL, 0);
  /* A single rank that uses tcp with nobody (not listening). */
  uint64_t none = 0;
  rc |= tcp_entries_put("ok_single_rank_idle", 7 << 4, 1, &none, NULL, NULL, 0);
  return rc;
}

/* The peer records of a job of n ranks (n <= 8): rank r on host r / 2
 * (as hostid_make names it), pid 4000 + r, watched but for rank 1, the
 * host target's device identity and a memfd handle of its control page. */
static void peer_job(int n, uint8_t *t) {
  for (int r = 0; r < n; r++) {
    gin_peer_info_t p;
    memset(&p, 0, sizeof p);
    snprintf(p.hostid, sizeof p.hostid,
             "node%d/0f6c2b1e-8d4a-4c55-9a61-3e2f0b7d9c%02d/4026531840", r / 2,
             r / 2);
    p.pid = 4000 + r;
    p.rank = r;
    p.watch = r != 1;
    snprintf(p.dev.bytes, sizeof p.dev.bytes, "host");
    gin_le_put32(p.ctrl.bytes, 0x47494e4du); /* memfd: "GINM", pid, fd, size */
    gin_le_put32(p.ctrl.bytes + 4, (uint32_t)p.pid);
    gin_le_put32(p.ctrl.bytes + 8, (uint32_t)(7 + r));
    gin_le_put64(p.ctrl.bytes + 16, 4096);
    gin_peer_rec_encode(&p, t + (size_t)r * GIN_PEER_REC_BYTES);
  }
}

static int comm_peer(void) {
  const char *fz = "fuzz_comm_peer";
  static uint8_t t[8 * GIN_PEER_REC_BYTES + 1], bad[8 * GIN_PEER_REC_BYTES + 1];
  const size_t B = GIN_PEER_REC_BYTES;
  int rc = 0;
  /* Every job size the prefix allows; why of 63 bytes. */
  for (int n = 1; n <= 8; n++) {
    char name[32];
    uint8_t pre = (uint8_t)((n - 1) | 7 << 4);
    peer_job(n, t);
    snprintf(name, sizeof name, "ok_%d_ranks", n);
    rc |= put(fz, name, &pre, 1, t, (size_t)n * B);
  }
  uint8_t p4 = 3 | 7 << 4, p4none = 3, p4short = 3 | 1 << 4, p5 = 4 | 7 << 4;
  size_t len = 4 * B;
  peer_job(4, t);
  rc |= put(fz, "ok_4_ranks_no_why", &p4none, 1, t, len);
  rc |= put(fz, "truncated", &p4, 1, t, len - 1);
  rc |= put(fz, "too_long", &p4, 1, t, len + 1);
  rc |= put(fz, "one_record_short", &p4, 1, t, len - B);
  rc |= put(fz, "empty", &p4, 1, t, 0);
  rc |= put(fz, "other_job_size", &p5, 1, t, len);
  /* A host id of the most characters (95), one empty; opaque fields all
   * ones (device identity and handle are the target's to judge). */
  gin_peer_info_t p;
  memcpy(bad, t, len);
  memset(&p, 0, sizeof p);
  memset(p.hostid, 'h', GIN_HOSTID_BYTES - 1);
  p.pid = 0x7fffffff, p.rank = 2, p.watch = 1;
  memset(p.dev.bytes, 0xff, sizeof p.dev.bytes);
  memset(p.ctrl.bytes, 0xff, sizeof p.ctrl.bytes);
  gin_peer_rec_encode(&p, bad + 2 * B);
  memset(bad + 3 * B, 0, GIN_HOSTID_BYTES);
  rc |= put(fz, "ok_long_and_empty_host_ids", &p4, 1, bad, len);
  memcpy(bad, t, len);
  gin_le_put32(bad + 2 * B + GIN_PEER_REC_RANK, 3);
  rc |= put(fz, "slot_names_other_rank", &p4, 1, bad, len);
  memcpy(bad, t, len);
  gin_le_put32(bad + 1 * B + GIN_PEER_REC_RANK, 0xffffffffu);
  rc |= put(fz, "rank_negative", &p4, 1, bad, len);
  memcpy(bad, t, len);
  memset(bad + 3 * B, 'x', GIN_HOSTID_BYTES);
  rc |= put(fz, "host_id_unterminated", &p4, 1, bad, len);
  rc |= put(fz, "host_id_unterminated_short_why", &p4short, 1, bad, len);
  gin_le_put32(bad + 3 * B + GIN_PEER_REC_RANK, 0); /* the rank first */
  rc |= put(fz, "host_id_unterminated_wrong_rank", &p4, 1, bad, len);
  memcpy(bad, t, len);
  bad[1 * B + GIN_HOSTID_BYTES - 1] = 'x';
  rc |= put(fz, "host_id_bytes_after_end", &p4, 1, bad, len);
  memcpy(bad, t, len);
  gin_le_put32(bad + 0 * B + GIN_PEER_REC_PID, 0);
  rc |= put(fz, "pid_zero", &p4, 1, bad, len);
  gin_le_put32(bad + 0 * B + GIN_PEER_REC_PID, 0x80000000u);
  rc |= put(fz, "pid_negative", &p4, 1, bad, len);
  memcpy(bad, t, len);
  gin_le_put32(bad + 2 * B + GIN_PEER_REC_WATCH, 2);
  rc |= put(fz, "watch_flag_2", &p4, 1, bad, len);
  memcpy(bad, t, len);
  gin_le_put32(bad + 3 * B + GIN_PEER_REC_PAD, 1);
  rc |= put(fz, "padding_set", &p4, 1, bad, len);
  return rc;
}

/* The registration records of a window of `size` bytes in slot `slot` of
 * kind `kind` in a job of n ranks (n <= 8): rank r's at offset
 * (r % 3) * 64 of an allocation (r % 2) * 64 bytes longer than that. */
static void win_job(int n, uint32_t slot, uint32_t kind, uint64_t size,
                    uint8_t *t) {
  for (int r = 0; r < n; r++) {
    gin_win_rec_t w;
    memset(&w, 0, sizeof w);
    w.slot = slot, w.host_kind = kind, w.size = size;
    w.offset = (uint64_t)(r % 3) * 64;
    w.alloc_size = w.offset + size + (uint64_t)(r % 2) * 64;
    gin_le_put32(w.handle.bytes, 0x47494e4du); /* memfd: "GINM", pid, fd */
    gin_le_put32(w.handle.bytes + 4, (uint32_t)(4000 + r));
    gin_le_put32(w.handle.bytes + 8, (uint32_t)(20 + r));
    gin_le_put64(w.handle.bytes + 16, w.alloc_size);
    gin_win_rec_encode(&w, t + (size_t)r * GIN_WIN_REC_BYTES);
  }
}

/* Sets rank r's 64-bit field at off in records t. */
static void win_put64(uint8_t *t, int r, size_t off, uint64_t v) {
  gin_le_put64(t + (size_t)r * GIN_WIN_REC_BYTES + off, v);
}
static void win_put32(uint8_t *t, int r, size_t off, uint32_t v) {
  gin_le_put32(t + (size_t)r * GIN_WIN_REC_BYTES + off, v);
}

static int window_reg(void) {
  const char *fz = "fuzz_window_reg";
  static uint8_t t[8 * GIN_WIN_REC_BYTES + 1];
  const size_t B = GIN_WIN_REC_BYTES;
  int rc = 0;
  /* Every job size the prefix allows, a table of 4 slots, why of 168
   * bytes: slot n % 4, memory kind n % 2 (an internal window of host
   * memory when 1). */
  for (int n = 1; n <= 8; n++) {
    char name[32];
    uint8_t pre[2] = {(uint8_t)((n - 1) | 7 << 4), 0};
    win_job(n, (uint32_t)n % 4, (uint32_t)n % 2, 1024, t);
    snprintf(name, sizeof name, "ok_%d_ranks", n);
    rc |= put(fz, name, pre, 2, t, (size_t)n * B);
  }
  uint8_t p4[2] = {3 | 7 << 4, 0}, p4none[2] = {3, 0};
  uint8_t p4short[2] = {3 | 1 << 4, 0}, p5[2] = {4 | 7 << 4, 0};
  uint8_t p4w64[2] = {3 | 7 << 4, 2}, p4w65536[2] = {3 | 7 << 4, 3};
  size_t len = 4 * B;
  win_job(4, 1, 0, 1024, t);
  rc |= put(fz, "ok_4_ranks_no_why", p4none, 2, t, len);
  rc |= put(fz, "truncated", p4, 2, t, len - 1);
  rc |= put(fz, "too_long", p4, 2, t, len + 1);
  rc |= put(fz, "one_record_short", p4, 2, t, len - B);
  rc |= put(fz, "empty", p4, 2, t, 0);
  rc |= put(fz, "other_job_size", p5, 2, t, len);
  /* The window filling its allocation exactly (offset 64 + 4032 bytes). */
  win_job(4, 3, 0, 4032, t);
  for (int r = 0; r < 4; r++)
    win_put64(t, r, GIN_WIN_REC_ALLOC, (uint64_t)(r % 3) * 64 + 4032);
  rc |= put(fz, "ok_exact_fit_last_slot", p4, 2, t, len);
  win_put64(t, 1, GIN_WIN_REC_ALLOC, 64 + 4031);
  rc |= put(fz, "past_end_by_one", p4, 2, t, len);
  /* The last slot of the largest table; huge windows (arithmetic only). */
  win_job(4, 65535, 0, 1ull << 62, t);
  rc |= put(fz, "ok_slot_65535_huge", p4w65536, 2, t, len);
  win_put64(t, 2, GIN_WIN_REC_OFFSET, ~0ull - 63); /* offset + size wraps */
  win_put64(t, 2, GIN_WIN_REC_ALLOC, ~0ull);
  rc |= put(fz, "offset_plus_size_wraps", p4w65536, 2, t, len);
  win_job(4, 1, 0, 1024, t);
  win_put64(t, 3, GIN_WIN_REC_OFFSET, 8192); /* past its allocation */
  rc |= put(fz, "offset_past_allocation", p4, 2, t, len);
  win_job(4, 1, 0, 1024, t);
  win_put32(t, 2, 0, (uint32_t)GIN_ERR_AGAIN); /* no free slot there */
  win_put32(t, 2, GIN_WIN_REC_SLOT, 4);
  rc |= put(fz, "rank_failed_no_slot", p4, 2, t, len);
  rc |= put(fz, "rank_failed_short_why", p4short, 2, t, len);
  win_job(4, 1, 0, 1024, t);
  win_put32(t, 0, 0, 12345); /* not a gin result */
  rc |= put(fz, "rank0_failed_unknown_status", p4, 2, t, len);
  win_job(4, 1, 0, 1024, t);
  win_put64(t, 3, GIN_WIN_REC_SIZE, 2048);
  rc |= put(fz, "sizes_differ", p4, 2, t, len);
  win_job(4, 1, 0, 1024, t);
  win_put32(t, 1, GIN_WIN_REC_SLOT, 2);
  rc |= put(fz, "slots_differ", p4, 2, t, len);
  win_job(4, 1, 0, 1024, t);
  win_put32(t, 2, GIN_WIN_REC_KIND, 1);
  rc |= put(fz, "kinds_differ", p4, 2, t, len);
  win_job(4, 1, 2, 1024, t);
  rc |= put(fz, "kind_2", p4, 2, t, len);
  win_job(4, 1, 0, 1024, t);
  win_put32(t, 1, GIN_WIN_REC_PAD, 0x100);
  rc |= put(fz, "padding_set", p4, 2, t, len);
  win_job(4, 4, 0, 1024, t);
  rc |= put(fz, "slot_out_of_range", p4, 2, t, len);
  win_job(4, 64, 0, 1024, t);
  rc |= put(fz, "slot_out_of_range_64", p4w64, 2, t, len);
  win_job(4, 1, 0, 0, t);
  rc |= put(fz, "size_zero", p4, 2, t, len);
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

/* fuzz_ofi_wire: a message prefix, write tokens of both widths and setup
 * entries, valid and not. */
static int ofi_wire(void) {
  const char *fz = "fuzz_ofi_wire";
  uint8_t m[88 + 8] = {0};
  int rc = 0;
  /* 2 ranks, this one 1, both use ofi: a message from rank 0. */
  uint8_t pre[3] = {1, 1, 3};
  gin_ofi_prefix_t p = {GIN_OFI_MAGIC, GIN_OFI_VERSION, 0, 0, 5};
  gin_ofi_prefix_encode(&p, m);
  rc |= put(fz, "prefix_ok", pre, 3, m, 88);
  rc |= put(fz, "prefix_short", pre, 3, m, 40);
  p.rank = 1; /* from itself */
  gin_ofi_prefix_encode(&p, m);
  rc |= put(fz, "prefix_self", pre, 3, m, 88);
  /* Tokens: the expected sequence number, then the CQ data. */
  uint8_t tok[12];
  uint8_t pre8[3] = {1 | 1 << 4, 1, 3};
  gin_le_put32(tok, 7);
  gin_le_put64(tok + 4, gin_ofi_token_encode(0, 9, 8));
  rc |= put(fz, "token8_ok", pre8, 3, tok, 12);
  gin_le_put64(tok + 4, gin_ofi_token_encode(5, 9, 8));
  rc |= put(fz, "token8_rank", pre8, 3, tok, 12);
  uint8_t pre4[3] = {3 | 2 << 4, 2, 0xf}; /* 4 ranks, this one 2 */
  gin_le_put32(tok, 0x000ffff0u);
  gin_le_put64(tok + 4, gin_ofi_token_encode(1, 0x100010u, 4));
  rc |= put(fz, "token4_wrap", pre4, 3, tok, 12);
  gin_le_put64(tok + 4, 1ull << 40);
  rc |= put(fz, "token4_wide", pre4, 3, tok, 12);
  /* Entries of 2 ranks that use ofi with each other. */
  uint8_t pree[3] = {1 | 3 << 4, 0, 3};
  size_t esz = gin_ofi_entry_bytes(2);
  uint8_t all[2 * 256] = {0}, use[2] = {1, 1};
  gin_ofi_entry_encode(0, "ep0", 3, use, 2, all);
  gin_ofi_entry_encode(0, "ep1", 3, use, 2, all + esz);
  rc |= put(fz, "entries_ok", pree, 3, all, 2 * esz);
  gin_ofi_entry_encode(0, NULL, 0, use, 2, all + esz); /* no name */
  rc |= put(fz, "entries_noname", pree, 3, all, 2 * esz);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 1;
  }
  root = argv[1];
  if (mkdir(root, 0755) && errno != EEXIST) return 1;
  if (bs_hello() || bs_reply() || bs_coll() || tcp_hello() || tcp_header() ||
      tcp_entries() || watch_msg() || comm_peer() || window_reg() ||
      ofi_wire()) {
    perror("gen_corpus");
    return 1;
  }
  return 0;
}
