/*
 * The smallest EP program: every rank routes its tokens to two experts,
 * the experts return what they received unchanged, and combine sums them
 * with weights 0.75 and 0.25, so each token comes back as itself; a
 * second round has the experts write into the buffer's combine input
 * (gin_ep_combine_buffer).
 *
 *   ginrun -n 4 build/gin_ep_hello_host     (or _cuda on a GPU)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gin/device/arch.h" /* gin_stream_synchronize on both targets */
#include "gin/gin.h"
#include "gin/gin_ep.h"

#define CHECK(call)                                                            \
  do {                                                                         \
    gin_result_t r_ = (call);                                                  \
    if (r_ != GIN_SUCCESS) {                                                   \
      fprintf(stderr, "%s: %s\n", #call, gin_last_error());                    \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

enum { T = 16, H = 128, K = 2 };

int main(void) {
  gin_comm_t comm;
  int me, n;
  CHECK(gin_comm_init_from_env(&comm, NULL));
  CHECK(gin_comm_rank(comm, &me));
  CHECK(gin_comm_size(comm, &n));

  /* Two experts per rank, bf16 dispatch, up to T tokens per call. */
  gin_ep_config_t cfg = {T, H, K, 2 * n, 0};
  gin_ep_t ep;
  CHECK(gin_ep_create(comm, &cfg, &ep));

  /* Inputs on the host, then in device memory. */
  uint16_t x[T * H];
  int32_t idx[T * K];
  float w[T * K];
  for (int t = 0; t < T; t++) {
    for (int c = 0; c < H; c++)
      x[t * H + c] = gin_float_to_bf16((float)(me * 1000 + t) + c / 128.0f);
    idx[t * K] = (me + t) % (2 * n);         /* some expert ... */
    idx[t * K + 1] = (me + t + 1) % (2 * n); /* ... and the next one */
    w[t * K] = 0.75f;
    w[t * K + 1] = 0.25f;
  }
  void *dx, *didx, *dw, *dout;
  CHECK(gin_mem_alloc(sizeof x, &dx));
  CHECK(gin_mem_alloc(sizeof idx, &didx));
  CHECK(gin_mem_alloc(sizeof w, &dw));
  CHECK(gin_mem_alloc(sizeof x, &dout));
  CHECK(gin_mem_copy(dx, x, sizeof x));
  CHECK(gin_mem_copy(didx, idx, sizeof idx));
  CHECK(gin_mem_copy(dw, w, sizeof w));

  /* Twice: the experts' outputs first in memory of their own (here
   * recv.x itself), then written into the buffer's combine input, which
   * combine reads where it is (no copy on the way back). */
  int bad = 0;
  for (int round = 0; round < 2; round++) {
    /* Dispatch: each local expert receives its tokens in recv.x. */
    gin_ep_recv_t recv;
    CHECK(gin_ep_dispatch(ep, (const uint16_t *)dx, (const int32_t *)didx, T,
                          &recv, NULL, GIN_EP_BOTH));
    /* The "experts": identity, so their outputs are recv.x itself. */
    const uint16_t *y = (const uint16_t *)recv.x;
    if (round == 1) {
      uint16_t *buf;
      CHECK(gin_ep_combine_buffer(ep, &buf));
      CHECK(gin_stream_synchronize(0));
      CHECK(gin_mem_copy(buf, recv.x,
                         (size_t)recv.local_experts * recv.slots_per_expert *
                             H * sizeof(uint16_t)));
      y = buf;
    }
    CHECK(gin_ep_combine(ep, y, (const int32_t *)didx, (const float *)dw, T,
                         (uint16_t *)dout, NULL, GIN_EP_BOTH));
    CHECK(gin_stream_synchronize(0));
    CHECK(gin_comm_get_async_error(comm));

    uint16_t out[T * H];
    CHECK(gin_mem_copy(out, dout, sizeof out));
    int wrong = 0;
    for (int i = 0; i < T * H; i++) {
      float a = gin_bf16_to_float(out[i]), b = gin_bf16_to_float(x[i]);
      if (fabsf(a - b) > fabsf(b) / 128) wrong++;
    }
    printf("rank %d: %d tokens dispatched to experts and combined back%s, "
           "%s\n",
           me, T, round ? " from the combine buffer" : "",
           wrong ? "MISMATCH" : "each equals its input");
    bad += wrong;
  }

  CHECK(gin_comm_barrier(comm));
  CHECK(gin_ep_destroy(ep));
  CHECK(gin_mem_free(dx));
  CHECK(gin_mem_free(didx));
  CHECK(gin_mem_free(dw));
  CHECK(gin_mem_free(dout));
  CHECK(gin_comm_destroy(comm));
  return bad != 0;
}
