/*
 * What the transports that carry operations as messages (tcp, ofi) share
 * beyond the wire format of tcp.h: the header of an operation to send,
 * the xfer an operation partly queued was, and applying a received
 * operation's payload and signal on this rank.
 *
 * Layering: transport; uses arch (copies, the atomic add) and the window
 * table of job.h.
 */
#ifndef GIN_TRANSPORT_WIRE_H
#define GIN_TRANSPORT_WIRE_H

#include "transport/tcp.h"
#include "transport/transport.h"

/* The header of x's chunk [done, done + chunk): the destination's and
 * signal window's generations as this rank has them, the signal on the
 * last chunk only. */
void gin_wire_header(const gin_job_t *job, const gin_xfer_t *x, uint64_t done,
                     uint64_t chunk, int last, gin_tcp_hdr_t *h);

/* Whether a and b are the same operation (a put partly queued is resumed
 * only with itself). */
int gin_wire_xfer_same(const gin_xfer_t *a, const gin_xfer_t *b);

/* The CPU view of a checked header's destination (host memory: the host
 * target, or a window of the host kind), or NULL where only gin_arch_copy
 * reaches it (device memory). */
char *gin_wire_cpu_dst(const gin_job_t *job, const gin_tcp_hdr_t *h);

/* Applies a checked header's signal, if it has one: or-s its mode word,
 * then adds to the signal (the CPU view of the signal window: host memory
 * on both targets). */
gin_result_t gin_wire_signal(const gin_job_t *job, const gin_tcp_hdr_t *h);

/* An operation to this rank itself (GIN_BACKEND=proxy): applied at once,
 * in order, like a received one; the proxy checked it against the table. */
gin_result_t gin_wire_self_put(const gin_job_t *job, const gin_xfer_t *x);

#endif
