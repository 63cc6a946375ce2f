/* The peer and registration records' encoders and checks (records.h). */
#include "comm/records.h"

#include <string.h>

void gin_peer_rec_encode(const gin_peer_info_t *p, uint8_t *out) {
  size_t n = 0;
  while (n < GIN_HOSTID_BYTES && p->hostid[n])
    n++;
  memset(out, 0, GIN_HOSTID_BYTES);
  memcpy(out, p->hostid, n);
  gin_le_put32(out + GIN_PEER_REC_PID, (uint32_t)p->pid);
  gin_le_put32(out + GIN_PEER_REC_RANK, (uint32_t)p->rank);
  gin_le_put32(out + GIN_PEER_REC_WATCH, (uint32_t)p->watch);
  gin_le_put32(out + GIN_PEER_REC_PAD, 0);
  memcpy(out + GIN_PEER_REC_DEV, p->dev.bytes, GIN_ARCH_DEVINFO_BYTES);
  memcpy(out + GIN_PEER_REC_CTRL, p->ctrl.bytes, GIN_ARCH_HANDLE_BYTES);
}

gin_result_t gin_peer_recs_check(const void *all, size_t len, int nranks,
                                 char *why, size_t why_len,
                                 gin_peer_info_t *out) {
  if (!all || nranks < 1)
    return gin_net_why(why, why_len, GIN_ERR_INVALID, "no records (%d ranks)",
                       nranks);
  const uint8_t *p = (const uint8_t *)all;
  if (len % GIN_PEER_REC_BYTES || len / GIN_PEER_REC_BYTES != (size_t)nranks)
    return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                       "exchange of %zu bytes, expected %d records of %d", len,
                       nranks, GIN_PEER_REC_BYTES);
  for (int r = 0; r < nranks; r++) {
    int32_t rank = (int32_t)gin_le_get32(p + (size_t)r * GIN_PEER_REC_BYTES +
                                         GIN_PEER_REC_RANK);
    if (rank != r)
      return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                         "slot %d of the exchange names rank %d", r, (int)rank);
  }
  for (int r = 0; r < nranks; r++) {
    const uint8_t *e = p + (size_t)r * GIN_PEER_REC_BYTES;
    size_t n = 0;
    while (n < GIN_HOSTID_BYTES && e[n])
      n++;
    if (n == GIN_HOSTID_BYTES)
      return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                         "the host id of rank %d is not NUL-terminated "
                         "within its %d bytes",
                         r, GIN_HOSTID_BYTES);
    for (size_t i = n + 1; i < GIN_HOSTID_BYTES; i++)
      if (e[i])
        return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                           "the host id of rank %d has bytes after its end "
                           "(at %zu)",
                           r, i);
    int32_t pid = (int32_t)gin_le_get32(e + GIN_PEER_REC_PID);
    uint32_t watch = gin_le_get32(e + GIN_PEER_REC_WATCH);
    uint32_t pad = gin_le_get32(e + GIN_PEER_REC_PAD);
    if (pid <= 0)
      return gin_net_why(why, why_len, GIN_ERR_PROTOCOL, "rank %d sent pid %d",
                         r, (int)pid);
    if (watch > 1)
      return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                         "rank %d sent watch flag %u (0 or 1)", r, watch);
    if (pad)
      return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                         "rank %d sent padding %#x (0)", r, pad);
  }
  for (int r = 0; out && r < nranks; r++) {
    const uint8_t *e = p + (size_t)r * GIN_PEER_REC_BYTES;
    gin_peer_info_t *o = &out[r];
    memcpy(o->hostid, e, GIN_HOSTID_BYTES);
    o->pid = (int32_t)gin_le_get32(e + GIN_PEER_REC_PID);
    o->rank = (int32_t)gin_le_get32(e + GIN_PEER_REC_RANK);
    o->watch = (int32_t)gin_le_get32(e + GIN_PEER_REC_WATCH);
    o->pad_ = 0;
    memcpy(o->dev.bytes, e + GIN_PEER_REC_DEV, GIN_ARCH_DEVINFO_BYTES);
    memcpy(o->ctrl.bytes, e + GIN_PEER_REC_CTRL, GIN_ARCH_HANDLE_BYTES);
  }
  return GIN_SUCCESS;
}

void gin_win_rec_encode(const gin_win_rec_t *r, uint8_t *out) {
  gin_le_put32(out, (uint32_t)r->status);
  gin_le_put32(out + GIN_WIN_REC_SLOT, r->slot);
  gin_le_put32(out + GIN_WIN_REC_KIND, r->host_kind);
  gin_le_put32(out + GIN_WIN_REC_PAD, 0);
  gin_le_put64(out + GIN_WIN_REC_SIZE, r->size);
  gin_le_put64(out + GIN_WIN_REC_OFFSET, r->offset);
  gin_le_put64(out + GIN_WIN_REC_ALLOC, r->alloc_size);
  memcpy(out + GIN_WIN_REC_HANDLE, r->handle.bytes, GIN_ARCH_HANDLE_BYTES);
}

gin_result_t gin_win_recs_check(const void *all, size_t len, int nranks,
                                uint32_t max_windows, char *why, size_t why_len,
                                gin_win_rec_t *out) {
  if (!all || nranks < 1)
    return gin_net_why(why, why_len, GIN_ERR_INVALID,
                       "window registration: no records (%d ranks)", nranks);
  const uint8_t *p = (const uint8_t *)all;
  if (len % GIN_WIN_REC_BYTES || len / GIN_WIN_REC_BYTES != (size_t)nranks)
    return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                       "window registration: exchange of %zu bytes, expected "
                       "%d records of %d",
                       len, nranks, GIN_WIN_REC_BYTES);
  for (int r = 0; r < nranks; r++) {
    int32_t st = (int32_t)gin_le_get32(p + (size_t)r * GIN_WIN_REC_BYTES);
    if (st != GIN_SUCCESS)
      return gin_net_why(why, why_len, GIN_ERR_INVALID,
                         "gin_window_register: rank %d failed its part (%s)", r,
                         gin_strerror(st));
  }
  uint64_t size0 = gin_le_get64(p + GIN_WIN_REC_SIZE);
  uint32_t slot0 = gin_le_get32(p + GIN_WIN_REC_SLOT);
  uint32_t kind0 = gin_le_get32(p + GIN_WIN_REC_KIND);
  for (int r = 1; r < nranks; r++) {
    const uint8_t *e = p + (size_t)r * GIN_WIN_REC_BYTES;
    uint64_t size = gin_le_get64(e + GIN_WIN_REC_SIZE);
    uint32_t slot = gin_le_get32(e + GIN_WIN_REC_SLOT);
    uint32_t kind = gin_le_get32(e + GIN_WIN_REC_KIND);
    if (size != size0)
      return gin_net_why(why, why_len, GIN_ERR_INVALID,
                         "gin_window_register: sizes differ: rank 0 registers "
                         "%llu bytes, rank %d %llu (windows are symmetric)",
                         (unsigned long long)size0, r,
                         (unsigned long long)size);
    if (slot != slot0)
      return gin_net_why(why, why_len, GIN_ERR_INVALID,
                         "gin_window_register: ranks disagree on the window "
                         "slot (rank 0: %u, rank %d: %u): register and "
                         "deregister in the same order on every rank",
                         slot0, r, slot);
    if (kind != kind0)
      return gin_net_why(why, why_len, GIN_ERR_INTERNAL,
                         "window registration: ranks disagree on the memory "
                         "kind (rank 0: %u, rank %d: %u)",
                         kind0, r, kind);
  }
  for (int r = 0; r < nranks; r++) {
    const uint8_t *e = p + (size_t)r * GIN_WIN_REC_BYTES;
    uint32_t slot = gin_le_get32(e + GIN_WIN_REC_SLOT);
    uint32_t kind = gin_le_get32(e + GIN_WIN_REC_KIND);
    uint32_t pad = gin_le_get32(e + GIN_WIN_REC_PAD);
    uint64_t size = gin_le_get64(e + GIN_WIN_REC_SIZE);
    uint64_t off = gin_le_get64(e + GIN_WIN_REC_OFFSET);
    uint64_t asz = gin_le_get64(e + GIN_WIN_REC_ALLOC);
    if (kind > 1)
      return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                         "gin_window_register: rank %d sent memory kind %u "
                         "(0 or 1)",
                         r, kind);
    if (pad)
      return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                         "gin_window_register: rank %d sent padding %#x (0)", r,
                         pad);
    if (slot >= max_windows)
      return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                         "gin_window_register: rank %d names window slot %u, "
                         "outside [0, %u)",
                         r, slot, max_windows);
    if (size == 0)
      return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                         "gin_window_register: rank %d registers 0 bytes", r);
    if (off > asz || size > asz - off)
      return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                         "gin_window_register: rank %d's window (offset %llu, "
                         "%llu bytes) runs past its allocation of %llu bytes",
                         r, (unsigned long long)off, (unsigned long long)size,
                         (unsigned long long)asz);
  }
  for (int r = 0; out && r < nranks; r++) {
    const uint8_t *e = p + (size_t)r * GIN_WIN_REC_BYTES;
    gin_win_rec_t *o = &out[r];
    o->status = (int32_t)gin_le_get32(e);
    o->slot = gin_le_get32(e + GIN_WIN_REC_SLOT);
    o->host_kind = gin_le_get32(e + GIN_WIN_REC_KIND);
    o->pad_ = 0;
    o->size = gin_le_get64(e + GIN_WIN_REC_SIZE);
    o->offset = gin_le_get64(e + GIN_WIN_REC_OFFSET);
    o->alloc_size = gin_le_get64(e + GIN_WIN_REC_ALLOC);
    memcpy(o->handle.bytes, e + GIN_WIN_REC_HANDLE, GIN_ARCH_HANDLE_BYTES);
  }
  return GIN_SUCCESS;
}
