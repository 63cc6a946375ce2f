/* One-sided puts, value puts and signals, with the actions they carry,
 * and flush. Part of the device API (gin/device/gin_device.h says what
 * every call promises). */
#ifndef GIN_DEVICE_PUT_H
#define GIN_DEVICE_PUT_H

#include "gin/device/arch.h"
#include "gin/device/impl/put__types.h"
#include "gin/device/types.h"

GIN_HD_FN gin_remote_t gin_remote_none(void);
GIN_HD_FN gin_remote_t gin_remote_signal_inc(int signal);
GIN_HD_FN gin_remote_t gin_remote_signal_add(int signal, uint64_t value);
GIN_HD_FN gin_local_t gin_local_none(void);
GIN_HD_FN gin_local_t gin_local_counter_inc(int counter);

/* How this rank reaches team member `peer`: GIN_PATH_SELF, GIN_PATH_DIRECT
 * (its windows are mapped here: gin_window_peer_ptr gives them),
 * GIN_PATH_PROXY, or GIN_PATH_NONE (not reachable, or peer out of the
 * team). */
GIN_DEVICE_FN int gin_peer_path(const gin_devcomm_t *dc, gin_team_t team,
                                int peer);

/* The write gate, for kernels that store into peers' windows themselves
 * (through gin_window_peer_ptr), as gin's direct calls do: non-zero once
 * direct writes must stop because the communicator aborted (a peer may be
 * gone and its memory unmapped). One cached load, cheaper than
 * gin_aborted: read it before the stores (every thread of a coop, which
 * then agrees with gin_coop_any) and, where it is set, store nothing and
 * return gin_peer_write_refused(dc, world_rank): it records the refusal
 * (GIN_ERR_ABORTED, naming the peer) and returns GIN_ERR_ABORTED. */
GIN_DEVICE_FN int gin_peer_writes_stopped(const gin_devcomm_t *dc);
GIN_DEVICE_FN int gin_peer_write_refused(const gin_devcomm_t *dc,
                                         int world_rank);

/* Copies `bytes` from this rank's window `src` at src_off to team member
 * `peer`'s window `dst` at dst_off, then performs `remote` at the peer and
 * `local` here. Offsets are the same on every rank (windows are
 * symmetric). The source may be reused once gin_flush returns, or once the
 * local counter has counted this put. */
GIN_DEVICE_FN int gin_put(const gin_devcomm_t *dc, int ctx, gin_team_t team,
                          int peer, gin_window_t dst, size_t dst_off,
                          gin_window_t src, size_t src_off, size_t bytes,
                          gin_remote_t remote, gin_local_t local,
                          gin_coop_t coop);

/* Writes the low `bytes` (1..8) bytes of `value` into peer's window at
 * dst_off, then performs `remote`. The value is taken immediately. */
GIN_DEVICE_FN int gin_put_value(const gin_devcomm_t *dc, int ctx,
                                gin_team_t team, int peer, gin_window_t dst,
                                size_t dst_off, uint64_t value, int bytes,
                                gin_remote_t remote, gin_coop_t coop);

/* Performs `remote` at peer alone, ordered after earlier puts on ctx. */
GIN_DEVICE_FN int gin_signal(const gin_devcomm_t *dc, int ctx, gin_team_t team,
                             int peer, gin_remote_t remote, gin_coop_t coop);

/* Returns once the sources of every put this coop issued on ctx are
 * reusable. This is not remote completion. An operation the proxy
 * refuses or cannot deliver is consumed all the same (dropped; its
 * source is not read again): the proxy publishes that before it aborts
 * the communicator with its reason, so a flush waiting for it returns
 * GIN_SUCCESS. */
GIN_DEVICE_FN int gin_flush(const gin_devcomm_t *dc, int ctx, gin_coop_t coop);

#include "gin/device/impl/put__funcs.h"

#endif
