/*
 * The waiting-block budget of the EP kernels (src/ep/ep_budget.h) for the
 * H200's figures: 132 SMs, 65536 registers each, 256-thread blocks;
 * dispatch receive 74 registers a thread (3 blocks an SM), combine
 * receive 40 (6), the largest send kernel 76.
 */
#define UNIT_CHECK_NO_GIN
#include "ep/ep_budget.h"
#include "unit_check.h"

int main(void) {
  long recv = gin_ep_block_regs(74, 256), crecv = gin_ep_block_regs(40, 256);
  long send = gin_ep_block_regs(76, 256);
  CHECK(recv == 20480 && send == 20480 && crecv == 10240, "block registers");
  /* 3/4 of the room binds: 297 blocks in all (an SM keeps >= 24576
   * registers free, room for a send block). */
  CHECK(gin_ep_wait_budget(3, recv, send, 65536, 132, 8) == 37, "8 ranks");
  CHECK(gin_ep_wait_budget(3, recv, send, 65536, 132, 4) == 74, "4 ranks");
  CHECK(gin_ep_wait_budget(3, recv, send, 65536, 132, 1) == 297, "1 rank");
  CHECK(gin_ep_wait_budget(6, crecv, send, 65536, 132, 8) == 74, "combine");
  /* A send kernel of 192 registers a thread (49152 a block) fits only
   * beside no receive block: fewer blocks than SMs in all. */
  long big = gin_ep_block_regs(192, 256);
  CHECK(gin_ep_wait_budget(3, recv, big, 65536, 132, 8) == 16,
        "big sender, 8 ranks: %d",
        gin_ep_wait_budget(3, recv, big, 65536, 132, 8));
  CHECK(gin_ep_wait_budget(3, recv, big, 65536, 132, 1) == 131,
        "big sender, 1 rank");
  /* Never 0, even when nothing fits. */
  CHECK(gin_ep_wait_budget(1, 65536, 65536, 65536, 2, 64) == 1, "at least 1");
  return failures ? 1 : 0;
}
