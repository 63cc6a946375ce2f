/*
 * gin_comm_abort from another thread ends a host-side wait: rank 0 blocks
 * in gin_comm_barrier while rank 1 stays away; a thread of rank 0 aborts
 * after 200 ms. Rank 0's barrier must return GIN_ERR_ABORTED at once (not
 * at the 60 s timeout the test sets), and rank 1's later barrier must fail
 * at once too (the abort reached it through the control pages, or the
 * broken bootstrap ring). Run with ginrun -n 2. Exit 0 pass, 1 fail.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "gin/gin.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *abort_later(void *p) {
  usleep(200 * 1000);
  gin_comm_abort((gin_comm_t)p);
  return NULL;
}

int main(void) {
  gin_comm_t comm;
  int rank, n;
  if (gin_comm_init_from_env(&comm, NULL) != GIN_SUCCESS ||
      gin_comm_rank(comm, &rank) != GIN_SUCCESS ||
      gin_comm_size(comm, &n) != GIN_SUCCESS || n != 2) {
    fprintf(stderr, "test_abort: needs 2 ranks: %s\n", gin_last_error());
    return 1;
  }
  int fail = 0;
  if (rank == 0) {
    pthread_t th;
    pthread_create(&th, NULL, abort_later, comm);
    double t0 = now_s();
    gin_result_t rc = gin_comm_barrier(comm);
    double dt = now_s() - t0;
    pthread_join(th, NULL);
    printf("rank 0: barrier returned %s after %.2f s: %s\n", gin_strerror(rc),
           dt, gin_last_error());
    fail = rc != GIN_ERR_ABORTED || dt > 5.0;
  } else {
    sleep(2); /* rank 0 is in the barrier, then aborted */
    double t0 = now_s();
    gin_result_t rc = gin_comm_barrier(comm);
    double dt = now_s() - t0;
    printf("rank 1: barrier returned %s after %.2f s: %s\n", gin_strerror(rc),
           dt, gin_last_error());
    fail = rc == GIN_SUCCESS || dt > 5.0;
  }
  gin_comm_destroy(comm);
  printf("rank %d: %s\n", rank, fail ? "FAIL" : "ok");
  return fail;
}
