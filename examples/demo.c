/*
 * gin demo: every rank puts a message into every other rank's window with a
 * signal, from a kernel, and waits for everyone's message (each checked);
 * then a put-with-signal ping-pong between ranks 0 and 1 is timed. Exit
 * status 0 when every message arrived intact.
 *   ginrun -n 4 ./gin_demo_host        (or gin_demo_cuda on a GPU)
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gin/device/gin_device.h"
#include "gin/gin.h"

#define MSG 256
#define CHECK(call)                                                            \
  do {                                                                         \
    gin_result_t r_ = (call);                                                  \
    if (r_ != GIN_SUCCESS) {                                                   \
      fprintf(stderr, "%s failed: %s: %s\n", #call, gin_strerror(r_),          \
              gin_last_error());                                               \
      return 1;                                                                \
    }                                                                          \
  } while (0)

typedef struct demo_args {
  gin_devcomm_t dc;
  gin_window_t win; /* [nranks x MSG] inbox, then [MSG] outbox */
  int iters;
} demo_args_t;

/* Each rank writes "hello from rank r" into slot r of every peer's inbox and
 * raises signal 0 there; then waits until all nranks messages arrived. */
GIN_KERNEL(k_exchange, demo_args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  size_t out = (size_t)dc->nranks * MSG;
  char *mine = (char *)gin_window_peer_ptr(dc, args.win, world, dc->rank, out);
  const char *text = "hello from rank ";
  int n = 0;
  while (text[n]) {
    mine[n] = text[n];
    n++;
  }
  if (dc->rank >= 10) mine[n++] = (char)('0' + dc->rank / 10 % 10);
  mine[n++] = (char)('0' + dc->rank % 10);
  mine[n] = 0;
  for (int p = 0; p < dc->nranks; p++)
    gin_put(dc, 0, world, p, args.win, (size_t)dc->rank * MSG, args.win, out,
            MSG, gin_remote_signal_inc(0), gin_local_none(), GIN_COOP_THREAD);
  gin_signal_wait(dc, 0, (uint64_t)dc->nranks, GIN_COOP_THREAD);
}

/* Ping-pong of 8-byte puts with a signal between ranks 0 and 1. */
GIN_KERNEL(k_pingpong, demo_args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  if (dc->rank > 1) return;
  int peer = 1 - dc->rank;
  size_t out = (size_t)dc->nranks * MSG;
  for (int i = 1; i <= args.iters; i++) {
    if (dc->rank == 1) gin_signal_wait(dc, 1, (uint64_t)i, GIN_COOP_THREAD);
    gin_put(dc, 0, world, peer, args.win, 0, args.win, out, 8,
            gin_remote_signal_inc(1), gin_local_none(), GIN_COOP_THREAD);
    if (dc->rank == 0) gin_signal_wait(dc, 1, (uint64_t)i, GIN_COOP_THREAD);
  }
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(void) {
  gin_comm_t comm;
  int rank, nranks;
  CHECK(gin_comm_init_from_env(&comm, NULL));
  CHECK(gin_comm_rank(comm, &rank));
  CHECK(gin_comm_size(comm, &nranks));
  size_t bytes = (size_t)(nranks + 1) * MSG;
  void *mem;
  gin_window_t win;
  gin_devcomm_t dc;
  CHECK(gin_mem_alloc(bytes, &mem));
  CHECK(gin_window_register(comm, mem, bytes, &win));
  CHECK(gin_devcomm_create(comm, NULL, &dc));

  demo_args_t a;
  memset(&a, 0, sizeof a);
  a.dc = dc;
  a.win = win;
  double t0 = now_us();
  CHECK(gin_launch(k_exchange, 1, 1, 0, &a));
  CHECK(gin_stream_synchronize(0));
  double t1 = now_us();
  CHECK(gin_comm_get_async_error(comm));
  /* Every slot must hold its sender's message. */
  int wrong = 0;
  for (int p = 0; p < nranks; p++) {
    char got[MSG], want[MSG];
    CHECK(gin_mem_copy(got, (char *)mem + (size_t)p * MSG, MSG));
    snprintf(want, sizeof want, "hello from rank %d", p);
    if (strncmp(got, want, MSG) != 0) {
      fprintf(stderr, "rank %d: slot %d holds \"%.*s\", not \"%s\"\n", rank, p,
              40, got, want);
      wrong++;
    } else if (p < 4 || p == nranks - 1) {
      printf("rank %d got \"%s\" in slot %d\n", rank, got, p);
    }
  }
  printf("rank %d: %d of %d messages arrived intact; the exchange took %.1f "
         "us (kernel launch included)\n",
         rank, nranks - wrong, nranks, t1 - t0);

  CHECK(gin_comm_barrier(comm));
  if (nranks >= 2) {
    a.iters = 1000;
    double p0 = now_us();
    CHECK(gin_launch(k_pingpong, 1, 1, 0, &a));
    CHECK(gin_stream_synchronize(0));
    double p1 = now_us();
    CHECK(gin_comm_get_async_error(comm));
    if (rank == 0)
      printf("rank 0: 8-byte put+signal ping-pong with rank 1: %.2f us per "
             "round trip (%d iterations)\n",
             (p1 - p0) / a.iters, a.iters);
  }
  CHECK(gin_comm_barrier(comm));
  CHECK(gin_devcomm_destroy(comm, &dc));
  CHECK(gin_window_deregister(comm, win));
  CHECK(gin_mem_free(mem));
  CHECK(gin_comm_destroy(comm));
  return wrong != 0;
}
