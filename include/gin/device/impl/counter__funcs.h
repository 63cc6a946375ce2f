/* Bodies of gin/device/counter.h. Internal. */
#ifndef GIN_DEVICE_IMPL_COUNTER_FUNCS_H
#define GIN_DEVICE_IMPL_COUNTER_FUNCS_H

#include "gin/device/impl/wait__funcs.h"

#define GIN_COUNTER_BITS 56
GIN_DEVICE_FN uint64_t gin_counter_read(const gin_devcomm_t *dc, int counter) {
  if (gin_dev_counter_id_(dc, counter)) return 0;
  return gin_dev_read2_(&dc->counters[counter], gin_dev_pcnt_(dc, counter)) &
         ((1ull << GIN_COUNTER_BITS) - 1);
}
GIN_DEVICE_FN int gin_counter_wait(const gin_devcomm_t *dc, int counter,
                                   uint64_t least, gin_coop_t coop) {
  int rc = gin_dev_counter_id_(dc, counter);
  if (rc == GIN_SUCCESS && gin_dev_poller_(coop)) /* as gin_signal_wait */
    rc = gin_dev_wait_(dc, &dc->counters[counter], gin_dev_pcnt_(dc, counter),
                       least, GIN_COUNTER_BITS, GIN_DEVERR_TIMEOUT_COUNTER,
                       counter, -1);
  return gin_coop_rc(coop, rc);
}
GIN_DEVICE_FN int gin_counter_set(const gin_devcomm_t *dc, int counter,
                                  uint64_t value, gin_coop_t coop) {
  int rc = gin_dev_counter_id_(dc, counter);
  gin_coop_sync(coop);
  if (rc == GIN_SUCCESS && gin_coop_rank(coop) == 0) {
    /* No update may be in flight: the proxy's part restarts at 0. */
    if (dc->pcounters) gin_store_release_u64(&dc->pcounters[counter], 0);
    gin_store_release_u64(&dc->counters[counter],
                          value & ((1ull << GIN_COUNTER_BITS) - 1));
  }
  gin_coop_sync(coop);
  return rc;
}
GIN_DEVICE_FN int gin_counter_reset(const gin_devcomm_t *dc, int counter,
                                    gin_coop_t coop) {
  return gin_counter_set(dc, counter, 0, coop);
}
#endif
