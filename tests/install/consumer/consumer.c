/*
 * A program outside gin's tree, built against an installed gin three ways
 * (find_package, pkg-config, a plain compiler line: install_check.sh): a
 * ring of put+signal between the ranks, checked, then an out-of-window put
 * that the library must report (device checks are on by default, whatever
 * the compile line). Exit 0 when both hold on every rank.
 */
#include <stdio.h>
#include <string.h>

#include "gin/device/gin_device.h"
#include "gin/gin.h"

#define WIN 4096

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
  int bad; /* 1: rank 0 puts 8 bytes at offset WIN, outside the window */
} args_t;

GIN_KERNEL(k_ring, args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  if (args.bad) {
    if (dc->rank == 0)
      gin_put(dc, 0, world, 1 % dc->nranks, args.win, WIN, args.win, 0, 8,
              gin_remote_signal_inc(1), gin_local_none(), GIN_COOP_THREAD);
    return;
  }
  int to = (dc->rank + 1) % dc->nranks;
  gin_put(dc, 0, world, to, args.win, 64, args.win, 0, 64,
          gin_remote_signal_inc(0), gin_local_none(), GIN_COOP_THREAD);
  gin_signal_wait(dc, 0, 1, GIN_COOP_THREAD);
}

int main(void) {
  gin_comm_t comm;
  int rank, n;
  void *mem;
  args_t a;
  char text[64], got[64], want[64];
  CHECK(gin_comm_init_from_env(&comm, NULL));
  CHECK(gin_comm_rank(comm, &rank));
  CHECK(gin_comm_size(comm, &n));
  CHECK(gin_mem_alloc(WIN, &mem));
  snprintf(text, sizeof text, "hello from rank %d", rank);
  CHECK(gin_mem_copy(mem, text, sizeof text));
  CHECK(gin_window_register(comm, mem, WIN, &a.win));
  CHECK(gin_devcomm_create(comm, NULL, &a.dc));
  a.bad = 0;
  CHECK(gin_launch(k_ring, 1, 1, 0, &a));
  CHECK(gin_stream_synchronize(0));
  CHECK(gin_comm_get_async_error(comm));
  CHECK(gin_mem_copy(got, (char *)mem + 64, sizeof got));
  snprintf(want, sizeof want, "hello from rank %d", (rank + n - 1) % n);
  if (strcmp(got, want)) {
    fprintf(stderr, "consumer: rank %d got \"%s\", not \"%s\"\n", rank, got,
            want);
    return 1;
  }
  CHECK(gin_comm_barrier(comm));
  a.bad = 1;
  CHECK(gin_launch(k_ring, 1, 1, 0, &a));
  CHECK(gin_stream_synchronize(0));
  gin_result_t r = GIN_SUCCESS;
  if (rank == 0) r = gin_comm_get_async_error(comm);
  char msg[512];
  snprintf(msg, sizeof msg, "%s", gin_last_error());
  (void)gin_comm_barrier(comm); /* fails once aborted; only a meeting */
  if (rank != 0) {
    r = gin_comm_get_async_error(comm);
    snprintf(msg, sizeof msg, "%s", gin_last_error());
  }
  const char *words = rank == 0 ? "outside window" : "aborted by rank 0";
  if (r == GIN_SUCCESS || !strstr(msg, words)) {
    fprintf(stderr, "consumer: rank %d: the out-of-window put gave %s '%s'\n",
            rank, gin_strerror(r), msg);
    return 1;
  }
  printf("consumer: rank %d of %d, gin %s: ring ok; bad put reported: %s\n",
         rank, n, gin_version(), msg);
  gin_devcomm_destroy(comm, &a.dc);
  gin_window_deregister(comm, a.win);
  gin_mem_free(mem);
  CHECK(gin_comm_destroy(comm));
  return 0;
}
