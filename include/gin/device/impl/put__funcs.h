/* Bodies of gin/device/put.h: the actions a put carries, and the puts.
 * Internal. */
#ifndef GIN_DEVICE_IMPL_PUT_FUNCS_H
#define GIN_DEVICE_IMPL_PUT_FUNCS_H

#include "gin/device/impl/proxy__funcs.h"
#include "gin/device/impl/route__funcs.h"

GIN_DEVICE_FN int gin_peer_path(const gin_devcomm_t *dc, gin_team_t team,
                                int peer) {
  int w = gin_team_world_rank(team, peer);
  if (w < 0 || w >= dc->nranks) return GIN_PATH_NONE;
  return gin_dev_path_(dc, w);
}

GIN_DEVICE_FN int gin_peer_writes_stopped(const gin_devcomm_t *dc) {
  return gin_dev_shut_(dc);
}
GIN_DEVICE_FN int gin_peer_write_refused(const gin_devcomm_t *dc,
                                         int world_rank) {
  return gin_dev_shut_fail_(dc, world_rank);
}

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
#endif
