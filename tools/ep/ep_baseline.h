/*
 * The host-initiated baseline of gin EP: the same dispatch and combine as
 * include/gin/gin_ep.h, done the traditional way, for gin-ep-bench to run
 * in the same job and compare against. Each call is driven by the host and
 * returns synchronised:
 *   dispatch: a layout kernel counts this rank's messages per expert and
 *     places them; the host reads the counts (while a pack kernel writes
 *     the messages) and exchanges them; it copies each destination rank's
 *     messages into that rank's receive buffer (CUDA IPC; shared memory on
 *     the host target), one copy per destination on the baseline's own
 *     stream, waits, and meets the other ranks; a receive kernel unpacks
 *     the arrivals as gin_ep_recv_t.
 *   combine: the experts' rank copies the outputs back to each source rank
 *     (one copy per source; packed first when it holds more than one local
 *     expert), waits, meets the other ranks; a reduce kernel at the source
 *     sums them.
 * Results have the layout and order of gin EP's, so the same reference
 * check applies. All ranks of the job must be on one host.
 *
 * Layering: a tool on gin's public host API (gin_comm_allgather, barrier)
 * and the EP number formats (gin/ep_format.h); not part of the library.
 */
#ifndef GIN_TOOLS_EP_BASELINE_H
#define GIN_TOOLS_EP_BASELINE_H

#include <stdint.h>

#include "gin/gin_ep.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ep_baseline ep_baseline_t;

/* Creates a baseline for cfg on comm. Collective: every rank calls it with
 * the same configuration (the rules of gin_ep_create; a mismatch fails on
 * every rank naming the field). Allocates the receive buffers and maps
 * every other rank's. Returns 0 and sets *out, or -1 with a message on
 * stderr. Not thread safe with other calls on the same comm. */
int ep_baseline_create(gin_comm_t comm, const gin_ep_config_t *cfg,
                       ep_baseline_t **out);

/* Dispatch: x [T][H] bf16 and topk_idx [T][K] (-1 = not routed) are device
 * arrays, T = num_tokens <= max_tokens. Fills *recv with device arrays
 * owned by the baseline (x, scales, src_rank, src_token, count, layout as
 * in gin_ep_recv_t), valid until the next dispatch. Collective; returns
 * when done (host synchronised). Bad input on any rank (token count,
 * expert id out of range or twice in a token) fails on every rank with
 * nothing delivered. Returns 0, or -1 with a message on stderr. */
int ep_baseline_dispatch(ep_baseline_t *b, const uint16_t *x,
                         const int32_t *topk_idx, int num_tokens,
                         gin_ep_recv_t *recv);

/* Combine: y [L][R * max_tokens][H] bf16, the experts' outputs in the
 * slots of the last successful dispatch; topk_idx and topk_weights [T][K]
 * as given to it (the routing used is the dispatch's); out [T][H] gets
 * bf16(sum over k in order, topk_idx >= 0, of w[t][k] * y), fp32 from
 * 0.0f as gin_ep_combine (rows routed nowhere are zero). Collective,
 * synchronous. May be repeated for one dispatch. Returns 0 or -1. */
int ep_baseline_combine(ep_baseline_t *b, const uint16_t *y,
                        const int32_t *topk_idx, const float *topk_weights,
                        int num_tokens, uint16_t *out);

/* Releases everything (collective; no call may be in progress). */
void ep_baseline_destroy(ep_baseline_t *b);

#ifdef __cplusplus
}
#endif

#endif
