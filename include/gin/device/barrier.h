/* Barriers over a team. Part of the device API (gin/device/gin_device.h
 * says what every call promises). */
#ifndef GIN_DEVICE_BARRIER_H
#define GIN_DEVICE_BARRIER_H

#include "gin/device/arch.h"
#include "gin/device/team.h"
#include "gin/device/types.h"

/* Barrier over a team using barrier slot `slot` (0..nbarriers-1): returns
 * once every member has arrived. After it, every put a member issued to
 * this rank before its arrival has landed here (on every path), and every
 * direct-path write issued before the barrier is visible to all members. A
 * proxied put from A to B is not promised to be visible to a third member
 * reading B's window through a mapping. One coop at a time per (team,
 * slot). */
GIN_DEVICE_FN int gin_barrier(const gin_devcomm_t *dc, gin_team_t team,
                              int slot, gin_coop_t coop);

#include "gin/device/impl/barrier__funcs.h"

#endif
