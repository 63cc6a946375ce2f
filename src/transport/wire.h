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

#include <pthread.h>

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

/* The bytes operation x carries: a put's source, a value put's low bytes
 * (x->value, as ipc copies them), none for a signal. GIN_ERR_INTERNAL,
 * naming the transport `who`, for any other operation. */
gin_result_t gin_wire_payload(const gin_xfer_t *x, const char *who,
                              const char **src, uint64_t *total);

/* An operation to one peer that its transport has partly queued (it
 * returned GIN_ERR_AGAIN): the proxy thread that started it resumes it
 * with the same operation; other threads' operations to that peer (other
 * contexts, not ordered with it) wait until it is done. */
typedef struct gin_wire_partial {
  int active;
  pthread_t owner;
  gin_xfer_t x;
  uint64_t done; /* bytes of it queued */
} gin_wire_partial_t;

/* Where x starts on this peer: *done 0 for a new operation, or where the
 * calling thread's partly queued x stopped. GIN_ERR_AGAIN while another
 * thread's operation is partly queued; GIN_ERR_INTERNAL (naming `who` and
 * rank `peer`) for a different operation from the thread that started
 * one. */
gin_result_t gin_wire_partial_resume(const gin_wire_partial_t *p,
                                     const gin_xfer_t *x, const char *who,
                                     int peer, uint64_t *done);

/* Records x as partly queued up to `done` by this thread (or, with done
 * 0, nothing queued: no operation pending). */
void gin_wire_partial_save(gin_wire_partial_t *p, const gin_xfer_t *x,
                           uint64_t done);

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
