/* Bodies of gin/device/team.h. Internal. */
#ifndef GIN_DEVICE_IMPL_TEAM_FUNCS_H
#define GIN_DEVICE_IMPL_TEAM_FUNCS_H

#include "gin/device/arch.h"
#include "gin/device/types.h"

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
