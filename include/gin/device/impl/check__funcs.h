/* Device-side error recording and argument checks. Internal. */
#ifndef GIN_DEVICE_IMPL_CHECK_FUNCS_H
#define GIN_DEVICE_IMPL_CHECK_FUNCS_H

#include "gin/device/arch.h"
#include "gin/device/impl/put__types.h"
#include "gin/device/team.h"
#include "gin/device/types.h"

/* On unless the program is compiled with GIN_DEVICE_CHECKS defined to 0
 * or OFF (-DGIN_DEVICE_CHECKS=0; CMake: -DGIN_DEVICE_CHECKS=OFF): a
 * program built with any compile line gets the checks. Defined empty, 1,
 * ON or anything else: on. (The value is pasted onto a name, so that an
 * identifier such as ON is not read as 0 by #if.) */
#define GIN_DEV_CHECKS_OFF_0 1
#define GIN_DEV_CHECKS_OFF_OFF 1
#define GIN_DEV_CHECKS_CAT_(a, b) a##b
#define GIN_DEV_CHECKS_OFF_(v) GIN_DEV_CHECKS_CAT_(GIN_DEV_CHECKS_OFF_, v)
#if defined(GIN_DEVICE_CHECKS) && GIN_DEV_CHECKS_OFF_(GIN_DEVICE_CHECKS)
#define GIN_DEV_CHECKS_ON 0
#else
#define GIN_DEV_CHECKS_ON 1
#endif

/* Records the first error of rank `rank` in its control page (later ones
 * are dropped) and, unless the error is the abort itself, aborts: this
 * rank's gate shut, its abort word and every load/store peer's set to
 * 1 + rank, so their waits stop instead of timing out. Out of line, with
 * the devcomm's fields by value: a kernel parameter's address passed to
 * a call would make the kernel copy its parameters to local memory. */
GIN_COLD_FN void gin_dev_record_(gin_ctrl_t *ctrl, gin_ctrl_t *const *peer_ctrl,
                                 uint32_t *gate, int rank, int nranks, int kind,
                                 int64_t peer, int64_t id, uint64_t expected,
                                 uint64_t seen, uint64_t a0, uint64_t a1) {
  gin_dev_error_t *e = &ctrl->err;
  if (gin_cas_u32(&e->claimed, 0, 1) == 0) {
    e->kind = kind;
    e->rank = rank;
    e->peer = peer;
    e->id = id;
    e->expected = expected;
    e->seen = seen;
    e->arg0 = a0;
    e->arg1 = a1;
    gin_fence_system();
    gin_store_release_u32(&e->ready, 1);
  }
  if (kind == GIN_DEVERR_ABORTED) return;
  uint32_t who = (uint32_t)rank + 1;
  gin_cas_u32(gate, 0, 1); /* this rank's direct writes stop at once */
  gin_cas_u32((uint32_t *)&ctrl->abort, 0, who);
  for (int r = 0; r < nranks; r++) {
    gin_ctrl_t *pc = peer_ctrl[r];
    if (pc && r != rank) gin_cas_u32((uint32_t *)&pc->abort, 0, who);
  }
}
/* Records the first error of this rank, aborts (gin_dev_record_), and
 * returns `code`. */
GIN_DEVICE_FN int gin_dev_fail_(const gin_devcomm_t *dc, int code, int kind,
                                int64_t peer, int64_t id, uint64_t expected,
                                uint64_t seen, uint64_t a0, uint64_t a1) {
  gin_dev_record_(dc->ctrl, dc->peer_ctrl, dc->gate, dc->rank, dc->nranks, kind,
                  peer, id, expected, seen, a0, a1);
  return code;
}
GIN_DEVICE_FN int gin_dev_bad_(const gin_devcomm_t *dc, int kind, int64_t peer,
                               int64_t id, uint64_t a0, uint64_t a1) {
  return gin_dev_fail_(dc, GIN_ERR_INVALID, kind, peer, id, 0, 0, a0, a1);
}
/* Resolves team member `peer` to a world rank, checking it. */
GIN_DEVICE_FN int gin_dev_peer_(const gin_devcomm_t *dc, gin_team_t team,
                                int peer, int *world) {
  int w = gin_team_world_rank(team, peer);
  if (GIN_DEV_CHECKS_ON && (w < 0 || w >= dc->nranks))
    return gin_dev_bad_(dc, GIN_DEVERR_BAD_PEER, peer, team.id,
                        (uint64_t)team.size, 0);
  *world = w;
  return GIN_SUCCESS;
}
/* Window handle w's index lies inside the table: a compare with the
 * devcomm's limit (a kernel parameter), no load. */
GIN_DEVICE_FN int gin_dev_window_idx_(const gin_devcomm_t *dc, gin_window_t w,
                                      int64_t peer) {
  if (GIN_DEV_CHECKS_ON && w.idx >= dc->max_windows)
    return gin_dev_bad_(dc, GIN_DEVERR_BAD_WINDOW, peer, w.idx, w.gen, 0);
  return GIN_SUCCESS;
}
/* Whether handle w's slot no longer holds it (retired, or reused at
 * another generation): one load of the slot's state, the one check that
 * loads (gin_dev_window_idx_ first). A plain load (the L1 path): through
 * the non-coherent path (ld.global.nc) the check cost an 8-byte round
 * trip 0.2-0.3 us more (docs/PERFORMANCE.md, "Design figures"). The slot
 * changes only while no kernel may use it. */
GIN_DEVICE_FN int gin_dev_window_dead_(const gin_devcomm_t *dc,
                                       gin_window_t w) {
  return dc->windows[w.idx].state != (GIN_DEV_WINDOW_LIVE | w.gen);
}
/* Window handle w is still registered, at its generation. A put issues
 * the load beside its source's and acts on it before it writes anything,
 * so the check adds no wait on the way: a handle whose window was
 * deregistered fails before any write, though its source was read (from
 * the handle's own base; where that memory was freed too, the read may
 * fault first, as any read of freed memory). */
GIN_DEVICE_FN int gin_dev_window_live_(const gin_devcomm_t *dc, gin_window_t w,
                                       int64_t peer) {
  if (!GIN_DEV_CHECKS_ON || !gin_dev_window_dead_(dc, w)) return GIN_SUCCESS;
  return gin_dev_bad_(dc, GIN_DEVERR_BAD_WINDOW, peer, w.idx, w.gen,
                      (uint32_t)gin_ro_u64(&dc->windows[w.idx].state));
}
/* A put's two windows still registered (destination at rank w, source
 * here), checked one by one to name the failure. */
GIN_DEVICE_FN int gin_dev_windows_live_(const gin_devcomm_t *dc, int w,
                                        gin_window_t dst, gin_window_t src) {
  int rc = gin_dev_window_live_(dc, dst, w);
  return rc ? rc : gin_dev_window_live_(dc, src, dc->rank);
}
/* [off, off+bytes) must lie inside the window (overflow-safe), by the
 * size the handle holds (a live handle's is its slot's). */
GIN_DEVICE_FN int gin_dev_range_(const gin_devcomm_t *dc, gin_window_t w,
                                 int64_t peer, size_t off, size_t bytes) {
  if (GIN_DEV_CHECKS_ON && (off > w.size || bytes > w.size - off))
    return gin_dev_bad_(dc, GIN_DEVERR_BAD_RANGE, peer, w.idx, off, bytes);
  return GIN_SUCCESS;
}
GIN_DEVICE_FN int gin_dev_ctx_(const gin_devcomm_t *dc, int ctx) {
  if (GIN_DEV_CHECKS_ON && (ctx < 0 || ctx >= dc->nctx))
    return gin_dev_bad_(dc, GIN_DEVERR_BAD_CONTEXT, -1, ctx, dc->nctx, 0);
  return GIN_SUCCESS;
}
GIN_DEVICE_FN int gin_dev_signal_id_(const gin_devcomm_t *dc, int64_t peer,
                                     int s) {
  if (GIN_DEV_CHECKS_ON && (s < 0 || s >= dc->nsignals))
    return gin_dev_bad_(dc, GIN_DEVERR_BAD_SIGNAL, peer, s, dc->nsignals, 0);
  return GIN_SUCCESS;
}
GIN_DEVICE_FN int gin_dev_counter_id_(const gin_devcomm_t *dc, int c) {
  if (GIN_DEV_CHECKS_ON && (c < 0 || c >= dc->ncounters))
    return gin_dev_bad_(dc, GIN_DEVERR_BAD_COUNTER, -1, c, dc->ncounters, 0);
  return GIN_SUCCESS;
}
GIN_DEVICE_FN int gin_dev_actions_(const gin_devcomm_t *dc, int64_t peer,
                                   gin_remote_t remote, gin_local_t local) {
  if (remote.kind != GIN_REMOTE_NONE) {
    if (GIN_DEV_CHECKS_ON && remote.kind != GIN_REMOTE_SIGNAL_INC &&
        remote.kind != GIN_REMOTE_SIGNAL_ADD)
      return gin_dev_bad_(dc, GIN_DEVERR_BAD_SIGNAL, peer, remote.signal,
                          (uint64_t)remote.kind, 1);
    int rc = gin_dev_signal_id_(dc, peer, remote.signal);
    if (rc) return rc;
  }
  if (local.kind != GIN_LOCAL_NONE) {
    if (GIN_DEV_CHECKS_ON && local.kind != GIN_LOCAL_COUNTER_INC)
      return gin_dev_bad_(dc, GIN_DEVERR_BAD_COUNTER, -1, local.counter,
                          (uint64_t)local.kind, 1);
    return gin_dev_counter_id_(dc, local.counter);
  }
  return GIN_SUCCESS;
}
/* gin_dev_actions_'s test as one predicate (no short-circuit): nonzero
 * where it would fail. */
GIN_DEVICE_FN int gin_dev_actions_bad_(const gin_devcomm_t *dc,
                                       gin_remote_t remote, gin_local_t local) {
  int rk = remote.kind, lk = local.kind;
  int rbad = ((rk != GIN_REMOTE_SIGNAL_INC) & (rk != GIN_REMOTE_SIGNAL_ADD)) |
             ((unsigned)remote.signal >= (unsigned)dc->nsignals);
  int lbad = (lk != GIN_LOCAL_COUNTER_INC) |
             ((unsigned)local.counter >= (unsigned)dc->ncounters);
  return ((rk != GIN_REMOTE_NONE) & rbad) | ((lk != GIN_LOCAL_NONE) & lbad);
}
/* A put's checks that need no load (context, peer, both windows' indices
 * and ranges, actions), in the order that names the first failure. */
GIN_DEVICE_FN int gin_dev_put_args_(const gin_devcomm_t *dc, int ctx,
                                    gin_team_t team, int peer, gin_window_t dst,
                                    size_t dst_off, gin_window_t src,
                                    size_t src_off, size_t bytes,
                                    gin_remote_t remote, gin_local_t local) {
  int w = 0, rc;
  if ((rc = gin_dev_ctx_(dc, ctx)) ||
      (rc = gin_dev_peer_(dc, team, peer, &w)) ||
      (rc = gin_dev_window_idx_(dc, dst, w)) ||
      (rc = gin_dev_window_idx_(dc, src, dc->rank)) ||
      (rc = gin_dev_range_(dc, dst, w, dst_off, bytes)) ||
      (rc = gin_dev_range_(dc, src, dc->rank, src_off, bytes)))
    return rc;
  return gin_dev_actions_(dc, w, remote, local);
}
/* gin_dev_put_args_ as one predicate of compares joined without
 * short-circuits (world rank w resolved from the team): a valid call pays
 * the compares and one branch, where the chain of checks pays a branch
 * and its reconvergence each; a failing one runs the chain to name the
 * first failure (docs/PERFORMANCE.md, "Design figures"). */
GIN_DEVICE_FN int gin_dev_put_bad_(const gin_devcomm_t *dc, int ctx, int w,
                                   gin_window_t dst, size_t dst_off,
                                   gin_window_t src, size_t src_off,
                                   size_t bytes, gin_remote_t remote,
                                   gin_local_t local) {
  return ((unsigned)ctx >= (unsigned)dc->nctx) |
         ((unsigned)w >= (unsigned)dc->nranks) | (dst.idx >= dc->max_windows) |
         (src.idx >= dc->max_windows) | (dst_off > dst.size) |
         (bytes > dst.size - dst_off) | (src_off > src.size) |
         (bytes > src.size - src_off) | gin_dev_actions_bad_(dc, remote, local);
}
#endif
