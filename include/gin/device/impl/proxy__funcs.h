/* Descriptors posted to the proxy's rings, and their draining. Internal. */
#ifndef GIN_DEVICE_IMPL_PROXY_FUNCS_H
#define GIN_DEVICE_IMPL_PROXY_FUNCS_H

#include "gin/device/impl/wait__funcs.h"
#include "gin/device/proxy.h"

/* A window argument that names no window (signal and barrier
 * descriptors). */
GIN_HD_FN gin_window_t gin_window_none(void) {
  gin_window_t w;
  memset(&w, 0, sizeof w);
  return w;
}
/* Copies ctx's ring description (read-only loads). */
GIN_DEVICE_FN void gin_dev_ring_(const gin_devcomm_t *dc, int ctx,
                                 gin_ring_t *r) {
  const gin_ring_t *g = &dc->rings[ctx];
  r->slots = (gin_desc_t *)gin_ro_ptr((void *const *)&g->slots);
  r->prod = (uint64_t *)gin_ro_ptr((void *const *)&g->prod);
  r->cons = (const uint64_t *)gin_ro_ptr((void *const *)&g->cons);
  r->size = gin_ro_u32(&g->size);
  r->bell = (int32_t)gin_ro_u32((const uint32_t *)&g->bell);
  r->sleeping = (const uint32_t *)gin_ro_ptr((void *const *)&g->sleeping);
}
/* Posts one descriptor on ctx's ring; called by every thread of the coop,
 * thread 0 posts after the coop synchronised (so the proxy sees every
 * thread's source bytes). Blocks, bounded, while the ring is full. */
GIN_DEVICE_FN int gin_dev_post_(const gin_devcomm_t *dc, int ctx, int op, int w,
                                gin_window_t dst, size_t dst_off,
                                gin_window_t src, size_t src_off, size_t bytes,
                                gin_remote_t remote, gin_local_t local,
                                gin_coop_t coop) {
  int rc = GIN_SUCCESS;
  gin_coop_sync(coop);
  if (gin_coop_rank(coop) == 0) {
    gin_ring_t rv, *ring = &rv;
    gin_dev_ring_(dc, ctx, ring);
    uint64_t s = gin_fetch_add_relaxed_u64(ring->prod, 1);
    if (s >= gin_load_acquire_u64(ring->prod + 1)) {
      /* Past the cached credits: read the consumer index (PCIe) and
       * publish what it frees for the other producers. */
      uint64_t c = gin_load_acquire_u64(ring->cons);
      gin_max_release_u64(ring->prod + 1, c + ring->size);
      if (s >= c + ring->size)
        rc = gin_dev_wait_(dc, ring->cons, NULL, s - ring->size + 1, 64,
                           GIN_DEVERR_TIMEOUT_RING, ctx, w);
    }
    if (rc == GIN_SUCCESS) {
      /* Built in registers, written as three 16-byte stores and the rest
       * of the first 16 bytes, then the flag: six stores across PCIe
       * instead of one per field. */
      gin_desc_t d;
      d.flag = 0;
      d.op = (uint8_t)op;
      d.remote = (uint8_t)remote.kind;
      d.local = (uint8_t)local.kind;
      d.version = GIN_DESC_VERSION;
      d.peer = w;
      d.signal = remote.signal;
      d.counter = local.counter;
      d.dst_win = GIN_DESC_WIN(dst);
      d.src_win = GIN_DESC_WIN(src);
      d.pad_ = 0;
      d.dst_off = dst_off;
      d.src_off = src_off;
      d.bytes = bytes;
      d.signal_value = remote.value;
      gin_desc_t *slot = &ring->slots[s & (ring->size - 1)];
      gin_store16((char *)slot + 16, (const char *)&d + 16);
      gin_store16((char *)slot + 32, (const char *)&d + 32);
      gin_store16((char *)slot + 48, (const char *)&d + 48);
      uint32_t w1;
      uint64_t w2;
      memcpy(&w1, (const char *)&d + 4, 4);
      memcpy(&w2, (const char *)&d + 8, 8);
      *(uint32_t *)((char *)slot + 4) = w1;
      *(uint64_t *)((char *)slot + 8) = w2;
      /* Cumulative: covers the coop's source writes before the barrier. */
      gin_store_release_u32(&slot->flag, (uint32_t)(s / ring->size) + 1);
      gin_ring_bell(ring->sleeping, ring->bell);
    }
  }
  return gin_coop_rc(coop, rc);
}
/* Waits until the proxy consumed everything posted on ctx so far; the
 * coop's first thread alone polls (the caller hands its result to the
 * others with gin_coop_rc). */
GIN_DEVICE_FN int gin_dev_ring_drain_(const gin_devcomm_t *dc, int ctx,
                                      gin_coop_t coop) {
  if (!dc->rings || gin_coop_rank(coop) != 0) return GIN_SUCCESS;
  gin_ring_t rv, *ring = &rv;
  gin_dev_ring_(dc, ctx, ring);
  uint64_t p = gin_load_acquire_u64(ring->prod);
  return gin_dev_wait_(dc, ring->cons, NULL, p, 64, GIN_DEVERR_TIMEOUT_FLUSH,
                       ctx, -1);
}
#endif
