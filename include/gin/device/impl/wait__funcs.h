/* Bounded waits on a value in device memory plus an optional part the
 * proxy updates in host memory (signals, counters, barriers, ring
 * indices). Internal. */
#ifndef GIN_DEVICE_IMPL_WAIT_FUNCS_H
#define GIN_DEVICE_IMPL_WAIT_FUNCS_H

#include "gin/device/impl/check__funcs.h"

/* Rolling comparison: v is at or past `least` in a counter of `bits` bits
 * that may wrap (correct while the two are less than 2^(bits-1) apart). */
GIN_HD_FN int gin_rolling_ge(uint64_t v, uint64_t least, int bits) {
  return (int64_t)((v - least) << (64 - bits)) >= 0;
}
/* Reads a value split into a part in device memory and an optional part
 * the proxy updates in host memory. */
GIN_DEVICE_FN uint64_t gin_dev_read2_(const uint64_t *p, const uint64_t *q) {
  uint64_t v = gin_load_acquire_u64(p);
  if (q) v += gin_load_acquire_u64(q);
  return v;
}
/* The same without ordering (the polls of a wait after its first). */
GIN_DEVICE_FN uint64_t gin_dev_peek2_(const uint64_t *p, const uint64_t *q) {
  uint64_t v = gin_load_relaxed_u64(p);
  if (q) v += gin_load_relaxed_u64(q);
  return v;
}
/* Bounded wait until *p (+ *q where q is not NULL) reaches `least` under a
 * rolling comparison of `bits` bits. A condition met wins: GIN_SUCCESS
 * once the value is seen there, also on an aborted communicator; the
 * abort (GIN_ERR_ABORTED) and the timeout end the wait only if the value
 * read after them is still short (gin_device.h, "Waits"). */
GIN_DEVICE_FN int gin_dev_wait_(const gin_devcomm_t *dc, const uint64_t *p,
                                const uint64_t *q, uint64_t least, int bits,
                                int kind, int64_t id, int64_t peer) {
  uint64_t t0 = 0;
  uint32_t iter = 0;
  if (!q) {
    /* The direct path's case (no proxy part): the polls up to the first
     * one due for the checks below in a loop of a few instructions (the
     * general one below took ~20 a poll). The first poll orders what
     * follows; later ones only look, and the one that sees the value is
     * followed by an ordering read (the values only grow). */
    if (gin_rolling_ge(gin_load_acquire_u64(p), least, bits))
      return GIN_SUCCESS;
    for (iter = 1; !gin_spin_check_due(iter); iter++) {
      gin_spin_pause(iter - 1);
      if (gin_rolling_ge(gin_load_relaxed_u64(p), least, bits)) {
        (void)gin_load_acquire_u64(p);
        return GIN_SUCCESS;
      }
    }
  }
  for (;; iter++) {
    /* Without a proxy part, the first poll orders what follows; later
     * ones only look, and the one that sees the value is followed by an
     * ordering read (the values only grow, so it sees at least as much).
     * With one (q: host memory across PCIe) every poll orders: a second
     * read of q would cost more than the L1 invalidations it saves. */
    int peek = iter != 0 && !q;
    uint64_t v = peek ? gin_dev_peek2_(p, q) : gin_dev_read2_(p, q);
    if (gin_rolling_ge(v, least, bits)) {
      if (peek) gin_dev_read2_(p, q);
      return GIN_SUCCESS;
    }
    /* The abort words and the clock, when the target says (every 256
     * polls on the GPU, every poll once a host-target waiter yields); the
     * timeout counts from the first such check (a wait that ends sooner
     * never reads the clock). */
    if (gin_spin_check_due(iter)) {
      uint64_t now = gin_time_ns();
      if (t0 == 0) t0 = now;
      int aborted = (gin_load_acquire_u32(&dc->ctrl->abort) |
                     gin_load_acquire_u32(&dc->ctrl->habort)) != 0;
      if (aborted || now - t0 > dc->timeout_ns) {
        /* What arrived before the abort was seen still counts (the
         * proxy publishes what it consumed before it aborts). */
        v = gin_dev_read2_(p, q);
        if (gin_rolling_ge(v, least, bits)) return GIN_SUCCESS;
        if (aborted)
          return gin_dev_fail_(dc, GIN_ERR_ABORTED, GIN_DEVERR_ABORTED, peer,
                               id, least, v, (uint64_t)kind, 0);
        return gin_dev_fail_(dc, GIN_ERR_TIMEOUT, kind, peer, id, least, v,
                             now - t0, 0);
      }
    }
    gin_spin_pause(iter);
  }
}

/* The proxy's part of signal s (or barrier counter s), NULL if none. */
GIN_DEVICE_FN const uint64_t *gin_dev_psig_(const gin_devcomm_t *dc, int s) {
  return dc->psignals ? &dc->psignals[s] : NULL;
}
GIN_DEVICE_FN const uint64_t *gin_dev_pcnt_(const gin_devcomm_t *dc, int c) {
  return dc->pcounters ? &dc->pcounters[c] : NULL;
}
/* Waits of a coop: the lanes of its first warp poll, together (one load
 * a poll for the warp, the same word and value in every lane, each lane
 * its own acquire), and the others wait at the barrier that hands them
 * the result (gin_coop_rc). A lone poller would leave the rest of its
 * warp parked at a reconvergence point, which costs a warp's wait ~240
 * cycles more than a thread's (docs/PERFORMANCE.md, "Design figures"). The
 * barrier orders the other warps' later reads after the pollers' acquire
 * (__syncthreads orders memory among the threads it synchronises, by the
 * PTX memory model), and they do not poll the same word beside them. */
GIN_DEVICE_FN int gin_dev_poller_(gin_coop_t coop) {
  return gin_coop_rank(coop) < GIN_WARP_SIZE;
}
#endif
