/*
 * CPU reference of gin EP (include/gin/gin_ep.h): deterministic inputs,
 * what dispatch must deliver to each rank, the test's stand-in experts and
 * what combine must return. Plain host C (also compiled as CUDA C++ by the
 * cuda test target); depends only on gin/ep_format.h, whose conversions
 * are the ones the device uses.
 *
 * Rules (the device follows the same ones):
 *  - R ranks, E experts, L = E / R; global expert e lives on rank e / L as
 *    local expert e % L.
 *  - Dispatch on rank `me`: for every source rank r in order, every token t
 *    of r in order, every k in order with topk_idx_r[t][k] = e, e / L = me:
 *    the message takes the next slot j of local expert e % L. count[le] is
 *    the number of messages, layout[le][r] = (offset of r's first message,
 *    its count). Slots past count are unspecified (not compared).
 *  - bf16: x[le][j] is the token's row unchanged. fp8: per 128 channels,
 *    amax = max(max |x|, GIN_EP_AMAX_MIN), scale = amax / 448,
 *    inv = 448 / amax, q = fp8(x * inv): bytes and scales match bit for bit.
 *    fp8 with power-of-two scales (EP_REF_FP8_POW2): scale is the power of
 *    two at or above amax / 448 and inv its inverse.
 *  - Stand-in expert e: y = bf16(deq * (float)(e + 1) * 0.125f), deq the
 *    bf16 value or fp8(q) * scale.
 *  - Combine: out[t][c] = bf16(sum over k in order with topk_idx >= 0 of
 *    w[t][k] * y_k[c], fp32 from 0.0f). The device may fuse multiply-adds,
 *    so outputs compare within |got - want| <= |want| / 128 + 1e-3.
 */
#ifndef GIN_TESTS_EP_REF_H
#define GIN_TESTS_EP_REF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Expert choice of the generated tokens. */
typedef enum ep_route {
  EP_ROUTE_RANDOM = 0, /* K distinct experts, uniform */
  EP_ROUTE_SKEWED = 1, /* k = 0 to expert 0, the others random distinct */
  EP_ROUTE_MASKED = 2  /* random, each entry -1 with probability 1/4, and
                          some tokens routed nowhere */
} ep_route_t;

const char *ep_route_name(ep_route_t route);

/* One rank's inputs: x [T][H] bf16, topk_idx [T][K], weights [T][K]. */
typedef struct ep_ref_input {
  int num_tokens, hidden, topk, num_experts;
  uint16_t *x;
  int32_t *topk_idx;
  float *weights;
} ep_ref_input_t;

/* Generates rank `rank`'s inputs from (seed, rank) alone, so every rank
 * can make every rank's inputs. x is random in [-2, 2) with some rows far
 * larger, some tiny (below GIN_EP_AMAX_MIN) and some zero, to exercise the
 * fp8 scales. Needs topk <= num_experts. Returns 0, or -1 (bad arguments,
 * out of memory; *in is then empty). */
int ep_ref_input_make(uint64_t seed, int rank, int num_tokens, int hidden,
                      int topk, int num_experts, ep_route_t route,
                      ep_ref_input_t *in);
void ep_ref_input_free(ep_ref_input_t *in);

/* fp8 values of the reference: 0 bf16, 1 fp8, EP_REF_FP8_POW2 fp8 with
 * power-of-two scales. */
#define EP_REF_FP8_POW2 2

/* Dispatch results on one rank, host copy, laid out as gin_ep_recv_t with
 * the scales in rows. */
typedef struct ep_ref_recv {
  int local_experts, ranks, slots, hidden, fp8; /* L, R, R * max_tokens */
  void *x;            /* [L][slots][H]: uint8_t fp8 or uint16_t bf16 */
  float *scales;      /* [L][slots][H / 128] with fp8, else NULL */
  int32_t *src_rank;  /* [L][slots] */
  int32_t *src_token; /* [L][slots] */
  int32_t *count;     /* [L] */
  int32_t *layout;    /* [L][R][2] */
} ep_ref_recv_t;

/* Allocates the arrays of a recv for (L, R, max_tokens, H, fp8), zeroed. */
int ep_ref_recv_alloc(int local_experts, int ranks, int max_tokens, int hidden,
                      int fp8, ep_ref_recv_t *r);
void ep_ref_recv_free(ep_ref_recv_t *r);
/* Bytes of each array of r. */
size_t ep_ref_recv_x_bytes(const ep_ref_recv_t *r);
size_t ep_ref_recv_scales_bytes(const ep_ref_recv_t *r);
size_t ep_ref_recv_slot_bytes(const ep_ref_recv_t *r); /* src_rank, token */

/* FP8 cast of one row of H channels (H a multiple of 128): q [H] and
 * scales [H / 128], power-of-two scales with pow2. */
void ep_ref_quantize_row(const uint16_t *x, int hidden, int pow2, uint8_t *q,
                         float *scales);

/* What dispatch delivers on rank `me`, given all ranks' inputs
 * (inputs[0..nranks)). r must come from ep_ref_recv_alloc with
 * L = num_experts / nranks. */
void ep_ref_dispatch(const ep_ref_input_t *inputs, int nranks, int me,
                     ep_ref_recv_t *r);

/* The stand-in expert e on one channel of a delivered token. */
uint16_t ep_ref_expert(float deq, int expert);

/* Expert outputs y [L][slots][H] bf16 for what rank `me` received (the
 * slots below count; the others are left alone). */
void ep_ref_experts(const ep_ref_recv_t *r, int me, uint16_t *y);

/* What combine returns on the rank whose inputs are `in`: out [T][H]. */
void ep_ref_combine(const ep_ref_input_t *in, int fp8, uint16_t *out);

/* Compares a received recv with the expected one (count and layout, then
 * src_rank, src_token, x bytes and scales of the used slots, exactly).
 * Returns the number of mismatches; the first is described in msg
 * (expert, slot, channel, expected and got). */
long ep_ref_check_recv(const ep_ref_recv_t *want, const ep_ref_recv_t *got,
                       int me, char *msg, size_t len);

/* Combine tolerance: |got - want| <= |want| / 128 + 1e-3. */
int ep_ref_close(float want, float got);

/* Compares combine outputs [T][H] within the tolerance; returns the
 * mismatch count, the first described in msg (token, channel, values). */
long ep_ref_check_out(const uint16_t *want, const uint16_t *got, int num_tokens,
                      int hidden, char *msg, size_t len);

#ifdef __cplusplus
}
#endif

#endif
