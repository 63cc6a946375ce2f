/*
 * Target glue for device code written once for two targets:
 *   cuda (nvcc, __CUDACC__): real GPU kernels;
 *   host (the C compiler): each block of a kernel runs as one CPU thread,
 *        and every cooperative group (thread, warp, block) has size 1.
 * All divergence between the targets lives in these headers and in
 * src/arch: the qualifiers (impl/arch__types.h), thread indices and coop
 * synchronisation (coop.h), memory ordering and time (atomics.h), copies
 * (copy.h), device limits and launch (launch.h). Protocol code above them
 * has no #ifdef on the target.
 */
#ifndef GIN_DEVICE_ARCH_H
#define GIN_DEVICE_ARCH_H

#include "gin/device/atomics.h"
#include "gin/device/coop.h"
#include "gin/device/copy.h"
#include "gin/device/impl/arch__types.h"
#include "gin/device/launch.h"

#endif
