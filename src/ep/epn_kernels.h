/*
 * The EP normal-mode kernels' launchers (epn_kernels.c), called by the
 * host side (epn.c): each takes the kernel's arguments by pointer and a
 * stream.
 */
#ifndef GIN_EPN_KERNELS_H
#define GIN_EPN_KERNELS_H

#include "ep/epn_geom.h"

#ifdef __cplusplus
extern "C" {
#endif
/* Loads the kernels now (as gin_ep_kernels_load); *blocks_per_sm: the
 * fewest blocks of dispatch or combine an SM holds at once (0 on the host
 * target, where every block is a thread and all run at once). */
gin_result_t gin_epn_kernels_load(int *blocks_per_sm, const char **why);
gin_result_t gin_epn_launch_layout(const gin_epn_args_t *a, void *stream);
gin_result_t gin_epn_launch_notify(const gin_epn_args_t *a, void *stream);
gin_result_t gin_epn_launch_dispatch(const gin_epn_args_t *a, void *stream);
gin_result_t gin_epn_launch_combine(const gin_epn_args_t *a, void *stream);
/* A barrier of every rank (the buffer's barrier slot 0) on the legacy
 * stream, waited for on the host. */
gin_result_t gin_epn_barrier_sync(const gin_epn_args_t *a);
#ifdef __cplusplus
}
#endif

#endif
