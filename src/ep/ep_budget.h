/*
 * How many blocks of a kernel that waits on peers the ranks sharing one
 * GPU may launch (ep_kernels.c). A block spinning on a peer keeps its SM
 * slot; if the ranks' waiting blocks filled the GPU, the kernels they wait
 * for (other ranks' sends, the proxy's copies) would never start. Pure
 * arithmetic, unit-tested (tests/ep/test_ep_budget.c).
 */
#ifndef GIN_EP_BUDGET_H
#define GIN_EP_BUDGET_H

/* Registers a block of `threads` threads takes when each uses `regs`
 * (allocated per thread in steps of 8). */
static inline long gin_ep_block_regs(int regs, int threads) {
  return (long)((regs + 7) / 8 * 8) * threads;
}

/* Blocks of a waiting kernel each of `near` ranks on one GPU may launch:
 * together at most 3/4 of the kernel's room (occ blocks per SM x sms),
 * and fewer than (m + 1) x sms, where m is the most waiting blocks an SM
 * may hold and still have room (regs_per_sm) for one block of the
 * largest kernel they wait for (send_regs registers): then some SM holds
 * at most m of them (pigeonhole) and that kernel can start there. At
 * least 1. */
static inline int gin_ep_wait_budget(int occ, long wait_regs, long send_regs,
                                     long regs_per_sm, int sms, int near) {
  long total = 3L * occ * sms / 4;
  long m = wait_regs > 0 ? (regs_per_sm - send_regs) / wait_regs : occ;
  if (m < 0) m = 0;
  long cap = (m + 1) * sms - 1;
  if (cap < total) total = cap;
  long b = total / (near > 0 ? near : 1);
  return b < 1 ? 1 : (int)b;
}

#endif
