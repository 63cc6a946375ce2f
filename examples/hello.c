#include <stdio.h>
#include <string.h>

#include "gin/device/gin_device.h"
#include "gin/gin.h"

/* Every call returns a gin_result_t; gin_last_error() says what was wrong. */
#define CHECK(call)                                                            \
  do {                                                                         \
    if ((call) != GIN_SUCCESS) {                                               \
      fprintf(stderr, "%s: %s\n", #call, gin_last_error());                    \
      return 1;                                                                \
    }                                                                          \
  } while (0)

typedef struct {
  gin_devcomm_t dc;
  gin_window_t win;
} args_t;

/* Written once: a CUDA kernel on the cuda target, CPU threads on host. */
GIN_KERNEL(k_hello, args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int to = (dc->rank + 1) % dc->nranks;
  /* Copy 64 bytes at offset 0 of my window to offset 64 of `to`'s window,
   * then add 1 to signal 0 there (after the bytes, guaranteed). */
  gin_put(dc, 0, world, to, args.win, 64, args.win, 0, 64,
          gin_remote_signal_inc(0), gin_local_none(), GIN_COOP_THREAD);
  /* Wait until my left neighbour's bytes are here. */
  gin_signal_wait(dc, 0, 1, GIN_COOP_THREAD);
}

int main(void) {
  gin_comm_t comm;
  int rank, nranks;
  void *mem;
  args_t a;
  char text[64], got[64];
  /* ginrun, mpirun, srun or torchrun; started alone, a job of one rank. */
  CHECK(gin_comm_init_from_env(&comm, NULL));
  CHECK(gin_comm_rank(comm, &rank));
  CHECK(gin_comm_size(comm, &nranks));
  CHECK(gin_mem_alloc(4096, &mem)); /* device memory on cuda */
  snprintf(text, sizeof text, "hello from rank %d", rank);
  CHECK(gin_mem_copy(mem, text, sizeof text));
  /* Collective, the same size on every rank. */
  CHECK(gin_window_register(comm, mem, 4096, &a.win));
  CHECK(gin_devcomm_create(comm, NULL, &a.dc)); /* signals, counters, ... */
  CHECK(gin_launch(k_hello, 1, 1, 0, &a));      /* grid, block, stream, args */
  CHECK(gin_stream_synchronize(0));
  CHECK(gin_comm_get_async_error(comm)); /* device-side errors, timeouts */
  CHECK(gin_mem_copy(got, (char *)mem + 64, sizeof got));
  printf("rank %d of %d got \"%s\"\n", rank, nranks, got);
  snprintf(text, sizeof text, "hello from rank %d",
           (rank + nranks - 1) % nranks);
  CHECK(gin_devcomm_destroy(comm, &a.dc));
  CHECK(gin_window_deregister(comm, a.win));
  CHECK(gin_mem_free(mem));
  CHECK(gin_comm_destroy(comm));
  return strcmp(got, text) != 0; /* 0: my left neighbour's words arrived */
}
