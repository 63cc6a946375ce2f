/*
 * gin-perf's CPU-side floors (floors_host.h): raw TCP over loopback, a
 * shared-memory flag ping-pong, and the TCP relay, between this process
 * and children it forks (none of them forks).
 *
 * The children only make system calls (socket calls, clock_gettime,
 * sched_yield, write, _exit) and atomic loads and stores on memory
 * allocated before the fork, so the floors are safe to take from a
 * process that runs other threads. Every wait is bounded by
 * FLOOR_TIMEOUT_MS; on failure the parent kills and reaps the children.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floors_host.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STREAM_RX_BYTES (256u << 10) /* the reader's buffer, at least */
#define SPIN_BEFORE_YIELD 4096       /* polls before the poller yields */
#define SHM_LINE 64                  /* flags live on separate lines */

/* ------------------------------------------------------------- helpers */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* One idle poll of a bounded wait: a pause, after SPIN_BEFORE_YIELD polls
 * a yield, and every 256th of those a look at the abort word (where there
 * is one) and the clock (the limit counts from its first read). Returns 0
 * to poll again, -1 once aborted or past FLOOR_TIMEOUT_MS. */
static int idle_poll(uint32_t n, uint64_t *t0, const uint64_t *abort_flag) {
  cpu_pause();
  if (n < SPIN_BEFORE_YIELD) return 0;
  sched_yield();
  if ((n & 255) != 0) return 0;
  if (abort_flag && __atomic_load_n(abort_flag, __ATOMIC_RELAXED)) return -1;
  if (*t0 == 0)
    *t0 = now_ns();
  else if (now_ns() - *t0 > (uint64_t)FLOOR_TIMEOUT_MS * 1000000u)
    return -1;
  return 0;
}

static void floor_err(const char *what, int err) {
  if (err)
    fprintf(stderr, "gin-perf floors: %s: %s\n", what, strerror(err));
  else
    fprintf(stderr, "gin-perf floors: %s\n", what);
}

/* The child reports through write(2) only (no stdio after fork). */
static void child_err(const char *what) {
  static const char pre[] = "gin-perf floors (child): ";
  ssize_t r = write(2, pre, sizeof pre - 1);
  r = write(2, what, strlen(what));
  r = write(2, "\n", 1);
  (void)r;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Sorts s[0..n) and writes its median and 99th percentile. */
static void percentiles(double *s, int n, double *median, double *p99) {
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  size_t i99 = (size_t)((double)n * 0.99);
  if (i99 >= (size_t)n) i99 = (size_t)n - 1;
  *median = s[n / 2];
  *p99 = s[i99];
}

/* Waits for the child to exit, at most FLOOR_TIMEOUT_MS (then SIGKILL);
 * kill != 0 kills it first. Returns 0 iff it exited with status 0. */
static int reap(pid_t pid, int kill_first) {
  int st = 0;
  if (kill_first) kill(pid, SIGKILL);
  uint64_t t0 = now_ns();
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      /* ECHILD: reaped already (SIGCHLD ignored), its status is lost. */
      if (errno == ECHILD) return kill_first ? -1 : 0;
      floor_err("waitpid", errno);
      return -1;
    }
    if (now_ns() - t0 > (uint64_t)FLOOR_TIMEOUT_MS * 1000000u) {
      floor_err("child did not exit in time; killed", 0);
      kill(pid, SIGKILL);
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
      return -1;
    }
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  if (kill_first) return -1;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    floor_err("child failed", 0);
    return -1;
  }
  return 0;
}

/* ----------------------------------------------------------------- tcp */

/* What the child of a tcp floor needs; allocated before the fork. */
typedef struct tcp_job {
  char *buf;
  size_t bytes, total;
  int rounds;
  int poll;    /* receivers busy-poll the socket (1) or block in recv (0) */
  char *lines; /* the relay's shared lines (MAP_SHARED), or NULL */
} tcp_job_t;

typedef int (*tcp_child_fn)(int fd, const tcp_job_t *job);

/* Sends or receives exactly n bytes (blocking, bounded by the socket
 * timeouts). Returns 0, or -1 with errno (0 for end of stream). */
static int send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* Receives what the socket has, at least 1 byte: busy-polls (like gin's
 * proxy) where poll, else sleeps in recv (bounded by the socket's receive
 * timeout); at most FLOOR_TIMEOUT_MS either way. Returns the count, 0 at
 * end of stream, or -1 with errno. */
static ssize_t recv_some(int fd, char *p, size_t n, int poll) {
  uint64_t t0 = 0;
  for (uint32_t k = 0;; k++) {
    ssize_t r = recv(fd, p, n, poll ? MSG_DONTWAIT : 0);
    if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
      return r;
    if (!poll && errno != EINTR) { /* the socket's receive timeout */
      errno = ETIMEDOUT;
      return -1;
    }
    if (poll && idle_poll(k, &t0, NULL) < 0) {
      errno = ETIMEDOUT;
      return -1;
    }
  }
}

static int recv_all(int fd, char *p, size_t n, int poll) {
  while (n > 0) {
    ssize_t r = recv_some(fd, p, n, poll);
    if (r == 0) errno = 0;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* TCP_NODELAY and FLOOR_TIMEOUT_MS send/receive timeouts. */
static int tcp_tune(int fd) {
  int one = 1;
  struct timeval tv = {FLOOR_TIMEOUT_MS / 1000,
                       (FLOOR_TIMEOUT_MS % 1000) * 1000};
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0 ||
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0)
    return -1;
  return 0;
}

/* Child side: connect to the parent's listener, run fn, exit. */
static void tcp_child(const struct sockaddr_in *addr, tcp_child_fn fn,
                      const tcp_job_t *job) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || tcp_tune(fd) < 0 ||
      connect(fd, (const struct sockaddr *)addr, sizeof *addr) < 0) {
    child_err("connect to 127.0.0.1 failed");
    _exit(1);
  }
  int rc = fn(fd, job);
  close(fd);
  _exit(rc ? 1 : 0);
}

/* Forks a child connected to this process over loopback TCP; the child runs
 * fn(fd, job) and exits. Returns 0 with *pid_out and *fd_out set, or -1
 * (nothing left open, no child left). */
static int tcp_pair(tcp_child_fn fn, const tcp_job_t *job, pid_t *pid_out,
                    int *fd_out) {
  struct sockaddr_in addr;
  socklen_t len = sizeof addr;
  struct pollfd pfd;
  pid_t pid;
  int fd, pr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0) {
    floor_err("socket", errno);
    return -1;
  }
  if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 ||
      listen(lfd, 1) < 0 ||
      getsockname(lfd, (struct sockaddr *)&addr, &len) < 0) {
    floor_err("listen on 127.0.0.1", errno);
    goto err_close_listener;
  }
  fflush(NULL); /* no buffered output duplicated into the child */
  pid = fork();
  if (pid < 0) {
    floor_err("fork", errno);
    goto err_close_listener;
  }
  if (pid == 0) {
    close(lfd);
    tcp_child(&addr, fn, job);
  }
  pfd.fd = lfd;
  pfd.events = POLLIN;
  pfd.revents = 0;
  while ((pr = poll(&pfd, 1, FLOOR_TIMEOUT_MS)) < 0 && errno == EINTR) {
  }
  if (pr <= 0) {
    floor_err("child did not connect", pr < 0 ? errno : ETIMEDOUT);
    goto err_kill_child;
  }
  fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0) {
    floor_err("accept", errno);
    goto err_kill_child;
  }
  if (tcp_tune(fd) < 0) {
    floor_err("setsockopt", errno);
    close(fd);
    goto err_kill_child;
  }
  close(lfd);
  *pid_out = pid;
  *fd_out = fd;
  return 0;

err_kill_child:
  reap(pid, 1);
err_close_listener:
  close(lfd);
  return -1;
}

/* Ping-pong child: answer each message of job->bytes with one of its own. */
static int pingpong_child(int fd, const tcp_job_t *job) {
  for (int i = 0; i < job->rounds; i++)
    if (recv_all(fd, job->buf, job->bytes, job->poll) < 0 ||
        send_all(fd, job->buf, job->bytes) < 0) {
      child_err("ping-pong: send/recv failed");
      return -1;
    }
  return 0;
}

int floor_tcp_pingpong(size_t bytes, int poll, int iters, int warmup,
                       double *median_us, double *p99_us) {
  if (bytes < 1 || iters < 1 || warmup < 0 || !median_us || !p99_us) {
    floor_err("tcp ping-pong: need bytes >= 1, iters >= 1, warmup >= 0", 0);
    return -1;
  }
  int rc = -1, fd;
  pid_t pid;
  tcp_job_t job;
  job.bytes = bytes;
  job.total = 0;
  job.rounds = warmup + iters;
  job.poll = poll != 0;
  job.buf = (char *)malloc(bytes);
  double *s = (double *)malloc(sizeof(double) * (size_t)iters);
  if (!job.buf || !s) {
    floor_err("tcp ping-pong: out of memory", 0);
    goto out_free;
  }
  memset(job.buf, 0x5a, bytes);
  if (tcp_pair(pingpong_child, &job, &pid, &fd) < 0) goto out_free;
  for (int i = 0; i < warmup + iters; i++) {
    uint64_t t0 = now_ns();
    if (send_all(fd, job.buf, bytes) < 0 ||
        recv_all(fd, job.buf, bytes, job.poll) < 0) {
      floor_err("tcp ping-pong: send/recv", errno ? errno : ECONNRESET);
      close(fd);
      reap(pid, 1);
      goto out_free;
    }
    if (i >= warmup) s[i - warmup] = (double)(now_ns() - t0) / 1e3;
  }
  close(fd);
  if (reap(pid, 0) < 0) goto out_free;
  percentiles(s, iters, median_us, p99_us);
  rc = 0;
out_free:
  free(s);
  free(job.buf);
  return rc;
}

/* Stream child, per round: wait for the go byte, write job->total bytes in
 * writes of job->bytes, wait for the ack byte. */
static int stream_child(int fd, const tcp_job_t *job) {
  char c;
  for (int r = 0; r < job->rounds; r++) {
    if (recv_all(fd, &c, 1, 1) < 0) goto err;
    for (size_t left = job->total; left > 0;) {
      size_t n = left < job->bytes ? left : job->bytes;
      if (send_all(fd, job->buf, n) < 0) goto err;
      left -= n;
    }
    if (recv_all(fd, &c, 1, 1) < 0) goto err;
  }
  return 0;
err:
  child_err("stream: send/recv failed");
  return -1;
}

int floor_tcp_stream(size_t bytes, size_t total, double *gbps) {
  if (bytes < 1 || total < 1 || !gbps) {
    floor_err("tcp stream: need bytes >= 1, total >= 1", 0);
    return -1;
  }
  int rc = -1, fd;
  pid_t pid;
  uint64_t ns = 0;
  size_t rx = bytes > STREAM_RX_BYTES ? bytes : STREAM_RX_BYTES;
  tcp_job_t job;
  job.bytes = bytes;
  job.total = total;
  job.rounds = 2; /* one untimed round warms the connection */
  job.poll = 1;
  job.buf = (char *)malloc(rx);
  if (!job.buf) {
    floor_err("tcp stream: out of memory", 0);
    return -1;
  }
  memset(job.buf, 0x5a, rx);
  if (tcp_pair(stream_child, &job, &pid, &fd) < 0) goto out_free;
  for (int r = 0; r < job.rounds; r++) {
    char c = 'g';
    uint64_t t0 = now_ns();
    if (send_all(fd, &c, 1) < 0) goto err_io;
    for (size_t left = total; left > 0;) {
      ssize_t n = recv_some(fd, job.buf, left < rx ? left : rx, 1);
      if (n <= 0) {
        if (n == 0) errno = ECONNRESET;
        goto err_io;
      }
      left -= (size_t)n;
    }
    ns = now_ns() - t0;
    if (send_all(fd, &c, 1) < 0) goto err_io;
  }
  close(fd);
  if (reap(pid, 0) < 0) goto out_free;
  *gbps = (double)total / (double)(ns ? ns : 1);
  rc = 0;
  goto out_free;

err_io:
  floor_err("tcp stream: send/recv", errno);
  close(fd);
  reap(pid, 1);
out_free:
  free(job.buf);
  return rc;
}

/* ------------------------------------------------------------------ shm */

/* Polls *p until it reaches want or *abort_flag is set, at most
 * FLOOR_TIMEOUT_MS. Returns 0 once reached, -1 otherwise. */
static int shm_wait(const uint64_t *p, uint64_t want,
                    const uint64_t *abort_flag) {
  uint64_t t0 = 0;
  for (uint32_t n = 0;; n++) {
    if (__atomic_load_n(p, __ATOMIC_ACQUIRE) >= want) return 0;
    if (idle_poll(n, &t0, abort_flag) < 0) return -1;
  }
}

int floor_shm_pingpong(int iters, int warmup, double *median_us,
                       double *p99_us) {
  if (iters < 1 || warmup < 0 || !median_us || !p99_us) {
    floor_err("shm ping-pong: need iters >= 1, warmup >= 0", 0);
    return -1;
  }
  int rc = -1, n = warmup + iters;
  size_t map_bytes = 3 * SHM_LINE;
  uint64_t *ping, *pong, *abort_flag;
  pid_t pid;
  void *map;
  double *s = (double *)malloc(sizeof(double) * (size_t)iters);
  if (!s) {
    floor_err("shm ping-pong: out of memory", 0);
    return -1;
  }
  map = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) {
    floor_err("shm ping-pong: mmap", errno);
    goto out_free;
  }
  ping = (uint64_t *)map;
  pong = (uint64_t *)((char *)map + SHM_LINE);
  abort_flag = (uint64_t *)((char *)map + 2 * SHM_LINE);
  fflush(NULL);
  pid = fork();
  if (pid < 0) {
    floor_err("shm ping-pong: fork", errno);
    goto out_unmap;
  }
  if (pid == 0) {
    for (int i = 1; i <= n; i++) {
      if (shm_wait(ping, (uint64_t)i, abort_flag) < 0) {
        child_err("shm ping-pong: no ping in time");
        _exit(1);
      }
      __atomic_store_n(pong, (uint64_t)i, __ATOMIC_RELEASE);
    }
    _exit(0);
  }
  for (int i = 1; i <= n; i++) {
    uint64_t t0 = now_ns();
    __atomic_store_n(ping, (uint64_t)i, __ATOMIC_RELEASE);
    if (shm_wait(pong, (uint64_t)i, abort_flag) < 0) {
      floor_err("shm ping-pong: no answer from the child in time", 0);
      __atomic_store_n(abort_flag, 1, __ATOMIC_RELAXED);
      reap(pid, 1);
      goto out_unmap;
    }
    if (i > warmup) s[i - 1 - warmup] = (double)(now_ns() - t0) / 1e3;
  }
  if (reap(pid, 0) < 0) goto out_unmap;
  percentiles(s, iters, median_us, p99_us);
  rc = 0;
out_unmap:
  munmap(map, map_bytes);
out_free:
  free(s);
  return rc;
}

/* ---------------------------------------------------------------- relay */

/* The relay's lines, SHM_LINE apart in one MAP_SHARED mapping made before
 * the forks: each side's worker -> poller (send this count), poller ->
 * worker (this count arrived), and the abort word. */
enum {
  RELAY_A_OUT,
  RELAY_A_IN,
  RELAY_B_OUT,
  RELAY_B_IN,
  RELAY_ABORT,
  RELAY_LINES
};

static uint64_t *relay_line(char *lines, int k) {
  return (uint64_t *)(lines + (size_t)k * SHM_LINE);
}

/* A side's poller (a child: system calls and atomics only): sends each count
 * its worker hands over on *out, receives the peer's counts into *in, polling
 * both as gin's proxy polls its ring and socket, until `rounds` went each
 * way; bounded as shm_wait. Returns 0, or -1 (the abort word set). */
static int relay_poll(int fd, char *lines, int out_k, int in_k, int rounds) {
  uint64_t *out = relay_line(lines, out_k), *in = relay_line(lines, in_k);
  uint64_t *abort_flag = relay_line(lines, RELAY_ABORT);
  uint64_t sent = 0, got = 0, v = 0, t0 = 0, r_total = (uint64_t)rounds;
  size_t have = 0; /* bytes of v received */
  for (uint32_t n = 0; sent < r_total || got < r_total; n++) {
    uint64_t o = __atomic_load_n(out, __ATOMIC_ACQUIRE);
    if (o > sent) {
      if (send_all(fd, (const char *)&o, sizeof o) < 0) break;
      sent = o;
      n = 0;
      t0 = 0;
    }
    ssize_t r = recv(fd, (char *)&v + have, sizeof v - have, MSG_DONTWAIT);
    if (r > 0) {
      if ((have += (size_t)r) == sizeof v) {
        __atomic_store_n(in, got = v, __ATOMIC_RELEASE);
        have = 0;
      }
      n = 0;
      t0 = 0;
      continue;
    }
    if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
      break;
    if (idle_poll(n, &t0, abort_flag) < 0) break;
  }
  if (sent == r_total && got == r_total) return 0;
  __atomic_store_n(abort_flag, 1, __ATOMIC_RELAXED);
  return -1;
}

/* Side B's poller: tcp_pair's child. */
static int relay_child(int fd, const tcp_job_t *job) {
  if (relay_poll(fd, job->lines, RELAY_B_OUT, RELAY_B_IN, job->rounds) == 0)
    return 0;
  child_err("relay: side B's poller failed");
  return -1;
}

/* Side B's worker (a child with no socket): answers each count that
 * arrives with the same count. */
static int relay_work(char *lines, int rounds) {
  const uint64_t *abort_flag = relay_line(lines, RELAY_ABORT);
  for (int i = 1; i <= rounds; i++) {
    if (shm_wait(relay_line(lines, RELAY_B_IN), (uint64_t)i, abort_flag) < 0)
      return -1;
    __atomic_store_n(relay_line(lines, RELAY_B_OUT), (uint64_t)i,
                     __ATOMIC_RELEASE);
  }
  return 0;
}

int floor_tcp_relay(int iters, int warmup, double *median_us, double *p99_us) {
  if (iters < 1 || warmup < 0 || !median_us || !p99_us) {
    floor_err("tcp relay: need iters >= 1, warmup >= 0", 0);
    return -1;
  }
  int rc = -1, n = warmup + iters, fd;
  size_t map_bytes = RELAY_LINES * SHM_LINE;
  pid_t worker, pid, poller;
  tcp_job_t job;
  memset(&job, 0, sizeof job);
  job.rounds = n;
  double *s = (double *)malloc(sizeof(double) * (size_t)iters);
  void *map = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (!s || map == MAP_FAILED) {
    floor_err("tcp relay: out of memory", s ? errno : 0);
    goto out_free;
  }
  job.lines = (char *)map;
  uint64_t *abort_flag = relay_line(job.lines, RELAY_ABORT);
  /* Every process is this one's child: side B's worker first (before any
   * socket, so it holds none), then B's poller (tcp_pair), A's poller. */
  fflush(NULL);
  worker = fork();
  if (worker < 0) {
    floor_err("tcp relay: fork", errno);
    goto out_free;
  }
  if (worker == 0) _exit(relay_work(job.lines, n) ? 1 : 0);
  if (tcp_pair(relay_child, &job, &pid, &fd) < 0) {
    __atomic_store_n(abort_flag, 1, __ATOMIC_RELAXED);
    reap(worker, 1);
    goto out_free;
  }
  fflush(NULL);
  poller = fork();
  if (poller < 0) {
    floor_err("tcp relay: fork", errno);
    __atomic_store_n(abort_flag, 1, __ATOMIC_RELAXED);
    close(fd);
    reap(pid, 1);
    reap(worker, 1);
    goto out_free;
  }
  if (poller == 0)
    _exit(relay_poll(fd, job.lines, RELAY_A_OUT, RELAY_A_IN, n) ? 1 : 0);
  close(fd);                     /* the poller has it */
  for (int i = 1; i <= n; i++) { /* this process is side A's worker */
    uint64_t t0 = now_ns();
    __atomic_store_n(relay_line(job.lines, RELAY_A_OUT), (uint64_t)i,
                     __ATOMIC_RELEASE);
    if (shm_wait(relay_line(job.lines, RELAY_A_IN), (uint64_t)i, abort_flag) <
        0) {
      floor_err("tcp relay: no answer in time", 0);
      __atomic_store_n(abort_flag, 1, __ATOMIC_RELAXED);
      reap(poller, 1);
      reap(pid, 1);
      reap(worker, 1);
      goto out_free;
    }
    if (i > warmup) s[i - 1 - warmup] = (double)(now_ns() - t0) / 1e3;
  }
  int ra = reap(poller, 0), rb = reap(pid, 0), rw = reap(worker, 0);
  if (ra < 0 || rb < 0 || rw < 0) goto out_free;
  percentiles(s, iters, median_us, p99_us);
  rc = 0;
out_free:
  if (map != MAP_FAILED) munmap(map, map_bytes);
  free(s);
  return rc;
}
