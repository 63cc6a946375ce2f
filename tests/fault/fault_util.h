/*
 * Shared by the fault test programs (tests/fault): clocks, time stamps in
 * files (how a script or a dying rank tells the others when something
 * happened), and what a rank must not leave behind after teardown (TCP
 * sockets, gin memfds, threads). Host side only.
 */
#ifndef GIN_TESTS_FAULT_UTIL_H
#define GIN_TESTS_FAULT_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t fault_clock_ns(clockid_t clk) {
  struct timespec ts;
  clock_gettime(clk, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
/* Within one process tree: CLOCK_MONOTONIC. */
static inline uint64_t now_ns(void) { return fault_clock_ns(CLOCK_MONOTONIC); }

/* This process's rank as its launcher says, before gin_comm_init (ginrun,
 * torchrun, Open MPI, PMI, Slurm); NULL if none says. */
static inline const char *fault_env_rank(void) {
  static const char *const vars[] = {"GIN_RANK", "RANK", "OMPI_COMM_WORLD_RANK",
                                     "PMI_RANK", "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (getenv(vars[i])) return getenv(vars[i]);
  return NULL;
}
/* Shared with scripts (date +%s%N): CLOCK_REALTIME. */
static inline uint64_t wall_ns(void) { return fault_clock_ns(CLOCK_REALTIME); }

/* Writes "t\n" to path (created or replaced); best effort. */
static inline void stamp_write(const char *path, uint64_t t) {
  char buf[32];
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int len = snprintf(buf, sizeof buf, "%llu\n", (unsigned long long)t);
  if (fd >= 0) {
    ssize_t w = write(fd, buf, (size_t)len);
    (void)w;
    close(fd);
  }
}

/* The time stamped in path, 0 if there is none (yet). */
static inline uint64_t stamp_read(const char *path) {
  FILE *f = fopen(path, "r");
  unsigned long long t = 0;
  if (f) {
    if (fscanf(f, "%llu", &t) != 1) t = 0;
    fclose(f);
  }
  return t;
}

/* Waits up to ms for path to hold a stamp; returns it, 0 if none came. */
static inline uint64_t stamp_wait(const char *path, int ms) {
  uint64_t until = now_ns() + (uint64_t)ms * 1000000ull;
  for (;;) {
    uint64_t t = stamp_read(path);
    if (t || now_ns() >= until) return t;
    usleep(5000);
  }
}

static inline int count_tasks(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  struct dirent *e;
  if (!d) return -1;
  while ((e = readdir(d)) != NULL)
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static inline void *fault_nothing_(void *p) { return p; }
/* This process's thread count before gin starts any; one thread is made
 * and joined first, so a sanitizer's helper thread (TSan starts one with
 * the first) is in the baseline. -1 if that thread cannot be made. */
static inline int fault_task_baseline(void) {
  pthread_t th;
  if (pthread_create(&th, NULL, fault_nothing_, NULL) || pthread_join(th, NULL))
    return -1;
  return count_tasks();
}

/* GIN_TIMEOUT_MS as the library reads it (30000 when unset). */
static inline long long fault_timeout_ms(void) {
  const char *t = getenv("GIN_TIMEOUT_MS");
  return t && atoll(t) > 0 ? atoll(t) : 30000;
}

/* The TCP state of socket inode `ino` (in /proc/self/net/tcp*: 0x0A is
 * LISTEN), or -1 where it is not a TCP socket. */
static inline int tcp_inode_state(unsigned long ino) {
  static const char *files[] = {"/proc/self/net/tcp", "/proc/self/net/tcp6"};
  char line[512];
  for (int i = 0; i < 2; i++) {
    FILE *f = fopen(files[i], "r");
    if (!f) continue;
    while (fgets(line, sizeof line, f)) {
      unsigned long x = 0;
      unsigned st = 0;
      /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
      if (sscanf(line, "%*s %*s %*s %x %*s %*s %*s %*s %*s %lu", &st, &x) ==
              2 &&
          x == ino) {
        fclose(f);
        return (int)st;
      }
    }
    fclose(f);
  }
  return -1;
}

/* Whether socket inode `ino` is a TCP socket. */
static inline int tcp_inode(unsigned long ino) {
  return tcp_inode_state(ino) >= 0;
}

/* What gin left open in this process: TCP sockets and gin memfds. */
static inline int leftovers(char *out, size_t len) {
  DIR *d = opendir("/proc/self/fd");
  struct dirent *e;
  int n = 0;
  size_t k = 0;
  out[0] = 0;
  if (!d) return -1;
  while ((e = readdir(d)) != NULL) {
    char path[300], target[256];
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t t = readlink(path, target, sizeof target - 1);
    if (t <= 0) continue;
    target[t] = 0;
    unsigned long ino = 0;
    int bad = strstr(target, "memfd:gin") != NULL ||
              (sscanf(target, "socket:[%lu]", &ino) == 1 && tcp_inode(ino));
    if (!bad) continue;
    n++;
    if (k < len)
      k += (size_t)snprintf(out + k, len - k, " fd %s -> %s;", e->d_name,
                            target);
  }
  closedir(d);
  return n;
}

/* Prints "TEST: rank R: FAIL message" and counts it in (r)->fails (r: a
 * run with `rank` and `fails`). */
#define FAULT_FAIL(test, r, ...)                                               \
  do {                                                                         \
    printf(test ": rank %d: FAIL ", (r)->rank);                                \
    printf(__VA_ARGS__);                                                       \
    printf("\n");                                                              \
    (r)->fails++;                                                              \
  } while (0)

#endif
