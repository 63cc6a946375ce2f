/*
 * gin EP, normal (high-throughput) mode: DeepEP's normal-mode dispatch and
 * combine, for training and prefill (thousands of tokens a rank), over
 * every path and transport gin has.
 *
 * Experts are spread evenly over the ranks as in low-latency mode
 * (gin_ep.h): rank r owns experts [r * L, (r + 1) * L). Unlike it, a token
 * goes to each rank that owns one of its experts once, whatever the number
 * of its experts there, and the receiver gets it with its whole top-k row
 * (expert ids made local: id - rank * L for its own experts, -1 for
 * others'; the weights of the others' slots 0). Combine is dispatch's
 * reverse: each rank sends back one row per token it received, and the
 * token's rank sums them (fp32, plus optional biases) into out[t]: no
 * weighting (the experts' outputs carry it); the top-k weights sent back
 * are summed the same way.
 *
 * Received rows are grouped by source rank in rank order, each group in
 * its source's token order (DeepEP's order): row i of source s is
 * rank_prefix[s - 1] + i (0 for s = 0). The data travels through bounded
 * rings: for each pair of ranks and each channel (a contiguous range of
 * the sender's tokens; a call uses `channels` of them) a ring of
 * `ring_tokens` rows in the receiver's window, written by the sender while
 * it holds credits (slots the receiver has emptied), which return to it
 * every `chunk` rows. Memory is bounded by the configuration, not by the
 * number of tokens; every wait is bounded by GIN_TIMEOUT_MS.
 *
 * A dispatch that learns its counts (gin_epn_notify) needs the host to
 * read how many rows came before it can size the outputs (DeepEP does the
 * same), unless the caller sizes them for the worst case (capacity rows,
 * `worst`); a dispatch with a handle (cached) and combine need no host
 * synchronisation. Every call is collective: each rank makes the same
 * sequence of calls on its buffer, with the same channel count.
 * Device arrays are the target's device memory (GPU memory on cuda, host
 * memory on the host target); `stream` as in gin_ep.h.
 */
#ifndef GIN_EP_NORMAL_H
#define GIN_EP_NORMAL_H

#include <stddef.h>
#include <stdint.h>

#include "gin/gin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gin_epn *gin_epn_t;

/* What a buffer is sized for; the same on every rank (checked). */
typedef struct gin_epn_config {
  int hidden;      /* H channels a token, a multiple of 8 up to 2^20 (of 128
                      for fp8 rows: one scale per 128) */
  int topk;        /* the most top-k slots a call carries, 1..32 */
  int num_experts; /* E, a positive multiple of the ranks */
  int channels;    /* the most channels a call uses, 1..64 */
  int ring_tokens; /* rows of each ring (per peer and channel), >= 1 */
} gin_epn_config_t;

/* Bytes of device memory a buffer of this configuration takes per rank
 * at most (where every rank reaches every peer directly, about half the
 * rows less: no staging for proxied peers). */
GIN_API gin_result_t gin_epn_size_hint(const gin_epn_config_t *cfg, int nranks,
                                       size_t *bytes_out);

/* Creates a buffer on comm (collective; a configuration that differs
 * between ranks fails on every rank naming the field). Errors:
 * GIN_ERR_INVALID, GIN_ERR_NOMEM. */
GIN_API gin_result_t gin_epn_create(gin_comm_t comm,
                                    const gin_epn_config_t *cfg,
                                    gin_epn_t *ep_out);

/* Collective; no call may be in flight (synchronize their streams
 * first). It starts with a barrier of every rank, so that no signal of
 * the last calls still travels to a window it frees. After an error the
 * device reported, the buffer's state is undefined: destroy it, then the
 * communicator (as gin_ep_destroy; on an aborted communicator it frees
 * locally). */
GIN_API gin_result_t gin_epn_destroy(gin_epn_t ep);

/* The layout of a routing table (DeepEP's get_dispatch_layout), on the
 * stream, local (no communication): topk_idx [T][num_topk] (int64 with
 * idx64, else int32; -1: no expert; another id outside [0, E) is reported
 * through gin_comm_get_async_error); per_rank [R]: tokens with at least
 * one expert on rank r; per_expert [E]: top-k slots naming expert e;
 * in_rank [T][R]: 1 where token t goes to rank r, else 0. */
GIN_API gin_result_t gin_epn_layout(gin_epn_t ep, const void *topk_idx,
                                    int idx64, int num_tokens, int num_topk,
                                    int32_t *per_rank, int32_t *per_expert,
                                    uint8_t *in_rank, void *stream);

/* What a dispatch leaves for the calls that reuse it (a cached dispatch,
 * combine): device arrays the caller allocates, each as long as it says,
 * and three numbers. Valid as long as the caller keeps the arrays;
 * several handles may live at once. */
typedef struct gin_epn_handle {
  int num_tokens;            /* T: the tokens this rank sent */
  int channels;              /* C: the call's channels */
  int capacity;              /* rows of the receive arrays (recv_src_idx and the
                                dispatch outputs); at least the rows that came */
  const uint8_t *in_rank;    /* [T][R], as given to gin_epn_notify */
  int32_t *send_head;        /* [T][R]: token t's place among its channel's
                                tokens to rank r, -1 where not sent */
  int32_t *chan_prefix;      /* [R][C]: tokens to rank r in channels 0..c */
  int32_t *rank_prefix;      /* [R]: tokens received from ranks 0..s */
  int32_t *recv_chan_prefix; /* [R][C]: where source s's channel c starts
                                within its group of received rows */
  int32_t *recv_src_idx;     /* [capacity]: each received row's token index
                                at its source (written by the dispatch) */
} gin_epn_handle_t;

/* The counts of a dispatch, exchanged with every rank (collective), on
 * the stream: from in_rank [T][R] (T <= 2^22) and per_expert [E]
 * (gin_epn_layout's), with `channels` channels (every rank the same,
 * 1..the configuration's).
 * Fills the handle's send_head, chan_prefix, rank_prefix and
 * recv_chan_prefix (allocated by the caller), sets its num_tokens and
 * channels, and writes recv_counts [1 + L] (device): the rows this rank
 * receives, then the top-k slots naming each local expert, over all
 * ranks. The host reads recv_counts once the stream has passed this call
 * (gin_stream_synchronize, then gin_mem_copy) to size the outputs, sets
 * the handle's recv_src_idx and capacity, and dispatches. */
GIN_API gin_result_t gin_epn_notify(gin_epn_t ep, const uint8_t *in_rank,
                                    const int32_t *per_expert, int num_tokens,
                                    int channels, gin_epn_handle_t *h,
                                    int32_t *recv_counts, void *stream);

/* A dispatch's inputs and outputs. */
typedef struct gin_epn_dispatch_args {
  const void *x;      /* [T][H]: bf16 (uint16 bit patterns), or FP8 E4M3
                         bytes with fp8 */
  int fp8;            /* 1: x is fp8 with scales (every rank the same) */
  const void *scales; /* with fp8: 4-byte scales (fp32, or DeepEP's UE8M0
                         words: moved as they are), group g of token t at
                         element t * scale_stride_t + g * scale_stride_g */
  int64_t scale_stride_t, scale_stride_g;
  const void *topk_idx;      /* [T][num_topk] global expert ids (-1: none),
                                int64 with idx64, else int32 */
  const float *topk_weights; /* [T][num_topk] */
  int idx64;
  int num_topk;      /* top-k slots that travel, 0..the configuration's topk (0:
                        none, as in cached dispatches; every rank the same) */
  int chunk;         /* rows between a ring's signals and credits, >= 1 */
  void *recv_x;      /* [capacity][H], x's format */
  void *recv_scales; /* [capacity][H / 128] 4-byte, with scales */
  int64_t *recv_topk_idx;   /* [capacity][num_topk] local ids or -1 */
  float *recv_topk_weights; /* [capacity][num_topk]: local slots' weights,
                               0 for others */
  int worst; /* 1: rows from the received count to capacity get top-k ids
                -1 (their other outputs are not written) */
} gin_epn_dispatch_args_t;

/* Dispatch with a handle from gin_epn_notify (its send side and counts)
 * or from an earlier dispatch (cached: the same routing, new rows). Fills the
 * outputs and the handle's recv_src_idx. A cached dispatch passes num_topk 0. A
 * capacity short of the rows that come is reported through
 * gin_comm_get_async_error with nothing written.
 * Errors: GIN_ERR_INVALID naming the bad argument. */
GIN_API gin_result_t gin_epn_dispatch(gin_epn_t ep,
                                      const gin_epn_dispatch_args_t *a,
                                      const gin_epn_handle_t *h, void *stream);

/* A combine's inputs and outputs. */
typedef struct gin_epn_combine_args {
  const uint16_t *x;         /* [rows received][H] bf16, in the dispatch's
                                receive order */
  const float *topk_weights; /* [rows received][num_topk] */
  int num_topk; /* weights that travel, 0..the configuration's topk (0: none;
                   every rank the same) */
  const uint16_t *bias[2]; /* [T][H] bf16 each, or NULL */
  int chunk;               /* as the dispatch's */
  uint16_t *out;           /* [T][H] bf16 */
  float *out_weights;      /* [T][num_topk] */
} gin_epn_combine_args_t;

/* Combine the rows of the handle's dispatch back to their tokens' ranks:
 * out[t] = bias0[t] + bias1[t] + the sum over the ranks t went to of
 * their row for t (fp32, in rank order, rounded to bf16 once); tokens
 * sent nowhere get the biases (or 0). Errors: GIN_ERR_INVALID. */
GIN_API gin_result_t gin_epn_combine(gin_epn_t ep,
                                     const gin_epn_combine_args_t *a,
                                     const gin_epn_handle_t *h, void *stream);

#ifdef __cplusplus
}
#endif

#endif
