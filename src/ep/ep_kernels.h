/*
 * The EP kernels' launchers (ep_kernels.c), called by the host side
 * (ep.c): each takes the kernel's arguments by pointer and a stream.
 */
#ifndef GIN_EP_KERNELS_H
#define GIN_EP_KERNELS_H

#include "ep/ep_geom.h"

#ifdef __cplusplus
extern "C" {
#endif
/* Loads the EP kernels now (cuda: before any of them runs), so that no
 * later launch has to wait for the device to be idle; *why says what
 * failed. */
gin_result_t gin_ep_kernels_load(const char **why);
/* Kernel launchers (ep_kernels.c); stream is a gin_stream_t. */
gin_result_t gin_ep_launch_dispatch_send(const gin_ep_args_t *a, void *stream);
gin_result_t gin_ep_launch_dispatch_recv(const gin_ep_args_t *a, void *stream);
gin_result_t gin_ep_launch_combine_send(const gin_ep_args_t *a, void *stream);
gin_result_t gin_ep_launch_combine_recv(const gin_ep_args_t *a, void *stream);
/* A barrier of every rank (the buffer's barrier slot 0). */
gin_result_t gin_ep_launch_barrier(const gin_ep_args_t *a, void *stream);
#ifdef __cplusplus
}
#endif

#endif
