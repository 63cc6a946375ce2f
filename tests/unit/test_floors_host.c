/*
 * gin-perf's CPU-side floors (tools/perf/floors_host.h): each floor runs
 * with small parameters and gives finite, positive figures with p99 >=
 * median; bad arguments are refused; no child process and no descriptor is
 * left behind. Sanity only, no timing thresholds.
 * Exit 0 pass, 1 fail.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <sys/wait.h>

#include "perf/floors_host.h"

#define UNIT_CHECK_NO_GIN
#include "unit_check.h"

/* Open descriptors of this process, or -1 without /proc. */
static int count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  while (readdir(d))
    n++;
  closedir(d);
  return n;
}

static void check_no_child(const char *after) {
  int st;
  pid_t r = waitpid(-1, &st, WNOHANG);
  CHECK(r == -1 && errno == ECHILD, "a child is left after %s (waitpid %d)",
        after, (int)r);
}

static void check_latency(const char *what, int rc, double med, double p99) {
  CHECK(rc == 0, "%s failed", what);
  CHECK(isfinite(med) && med > 0, "%s median %g", what, med);
  CHECK(isfinite(p99) && p99 >= med, "%s p99 %g < median %g", what, p99, med);
  printf("%-26s median %8.2f us  p99 %8.2f us\n", what, med, p99);
}

int main(void) {
  int fds = count_fds();
  double med = -1, p99 = -1, gbps = -1;
  int rc;

  rc = floor_tcp_pingpong(8, 1, 200, 20, &med, &p99);
  check_latency("tcp ping-pong 8 B", rc, med, p99);
  check_no_child("tcp ping-pong");
  med = p99 = -1;
  rc = floor_tcp_pingpong(8, 0, 200, 20, &med, &p99);
  check_latency("tcp ping-pong 8 B blocking", rc, med, p99);
  check_no_child("tcp ping-pong blocking");
  med = p99 = -1;
  rc = floor_tcp_pingpong(1 << 20, 1, 5, 1, &med, &p99);
  check_latency("tcp ping-pong 1 MiB", rc, med, p99);
  check_no_child("tcp ping-pong 1 MiB");
  med = p99 = -1;
  rc = floor_tcp_pingpong(1 << 20, 0, 5, 1, &med, &p99);
  check_latency("tcp ping-pong 1 MiB blocking", rc, med, p99);
  check_no_child("tcp ping-pong 1 MiB blocking");

  rc = floor_tcp_stream(4096, 4 << 20, &gbps);
  CHECK(rc == 0, "tcp stream failed");
  CHECK(isfinite(gbps) && gbps > 0, "tcp stream %g GB/s", gbps);
  printf("%-26s %8.3f GB/s\n", "tcp stream 4 KiB writes", gbps);
  check_no_child("tcp stream");
  gbps = -1;
  rc = floor_tcp_stream(1 << 20, 3 << 19, &gbps); /* last write partial */
  CHECK(rc == 0 && isfinite(gbps) && gbps > 0, "tcp stream partial %g", gbps);
  check_no_child("tcp stream partial");

  med = p99 = -1;
  rc = floor_shm_pingpong(2000, 200, &med, &p99);
  check_latency("shm flag ping-pong", rc, med, p99);
  check_no_child("shm ping-pong");

  /* The relay's four processes spin: on a small machine they take
   * scheduler turns (milliseconds a trip), so a few round trips. */
  med = p99 = -1;
  rc = floor_tcp_relay(10, 2, &med, &p99);
  check_latency("tcp relay", rc, med, p99);
  check_no_child("tcp relay");

  /* Bad arguments: refused, outputs untouched, nothing forked. */
  med = p99 = gbps = 7;
  CHECK(floor_tcp_pingpong(0, 1, 10, 0, &med, &p99) == -1, "bytes 0 accepted");
  CHECK(floor_tcp_pingpong(8, 0, 0, 0, &med, &p99) == -1, "iters 0 accepted");
  CHECK(floor_tcp_pingpong(8, 1, 10, -1, &med, &p99) == -1,
        "warmup -1 accepted");
  CHECK(floor_tcp_stream(8, 0, &gbps) == -1, "total 0 accepted");
  CHECK(floor_shm_pingpong(1, -1, &med, &p99) == -1, "warmup -1 accepted");
  CHECK(floor_tcp_relay(0, 0, &med, &p99) == -1, "relay iters 0 accepted");
  CHECK(floor_tcp_relay(5, -1, &med, &p99) == -1, "relay warmup -1 accepted");
  CHECK(med == 7 && p99 == 7 && gbps == 7, "outputs written on failure");
  check_no_child("bad arguments");

  if (fds >= 0)
    CHECK(count_fds() == fds, "descriptors: %d before, %d after", fds,
          count_fds());
  printf("%s\n", failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}
