/*
 * Peer watch (watch.c): the 16-byte message a watch link carries, its
 * encoder and the pure check of what arrives. Exposed for the fuzzer and
 * the unit tests; watch.c is the only other user.
 *
 * Wire (little endian): magic u32 "GINW", type u8 (BYE, DEAD, ABORT), how
 * u8 (GIN_WATCH_HOW_*), err u16 (errno), rank i32 (the dead rank; the
 * sender for BYE; the rank that aborted for ABORT), by i32 (who saw it;
 * the sender for BYE and ABORT).
 *
 * Layering: comm; includes only base/net.h.
 */
#ifndef GIN_COMM_WATCH_MSG_H
#define GIN_COMM_WATCH_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "base/net.h"

#define GIN_WATCH_MAGIC 0x47494e57u /* "GINW" */
#define GIN_WATCH_MSG_BYTES 16

enum {
  GIN_WATCH_BYE = 1,  /* the sender destroyed its communicator */
  GIN_WATCH_DEAD = 2, /* rank `rank` is gone, as rank `by` saw it */
  GIN_WATCH_ABORT = 3 /* the communicator was aborted by rank `rank` */
};
/* How a death was seen (the same values as GIN_DEATH_* of comm.h). */
enum { GIN_WATCH_HOW_CLOSED = 1, GIN_WATCH_HOW_ERROR = 2 };

typedef struct gin_watch_msg {
  int type, how, err, rank, by;
} gin_watch_msg_t;

/* Writes m as GIN_WATCH_MSG_BYTES wire bytes to p. Pure; thread safe. */
static inline void gin_watch_msg_encode(const gin_watch_msg_t *m, uint8_t *p) {
  gin_le_put32(p, GIN_WATCH_MAGIC);
  p[4] = (uint8_t)m->type;
  p[5] = (uint8_t)m->how;
  gin_le_put16(p + 6, (uint16_t)m->err);
  gin_le_put32(p + 8, (uint32_t)m->rank);
  gin_le_put32(p + 12, (uint32_t)m->by);
}

/* Checks len bytes received on the link to rank `from` in a job of
 * nranks: 0 and *out (if out is not NULL) if they are one message this
 * rank may act on, else -1 with *out untouched. A goodbye names its
 * sender twice and nothing else; a death names a rank in range other
 * than the sender and the witness, seen closed or failed; an abort names
 * the rank that aborted (any) and the sender as `by`. Pure: no I/O,
 * no logging; thread safe. Fuzzed (tests/fuzz/fuzz_watch_msg.c). */
static inline int gin_watch_msg_check(const uint8_t *p, size_t len, int nranks,
                                      int from, gin_watch_msg_t *out) {
  if (!p || len != GIN_WATCH_MSG_BYTES) return -1;
  gin_watch_msg_t m = {.type = p[4],
                       .how = p[5],
                       .err = gin_le_get16(p + 6),
                       .rank = (int32_t)gin_le_get32(p + 8),
                       .by = (int32_t)gin_le_get32(p + 12)};
  if (gin_le_get32(p) != GIN_WATCH_MAGIC || m.rank < 0 || m.rank >= nranks ||
      m.by < 0 || m.by >= nranks)
    return -1;
  if (m.type == GIN_WATCH_BYE &&
      (m.how != 0 || m.err != 0 || m.rank != from || m.by != from))
    return -1;
  if (m.type == GIN_WATCH_DEAD &&
      ((m.how != GIN_WATCH_HOW_CLOSED && m.how != GIN_WATCH_HOW_ERROR) ||
       m.rank == m.by || m.rank == from))
    return -1;
  if (m.type == GIN_WATCH_ABORT && (m.how != 0 || m.err != 0 || m.by != from))
    return -1;
  if (m.type != GIN_WATCH_BYE && m.type != GIN_WATCH_DEAD &&
      m.type != GIN_WATCH_ABORT)
    return -1;
  if (out) *out = m;
  return 0;
}

#endif
