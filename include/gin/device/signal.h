/* This rank's signals: read, wait, reset, shadows. Part of the device API
 * (gin/device/gin_device.h says what every call promises). */
#ifndef GIN_DEVICE_SIGNAL_H
#define GIN_DEVICE_SIGNAL_H

#include "gin/device/arch.h"
#include "gin/device/types.h"

/* Signals (this rank's): read, bounded wait until value >= least (rolling
 * 64-bit comparison: wrap-safe within 2^63), reset to 0 (no update may be
 * in flight). */
GIN_DEVICE_FN uint64_t gin_signal_read(const gin_devcomm_t *dc, int signal);
/* The signal's value without ordering: what a wait that returned (whose
 * acquire ordered what follows) saw, or more; cheaper than
 * gin_signal_read where that order is already in place. */
GIN_DEVICE_FN uint64_t gin_signal_peek(const gin_devcomm_t *dc, int signal);
GIN_DEVICE_FN int gin_signal_wait(const gin_devcomm_t *dc, int signal,
                                  uint64_t least, gin_coop_t coop);
GIN_DEVICE_FN int gin_signal_reset(const gin_devcomm_t *dc, int signal,
                                   gin_coop_t coop);

/* Shadows: a per-signal local expectation. add raises it; wait_meet waits
 * until the signal reaches it; wait_follow waits until the signal is at
 * least shadow + least_delta, then sets the shadow to the value seen and
 * returns the old shadow in *before and the growth in *delta. */
GIN_DEVICE_FN uint64_t gin_signal_shadow(const gin_devcomm_t *dc, int signal);
GIN_DEVICE_FN int gin_signal_shadow_add(const gin_devcomm_t *dc, int signal,
                                        uint64_t delta, gin_coop_t coop);
GIN_DEVICE_FN int gin_signal_wait_meet_shadow(const gin_devcomm_t *dc,
                                              int signal, gin_coop_t coop);
GIN_DEVICE_FN int
gin_signal_wait_follow_shadow(const gin_devcomm_t *dc, int signal,
                              uint64_t least_delta, uint64_t *before,
                              uint64_t *delta, gin_coop_t coop);

#include "gin/device/impl/signal__funcs.h"

#endif
