/*
 * tcp transport wire format: encoding of the hello, the operation headers
 * and the setup entries all-gathered at init, and the pure checks of what
 * arrives (declared in tcp.h; fuzzed and unit tested on their own). No
 * I/O, no logging.
 */
#include <stdio.h>
#include <string.h>

#include "base/net.h"
#include "transport/tcp.h"

void gin_tcp_hello_encode(const gin_tcp_hello_t *h, uint8_t *out) {
  gin_le_put32(out, h->magic);
  gin_le_put16(out + 4, h->version);
  gin_le_put16(out + 6, h->reserved);
  memcpy(out + 8, h->secret, 16);
  gin_le_put32(out + 24, (uint32_t)h->rank);
  gin_le_put32(out + 28, (uint32_t)h->nranks);
}

gin_result_t gin_tcp_hello_check(const void *buf, size_t len,
                                 const uint8_t secret[16], int self, int nranks,
                                 const uint8_t *expect, char *why,
                                 size_t why_len, int *rank_out) {
  if (!buf || !secret) return GIN_ERR_INVALID;
  const uint8_t *p = (const uint8_t *)buf;
  gin_result_t bad = GIN_ERR_PROTOCOL;
  if (len != GIN_TCP_HELLO_BYTES)
    return gin_net_why(why, why_len, bad, "hello of %zu bytes, expected %d",
                       len, GIN_TCP_HELLO_BYTES);
  if (gin_le_get32(p) != GIN_TCP_HELLO_MAGIC)
    return gin_net_why(why, why_len, bad, "bad magic 0x%08x", gin_le_get32(p));
  if (gin_le_get16(p + 4) != GIN_TCP_VERSION)
    return gin_net_why(why, why_len, bad, "wire version %u, expected %d",
                       gin_le_get16(p + 4), GIN_TCP_VERSION);
  unsigned diff = 0; /* constant time: do not leak how much matched */
  for (int i = 0; i < 16; i++)
    diff |= (unsigned)(p[8 + i] ^ secret[i]);
  if (diff) return gin_net_why(why, why_len, bad, "wrong job secret");
  if (gin_le_get16(p + 6) != 0)
    return gin_net_why(why, why_len, bad, "reserved field %u",
                       gin_le_get16(p + 6));
  int rank = (int)gin_le_get32(p + 24), n = (int)gin_le_get32(p + 28);
  if (n != nranks)
    return gin_net_why(why, why_len, bad, "job size %d, expected %d", n,
                       nranks);
  if (rank < 0 || rank >= nranks)
    return gin_net_why(why, why_len, bad, "rank %d out of range [0, %d)", rank,
                       nranks);
  if (rank >= self)
    return gin_net_why(why, why_len, bad,
                       "rank %d connects to rank %d (only lower ranks connect)",
                       rank, self);
  if (expect && !expect[rank])
    return gin_net_why(why, why_len, bad,
                       "rank %d does not use tcp with rank %d", rank, self);
  if (rank_out) *rank_out = rank;
  return GIN_SUCCESS;
}

#define HO(f) offsetof(gin_tcp_hdr_t, f)

void gin_tcp_hdr_encode(const gin_tcp_hdr_t *h, uint8_t *p) {
  gin_le_put32(p + HO(magic), h->magic);
  gin_le_put16(p + HO(version), h->version);
  p[HO(op)] = h->op;
  p[HO(flags)] = h->flags;
  gin_le_put32(p + HO(dst_win), h->dst_win);
  gin_le_put32(p + HO(dst_gen), h->dst_gen);
  gin_le_put64(p + HO(dst_off), h->dst_off);
  gin_le_put64(p + HO(bytes), h->bytes);
  gin_le_put32(p + HO(sig_win), h->sig_win);
  gin_le_put32(p + HO(sig_gen), h->sig_gen);
  gin_le_put64(p + HO(sig_off), h->sig_off);
  gin_le_put64(p + HO(sig_add), h->sig_add);
  gin_le_put64(p + HO(mode_off), h->mode_off);
  gin_le_put32(p + HO(mode_bit), h->mode_bit);
  gin_le_put32(p + HO(reserved), h->reserved);
}

static void hdr_decode(const uint8_t *p, gin_tcp_hdr_t *h) {
  h->magic = gin_le_get32(p + HO(magic));
  h->version = gin_le_get16(p + HO(version));
  h->op = p[HO(op)];
  h->flags = p[HO(flags)];
  h->dst_win = gin_le_get32(p + HO(dst_win));
  h->dst_gen = gin_le_get32(p + HO(dst_gen));
  h->dst_off = gin_le_get64(p + HO(dst_off));
  h->bytes = gin_le_get64(p + HO(bytes));
  h->sig_win = gin_le_get32(p + HO(sig_win));
  h->sig_gen = gin_le_get32(p + HO(sig_gen));
  h->sig_off = gin_le_get64(p + HO(sig_off));
  h->sig_add = gin_le_get64(p + HO(sig_add));
  h->mode_off = gin_le_get64(p + HO(mode_off));
  h->mode_bit = gin_le_get32(p + HO(mode_bit));
  h->reserved = gin_le_get32(p + HO(reserved));
}

/* Checks [off, off+bytes) of window idx (generation gen at the sender),
 * `align`-aligned, against the table. */
static gin_result_t win_check(const gin_win_slot_t *wins, uint32_t nwins,
                              const char *what, uint32_t idx, uint32_t gen,
                              uint64_t off, uint64_t bytes, uint64_t align,
                              char *why, size_t len) {
  if (idx >= nwins)
    return gin_net_why(why, len, GIN_ERR_PROTOCOL,
                       "%s window %u outside the table of %u", what, idx,
                       nwins);
  uint32_t g = __atomic_load_n(&wins[idx].gen, __ATOMIC_ACQUIRE);
  int live = __atomic_load_n(&wins[idx].live, __ATOMIC_ACQUIRE);
  int32_t ahead = (int32_t)(gen - g);
  if (ahead > 0 || (ahead == 0 && !live))
    return gin_net_why(why, len, GIN_ERR_AGAIN,
                       "%s window %u (generation %u) is not registered here",
                       what, idx, gen);
  if (ahead < 0)
    return gin_net_why(why, len, GIN_ERR_PROTOCOL,
                       "%s window %u generation %u was deregistered (now %u)",
                       what, idx, gen, g);
  uint64_t size = wins[idx].size;
  if (off > size || bytes > size - off)
    return gin_net_why(
        why, len, GIN_ERR_PROTOCOL,
        "%s offset %llu + %llu bytes is outside window %u of %llu bytes", what,
        (unsigned long long)off, (unsigned long long)bytes, idx,
        (unsigned long long)size);
  if (off % align)
    return gin_net_why(why, len, GIN_ERR_PROTOCOL,
                       "%s offset %llu is not %llu-byte aligned", what,
                       (unsigned long long)off, (unsigned long long)align);
  return GIN_SUCCESS;
}

gin_result_t gin_tcp_header_check(const void *buf, size_t len,
                                  const gin_win_slot_t *wins, uint32_t nwins,
                                  char *why, size_t why_len,
                                  gin_tcp_hdr_t *out) {
  if (!buf) return GIN_ERR_INVALID;
  gin_result_t bad = GIN_ERR_PROTOCOL, res;
  if (len != GIN_TCP_HDR_BYTES)
    return gin_net_why(why, why_len, bad, "header of %zu bytes, expected %d",
                       len, GIN_TCP_HDR_BYTES);
  gin_tcp_hdr_t h;
  hdr_decode((const uint8_t *)buf, &h);
  if (h.magic != GIN_TCP_HDR_MAGIC)
    return gin_net_why(why, why_len, bad, "bad magic 0x%08x", h.magic);
  if (h.version != GIN_TCP_VERSION)
    return gin_net_why(why, why_len, bad, "wire version %u, expected %d",
                       h.version, GIN_TCP_VERSION);
  if (h.op < GIN_TCP_OP_PUT || h.op > GIN_TCP_OP_BYE)
    return gin_net_why(why, why_len, bad, "unknown operation %u", h.op);
  if (h.flags & ~GIN_TCP_F_SIGNAL)
    return gin_net_why(why, why_len, bad, "unknown flags 0x%x", h.flags);
  int sig = (h.flags & GIN_TCP_F_SIGNAL) != 0;
  if (h.reserved ||
      (h.op != GIN_TCP_OP_PUT &&
       (h.dst_win || h.dst_gen || h.dst_off || h.bytes)) ||
      (!sig && (h.sig_win || h.sig_gen || h.sig_off || h.sig_add ||
                h.mode_off || h.mode_bit)))
    return gin_net_why(why, why_len, bad,
                       "operation %u has fields it does not use set", h.op);
  if ((h.op == GIN_TCP_OP_SIGNAL && !sig) || (h.op == GIN_TCP_OP_BYE && sig))
    return gin_net_why(why, why_len, bad, "operation %u %s a signal", h.op,
                       sig ? "with" : "without");
  if (h.bytes > GIN_TCP_MAX_CHUNK)
    return gin_net_why(why, why_len, bad,
                       "%llu bytes in one chunk (at most %u)",
                       (unsigned long long)h.bytes, GIN_TCP_MAX_CHUNK);
  if (h.op == GIN_TCP_OP_PUT &&
      (res = win_check(wins, nwins, "destination", h.dst_win, h.dst_gen,
                       h.dst_off, h.bytes, 1, why, why_len)) != GIN_SUCCESS)
    return res;
  if (sig) {
    if ((res = win_check(wins, nwins, "signal", h.sig_win, h.sig_gen, h.sig_off,
                         8, 8, why, why_len)) != GIN_SUCCESS)
      return res;
    if (h.mode_off &&
        (res = win_check(wins, nwins, "signal mode", h.sig_win, h.sig_gen,
                         h.mode_off, 4, 4, why, why_len)) != GIN_SUCCESS)
      return res;
    if (h.mode_off ? (h.mode_bit != 1 && h.mode_bit != 2) : h.mode_bit != 0)
      return gin_net_why(why, why_len, bad, "mode bit %u at offset %llu",
                         h.mode_bit, (unsigned long long)h.mode_off);
  }
  if (out) *out = h;
  return GIN_SUCCESS;
}

/* ------------------------------------------------------------ setup */

size_t gin_tcp_entry_bytes(int nranks) {
  size_t n = nranks > 0 ? (size_t)nranks : 0;
  return (GIN_TCP_ENTRY_HEAD + (n + 7) / 8 + 7) & ~(size_t)7;
}

void gin_tcp_entry_encode(int32_t status, const gin_net_addr_t *addr,
                          const uint8_t *use, int nranks, uint8_t *out) {
  memset(out, 0, gin_tcp_entry_bytes(nranks));
  gin_le_put32(out, (uint32_t)status);
  if (addr) {
    gin_le_put16(out + 4, addr->family);
    gin_le_put16(out + 6, addr->port);
    memcpy(out + 8, addr->addr, 16);
  }
  for (int r = 0; use && r < nranks; r++)
    if (use[r]) out[GIN_TCP_ENTRY_HEAD + r / 8] |= (uint8_t)(1u << (r % 8));
}

/* Bit r of entry e: its sender uses tcp with rank r. */
static int entry_uses(const uint8_t *e, int r) {
  return (e[GIN_TCP_ENTRY_HEAD + r / 8] >> (r % 8)) & 1;
}

gin_result_t gin_tcp_entries_check(const void *all, size_t len, int nranks,
                                   char *why, size_t why_len,
                                   gin_net_addr_t *addrs) {
  if (!all || nranks < 1)
    return gin_net_why(why, why_len, GIN_ERR_INVALID, "no entries (%d ranks)",
                       nranks);
  const uint8_t *p = (const uint8_t *)all;
  size_t esz = gin_tcp_entry_bytes(nranks), n = (size_t)nranks;
  if (len % esz || len / esz != n)
    return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                       "entries of %zu bytes, expected %d of %zu", len, nranks,
                       esz);
  for (int a = 0; a < nranks; a++) {
    const uint8_t *ea = p + (size_t)a * esz;
    if ((int32_t)gin_le_get32(ea) != GIN_SUCCESS)
      return gin_net_why(why, why_len, GIN_ERR_REMOTE,
                         "rank %d could not set up its listening socket", a);
    for (int b = a + 1; b < nranks; b++) {
      const uint8_t *eb = p + (size_t)b * esz;
      int ab = entry_uses(ea, b), ba = entry_uses(eb, a);
      if (ab != ba)
        return gin_net_why(
            why, why_len, GIN_ERR_INVALID,
            "rank %d reaches rank %d through tcp but not the other "
            "way round (GIN_BACKEND or GIN_TRANSPORT differ?)",
            ab ? a : b, ab ? b : a);
      uint16_t family = gin_le_get16(eb + 4), port = gin_le_get16(eb + 6);
      if (ab && (port == 0 || (family != AF_INET && family != AF_INET6)))
        return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                           "bad address of rank %d (family %u, port %u)", b,
                           family, port);
    }
  }
  for (int r = 0; addrs && r < nranks; r++) {
    const uint8_t *e = p + (size_t)r * esz;
    addrs[r].family = gin_le_get16(e + 4);
    addrs[r].port = gin_le_get16(e + 6);
    memcpy(addrs[r].addr, e + 8, 16);
  }
  return GIN_SUCCESS;
}
