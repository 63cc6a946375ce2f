/* Teams, peers' windows as mapped here, and the abort state. Part of the
 * device API (gin/device/gin_device.h says what every call promises). */
#ifndef GIN_DEVICE_TEAM_H
#define GIN_DEVICE_TEAM_H

#include "gin/device/arch.h"
#include "gin/device/types.h"

/* Teams: every rank (world) and the ranks this rank reaches by load/store
 * (lsa, this rank included). */
GIN_DEVICE_FN gin_team_t gin_team_world(const gin_devcomm_t *dc);
GIN_DEVICE_FN gin_team_t gin_team_lsa(const gin_devcomm_t *dc);
/* World rank of team member `peer`, -1 if peer is out of range. */
GIN_DEVICE_FN int gin_team_world_rank(gin_team_t team, int peer);

/* Pointer to team member peer's window at offset off as mapped here, or
 * NULL where it is not mapped (not a load/store peer) or out of range.
 * Stores through it are not stopped once the communicator aborted (as
 * gin's own direct writes are): a peer that died may be unmapped, so a
 * kernel that may outlive a peer asks gin_aborted() first. */
GIN_DEVICE_FN void *gin_window_peer_ptr(const gin_devcomm_t *dc,
                                        gin_window_t win, gin_team_t team,
                                        int peer, size_t off);

/* Non-zero once the communicator is aborted. */
GIN_DEVICE_FN int gin_aborted(const gin_devcomm_t *dc);

#include "gin/device/impl/team__funcs.h"

#endif
