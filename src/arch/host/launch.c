/* Host target kernel launcher: each block of the grid runs as one CPU
 * thread; the launch returns when all blocks have finished. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "gin/device/arch.h"

_Thread_local int gin_host_block_idx_;
_Thread_local int gin_host_grid_dim_ = 1;

#define HOST_MAX_GRID 1024

typedef struct host_block {
  gin_host_kernel_fn fn;
  const void *args;
  int idx, grid;
} host_block_t;

static void *host_block_main(void *p) {
  host_block_t *b = (host_block_t *)p;
  gin_host_block_idx_ = b->idx;
  gin_host_grid_dim_ = b->grid;
  b->fn(b->args);
  return NULL;
}

gin_result_t gin_host_launch(gin_host_kernel_fn fn, int grid,
                             const void *args) {
  if (!fn || grid < 1 || grid > HOST_MAX_GRID)
    return GIN_ERROR(GIN_ERR_INVALID,
                     "host launch: grid %d outside [1, %d] or no kernel", grid,
                     HOST_MAX_GRID);
  if (grid == 1) {
    host_block_t b = {fn, args, 0, 1};
    host_block_main(&b);
    return GIN_SUCCESS;
  }
  host_block_t *blocks = calloc((size_t)grid, sizeof *blocks);
  pthread_t *tids = calloc((size_t)grid, sizeof *tids);
  gin_result_t res = GIN_SUCCESS;
  int started = 0;
  if (!blocks || !tids) {
    res = GIN_ERROR(GIN_ERR_NOMEM, "host launch of %d blocks", grid);
    goto free_arrays;
  }
  for (; started < grid; started++) {
    blocks[started] = (host_block_t){fn, args, started, grid};
    int e =
        pthread_create(&tids[started], NULL, host_block_main, &blocks[started]);
    if (e != 0) {
      res = GIN_ERROR(GIN_ERR_SYSTEM,
                      "host launch: thread for block %d of %d: %s", started,
                      grid, strerror(e));
      break;
    }
  }
  for (int i = 0; i < started; i++)
    pthread_join(tids[i], NULL);
free_arrays:
  free(tids);
  free(blocks);
  return res;
}
