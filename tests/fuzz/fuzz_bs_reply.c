/*
 * Fuzzes gin_bs_reply_check and gin_bs_table_check, the checks of what a
 * rank receives from the bootstrap root after its hello: the 24-byte reply
 * (OK, TIMEOUT or REFUSED) and, after OK, the table of every rank's listen
 * address (20 bytes a rank).
 *
 * Input: byte 0 picks the job (nranks 1..8 from its low 3 bits), the mode
 * (bit 3 set: the rest is one reply of any length; clear: the rest is the
 * stream the root sends, the first 24 bytes the reply and, if it is an OK,
 * everything after it the table) and the `why` buffer (bits 4..6: none,
 * or a heap buffer of 1..7 * 9 bytes so ASan sees any overrun); byte 1 the
 * receiving rank (self = its low 3 bits modulo nranks) and the listen
 * address it sent (bits 3..4: one of own_addrs). The checked part always
 * ends where libFuzzer's input buffer (a heap copy of exactly its size)
 * ends, so ASan sees any read past it; the table is decoded into a heap
 * array of exactly nranks entries, so it sees any write past that too.
 * Invariants: no crash or sanitizer report; results are only GIN_SUCCESS
 * or GIN_ERR_PROTOCOL, the same without outputs; why is NUL-terminated on
 * failure; outputs are written only on success; an accepted reply is
 * GIN_BS_REPLY_BYTES long with the magic and a known status, an OK one for
 * a job of nranks, and re-encodes to the same bytes; an accepted table is
 * nranks * GIN_BS_ENTRY_BYTES long, every entry AF_INET or AF_INET6 with a
 * port (0 only when nranks is 1), self's entry with the sent port and
 * address, and re-encodes to the same bytes.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "comm/bootstrap.h"
#include "fuzz_common.h"

/* The listen address the receiving rank sent in its hello (port 0: a job
 * of one rank, which does not listen). */
static const gin_net_addr_t own_addrs[4] = {
    {AF_INET, 5000, {127, 0, 0, 1}},
    {AF_INET6, 5001, {[15] = 1}},
    {AF_INET, 65535, {10, 1, 2, 3}},
    {AF_INET, 0, {127, 0, 0, 1}},
};

/* Checks the table tab[0, len) for rank self of nranks that sent own. */
static void table_fuzz(const uint8_t *tab, size_t len, int nranks, int self,
                       const gin_net_addr_t *own, char *why, size_t why_len) {
  size_t asz = (size_t)nranks * sizeof(gin_net_addr_t);
  gin_net_addr_t *addrs = malloc(asz);
  if (!addrs) return;
  memset(addrs, 0xa5, asz);
  gin_result_t res =
      gin_bs_table_check(tab, len, nranks, self, own, why, why_len, addrs);
  FUZZ_ASSERT(res == GIN_SUCCESS || res == GIN_ERR_PROTOCOL);
  FUZZ_ASSERT(gin_bs_table_check(tab, len, nranks, self, own, NULL, 0, NULL) ==
              res);
  if (res != GIN_SUCCESS) {
    fuzz_check_why(why, why_len);
    for (size_t i = 0; i < asz; i++)
      FUZZ_ASSERT(((const uint8_t *)addrs)[i] == 0xa5);
    free(addrs);
    return;
  }
  FUZZ_ASSERT(len == (size_t)nranks * GIN_BS_ENTRY_BYTES);
  for (int r = 0; r < nranks; r++) {
    FUZZ_ASSERT(addrs[r].family == AF_INET || addrs[r].family == AF_INET6);
    FUZZ_ASSERT(addrs[r].port != 0 || nranks == 1);
  }
  FUZZ_ASSERT(addrs[self].port == own->port &&
              memcmp(addrs[self].addr, own->addr, 16) == 0);
  uint8_t again[8 * GIN_BS_ENTRY_BYTES];
  gin_bs_table_encode(addrs, nranks, again);
  FUZZ_ASSERT(memcmp(again, tab, len) == 0);
  free(addrs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  int nranks = 1 + (data[0] & 7);
  int whole = (data[0] >> 3) & 1;
  size_t why_len = (size_t)((data[0] >> 4) & 7) * 9;
  int self = (data[1] & 7) % nranks;
  const gin_net_addr_t *own = &own_addrs[(data[1] >> 3) & 3];
  char *why = why_len ? malloc(why_len) : NULL;
  if (why_len && !why) return 0;
  const uint8_t *msg = data + 2;
  size_t len = size - 2;
  size_t rlen = whole || len < GIN_BS_REPLY_BYTES ? len : GIN_BS_REPLY_BYTES;

  gin_bs_reply_t r, poison;
  memset(&poison, 0xa5, sizeof poison);
  r = poison;
  gin_result_t res = gin_bs_reply_check(msg, rlen, nranks, why, why_len, &r);
  FUZZ_ASSERT(res == GIN_SUCCESS || res == GIN_ERR_PROTOCOL);
  FUZZ_ASSERT(gin_bs_reply_check(msg, rlen, nranks, NULL, 0, NULL) == res);
  if (res != GIN_SUCCESS) {
    fuzz_check_why(why, why_len);
    free(why);
    FUZZ_ASSERT(memcmp(&r, &poison, sizeof r) == 0);
    return 0;
  }
  FUZZ_ASSERT(rlen == GIN_BS_REPLY_BYTES);
  FUZZ_ASSERT(gin_le_get32(msg) == GIN_BS_MAGIC);
  FUZZ_ASSERT(r.status == GIN_BS_STATUS_OK ||
              r.status == GIN_BS_STATUS_TIMEOUT ||
              r.status == GIN_BS_STATUS_REFUSED);
  FUZZ_ASSERT(r.status != GIN_BS_STATUS_OK || r.nranks == nranks);
  uint8_t again[GIN_BS_REPLY_BYTES];
  gin_bs_reply_encode(&r, again);
  FUZZ_ASSERT(memcmp(again, msg, GIN_BS_REPLY_BYTES) == 0);
  if (!whole && r.status == GIN_BS_STATUS_OK)
    table_fuzz(msg + rlen, len - rlen, nranks, self, own, why, why_len);
  free(why);
  return 0;
}
