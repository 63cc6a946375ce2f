/*
 * Fuzzes gin_watch_msg_check, the check of the 16-byte messages a peer
 * watch link carries (src/comm/watch_msg.h): a goodbye, the news that a
 * rank died, or that the communicator was aborted.
 *
 * Input: byte 0 picks the job (nranks 1..64 from its low 6 bits), byte 1
 * the link's peer (`from`, its value modulo nranks); the rest is what the
 * link delivered. Invariants: no crash or sanitizer report; the result is
 * 0 or -1 and the same without an output; the output is written only on
 * success; an accepted message is exactly GIN_WATCH_MSG_BYTES long with
 * the magic, ranks in [0, nranks), either a goodbye naming its sender as
 * rank and witness with nothing else set, a death (how CLOSED or ERROR)
 * of a rank that is neither the sender nor the witness, or an abort
 * passed on by its sender with nothing else set; it re-encodes to the
 * same bytes.
 */
#include <string.h>

#include "comm/watch_msg.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  int nranks = 1 + (data[0] & 63);
  int from = data[1] % nranks;
  const uint8_t *msg = data + 2;
  size_t len = size - 2;

  gin_watch_msg_t m, poison;
  memset(&poison, 0xa5, sizeof poison);
  m = poison;
  int res = gin_watch_msg_check(msg, len, nranks, from, &m);
  FUZZ_ASSERT(res == 0 || res == -1);
  FUZZ_ASSERT(gin_watch_msg_check(msg, len, nranks, from, NULL) == res);
  if (res != 0) {
    FUZZ_ASSERT(memcmp(&m, &poison, sizeof m) == 0);
    return 0;
  }
  FUZZ_ASSERT(len == GIN_WATCH_MSG_BYTES);
  FUZZ_ASSERT(gin_le_get32(msg) == GIN_WATCH_MAGIC);
  FUZZ_ASSERT(m.rank >= 0 && m.rank < nranks && m.by >= 0 && m.by < nranks);
  if (m.type == GIN_WATCH_BYE) {
    FUZZ_ASSERT(m.rank == from && m.by == from && m.how == 0 && m.err == 0);
  } else if (m.type == GIN_WATCH_ABORT) {
    FUZZ_ASSERT(m.by == from && m.how == 0 && m.err == 0);
  } else {
    FUZZ_ASSERT(m.type == GIN_WATCH_DEAD);
    FUZZ_ASSERT(m.how == GIN_WATCH_HOW_CLOSED || m.how == GIN_WATCH_HOW_ERROR);
    FUZZ_ASSERT(m.rank != from && m.rank != m.by);
  }
  uint8_t again[GIN_WATCH_MSG_BYTES];
  gin_watch_msg_encode(&m, again);
  FUZZ_ASSERT(memcmp(again, msg, GIN_WATCH_MSG_BYTES) == 0);
  return 0;
}
