/*
 * The host target's tcp round trip taken apart without the library (issue
 * 4: gin's proxy+tcp ping-pong against raw TCP): over TCP loopback, 8-byte
 * messages, a child process as the peer, the median round trip of
 *   block  blocking send and recv (a receiver that sleeps, netperf's
 *          TCP_RR),
 *   poll   send, then recv(MSG_DONTWAIT) until the answer is there (as
 *          gin-perf's floor_tcp_pp, which also pauses between polls),
 *   relay  the proxy's shape: in each process a worker thread hands the
 *          message to a poller thread through a cache line, the poller
 *          sends it and polls its socket (and the line) and hands what it
 *          receives back the same way; no library,
 * in turn, `rounds` times, with this side's mean time in a send and in a
 * recv that returned data; and the parts: a recv that finds nothing, a
 * sched_yield, a cache-line round trip between two threads (ns each).
 * The relay spins four threads: it needs four free cores (on two it runs
 * by scheduler slices, milliseconds a trip).
 * Usage: tcp_parts [iters [rounds [modes]]] (defaults 20000, 3, all):
 * modes names those to run, e.g. "poll" or "block,poll,parts". Build:
 * cc -O2 -pthread -o tcp_parts scripts/probes/tcp_parts.c
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { BLOCK, POLL, RELAY, NMODES };
static const char *const names[NMODES] = {"block", "poll", "relay"};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what) {
  perror(what);
  exit(1);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static double median_us(uint64_t *s, int n) {
  qsort(s, (size_t)n, sizeof *s, cmp_u64);
  return (double)s[n / 2] / 1e3;
}

/* This process's side: ns in sends, and in recvs that returned data. */
static uint64_t cost[4]; /* send ns, sends, recv ns, recvs with data */

static void nodelay(int fd) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
    die("TCP_NODELAY");
}

/* One 8-byte message; `spin`: recv(MSG_DONTWAIT) until it is whole. */
static void recv8(int fd, uint64_t *v, int spin) {
  size_t got = 0;
  while (got < 8) {
    uint64_t t0 = now_ns();
    ssize_t n = recv(fd, (char *)v + got, 8 - got, spin ? MSG_DONTWAIT : 0);
    if (n > 0) {
      got += (size_t)n;
      cost[2] += now_ns() - t0, cost[3]++;
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      die("recv");
    }
  }
}

static void send8(int fd, uint64_t v) {
  uint64_t t0 = now_ns();
  if (send(fd, &v, 8, 0) != 8) die("send");
  cost[0] += now_ns() - t0, cost[1]++;
}

/* The relay's two threads in one process share these lines. */
typedef struct {
  _Alignas(64) _Atomic uint64_t out; /* worker -> poller: send this */
  _Alignas(64) _Atomic uint64_t in;  /* poller -> worker: received */
  _Alignas(64) int fd;
  uint64_t total;
} relay_t;

static void *poller(void *p) {
  relay_t *r = (relay_t *)p;
  uint64_t sent = 0, got = 0, v = 0;
  size_t have = 0; /* bytes of v received */
  while (got < r->total || sent < r->total) {
    uint64_t o = __atomic_load_n(&r->out, __ATOMIC_ACQUIRE);
    if (o > sent) send8(r->fd, sent = o);
    uint64_t t0 = now_ns();
    ssize_t n = recv(r->fd, (char *)&v + have, 8 - have, MSG_DONTWAIT);
    if (n > 0) cost[2] += now_ns() - t0, cost[3]++;
    if (n > 0 && (have += (size_t)n) == 8) {
      __atomic_store_n(&r->in, got = v, __ATOMIC_RELEASE);
      have = 0;
    } else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      die("recv");
    }
  }
  return NULL;
}

static uint64_t wait_in(relay_t *r, uint64_t want) {
  uint64_t v;
  while ((v = __atomic_load_n(&r->in, __ATOMIC_ACQUIRE)) < want) {
  }
  return v;
}

/* Runs `mode` on fd as the client (times, into s) or the server. */
static void run(int mode, int fd, int client, int iters, uint64_t *s) {
  uint64_t v = 0;
  int total = iters + iters / 10; /* a tenth warm-up */
  relay_t r;
  pthread_t th;
  if (mode == RELAY) {
    memset(&r, 0, sizeof r);
    r.fd = fd;
    r.total = (uint64_t)total;
    if (pthread_create(&th, NULL, poller, &r)) die("pthread_create");
  }
  for (int i = 0; i < total; i++) {
    uint64_t t0 = now_ns(), want = (uint64_t)i + 1;
    if (mode == RELAY) {
      if (client) {
        __atomic_store_n(&r.out, want, __ATOMIC_RELEASE);
        wait_in(&r, want);
      } else {
        wait_in(&r, want);
        __atomic_store_n(&r.out, want, __ATOMIC_RELEASE);
      }
    } else if (client) {
      send8(fd, want);
      recv8(fd, &v, mode == POLL);
    } else {
      recv8(fd, &v, mode == POLL);
      send8(fd, v);
    }
    if (client && i >= total - iters) s[i - (total - iters)] = now_ns() - t0;
  }
  if (mode == RELAY) pthread_join(th, NULL);
}

static double pair(int mode, int iters, uint64_t *s) {
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 1) ||
      getsockname(lfd, (struct sockaddr *)&a, &len))
    die("listen");
  fflush(stdout); /* nothing buffered twice */
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a)) die("connect");
    nodelay(fd);
    run(mode, fd, 0, iters, NULL);
    _exit(0);
  }
  int fd = accept(lfd, NULL, NULL);
  if (fd < 0) die("accept");
  nodelay(fd);
  run(mode, fd, 1, iters, s);
  int st;
  waitpid(pid, &st, 0);
  close(fd);
  close(lfd);
  if (!WIFEXITED(st) || WEXITSTATUS(st)) {
    fprintf(stderr, "%s: the peer failed\n", names[mode]);
    exit(1);
  }
  return median_us(s, iters);
}

/* ns per recv on an empty socket. */
static double empty_recv_ns(int n) {
  int sv[2];
  char c;
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) die("socketpair");
  uint64_t t0 = now_ns();
  for (int i = 0; i < n; i++)
    if (recv(sv[0], &c, 1, MSG_DONTWAIT) >= 0) die("recv: data");
  double ns = (double)(now_ns() - t0) / n;
  close(sv[0]);
  close(sv[1]);
  return ns;
}

static double yield_ns(int n) {
  uint64_t t0 = now_ns();
  for (int i = 0; i < n; i++)
    sched_yield();
  return (double)(now_ns() - t0) / n;
}

/* A clock_gettime(CLOCK_MONOTONIC): what the host target's timing loops
 * (gin_cycles) pay per read. */
static double clock_ns(int n) {
  uint64_t t0 = now_ns(), sink = 0;
  for (int i = 0; i < n; i++)
    sink += now_ns();
  if (sink == 1) printf(" ");
  return (double)(now_ns() - t0) / n;
}

static _Alignas(64) _Atomic uint64_t ball;

static void *bounce(void *p) {
  uint64_t n = *(const uint64_t *)p;
  for (uint64_t i = 1; i <= n; i++) {
    while (__atomic_load_n(&ball, __ATOMIC_ACQUIRE) != 2 * i - 1) {
    }
    __atomic_store_n(&ball, 2 * i, __ATOMIC_RELEASE);
  }
  return NULL;
}

/* ns per round trip of a cache line between two threads. */
static double line_rtt_ns(uint64_t n) {
  pthread_t th;
  ball = 0;
  if (pthread_create(&th, NULL, bounce, &n)) die("pthread_create");
  uint64_t t0 = now_ns();
  for (uint64_t i = 1; i <= n; i++) {
    __atomic_store_n(&ball, 2 * i - 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&ball, __ATOMIC_ACQUIRE) != 2 * i) {
    }
  }
  double ns = (double)(now_ns() - t0) / (double)n;
  pthread_join(th, NULL);
  return ns;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 20000;
  int rounds = argc > 2 ? atoi(argv[2]) : 3;
  const char *modes = argc > 3 ? argv[3] : "block,poll,relay,parts";
  if (iters < 10 || rounds < 1) {
    fprintf(stderr, "usage: tcp_parts [iters >= 10 [rounds >= 1 [modes]]]\n");
    return 2;
  }
  uint64_t *s = (uint64_t *)malloc(sizeof *s * (size_t)iters);
  if (!s) die("malloc");
  printf("# round trip median us, 8-byte messages, %d iterations, %ld cores\n",
         iters, sysconf(_SC_NPROCESSORS_ONLN));
  for (int k = 0; k < rounds; k++) {
    printf("round %d:", k + 1);
    for (int m = 0; m < NMODES; m++) {
      if (!strstr(modes, names[m])) continue;
      memset(cost, 0, sizeof cost);
      double us = pair(m, iters, s);
      printf(" %s %.3f (send %.0f ns, recv with data %.0f ns)", names[m], us,
             cost[1] ? (double)cost[0] / (double)cost[1] : 0.0,
             cost[3] ? (double)cost[2] / (double)cost[3] : 0.0);
    }
    printf("\n");
    fflush(stdout);
  }
  if (strstr(modes, "parts"))
    printf("parts: empty recv %.0f ns, sched_yield %.0f ns, cache-line round "
           "trip %.0f ns, clock_gettime %.0f ns\n",
           empty_recv_ns(100000), yield_ns(100000), line_rtt_ns(1000000),
           clock_ns(1000000));
  free(s);
  return 0;
}
