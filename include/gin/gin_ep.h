/*
 * gin EP: Mixture-of-Experts token dispatch and combine on the device API
 * (DeepEP's low-latency semantics), over every path and transport gin has.
 *
 * Experts are spread evenly over the ranks: rank r owns experts
 * [r * L, (r + 1) * L) with L = num_experts / nranks ("local experts").
 * A token t of this rank goes to the experts topk_idx[t][0..K) (-1: not
 * routed). Dispatch delivers to each expert's rank the tokens routed to it
 * (as bf16, or FP8 E4M3 with one fp32 scale per 128 channels); combine
 * sends each expert's output for a token back to the token's rank, which
 * sums them weighted by topk_weights into out[t].
 *
 * Everything runs on the caller's stream with no host synchronisation, so
 * a whole step can be captured in a CUDA graph. Two buffer sets alternate:
 * each dispatch must be followed by its combine before the dispatch after
 * next (as in DeepEP's low-latency mode). Device arrays are the target's
 * device memory (GPU memory on cuda, host memory on the host target).
 */
#ifndef GIN_EP_H
#define GIN_EP_H

#include <stddef.h>
#include <stdint.h>

#include "gin/gin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gin_ep *gin_ep_t;

/* What a buffer is sized for; the same on every rank (checked). */
typedef struct gin_ep_config {
  int max_tokens;  /* tokens per rank per call, T <= max_tokens */
  int hidden;      /* H channels per token (multiple of 128 with fp8) */
  int topk;        /* K experts per token, 1..32 */
  int num_experts; /* E, a multiple of the number of ranks */
  int fp8;         /* 1: dispatch casts to FP8 E4M3 + fp32 scale per 128;
                      GIN_EP_FP8_ANY: each dispatch chooses
                      (gin_ep_dispatch_ex's payload; rows sized for bf16) */
} gin_ep_config_t;

#define GIN_EP_FP8_ANY 2

/* Bytes of device memory a buffer of this configuration takes per rank
 * (windows, staging and outputs). */
GIN_API gin_result_t gin_ep_size_hint(const gin_ep_config_t *cfg, int nranks,
                                      size_t *bytes_out);

/* Creates a buffer on comm (collective: every rank calls it with the same
 * configuration; a mismatch fails on every rank naming the field).
 * Errors: GIN_ERR_INVALID (bad configuration), GIN_ERR_NOMEM. */
GIN_API gin_result_t gin_ep_create(gin_comm_t comm, const gin_ep_config_t *cfg,
                                   gin_ep_t *ep_out);
/* Collective. No dispatch or combine may be in flight. After an error the
 * device reported (gin_comm_get_async_error: the communicator is aborted)
 * the buffer's state is undefined: destroy it (on an aborted communicator
 * gin_ep_destroy frees it locally, whatever it returns), then the
 * communicator. A call refused on the host (bad arguments) changes
 * nothing. */
GIN_API gin_result_t gin_ep_destroy(gin_ep_t ep);

/* Phases of an operation: both (the default), or send and receive issued
 * separately so compute can run in between (DeepEP's hook). */
enum { GIN_EP_SEND = 1, GIN_EP_RECV = 2, GIN_EP_BOTH = 3 };

/* Where dispatch leaves its results: device arrays owned by the buffer,
 * valid until the next dispatch's receive phase (one set of arrays per
 * buffer; combine reads them). Slots of local expert le:
 * [le * R * max_tokens, ...), packed: count[le] tokens, grouped by source
 * rank in rank order (layout gives each source's offset and count). */
typedef struct gin_ep_recv {
  void *x;            /* [L][R * max_tokens][H]: fp8 bytes, or bf16 (uint16) */
  float *scales;      /* [L][R * max_tokens][H / 128] with fp8, else NULL */
  int32_t *src_rank;  /* [L][R * max_tokens] rank the token came from */
  int32_t *src_token; /* [L][R * max_tokens] its index on that rank */
  int32_t *count;     /* [L] tokens received per local expert */
  int32_t *layout;    /* [L][R][2] offset and count per source rank (a
                         source with no tokens: the running offset, 0);
                         with GIN_EP_LAYOUT_PACKED int64 [L][R]:
                         offset << 32 | count */
  int local_experts, ranks, slots_per_expert; /* L, R, R * max_tokens */
  int fp8;          /* this dispatch's payload: x is fp8 (1) or bf16 (0) */
  int scale_layout; /* GIN_EP_SCALES_*: how scales is laid out */
} gin_ep_recv_t;

/* Dispatch: x [T][H] bf16 (uint16 bit patterns), topk_idx [T][K] (int32,
 * -1 = not routed), T <= max_tokens. Device arrays; `stream` is a
 * cudaStream_t on cuda (NULL: the legacy stream) and ignored on the host
 * target. Fills *recv (pointers into the buffer). Bad routing found on the
 * device (an expert id out of range) is reported through
 * gin_comm_get_async_error and aborts the communicator, with nothing
 * written. phases: GIN_EP_SEND, GIN_EP_RECV or GIN_EP_BOTH. */
GIN_API gin_result_t gin_ep_dispatch(gin_ep_t ep, const uint16_t *x,
                                     const int32_t *topk_idx, int num_tokens,
                                     gin_ep_recv_t *recv, void *stream,
                                     int phases);

/* Options of gin_ep_dispatch_ex; all zero: gin_ep_dispatch's behaviour
 * (DeepEP's low-latency options map onto these). */
enum {                            /* payload */
       GIN_EP_PAYLOAD_BUFFER = 0, /* the buffer's fp8 (0 or 1) */
       GIN_EP_PAYLOAD_BF16 = 1,
       GIN_EP_PAYLOAD_FP8 = 2
};
enum { /* scale_layout: recv.scales of slot s (of S per expert), group g
          (of G = H / 128) of local expert le */
       GIN_EP_SCALES_ROWS = 0, /* fp32 [L][S][G]: scales[(le*S + s)*G + g] */
       GIN_EP_SCALES_COLS = 1, /* fp32 [L][G][S]: scales[(le*G + g)*S + s],
                                  DeepEP's column-major scales */
       GIN_EP_SCALES_UE8M0 = 2 /* DeepEP's use_ue8m0: the scale's exponent
                                   byte (needs round_scale), four groups a
                                   uint32 word, words [L][ceil(G/4)][S]:
                                   byte g % 4 of word (le*ceil(G/4) + g/4)*S
                                   + s; a last word's unused bytes are
                                   unspecified */
};
enum { GIN_EP_LAYOUT_PAIRS = 0, GIN_EP_LAYOUT_PACKED = 1 };

typedef struct gin_ep_dispatch_opts {
  int payload;         /* GIN_EP_PAYLOAD_*; a GIN_EP_FP8_ANY buffer needs
                          BF16 or FP8, a fixed one takes BUFFER or its own */
  int round_scale;     /* fp8: scales rounded up to powers of two */
  int scale_layout;    /* GIN_EP_SCALES_* */
  int layout;          /* GIN_EP_LAYOUT_*: recv.layout's form */
  int idx64;           /* topk_idx is int64_t [T][K] (else int32_t); it
                          must say what the array is: an int32 array read
                          as int64 is read past its end */
  int32_t *recv_stats; /* device [L] or NULL: the receive adds each local
                          expert's count (DeepEP's
                          cumulative_local_expert_recv_stats) */
} gin_ep_dispatch_opts_t;

/* gin_ep_dispatch with options (NULL: all zero). Every rank's dispatch
 * must ask for the same payload and round_scale: a receiver that finds a
 * row of the other payload fails the dispatch naming the sender (through
 * gin_comm_get_async_error). A split dispatch's receive phase must pass
 * the options its send phase did. Errors: GIN_ERR_INVALID naming the bad
 * option (a payload the buffer cannot carry, UE8M0 without round_scale,
 * scale options without fp8). */
GIN_API gin_result_t gin_ep_dispatch_ex(gin_ep_t ep, const uint16_t *x,
                                        const void *topk_idx, int num_tokens,
                                        const gin_ep_dispatch_opts_t *opts,
                                        gin_ep_recv_t *recv, void *stream,
                                        int phases);

/* Combine: y [L][R * max_tokens][H] bf16, the experts' outputs in the
 * slots dispatch filled (recv of the last dispatch); topk_weights [T][K]
 * fp32, and topk_idx and T as given to that dispatch (another T is
 * GIN_ERR_INVALID); out [T][H] bf16 receives
 * sum_k topk_weights[t][k] * y(expert topk_idx[t][k], token t) (fp32
 * accumulation, k in order; rows of tokens routed nowhere are zero).
 * A dispatch may be combined again (other outputs, other weights): from
 * its second combine on, the send phase first waits at a barrier of
 * every rank, so that no rank still receiving the last one is sent rows
 * of the next (outputs for it go to the combine buffer only after
 * gin_ep_combine_fence). */
GIN_API gin_result_t gin_ep_combine(gin_ep_t ep, const uint16_t *y,
                                    const int32_t *topk_idx,
                                    const float *topk_weights, int num_tokens,
                                    uint16_t *out, void *stream, int phases);

/* Options of gin_ep_combine_ex; all zero: gin_ep_combine's. */
typedef struct gin_ep_combine_opts {
  int idx64; /* topk_idx is int64_t [T][K] (else int32_t) */
} gin_ep_combine_opts_t;

/* gin_ep_combine with options (NULL: all zero). */
GIN_API gin_result_t gin_ep_combine_ex(gin_ep_t ep, const uint16_t *y,
                                       const void *topk_idx,
                                       const float *topk_weights,
                                       int num_tokens,
                                       const gin_ep_combine_opts_t *opts,
                                       uint16_t *out, void *stream, int phases);

/* Collective, on stream: every rank's receive of this buffer's last
 * combine is done before what follows on the stream. After it the
 * combine buffer may be rewritten for another combine of the same
 * dispatch (before it, a rank may still be reading its rows from there,
 * or a proxy sending them on): by work on the same stream, or from the
 * host once the stream is synchronized (gin_mem_copy is ordered with no
 * stream). Nothing is launched before the dispatch's first combine, nor
 * again before the next combine (which then needs no barrier of its
 * own). */
GIN_API gin_result_t gin_ep_combine_fence(gin_ep_t ep, void *stream);

/* The buffer's combine input: device memory for y [L][R * max_tokens][H]
 * bf16. Experts that write their outputs here (after the dispatch's
 * receive phase, on the same stream) and pass this pointer as
 * gin_ep_combine's y save combine's send copy: a rank that maps this
 * buffer (the direct path) reads the rows straight from it, and proxied
 * peers are sent them from here. Its contents are read until every rank's
 * combine receive is done, which the next dispatch's receive waits for:
 * write the next outputs only after it. Any other y works as before (its
 * rows are copied). The pointer does not change. */
GIN_API gin_result_t gin_ep_combine_buffer(gin_ep_t ep, uint16_t **y_out);

/* Host helpers for the formats (also what the CPU reference uses). */
GIN_API float gin_bf16_to_float(uint16_t v);
GIN_API uint16_t gin_float_to_bf16(float f); /* round to nearest even */
GIN_API float gin_fp8e4m3_to_float(uint8_t v);
GIN_API uint8_t gin_float_to_fp8e4m3(float f); /* nearest even, saturating */

#ifdef __cplusplus
}
#endif

#endif
