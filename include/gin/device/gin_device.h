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
 * The calls, by feature, each header with its bodies in
 * impl/<feature>__funcs.h: teams and peers' windows (team.h), puts and
 * signals to peers (put.h), this rank's signals (signal.h) and counters
 * (counter.h), barriers (barrier.h), errors a kernel finds (error.h); the
 * target glue under them
 * (arch.h: coop.h, atomics.h, copy.h, launch.h) and the types (types.h).
 */
#ifndef GIN_DEVICE_H
#define GIN_DEVICE_H

#include "gin/device/arch.h"
#include "gin/device/barrier.h"
#include "gin/device/counter.h"
#include "gin/device/error.h"
#include "gin/device/put.h"
#include "gin/device/signal.h"
#include "gin/device/team.h"
#include "gin/device/types.h"

#endif
