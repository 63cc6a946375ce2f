/*
 * A ring all-reduce of floats written from the public API alone, as a
 * user's collective would be: the vector is R chunks of C floats in a
 * window, with R - 1 staging chunks after it. Reduce-scatter: at step s
 * each rank puts chunk (r - s) mod R into its right neighbour's staging
 * chunk s with a signal, waits for its left neighbour's, and adds the
 * staged chunk into its chunk (r - s - 1) mod R. Then a flush and a
 * device barrier, and the all-gather: at step s each rank puts its final chunk
 * (r + 1 - s) mod R into the same chunk of its right neighbour with a signal
 * and waits for its left neighbour's. A device barrier ends a round. Several
 * rounds run in a row on the same window (staging reused), each with new
 * inputs, every element checked exactly (small integers in float).
 *   ring_allreduce [C [ROUNDS]]   (C floats a chunk, default 1000; 3)
 * Under ginrun, mpirun, srun or torchrun (tests/transport/multihost.sh
 * runs it across two network namespaces). Exit 0 pass, 1 fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gin/device/gin_device.h"
#include "gin/gin.h"

#define CHECK(call)                                                            \
  do {                                                                         \
    gin_result_t r_ = (call);                                                  \
    if (r_ != GIN_SUCCESS) {                                                   \
      fprintf(stderr, "rank %d: %s failed: %s: %s\n", rank, #call,             \
              gin_strerror(r_), gin_last_error());                             \
      return 1;                                                                \
    }                                                                          \
  } while (0)

typedef struct ar_args {
  gin_devcomm_t dc;
  gin_window_t win;
  int chunk; /* C floats */
  int round; /* rounds before this one: the signal's base */
} ar_args_t;

GIN_DEVICE_FN int ar_mod(int a, int n) { return (a % n + n) % n; }

GIN_KERNEL(k_allreduce, ar_args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int R = dc->nranks, r = dc->rank, right = (r + 1) % R;
  size_t C = (size_t)args.chunk, cb = C * sizeof(float);
  float *data = (float *)gin_window_peer_ptr(dc, args.win, world, r, 0);
  const float *stage = data + (size_t)R * C;
  uint64_t base = (uint64_t)args.round * (uint64_t)(2 * (R - 1));
  for (int s = 0; s < R - 1; s++) {
    int send = ar_mod(r - s, R), add = ar_mod(r - s - 1, R);
    if (gin_put(dc, 0, world, right, args.win, (size_t)R * cb + (size_t)s * cb,
                args.win, (size_t)send * cb, cb, gin_remote_signal_inc(0),
                gin_local_none(), GIN_COOP_THREAD) ||
        gin_signal_wait(dc, 0, base + (uint64_t)s + 1, GIN_COOP_THREAD))
      return;
    for (size_t i = 0; i < C; i++)
      data[(size_t)add * C + i] += stage[(size_t)s * C + i];
  }
  /* The reduce-scatter's sources are chunks the all-gather overwrites,
   * also at the neighbours: every rank's must be consumed first. */
  if (gin_flush(dc, 0, GIN_COOP_THREAD) ||
      gin_barrier(dc, world, 0, GIN_COOP_THREAD))
    return;
  for (int s = 0; s < R - 1; s++) {
    int send = ar_mod(r + 1 - s, R);
    if (gin_put(dc, 0, world, right, args.win, (size_t)send * cb, args.win,
                (size_t)send * cb, cb, gin_remote_signal_inc(0),
                gin_local_none(), GIN_COOP_THREAD) ||
        gin_signal_wait(dc, 0, base + (uint64_t)(R - 1 + s) + 1,
                        GIN_COOP_THREAD))
      return;
  }
  /* Every put of this round landed and was consumed before the next
   * round's inputs are written. */
  if (gin_flush(dc, 0, GIN_COOP_THREAD)) return;
  gin_barrier(dc, world, 0, GIN_COOP_THREAD);
}

/* Rank r's input element i in round k, and the sum over R ranks. */
static float ar_input(int r, int k, size_t i) {
  return (float)((r + 1 + k) * (int)(i % 7 + 1));
}
static float ar_sum(int R, int k, size_t i) {
  return (float)((R * (R + 1) / 2 + R * k) * (int)(i % 7 + 1));
}

int main(int argc, char **argv) {
  int rank = -1, nranks = 0;
  int C = argc > 1 ? atoi(argv[1]) : 1000;
  int rounds = argc > 2 ? atoi(argv[2]) : 3;
  if (C < 1 || rounds < 1) {
    fprintf(stderr, "usage: ring_allreduce [C >= 1 [ROUNDS >= 1]]\n");
    return 2;
  }
  gin_comm_t comm;
  CHECK(gin_comm_init_from_env(&comm, NULL));
  CHECK(gin_comm_rank(comm, &rank));
  CHECK(gin_comm_size(comm, &nranks));
  size_t n = (size_t)nranks * (size_t)C;
  size_t bytes = (2 * n - (size_t)C) * sizeof(float); /* vector + staging */
  void *mem;
  gin_window_t win;
  gin_devcomm_t dc;
  gin_devcomm_reqs_t reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.contexts = 1;
  reqs.signals = 1;
  reqs.barriers = 1;
  CHECK(gin_mem_alloc(bytes, &mem));
  CHECK(gin_window_register(comm, mem, bytes, &win));
  CHECK(gin_devcomm_create(comm, &reqs, &dc));
  float *h = (float *)malloc(n * sizeof(float));
  if (!h) {
    fprintf(stderr, "rank %d: out of memory\n", rank);
    return 1;
  }
  int wrong = 0;
  for (int k = 0; k < rounds && !wrong; k++) {
    for (size_t i = 0; i < n; i++)
      h[i] = ar_input(rank, k, i);
    CHECK(gin_mem_copy(mem, h, n * sizeof(float)));
    CHECK(gin_comm_barrier(comm)); /* every rank's inputs are in */
    ar_args_t a;
    memset(&a, 0, sizeof a);
    a.dc = dc;
    a.win = win;
    a.chunk = C;
    a.round = k;
    CHECK(gin_launch(k_allreduce, 1, 1, 0, &a));
    CHECK(gin_stream_synchronize(0));
    CHECK(gin_comm_get_async_error(comm));
    CHECK(gin_mem_copy(h, mem, n * sizeof(float)));
    for (size_t i = 0; i < n; i++)
      if (h[i] != ar_sum(nranks, k, i)) {
        fprintf(stderr,
                "rank %d: round %d: element %zu is %g, want %g (%d "
                "wrong)\n",
                rank, k, i, (double)h[i], (double)ar_sum(nranks, k, i),
                ++wrong);
        break;
      }
  }
  free(h);
  if (!wrong)
    printf("rank %d: ring_allreduce: %d rounds of %zu floats right\n", rank,
           rounds, n);
  CHECK(gin_devcomm_destroy(comm, &dc));
  CHECK(gin_window_deregister(comm, win));
  CHECK(gin_mem_free(mem));
  CHECK(gin_comm_destroy(comm));
  return wrong != 0;
}
