/* This rank's local counters. Part of the device API
 * (gin/device/gin_device.h says what every call promises). */
#ifndef GIN_DEVICE_COUNTER_H
#define GIN_DEVICE_COUNTER_H

#include "gin/device/arch.h"
#include "gin/device/types.h"

/* Counters (56-bit, local): read, bounded wait until value >= least
 * (rolling 56-bit comparison), reset to 0, set (to resume a count). */
GIN_DEVICE_FN uint64_t gin_counter_read(const gin_devcomm_t *dc, int counter);
GIN_DEVICE_FN int gin_counter_wait(const gin_devcomm_t *dc, int counter,
                                   uint64_t least, gin_coop_t coop);
GIN_DEVICE_FN int gin_counter_reset(const gin_devcomm_t *dc, int counter,
                                    gin_coop_t coop);
GIN_DEVICE_FN int gin_counter_set(const gin_devcomm_t *dc, int counter,
                                  uint64_t value, gin_coop_t coop);

#include "gin/device/impl/counter__funcs.h"

#endif
