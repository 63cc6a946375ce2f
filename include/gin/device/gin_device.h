/*
 * gin device API: one-sided communication issued from kernels.
 *
 * Written once for both targets (include/gin/device/arch.h). Every function
 * takes the device communicator (a kernel argument, by pointer), a context
 * index where the ordering promise is per context, a team and a peer index
 * within that team, and the cooperative group issuing the call: every
 * thread of the coop calls with the same arguments.
 *
 * Ordering promise: a signal becomes visible at the peer only after the
 * payload of its put and of every earlier put on the same context to the
 * same peer. Nothing else is ordered unless gin_flush or gin_barrier says
 * so.
 *
 * Return values: GIN_SUCCESS, or a negative gin_result_t. A failing call
 * records what went wrong (kind, rank, peer, id, values) in the rank's
 * control page, marks the communicator aborted (this rank and its
 * load/store peers), and writes nothing; the host learns the details from
 * gin_comm_get_async_error.
 *
 * Waits (gin_signal_wait and the other *_wait calls, gin_flush, gin_barrier,
 * a put waiting for a free ring slot): bounded by GIN_TIMEOUT_MS
 * (GIN_ERR_TIMEOUT), and GIN_ERR_ABORTED soon after the communicator is
 * aborted (on the host target within a scheduler slice or two once the
 * waiter yields its core). A condition met wins: a wait that sees what it
 * waited for returns GIN_SUCCESS even on an aborted communicator, as a
 * call that completed does (what it waited for did happen; the abort is
 * the communicator's, reported by gin_comm_get_async_error and every later
 * host call); after seeing the abort or the deadline it reads its
 * condition once more, so only a wait still short then fails. A kernel
 * whose waits keep succeeding asks gin_aborted() to stop early.
 *
 * Argument checks (peer, window, offsets, signal/counter ids, context) are
 * on by default; build with -DGIN_DEVICE_CHECKS=OFF to compile them out.
 *
 * Declarations first; bodies live in impl/.
 */
#ifndef GIN_DEVICE_H
#define GIN_DEVICE_H

#include "gin/device/arch.h"
#include "gin/device/types.h"

/* A signal is used either with INC or with ADD between two resets. Each
 * update marks its kind at the target (checks builds): the direct update
 * that finds the other kind marked fails with GIN_ERR_INVALID at its
 * sender (once it is out); where proxied updates are marked, a wait on a
 * signal that saw both kinds fails at the target. */
typedef struct gin_remote {
  int kind;
  int signal;
  uint64_t value;
} gin_remote_t;

typedef struct gin_local {
  int kind;
  int counter;
} gin_local_t;

GIN_HD_FN gin_remote_t gin_remote_none(void);
GIN_HD_FN gin_remote_t gin_remote_signal_inc(int signal);
GIN_HD_FN gin_remote_t gin_remote_signal_add(int signal, uint64_t value);
GIN_HD_FN gin_local_t gin_local_none(void);
GIN_HD_FN gin_local_t gin_local_counter_inc(int counter);

/* Teams: every rank (world) and the ranks this rank reaches by load/store
 * (lsa, this rank included). */
GIN_DEVICE_FN gin_team_t gin_team_world(const gin_devcomm_t *dc);
GIN_DEVICE_FN gin_team_t gin_team_lsa(const gin_devcomm_t *dc);
/* World rank of team member `peer`, -1 if peer is out of range. */
GIN_DEVICE_FN int gin_team_world_rank(gin_team_t team, int peer);

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

/* Signals (this rank's): read, bounded wait until value >= least (rolling
 * 64-bit comparison: wrap-safe within 2^63), reset to 0 (no update may be
 * in flight). */
GIN_DEVICE_FN uint64_t gin_signal_read(const gin_devcomm_t *dc, int signal);
GIN_DEVICE_FN int gin_signal_wait(const gin_devcomm_t *dc, int signal,
                                  uint64_t least, gin_coop_t coop);
GIN_DEVICE_FN int gin_signal_reset(const gin_devcomm_t *dc, int signal,
                                   gin_coop_t coop);

/* Shadows: a per-signal local expectation. add raises it; wait_meet waits
 * until the signal reaches it; wait_follow waits until the signal is at
 * least shadow + least_delta, then sets the shadow to the value seen and
 * returns the old shadow in *before and the growth in *delta. */
GIN_DEVICE_FN uint64_t gin_signal_shadow(const gin_devcomm_t *dc, int signal);
GIN_DEVICE_FN int gin_signal_shadow_add(const gin_devcomm_t *dc, int signal,
                                        uint64_t delta, gin_coop_t coop);
GIN_DEVICE_FN int gin_signal_wait_meet_shadow(const gin_devcomm_t *dc,
                                              int signal, gin_coop_t coop);
GIN_DEVICE_FN int
gin_signal_wait_follow_shadow(const gin_devcomm_t *dc, int signal,
                              uint64_t least_delta, uint64_t *before,
                              uint64_t *delta, gin_coop_t coop);

/* Counters (56-bit, local): read, bounded wait until value >= least
 * (rolling 56-bit comparison), reset to 0, set (to resume a count). */
GIN_DEVICE_FN uint64_t gin_counter_read(const gin_devcomm_t *dc, int counter);
GIN_DEVICE_FN int gin_counter_wait(const gin_devcomm_t *dc, int counter,
                                   uint64_t least, gin_coop_t coop);
GIN_DEVICE_FN int gin_counter_reset(const gin_devcomm_t *dc, int counter,
                                    gin_coop_t coop);
GIN_DEVICE_FN int gin_counter_set(const gin_devcomm_t *dc, int counter,
                                  uint64_t value, gin_coop_t coop);

/* Barrier over a team using barrier slot `slot` (0..nbarriers-1): returns
 * once every member has arrived. After it, every put a member issued to
 * this rank before its arrival has landed here (on every path), and every
 * direct-path write issued before the barrier is visible to all members. A
 * proxied put from A to B is not promised to be visible to a third member
 * reading B's window through a mapping. One coop at a time per (team,
 * slot). */
GIN_DEVICE_FN int gin_barrier(const gin_devcomm_t *dc, gin_team_t team,
                              int slot, gin_coop_t coop);

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

#include "gin/device/impl/check.h"
#include "gin/device/impl/ops.h"

#endif
