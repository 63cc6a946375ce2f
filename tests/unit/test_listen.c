/*
 * After gin_comm_init a rank holds no listening TCP socket, whatever
 * GIN_WATCH says: a socket left listening would complete connections
 * (the kernel's backlog) that nobody accepts, reads or logs, held until
 * the job ends. The bootstrap's ring listener serves only the ring and
 * the peer watch's links, and is closed once they are made. Run under
 * ginrun -n N (N >= 2), with GIN_WATCH=0 and 1. Exit 0 pass, 1 fail.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault/fault_util.h"
#include "gin/gin.h"
#include "test_common.h"

static int count_listening(void) {
  DIR *d = opendir("/proc/self/fd");
  TASSERT(d, "cannot list /proc/self/fd");
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d)) != NULL) {
    char path[300], target[256];
    unsigned long ino = 0;
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t t = readlink(path, target, sizeof target - 1);
    if (t <= 0) continue;
    target[t] = 0;
    if (sscanf(target, "socket:[%lu]", &ino) == 1 &&
        tcp_inode_state(ino) == 0x0A) /* LISTEN */
      n++;
  }
  closedir(d);
  return n;
}

int main(void) {
  int rank, nranks;
  gin_comm_t comm = test_world_init(&rank, &nranks, 2);
  TCHECK(gin_comm_barrier(comm));
  int n = count_listening();
  const char *w = getenv("GIN_WATCH");
  printf("rank %d: %d listening socket(s) after init (GIN_WATCH=%s)\n", rank, n,
         w ? w : "(unset)");
  TCHECK(gin_comm_destroy(comm));
  TASSERT(n == 0, "rank %d holds %d listening TCP socket(s) after init", rank,
          n);
  if (rank == 0) printf("test_listen: passed\n");
  return 0;
}
