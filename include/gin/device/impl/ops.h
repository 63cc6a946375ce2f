/* Bodies of the device API (gin_device.h). Internal. */
#ifndef GIN_DEVICE_IMPL_OPS_H
#define GIN_DEVICE_IMPL_OPS_H

#include "gin/device/proxy.h"

#define GIN_COUNTER_BITS 56
#define GIN_SIGMODE_INC 1u
#define GIN_SIGMODE_ADD 2u

GIN_HD_FN gin_remote_t gin_remote_none(void) {
  gin_remote_t r;
  r.kind = GIN_REMOTE_NONE;
  r.signal = 0;
  r.value = 0;
  return r;
}
GIN_HD_FN gin_remote_t gin_remote_signal_inc(int signal) {
  gin_remote_t r;
  r.kind = GIN_REMOTE_SIGNAL_INC;
  r.signal = signal;
  r.value = 1;
  return r;
}
GIN_HD_FN gin_remote_t gin_remote_signal_add(int signal, uint64_t value) {
  gin_remote_t r;
  r.kind = GIN_REMOTE_SIGNAL_ADD;
  r.signal = signal;
  r.value = value;
  return r;
}
/* A window argument that names no window (signal and barrier
 * descriptors). */
GIN_HD_FN gin_window_t gin_window_none(void) {
  gin_window_t w;
  memset(&w, 0, sizeof w);
  return w;
}
GIN_HD_FN gin_local_t gin_local_none(void) {
  gin_local_t l;
  l.kind = GIN_LOCAL_NONE;
  l.counter = 0;
  return l;
}
GIN_HD_FN gin_local_t gin_local_counter_inc(int counter) {
  gin_local_t l;
  l.kind = GIN_LOCAL_COUNTER_INC;
  l.counter = counter;
  return l;
}

/* ---------------------------------------------------------------- teams */

GIN_DEVICE_FN gin_team_t gin_team_world(const gin_devcomm_t *dc) {
  gin_team_t t;
  t.size = dc->nranks;
  t.rank = dc->rank;
  t.id = GIN_TEAM_WORLD;
  t.ranks = NULL;
  return t;
}
GIN_DEVICE_FN gin_team_t gin_team_lsa(const gin_devcomm_t *dc) {
  gin_team_t t;
  t.size = dc->lsa_size;
  t.rank = dc->lsa_rank;
  t.id = GIN_TEAM_LSA;
  t.ranks = dc->lsa_ranks;
  return t;
}
GIN_DEVICE_FN int gin_team_world_rank(gin_team_t team, int peer) {
  if (peer < 0 || peer >= team.size) return -1;
  return team.ranks ? team.ranks[peer] : peer;
}

GIN_DEVICE_FN int gin_aborted(const gin_devcomm_t *dc) {
  return (gin_load_acquire_u32(&dc->ctrl->abort) |
          gin_load_acquire_u32(&dc->ctrl->habort)) != 0;
}

/* ------------------------------------------------------- remote actions */

/* Applies a remote action at world rank `w` once the payload is written
 * (direct path). Called by one thread of the coop after the coop
 * synchronised: the release is cumulative, so it covers every thread's
 * payload stores that the barrier ordered before it (PTX memory model; a
 * release is a fence.acq_rel and the write, so a fence of its own before
 * it would add nothing). With checks, the update marks its kind in the
 * target's mode word and learns the kinds marked before it: a signal
 * updated with both since its reset fails here, at the sender, once the
 * update is out (the mark's round trip overlaps the signal's flight; a
 * check at the waiter follows the wait's acquire with one more load from
 * memory: docs/PERFORMANCE.md, "Design figures"). Waiters still check
 * where proxied updates mark a second word (gin_dev_sigmode_). */
GIN_DEVICE_FN int gin_dev_remote_(const gin_devcomm_t *dc, int w, int route,
                                  gin_remote_t remote) {
  if (remote.kind == GIN_REMOTE_NONE) return GIN_SUCCESS;
  uint64_t *sig = gin_dev_peer_sig_(dc, w);
  uint32_t kind =
      remote.kind == GIN_REMOTE_SIGNAL_INC ? GIN_SIGMODE_INC : GIN_SIGMODE_ADD;
  uint32_t seen = 0;
  /* The mode words sit at the same distance from the signals on every
   * rank (one shared allocation each). The release below orders the mark
   * before the signal update. */
  uint32_t *mode = (uint32_t *)((char *)sig + ((const char *)dc->sigmode -
                                               (const char *)dc->signals)) +
                   remote.signal;
  if (GIN_DEV_CHECKS_ON)
    seen = route & GIN_PATH_NEAR ? gin_fetch_or_relaxed_gpu_u32(mode, kind)
                                 : gin_fetch_or_relaxed_u32(mode, kind);
  if (route & GIN_PATH_NEAR) /* same GPU: GPU scope orders enough */
    gin_add_release_gpu_u64(&sig[remote.signal], remote.value);
  else
    gin_add_release_u64(&sig[remote.signal], remote.value);
  /* expected 1: found by the sender (comm.c words it so). */
  if (GIN_DEV_CHECKS_ON && (seen | kind) == (GIN_SIGMODE_INC | GIN_SIGMODE_ADD))
    return gin_dev_fail_(dc, GIN_ERR_INVALID, GIN_DEVERR_SIGNAL_MIX, w,
                         remote.signal, 1, 0, seen, kind);
  return GIN_SUCCESS;
}

/* The result of a direct call that applied `remote` from its first
 * thread (rc there, GIN_SUCCESS elsewhere), the same for the whole coop:
 * only the checks' INC/ADD test fails there. */
GIN_DEVICE_FN int gin_dev_remote_rc_(gin_coop_t coop, gin_remote_t remote,
                                     int rc) {
  if (!GIN_DEV_CHECKS_ON || remote.kind == GIN_REMOTE_NONE) return rc;
  return gin_coop_rc(coop, rc);
}

GIN_DEVICE_FN int gin_dev_path_ok_(const gin_devcomm_t *dc, int w, int route) {
  switch (gin_route_path_(route)) {
  case GIN_PATH_SELF:
  case GIN_PATH_DIRECT: return GIN_SUCCESS;
  case GIN_PATH_PROXY:
    if (dc->rings) return GIN_SUCCESS;
    break; /* no rings: no proxy */
  default: break;
  }
  return gin_dev_fail_(dc, GIN_ERR_UNSUPPORTED, GIN_DEVERR_UNREACHABLE, w, -1,
                       0, (uint64_t)gin_route_path_(route), 0, 0);
}

/* Whether direct writes into peers must stop (gin_devcomm_t.gate). Read
 * by every thread of a coop, which then agrees (gin_coop_any). A put
 * reads it right after its small source load (a bulk put: before its
 * barrier and copy) and acts on it after its copy (the read then costs
 * nothing on the way: it is in flight with the source's loads), so once
 * shut its bytes may still land but no signal does, and it fails; a
 * signal and a value put read it first (in flight with the route's
 * decoding and, where there are any, the checks' table loads) and act on
 * it before they write anything; a barrier's wait acts on it first. */
GIN_DEVICE_FN int gin_dev_shut_(const gin_devcomm_t *dc) {
  return gin_load_cached_u32(dc->gate) != 0;
}
/* What a direct write to world rank w returns once shut. */
GIN_DEVICE_FN int gin_dev_shut_fail_(const gin_devcomm_t *dc, int w) {
  return gin_dev_fail_(dc, GIN_ERR_ABORTED, GIN_DEVERR_ABORTED, w, -1, 0, 0, 0,
                       1);
}

/* ---------------------------------------------------------------- proxy */

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

/* ------------------------------------------------------------------ put */

GIN_DEVICE_FN int gin_put(const gin_devcomm_t *dc, int ctx, gin_team_t team,
                          int peer, gin_window_t dst, size_t dst_off,
                          gin_window_t src, size_t src_off, size_t bytes,
                          gin_remote_t remote, gin_local_t local,
                          gin_coop_t coop) {
  int w = gin_team_world_rank(team, peer), rc;
  /* The checks that need no load (ids and limits from the devcomm, sizes
   * from the handles) before the source is read, as one predicate; the
   * windows' liveness (a load each) beside the source's load, acted on
   * before anything is written (gin_dev_window_live_). Where the
   * predicate holds, the checks run one by one to name the failure. */
  if (GIN_DEV_CHECKS_ON &&
      GIN_UNLIKELY(gin_dev_put_bad_(dc, ctx, w, dst, dst_off, src, src_off,
                                    bytes, remote, local)) &&
      (rc = gin_dev_put_args_(dc, ctx, team, peer, dst, dst_off, src, src_off,
                              bytes, remote, local)))
    return rc;
  /* Up to `part` bytes per thread, the coop's threads read the source
   * into registers once the checks that need no load passed, before the
   * route and the destination (gin_small_t): a lone thread (which sees its own
   * writes) at once, a warp or block once it met (it then sees every thread's
   * part): thread cr reads `part` bytes from cr * part. A lone thread
   * holds GIN_SMALL_BYTES (64), a warp's or block's threads
   * GIN_SMALL_COOP_BYTES (16): 32 each make a 512-thread block's 8-16 KiB
   * puts ~0.3 us slower than the general copy (docs/PERFORMANCE.md,
   * "Design figures"). A lone thread's length is the put's (written out:
   * the general form costs it a dozen 64-bit selects on the way to its
   * load). */
  const char *s = src.local + src_off;
  gin_small_t v;
  int cr = gin_coop_rank(coop), cs = gin_coop_size(coop);
  size_t part =
      coop == GIN_COOP_THREAD ? GIN_SMALL_BYTES : GIN_SMALL_COOP_BYTES;
  int small = bytes <= part * (size_t)cs;
  size_t o = (size_t)cr * part, len;
  if (coop == GIN_COOP_THREAD)
    len = small ? bytes : 0;
  else
    len = !small || o >= bytes ? 0 : bytes - o < part ? bytes - o : part;
  if (small && coop != GIN_COOP_THREAD) gin_coop_sync(coop);
  if (len) v = gin_small_load(s + o, len);
  /* The gate's load right behind the source's (gin_dev_shut_): back with
   * it, so the signal does not wait for it. Read first, before the
   * source, it lowers the message rate from 59.7-61.9 k to 43.5-43.8 k
   * Mops/s (docs/PERFORMANCE.md, "Design figures"). */
  int shut = gin_dev_shut_(dc);
  int route = gin_dev_route_(dc, w);
  /* Acted on right before the first write, so that the route's decoding
   * and the destination's select run while the slot's load is out. */
  int dead = GIN_DEV_CHECKS_ON &&
             (gin_dev_window_dead_(dc, dst) | gin_dev_window_dead_(dc, src));
  if (!gin_route_direct_(route)) {
    if (GIN_UNLIKELY(dead) && (rc = gin_dev_windows_live_(dc, w, dst, src)))
      return rc;
    if ((rc = gin_dev_path_ok_(dc, w, route))) return rc;
    return gin_dev_post_(dc, ctx, GIN_OP_PUT, w, dst, dst_off, src, src_off,
                         bytes, remote, local, coop);
  }
  /* Direct path: this coop's threads move the bytes themselves, once all
   * of them have written their part of the source (as on the proxy path);
   * no signal once the communicator aborted (gin_dev_shut_). */
  char *d = gin_dev_base_(dc, dst, w) + dst_off;
  if (GIN_UNLIKELY(dead) && (rc = gin_dev_windows_live_(dc, w, dst, src)))
    return rc;
  if (small) {
    if (len) gin_small_store(d + o, v, len);
  } else {
    gin_coop_sync(coop);
    gin_copy_coop(d, s, bytes, cr, cs);
  }
  if (gin_coop_any(coop, shut)) return gin_dev_shut_fail_(dc, w);
  if (remote.kind == GIN_REMOTE_NONE && local.kind == GIN_LOCAL_NONE)
    return GIN_SUCCESS;
  if (cr == 0) {
    rc = gin_dev_remote_(dc, w, route, remote);
    if (local.kind == GIN_LOCAL_COUNTER_INC)
      gin_add_release_u64(&dc->counters[local.counter], 1);
  }
  /* No closing barrier without checks: every thread is past its part of
   * the copy (the barrier above), and the rest is the first thread's,
   * which cannot fail. With them, a signal's mixed kinds reach the first
   * thread alone, which hands its result to the coop. */
  return gin_dev_remote_rc_(coop, remote, rc);
}

GIN_DEVICE_FN int gin_put_value(const gin_devcomm_t *dc, int ctx,
                                gin_team_t team, int peer, gin_window_t dst,
                                size_t dst_off, uint64_t value, int bytes,
                                gin_remote_t remote, gin_coop_t coop) {
  /* The gate's load goes out first: its round trip overlaps the route's
   * decoding and the checks' table loads, where there are any (acted on
   * after the checks). */
  int shut = gin_dev_shut_(dc), w = 0, rc;
  if ((rc = gin_dev_ctx_(dc, ctx)) || (rc = gin_dev_peer_(dc, team, peer, &w)))
    return rc;
  if ((rc = gin_dev_window_idx_(dc, dst, w))) return rc;
  if (GIN_DEV_CHECKS_ON && (bytes < 1 || bytes > 8))
    return gin_dev_bad_(dc, GIN_DEVERR_BAD_RANGE, w, dst.idx, dst_off,
                        (uint64_t)bytes);
  int route = gin_dev_route_(dc, w);
  if ((rc = gin_dev_range_(dc, dst, w, dst_off, (size_t)bytes)) ||
      (rc = gin_dev_window_live_(dc, dst, w)) ||
      (rc = gin_dev_actions_(dc, w, remote, gin_local_none())) ||
      (rc = gin_dev_path_ok_(dc, w, route)))
    return rc;
  if (gin_route_path_(route) == GIN_PATH_PROXY)
    return gin_dev_post_(dc, ctx, GIN_OP_PUT_VALUE, w, dst, dst_off, dst, value,
                         (size_t)bytes, remote, gin_local_none(), coop);
  int cr = gin_coop_rank(coop);
  /* The signal must follow every thread's earlier puts (their copies on
   * this path), so the coop meets before its first thread releases it;
   * the meeting also agrees on whether the communicator aborted. */
  if (gin_coop_any(coop, shut)) return gin_dev_shut_fail_(dc, w);
  if (cr == 0) {
    char *d = gin_dev_base_(dc, dst, w) + dst_off;
    if (bytes == 8 && ((uintptr_t)d & 7) == 0) {
      *(uint64_t *)d = value;
    } else {
      for (int i = 0; i < bytes; i++)
        d[i] = (char)(value >> (8 * i));
    }
    rc = gin_dev_remote_(dc, w, route, remote);
  }
  return gin_dev_remote_rc_(coop, remote, rc); /* as gin_put */
}

GIN_DEVICE_FN int gin_signal(const gin_devcomm_t *dc, int ctx, gin_team_t team,
                             int peer, gin_remote_t remote, gin_coop_t coop) {
  int shut = gin_dev_shut_(dc), w = 0, rc; /* first, as in gin_put_value */
  if ((rc = gin_dev_ctx_(dc, ctx)) || (rc = gin_dev_peer_(dc, team, peer, &w)))
    return rc;
  if (GIN_DEV_CHECKS_ON && remote.kind == GIN_REMOTE_NONE)
    return gin_dev_bad_(dc, GIN_DEVERR_BAD_SIGNAL, w, remote.signal, 0, 2);
  int route = gin_dev_route_(dc, w);
  if ((rc = gin_dev_actions_(dc, w, remote, gin_local_none())) ||
      (rc = gin_dev_path_ok_(dc, w, route)))
    return rc;
  if (gin_route_path_(route) == GIN_PATH_PROXY) {
    gin_window_t none = gin_window_none();
    return gin_dev_post_(dc, ctx, GIN_OP_SIGNAL, w, none, 0, none, 0, 0, remote,
                         gin_local_none(), coop);
  }
  if (gin_coop_any(coop, shut)) return gin_dev_shut_fail_(dc, w);
  if (gin_coop_rank(coop) == 0) rc = gin_dev_remote_(dc, w, route, remote);
  return gin_dev_remote_rc_(coop, remote, rc); /* as gin_put */
}

GIN_DEVICE_FN int gin_flush(const gin_devcomm_t *dc, int ctx, gin_coop_t coop) {
  int rc = gin_dev_ctx_(dc, ctx);
  /* Direct puts copy synchronously: once every thread of the coop is past
   * its stores, the sources are free. Proxy puts are free once the proxy
   * consumed them. */
  gin_coop_sync(coop);
  if (rc == GIN_SUCCESS) rc = gin_dev_ring_drain_(dc, ctx, coop);
  return gin_coop_rc(coop, rc);
}

/* -------------------------------------------------------------- signals */

/* The proxy's part of signal s (or barrier counter s), NULL if none. */
GIN_DEVICE_FN const uint64_t *gin_dev_psig_(const gin_devcomm_t *dc, int s) {
  return dc->psignals ? &dc->psignals[s] : NULL;
}
GIN_DEVICE_FN const uint64_t *gin_dev_pcnt_(const gin_devcomm_t *dc, int c) {
  return dc->pcounters ? &dc->pcounters[c] : NULL;
}

GIN_DEVICE_FN uint64_t gin_signal_read(const gin_devcomm_t *dc, int signal) {
  if (gin_dev_signal_id_(dc, -1, signal)) return 0;
  return gin_dev_read2_(&dc->signals[signal], gin_dev_psig_(dc, signal));
}

/* A signal updated with both INC and ADD since its reset is misuse. Direct
 * updates are checked by their senders (gin_dev_remote_), so a waiter
 * fails only where a proxied update (marked in the second word, pmode)
 * is one of the two kinds: each mix is reported once. */
GIN_DEVICE_FN int gin_dev_sigmode_(const gin_devcomm_t *dc, int signal) {
  if (!GIN_DEV_CHECKS_ON || !dc->pmode) return GIN_SUCCESS;
  uint32_t p = gin_load_acquire_u32(&dc->pmode[signal]);
  uint32_t m = p ? p | gin_load_acquire_u32(&dc->sigmode[signal]) : 0;
  if (m == (GIN_SIGMODE_INC | GIN_SIGMODE_ADD))
    return gin_dev_bad_(dc, GIN_DEVERR_SIGNAL_MIX, dc->rank, signal,
                        GIN_SIGMODE_INC, GIN_SIGMODE_ADD);
  return GIN_SUCCESS;
}

/* Waits of a coop: the lanes of its first warp poll, together (one load
 * a poll for the warp, the same word and value in every lane, each lane
 * its own acquire), and the others wait at the barrier that hands them
 * the result (gin_coop_rc). A lone poller would leave the rest of its
 * warp parked at a reconvergence point, which costs a warp's wait ~240
 * cycles more than a thread's (docs/PERFORMANCE.md, "Design figures"). The
 * barrier orders the other warps' later reads after the pollers' acquire
 * (__syncthreads orders memory among the threads it synchronises, by the
 * PTX memory model), and they do not poll the same word beside them. */
GIN_DEVICE_FN int gin_dev_poller_(gin_coop_t coop) {
  return gin_coop_rank(coop) < GIN_WARP_SIZE;
}
GIN_DEVICE_FN int gin_signal_wait(const gin_devcomm_t *dc, int signal,
                                  uint64_t least, gin_coop_t coop) {
  int rc = gin_dev_signal_id_(dc, -1, signal);
  if (rc == GIN_SUCCESS && gin_dev_poller_(coop)) {
    rc = gin_dev_wait_(dc, &dc->signals[signal], gin_dev_psig_(dc, signal),
                       least, 64, GIN_DEVERR_TIMEOUT_SIGNAL, signal, -1);
    if (rc == GIN_SUCCESS) rc = gin_dev_sigmode_(dc, signal);
  }
  return gin_coop_rc(coop, rc);
}

GIN_DEVICE_FN int gin_signal_reset(const gin_devcomm_t *dc, int signal,
                                   gin_coop_t coop) {
  int rc = gin_dev_signal_id_(dc, -1, signal);
  if (rc == GIN_SUCCESS && gin_coop_rank(coop) == 0) {
    gin_store_release_u64(&dc->signals[signal], 0);
    if (dc->psignals) gin_store_release_u64(&dc->psignals[signal], 0);
    dc->shadows[signal] = 0;
    gin_store_release_u32(&dc->sigmode[signal], 0);
    if (dc->pmode) gin_store_release_u32(&dc->pmode[signal], 0);
  }
  gin_coop_sync(coop);
  return rc;
}

GIN_DEVICE_FN uint64_t gin_signal_shadow(const gin_devcomm_t *dc, int signal) {
  if (gin_dev_signal_id_(dc, -1, signal)) return 0;
  return dc->shadows[signal];
}

GIN_DEVICE_FN int gin_signal_shadow_add(const gin_devcomm_t *dc, int signal,
                                        uint64_t delta, gin_coop_t coop) {
  int rc = gin_dev_signal_id_(dc, -1, signal);
  gin_coop_sync(coop);
  if (rc == GIN_SUCCESS && gin_coop_rank(coop) == 0)
    dc->shadows[signal] += delta;
  gin_coop_sync(coop);
  return rc;
}

GIN_DEVICE_FN int gin_signal_wait_meet_shadow(const gin_devcomm_t *dc,
                                              int signal, gin_coop_t coop) {
  int rc = gin_dev_signal_id_(dc, -1, signal);
  if (rc) return rc;
  return gin_signal_wait(dc, signal, dc->shadows[signal], coop);
}

GIN_DEVICE_FN int
gin_signal_wait_follow_shadow(const gin_devcomm_t *dc, int signal,
                              uint64_t least_delta, uint64_t *before,
                              uint64_t *delta, gin_coop_t coop) {
  int rc = gin_dev_signal_id_(dc, -1, signal);
  if (rc) return rc;
  uint64_t old = dc->shadows[signal];
  if (gin_dev_poller_(coop)) { /* as gin_signal_wait */
    rc = gin_dev_wait_(dc, &dc->signals[signal], gin_dev_psig_(dc, signal),
                       old + least_delta, 64, GIN_DEVERR_TIMEOUT_SIGNAL, signal,
                       -1);
    if (rc == GIN_SUCCESS) rc = gin_dev_sigmode_(dc, signal);
  }
  rc = gin_coop_rc(coop, rc);
  /* Thread 0 decides the new shadow; the coop reads it back so every
   * thread reports the same before/delta. */
  if (rc == GIN_SUCCESS && gin_coop_rank(coop) == 0)
    dc->shadows[signal] =
        gin_dev_read2_(&dc->signals[signal], gin_dev_psig_(dc, signal));
  gin_coop_sync(coop);
  if (rc == GIN_SUCCESS) {
    uint64_t seen = dc->shadows[signal];
    if (before) *before = old;
    if (delta) *delta = seen - old;
  }
  gin_coop_sync(coop);
  return rc;
}

/* ------------------------------------------------------------- counters */

GIN_DEVICE_FN uint64_t gin_counter_read(const gin_devcomm_t *dc, int counter) {
  if (gin_dev_counter_id_(dc, counter)) return 0;
  return gin_dev_read2_(&dc->counters[counter], gin_dev_pcnt_(dc, counter)) &
         ((1ull << GIN_COUNTER_BITS) - 1);
}

GIN_DEVICE_FN int gin_counter_wait(const gin_devcomm_t *dc, int counter,
                                   uint64_t least, gin_coop_t coop) {
  int rc = gin_dev_counter_id_(dc, counter);
  if (rc == GIN_SUCCESS && gin_dev_poller_(coop)) /* as gin_signal_wait */
    rc = gin_dev_wait_(dc, &dc->counters[counter], gin_dev_pcnt_(dc, counter),
                       least, GIN_COUNTER_BITS, GIN_DEVERR_TIMEOUT_COUNTER,
                       counter, -1);
  return gin_coop_rc(coop, rc);
}

GIN_DEVICE_FN int gin_counter_set(const gin_devcomm_t *dc, int counter,
                                  uint64_t value, gin_coop_t coop) {
  int rc = gin_dev_counter_id_(dc, counter);
  gin_coop_sync(coop);
  if (rc == GIN_SUCCESS && gin_coop_rank(coop) == 0) {
    /* No update may be in flight: the proxy's part restarts at 0. */
    if (dc->pcounters) gin_store_release_u64(&dc->pcounters[counter], 0);
    gin_store_release_u64(&dc->counters[counter],
                          value & ((1ull << GIN_COUNTER_BITS) - 1));
  }
  gin_coop_sync(coop);
  return rc;
}

GIN_DEVICE_FN int gin_counter_reset(const gin_devcomm_t *dc, int counter,
                                    gin_coop_t coop) {
  return gin_counter_set(dc, counter, 0, coop);
}

/* -------------------------------------------------------------- barrier */

GIN_DEVICE_FN int gin_barrier(const gin_devcomm_t *dc, gin_team_t team,
                              int slot, gin_coop_t coop) {
  if (GIN_DEV_CHECKS_ON && (slot < 0 || slot >= dc->nbarriers))
    return gin_dev_bad_(dc, GIN_DEVERR_BAD_BARRIER, -1, slot, dc->nbarriers, 0);
  if (GIN_DEV_CHECKS_ON &&
      (team.rank < 0 || team.id < 0 || team.id >= GIN_NUM_TEAMS))
    return gin_dev_bad_(dc, GIN_DEVERR_BAD_PEER, team.rank, team.id,
                        (uint64_t)team.size, 0);
  int idx = team.id * dc->nbarriers + slot;
  int cr = gin_coop_rank(coop), cs = gin_coop_size(coop);
  for (int m = 0; m < team.size; m++) {
    int w = gin_team_world_rank(team, m);
    int rc = gin_dev_path_ok_(dc, w, gin_dev_route_(dc, w));
    if (rc) return rc;
  }
  /* Every thread's earlier writes must precede the arrivals: direct ones
   * by the barrier and the arrivals' release (cumulative, as in
   * gin_dev_remote_), proxied ones by draining every ring (the transports
   * deliver each peer's operations in the order they were consumed). */
  gin_coop_sync(coop);
  int rc = GIN_SUCCESS, shut = cr == 0 && gin_dev_shut_(dc);
  for (int x = 0; x < dc->nctx && rc == GIN_SUCCESS; x++)
    rc = gin_dev_ring_drain_(dc, x, coop);
  /* Every thread leaves together, with the first thread's result. */
  if ((rc = gin_coop_rc(coop, rc))) return rc;
  uint64_t epoch = dc->bar_epoch[idx] + 1;
  for (int m = 0; m < team.size; m++) {
    int w = gin_team_world_rank(team, m);
    if (gin_dev_path_(dc, w) == GIN_PATH_PROXY) {
      /* Arrival as a signal on the barrier counter, which follows the
       * signals in the peer's signal memory. */
      gin_window_t none = gin_window_none();
      /* gin_dev_post_ returns the same result to the whole coop. */
      rc = gin_dev_post_(dc, 0, GIN_OP_BARRIER, w, none, 0, none, 0, 0,
                         gin_remote_signal_add(dc->nsignals + idx, 1),
                         gin_local_none(), coop);
      if (rc) return rc;
    } else if (m % cs == cr) {
      gin_add_release_u64(
          &((uint64_t *)gin_ro_ptr((void *const *)&dc->peer_bar[w]))[idx], 1);
    }
  }
  if (cr == 0 && shut) /* the arrivals may have landed; no wait */
    rc = gin_dev_shut_fail_(dc, -1);
  else if (cr == 0) /* the first thread alone polls (gin_dev_ring_drain_) */
    rc = gin_dev_wait_(dc, &dc->bar[idx], gin_dev_psig_(dc, dc->nsignals + idx),
                       epoch * (uint64_t)team.size, 64,
                       GIN_DEVERR_TIMEOUT_BARRIER, slot, -1);
  rc = gin_coop_rc(coop, rc);
  if (cr == 0) dc->bar_epoch[idx] = epoch;
  gin_coop_sync(coop);
  return rc;
}

GIN_DEVICE_FN void *gin_window_peer_ptr(const gin_devcomm_t *dc,
                                        gin_window_t win, gin_team_t team,
                                        int peer, size_t off) {
  int w = gin_team_world_rank(team, peer);
  if (w < 0 || w >= dc->nranks || win.idx >= dc->max_windows) return NULL;
  const gin_dev_window_t *dw = &dc->windows[win.idx];
  if (gin_ro_u64(&dw->state) != (GIN_DEV_WINDOW_LIVE | win.gen) ||
      off > gin_ro_u64(&dw->size))
    return NULL;
  char **base = (char **)gin_ro_ptr((void *const *)&dw->base);
  char *b = (char *)gin_ro_ptr((void *const *)&base[w]);
  return b ? b + off : NULL;
}

#endif
