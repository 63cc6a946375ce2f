/* Bodies of gin/device/signal.h. Internal. */
#ifndef GIN_DEVICE_IMPL_SIGNAL_FUNCS_H
#define GIN_DEVICE_IMPL_SIGNAL_FUNCS_H

#include "gin/device/impl/wait__funcs.h"

GIN_DEVICE_FN uint64_t gin_signal_peek(const gin_devcomm_t *dc, int signal) {
  if (gin_dev_signal_id_(dc, -1, signal)) return 0;
  return gin_dev_peek2_(&dc->signals[signal], gin_dev_psig_(dc, signal));
}

GIN_DEVICE_FN uint64_t gin_signal_read(const gin_devcomm_t *dc, int signal) {
  if (gin_dev_signal_id_(dc, -1, signal)) return 0;
  return gin_dev_read2_(&dc->signals[signal], gin_dev_psig_(dc, signal));
}
/* A signal updated with both INC and ADD since its reset is misuse. Direct
 * updates are checked by their senders (gin_dev_remote_), so a waiter
 * fails only where a proxied update (marked in the second word, pmode)
 * is one of the two kinds: each mix is reported once. */
GIN_DEVICE_FN int gin_dev_sigmode_(const gin_devcomm_t *dc, int signal) {
  if (!GIN_DEV_CHECKS_ON || !dc->pmode) return GIN_SUCCESS;
  uint32_t p = gin_load_acquire_u32(&dc->pmode[signal]);
  uint32_t m = p ? p | gin_load_acquire_u32(&dc->sigmode[signal]) : 0;
  if (m == (GIN_SIGMODE_INC | GIN_SIGMODE_ADD))
    return gin_dev_bad_(dc, GIN_DEVERR_SIGNAL_MIX, dc->rank, signal,
                        GIN_SIGMODE_INC, GIN_SIGMODE_ADD);
  return GIN_SUCCESS;
}
GIN_DEVICE_FN int gin_signal_wait(const gin_devcomm_t *dc, int signal,
                                  uint64_t least, gin_coop_t coop) {
  int rc = gin_dev_signal_id_(dc, -1, signal);
  if (rc == GIN_SUCCESS && gin_dev_poller_(coop)) {
    rc = gin_dev_wait_(dc, &dc->signals[signal], gin_dev_psig_(dc, signal),
                       least, 64, GIN_DEVERR_TIMEOUT_SIGNAL, signal, -1);
    if (rc == GIN_SUCCESS) rc = gin_dev_sigmode_(dc, signal);
  }
  return gin_coop_rc(coop, rc);
}
GIN_DEVICE_FN int gin_signal_reset(const gin_devcomm_t *dc, int signal,
                                   gin_coop_t coop) {
  int rc = gin_dev_signal_id_(dc, -1, signal);
  if (rc == GIN_SUCCESS && gin_coop_rank(coop) == 0) {
    gin_store_release_u64(&dc->signals[signal], 0);
    if (dc->psignals) gin_store_release_u64(&dc->psignals[signal], 0);
    dc->shadows[signal] = 0;
    gin_store_release_u32(&dc->sigmode[signal], 0);
    if (dc->pmode) gin_store_release_u32(&dc->pmode[signal], 0);
  }
  gin_coop_sync(coop);
  return rc;
}
GIN_DEVICE_FN uint64_t gin_signal_shadow(const gin_devcomm_t *dc, int signal) {
  if (gin_dev_signal_id_(dc, -1, signal)) return 0;
  return dc->shadows[signal];
}
GIN_DEVICE_FN int gin_signal_shadow_add(const gin_devcomm_t *dc, int signal,
                                        uint64_t delta, gin_coop_t coop) {
  int rc = gin_dev_signal_id_(dc, -1, signal);
  gin_coop_sync(coop);
  if (rc == GIN_SUCCESS && gin_coop_rank(coop) == 0)
    dc->shadows[signal] += delta;
  gin_coop_sync(coop);
  return rc;
}
GIN_DEVICE_FN int gin_signal_wait_meet_shadow(const gin_devcomm_t *dc,
                                              int signal, gin_coop_t coop) {
  int rc = gin_dev_signal_id_(dc, -1, signal);
  if (rc) return rc;
  return gin_signal_wait(dc, signal, dc->shadows[signal], coop);
}
GIN_DEVICE_FN int
gin_signal_wait_follow_shadow(const gin_devcomm_t *dc, int signal,
                              uint64_t least_delta, uint64_t *before,
                              uint64_t *delta, gin_coop_t coop) {
  int rc = gin_dev_signal_id_(dc, -1, signal);
  if (rc) return rc;
  uint64_t old = dc->shadows[signal];
  if (gin_dev_poller_(coop)) { /* as gin_signal_wait */
    rc = gin_dev_wait_(dc, &dc->signals[signal], gin_dev_psig_(dc, signal),
                       old + least_delta, 64, GIN_DEVERR_TIMEOUT_SIGNAL, signal,
                       -1);
    if (rc == GIN_SUCCESS) rc = gin_dev_sigmode_(dc, signal);
  }
  rc = gin_coop_rc(coop, rc);
  /* Thread 0 decides the new shadow; the coop reads it back so every
   * thread reports the same before/delta. */
  if (rc == GIN_SUCCESS && gin_coop_rank(coop) == 0)
    dc->shadows[signal] =
        gin_dev_read2_(&dc->signals[signal], gin_dev_psig_(dc, signal));
  gin_coop_sync(coop);
  if (rc == GIN_SUCCESS) {
    uint64_t seen = dc->shadows[signal];
    if (before) *before = old;
    if (delta) *delta = seen - old;
  }
  gin_coop_sync(coop);
  return rc;
}
#endif
