/*
 * A rank for test_ginrun.sh; argv[1] picks the behaviour, any further
 * argument (a marker for pgrep) is ignored unless used below:
 *   print            lines on stdout and stderr, the job variables, a
 *                    long line and a last line without newline; exit 0
 *   exit K CODE      rank K exits with CODE, the others sleep
 *   kill K           rank K raises SIGKILL, the others sleep
 *   sleep            every rank sleeps
 *   sleep_noterm     every rank ignores SIGTERM and sleeps
 *   bootstrap        joins with gin_bs_init (GIN_UNIQUE_ID), all-gathers
 *                    the ranks and checks them; exit 0 if right
 * "Sleeping" prints "ready" and is bounded (exit 99 after 300 s), so a
 * broken ginrun cannot leave a process behind forever.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/bootstrap.h"

static int child_sleep(int rank) {
  printf("ready %d\n", rank);
  fflush(stdout);
  for (int i = 0; i < 300; i++)
    sleep(1);
  return 99;
}

static int child_bootstrap(int rank, int nranks) {
  gin_unique_id_t uid;
  gin_bs_t *bs;
  const char *s = getenv("GIN_UNIQUE_ID");
  if (!s || gin_unique_id_from_string(s, &uid) != GIN_SUCCESS ||
      gin_bs_init(&uid, rank, nranks, 20000, &bs) != GIN_SUCCESS) {
    fprintf(stderr, "bootstrap failed: %s\n", gin_last_error());
    return 1;
  }
  int *all = calloc((size_t)nranks, sizeof *all);
  all[rank] = 1000 + rank;
  int ok = gin_bs_allgather(bs, all, sizeof *all) == GIN_SUCCESS &&
           gin_bs_barrier(bs) == GIN_SUCCESS;
  for (int r = 0; ok && r < nranks; r++)
    ok = all[r] == 1000 + r;
  printf("rank %d allgather %s\n", rank, ok ? "ok" : "WRONG");
  free(all);
  gin_bs_destroy(bs);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *rs = getenv("GIN_RANK"), *ns = getenv("GIN_NRANKS");
  if (argc < 2 || !rs || !ns) {
    fprintf(stderr, "usage: ginrun ... ginrun_child MODE [args] (under "
                    "ginrun)\n");
    return 2;
  }
  int rank = atoi(rs), nranks = atoi(ns);
  const char *mode = argv[1];
  if (!strcmp(mode, "print")) {
    const char *uid = getenv("GIN_UNIQUE_ID");
    printf("out line 1 of rank %d\n", rank);
    printf("env rank=%s nranks=%s local_rank=%s local_size=%s uidlen=%zu\n", rs,
           ns, getenv("GIN_LOCAL_RANK"), getenv("GIN_LOCAL_SIZE"),
           uid ? strlen(uid) : 0);
    fflush(stdout);
    fprintf(stderr, "err line of rank %d\n", rank);
    static char big[20001];
    memset(big, 'x', 20000);
    printf("long %s\n", big);
    printf("partial of rank %d", rank);
    return 0;
  }
  if (!strcmp(mode, "exit") && argc >= 4) {
    if (rank == atoi(argv[2])) return atoi(argv[3]);
    return child_sleep(rank);
  }
  if (!strcmp(mode, "kill") && argc >= 3) {
    if (rank == atoi(argv[2])) {
      usleep(100000);
      raise(SIGKILL);
    }
    return child_sleep(rank);
  }
  if (!strcmp(mode, "sleep")) return child_sleep(rank);
  if (!strcmp(mode, "sleep_noterm")) {
    signal(SIGTERM, SIG_IGN);
    return child_sleep(rank);
  }
  if (!strcmp(mode, "bootstrap")) return child_bootstrap(rank, nranks);
  fprintf(stderr, "ginrun_child: unknown mode %s\n", mode);
  return 2;
}
