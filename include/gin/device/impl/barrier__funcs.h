/* Bodies of gin/device/barrier.h. Internal. */
#ifndef GIN_DEVICE_IMPL_BARRIER_FUNCS_H
#define GIN_DEVICE_IMPL_BARRIER_FUNCS_H

#include "gin/device/impl/proxy__funcs.h"
#include "gin/device/impl/route__funcs.h"
#include "gin/device/put.h"

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
#endif
