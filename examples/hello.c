#include <stdio.h>

#include "gin/device/gin_device.h"
#include "gin/gin.h"

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
  void *mem;
  args_t a;
  gin_comm_init_from_env(&comm, NULL); /* ginrun, mpirun, srun or torchrun */
  gin_mem_alloc(4096, &mem);           /* device memory on cuda */
  /* Collective, the same size on every rank. */
  gin_window_register(comm, mem, 4096, &a.win);
  gin_devcomm_create(comm, NULL, &a.dc); /* signals, counters, barriers */
  gin_launch(k_hello, 1, 1, 0, &a);      /* grid, block, stream, args */
  gin_stream_synchronize(0);
  if (gin_comm_get_async_error(comm)) { /* device-side errors, timeouts */
    fprintf(stderr, "%s\n", gin_last_error());
    return 1;
  }
  gin_devcomm_destroy(comm, &a.dc);
  gin_window_deregister(comm, a.win);
  gin_mem_free(mem);
  gin_comm_destroy(comm);
}
