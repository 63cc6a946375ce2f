/*
 * tcp transport driven directly, between forked ranks joined by the real
 * bootstrap, each with a minimal communicator (rank, size, timeout,
 * bootstrap, unique id, window table). The tables may disagree on
 * purpose, which a real job never does, to make one rank send what the
 * other must refuse:
 *   - a put outside the receiver's window, a signal outside its signal
 *     window: GIN_ERR_PROTOCOL from progress naming the peer, not a byte
 *     written, the connection closed (the sender sees GIN_ERR_REMOTE);
 *   - a window the receiver registers late: applied once it is live;
 *     never registered: GIN_ERR_PROTOCOL after the timeout;
 *   - a peer that exits: GIN_ERR_REMOTE; one that calls fini: a clean
 *     goodbye, later puts GIN_ERR_REMOTE;
 *   - tcp use that is not symmetric: init fails on every rank;
 *   - connections with bad hellos during init (a hand-driven rank 0):
 *     refused while the right one is accepted, then a hand-encoded put;
 *   - bad operations after a valid hello (hand-driven ranks): half a
 *     header then a close, a chunk over GIN_TCP_MAX_CHUNK, junk: each
 *     connection failed alone, naming the peer, nothing written;
 *   - large puts through a 64 KiB send buffer (GIN_ERR_AGAIN, parts),
 *     put_value, signal with mode, and puts to self;
 *   - sources overwritten right after flush while the peer reads nothing
 *     yet (payloads sent from their source, received in place).
 * Exit 0 pass, 1 fail.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "transport/tcp.h"
#include "transport/transport.h"

#include "unit_check.h"

#define NWINS 4
#define SIG_BYTES 256

/* One rank's minimal job as a transport sees it: window 0 data, 1
 * signals; the all-gather over a bootstrap of its own. */
typedef struct rank_ctx {
  gin_job_t job;
  gin_bs_t *bs;
  gin_unique_id_t uid;
  gin_ctrl_t ctrl;
  char msg[256];
  gin_win_slot_t wins[NWINS];
  const gin_transport_ops_t *ops;
  void *st;
} rank_ctx_t;

/* Registers `size` bytes of a `alloc`-byte buffer filled with 0xee. */
static void win_add(rank_ctx_t *r, int i, size_t size, size_t alloc, int live) {
  r->wins[i].ptr = malloc(alloc);
  memset(r->wins[i].ptr, 0xee, alloc);
  if (i == 1) memset(r->wins[i].ptr, 0, alloc);
  r->wins[i].size = size;
  r->wins[i].gen = 1;
  r->wins[i].live = live;
}

static int all_bytes(const void *p, int v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (((const uint8_t *)p)[i] != (uint8_t)v) return 0;
  return 1;
}

static uint64_t sig_load(rank_ctx_t *r, int s) {
  return __atomic_load_n((uint64_t *)r->wins[1].ptr + s, __ATOMIC_ACQUIRE);
}

/* Progress until signal s reaches want (s < 0: until an error) or ms pass;
 * returns the first error, or GIN_SUCCESS. */
static gin_result_t pump(rank_ctx_t *r, int s, uint64_t want, int ms) {
  uint64_t end = gin_now_ns() + (uint64_t)ms * 1000000ull;
  while (gin_now_ns() < end) {
    gin_result_t res = r->ops->progress(r->st);
    if (res != GIN_SUCCESS) return res;
    if (s >= 0 && sig_load(r, s) >= want) return GIN_SUCCESS;
    sched_yield(); /* as a proxy thread does; a sleep starves it under load */
  }
  return GIN_SUCCESS;
}

/* A put as the proxy issues it: retried with progress while AGAIN. */
static gin_result_t put(rank_ctx_t *r, gin_xfer_t x) {
  uint64_t end = gin_now_ns() + 10000000000ull;
  gin_result_t res;
  while ((res = r->ops->put(r->st, &x)) == GIN_ERR_AGAIN && gin_now_ns() < end)
    r->ops->progress(r->st);
  return res;
}

/* What a rank's proxy thread does while the application waits: keep
 * progressing. */
typedef struct progress_bg {
  rank_ctx_t *r;
  int stop;
} progress_bg_t;

static void *progress_main(void *p) {
  progress_bg_t *bg = (progress_bg_t *)p;
  while (!__atomic_load_n(&bg->stop, __ATOMIC_ACQUIRE)) {
    bg->r->ops->progress(bg->r->st);
    sched_yield(); /* as a proxy thread does; a sleep starves it under load */
  }
  return NULL;
}

/* A bootstrap barrier that keeps progressing meanwhile, as a real rank's
 * proxy does. A rank that has received everything may still hold queued
 * bytes for a peer (put copies into the send ring, progress writes it to
 * the socket as the peer reads): blocking without progress would keep that
 * peer waiting for them until its deadline. */
static void barrier_progressing(rank_ctx_t *r) {
  progress_bg_t bg = {.r = r};
  pthread_t t;
  int started = pthread_create(&t, NULL, progress_main, &bg) == 0;
  CHECK(started, "progress thread");
  gin_bs_barrier(r->bs);
  __atomic_store_n(&bg.stop, 1, __ATOMIC_RELEASE);
  if (started) pthread_join(t, NULL);
}

static gin_xfer_t xfer(int peer, const void *src, uint64_t bytes,
                       uint64_t dst_off, int sig, uint64_t sig_off) {
  gin_xfer_t x = {.op = GIN_OP_PUT,
                  .peer = peer,
                  .src = src,
                  .bytes = bytes,
                  .dst_win = 0,
                  .dst_off = dst_off,
                  .has_signal = sig,
                  .sig_win = 1,
                  .sig_off = sig_off,
                  .sig_add = 1};
  return x;
}

typedef void (*scenario_fn)(rank_ctx_t *r);

static gin_result_t job_allgather(void *owner, void *all, size_t bytes) {
  return gin_bs_allgather(((rank_ctx_t *)owner)->bs, all, bytes);
}
static void job_abort(void *owner) {
  rank_ctx_t *r = (rank_ctx_t *)owner;
  __atomic_store_n(&r->ctrl.habort, (uint32_t)r->job.rank + 1,
                   __ATOMIC_RELEASE);
}

/* The rest of r's job: the root and secret of r->uid, the window table,
 * the control page, the calls up. */
static void job_fill(rank_ctx_t *r) {
  gin_bs_uid_t u;
  memcpy(&u, r->uid.bytes, sizeof u);
  r->job.root.family = u.family;
  r->job.root.port = u.port;
  memcpy(r->job.root.addr, u.addr, 16);
  memcpy(r->job.secret, u.secret, 16);
  r->job.wins = r->wins;
  r->job.max_windows = NWINS;
  r->job.ctrl = &r->ctrl;
  r->job.proxy_msg = r->msg;
  r->job.proxy_msg_len = sizeof r->msg;
  r->job.owner = r;
  r->job.allgather = job_allgather;
  r->job.abort = job_abort;
}

/* Runs fn on nranks forked ranks; window sizes per rank from the
 * scenario (fn sets them up before init via r->job.rank). */
static int run(const char *name, int nranks, int64_t timeout_ms,
               scenario_fn fn) {
  static const uint8_t secret[16] = {9, 8, 7, 6, 5, 4, 3, 2, 1};
  gin_unique_id_t uid;
  if (gin_bs_root_start(nranks, "127.0.0.1", 0, secret, 10000, &uid)) {
    fprintf(stderr, "FAIL %s: bootstrap root: %s\n", name, gin_last_error());
    return 1;
  }
  fflush(NULL);
  pid_t pids[8];
  for (int k = 0; k < nranks; k++) {
    if ((pids[k] = fork()) != 0) continue;
    alarm((unsigned)(timeout_ms / 1000) + 20); /* a bound on a stuck rank */
    rank_ctx_t *r = calloc(1, sizeof *r);
    r->job.rank = k;
    r->job.nranks = nranks;
    r->job.timeout_ms = timeout_ms;
    r->uid = uid;
    job_fill(r);
    r->ops = &gin_transport_tcp;
    if (gin_bs_init(&uid, k, nranks, 10000, &r->bs) != GIN_SUCCESS) {
      fprintf(stderr, "FAIL %s: rank %d bootstrap: %s\n", name, k,
              gin_last_error());
      _exit(1);
    }
    fn(r);
    fflush(NULL);
    _exit(failures ? 1 : 0);
  }
  int bad = 0;
  for (int k = 0; k < nranks; k++) {
    int st = 0;
    waitpid(pids[k], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "FAIL %s: rank %d exited with status 0x%x\n", name, k,
              st);
      bad = 1;
    }
  }
  printf("%-36s %s\n", name, bad ? "FAIL" : "ok");
  return bad;
}

static gin_result_t init_all(rank_ctx_t *r) {
  uint8_t use[8] = {0};
  for (int k = 0; k < r->job.nranks; k++)
    use[k] = k != r->job.rank;
  return r->ops->init(&r->job, use, &r->st);
}

/* ------------------------------------------------------------ scenarios */

/* Rank 0 believes window 0 is 64 KiB; rank 1 registered 4 KiB of it. */
static void sc_put_outside(rank_ctx_t *r) {
  win_add(r, 0, r->job.rank == 0 ? 65536 : 4096, 65536, 1);
  win_add(r, 1, SIG_BYTES, SIG_BYTES, 1);
  CHECK(init_all(r) == GIN_SUCCESS, "init");
  if (r->job.rank == 0) {
    static uint8_t src[8192];
    memset(src, 0x5a, sizeof src);
    CHECK(put(r, xfer(1, src, sizeof src, 0, 1, 0)) == GIN_SUCCESS, "put");
    gin_result_t res = pump(r, -1, 0, 5000);
    CHECK(res == GIN_ERR_REMOTE && strstr(gin_last_error(), "peer 1"),
          "sender sees the refusal as a closed connection: %d", res);
    CHECK(put(r, xfer(1, src, 8, 0, 1, 0)) == GIN_ERR_REMOTE,
          "later puts fail");
  } else {
    gin_result_t res = pump(r, -1, 0, 5000);
    CHECK(res == GIN_ERR_PROTOCOL && strstr(gin_last_error(), "peer 0") &&
              strstr(gin_last_error(), "outside window"),
          "receiver reports the bad put: %d", res);
    CHECK(all_bytes(r->wins[0].ptr, 0xee, 65536), "nothing written");
    CHECK(sig_load(r, 0) == 0, "no signal");
    CHECK(pump(r, -1, 0, 50) == GIN_SUCCESS, "reported once");
  }
  gin_bs_barrier(r->bs);
  r->ops->fini(r->st);
}

/* Rank 0 believes the signal window is 4 KiB; rank 1 has SIG_BYTES. The
 * put before it is fine and lands; the signal is refused. */
static void sc_signal_outside(rank_ctx_t *r) {
  win_add(r, 0, 4096, 4096, 1);
  win_add(r, 1, r->job.rank == 0 ? 4096 : SIG_BYTES, 4096, 1);
  CHECK(init_all(r) == GIN_SUCCESS, "init");
  if (r->job.rank == 0) {
    static uint8_t src[64];
    memset(src, 0x5a, sizeof src);
    CHECK(put(r, xfer(1, src, 64, 0, 1, 0)) == GIN_SUCCESS, "good put");
    gin_xfer_t x = {.op = GIN_OP_SIGNAL,
                    .peer = 1,
                    .has_signal = 1,
                    .sig_win = 1,
                    .sig_off = 2048,
                    .sig_add = 1};
    CHECK(put(r, x) == GIN_SUCCESS, "signal");
    CHECK(pump(r, -1, 0, 5000) == GIN_ERR_REMOTE, "sender sees the close");
  } else {
    gin_result_t res = pump(r, -1, 0, 5000);
    CHECK(res == GIN_ERR_PROTOCOL &&
              strstr(gin_last_error(), "signal offset 2048"),
          "receiver reports the bad signal: %d", res);
    CHECK(all_bytes(r->wins[0].ptr, 0x5a, 64) && sig_load(r, 0) == 1,
          "the good put before it was applied");
    CHECK(all_bytes((uint8_t *)r->wins[1].ptr + SIG_BYTES, 0, 4096 - SIG_BYTES),
          "nothing written past the signal window");
  }
  gin_bs_barrier(r->bs);
  r->ops->fini(r->st);
}

/* Rank 1 registers window 0 only after the put arrived: it waits. */
static void sc_late_window(rank_ctx_t *r) {
  win_add(r, 0, 4096, 4096, r->job.rank == 0);
  win_add(r, 1, SIG_BYTES, SIG_BYTES, 1);
  CHECK(init_all(r) == GIN_SUCCESS, "init");
  if (r->job.rank == 0) {
    static uint8_t src[100];
    memset(src, 0x5a, sizeof src);
    CHECK(put(r, xfer(1, src, 100, 10, 1, 8)) == GIN_SUCCESS, "put");
    CHECK(pump(r, -1, 0, 100) == GIN_SUCCESS, "progress");
  } else {
    CHECK(pump(r, -1, 0, 300) == GIN_SUCCESS, "waiting is no error");
    CHECK(sig_load(r, 1) == 0 && all_bytes(r->wins[0].ptr, 0xee, 4096),
          "nothing applied before registration");
    __atomic_store_n(&r->wins[0].live, 1, __ATOMIC_RELEASE);
    CHECK(pump(r, 1, 1, 5000) == GIN_SUCCESS && sig_load(r, 1) == 1,
          "applied after registration");
    CHECK(all_bytes((uint8_t *)r->wins[0].ptr + 10, 0x5a, 100) &&
              all_bytes(r->wins[0].ptr, 0xee, 10),
          "payload in place");
  }
  gin_bs_barrier(r->bs);
  r->ops->fini(r->st);
}

/* Rank 1 never registers window 0: refused after the timeout (400 ms). */
static void sc_never_registered(rank_ctx_t *r) {
  win_add(r, 0, 4096, 4096, r->job.rank == 0);
  win_add(r, 1, SIG_BYTES, SIG_BYTES, 1);
  CHECK(init_all(r) == GIN_SUCCESS, "init");
  if (r->job.rank == 0) {
    static uint8_t src[100];
    CHECK(put(r, xfer(1, src, 100, 0, 1, 0)) == GIN_SUCCESS, "put");
  } else {
    uint64_t t0 = gin_now_ns();
    gin_result_t res = pump(r, -1, 0, 5000);
    double ms = (double)(gin_now_ns() - t0) / 1e6;
    CHECK(res == GIN_ERR_PROTOCOL && strstr(gin_last_error(), "not registered"),
          "refused: %d", res);
    CHECK(ms >= 400 && ms < 3000, "after the timeout (%.0f ms)", ms);
  }
  gin_bs_barrier(r->bs);
  r->ops->fini(r->st);
}

/* Rank 1 exits without fini; then a second job where it says goodbye. */
static void sc_peer_exits(rank_ctx_t *r) {
  win_add(r, 0, 4096, 4096, 1);
  win_add(r, 1, SIG_BYTES, SIG_BYTES, 1);
  CHECK(init_all(r) == GIN_SUCCESS, "init");
  gin_bs_barrier(r->bs);
  if (r->job.rank == 1) _exit(failures ? 1 : 0);
  gin_result_t res = pump(r, -1, 0, 5000);
  CHECK(res == GIN_ERR_REMOTE && strstr(gin_last_error(), "rank 1 closed"),
        "exit noticed: %d", res);
  static uint8_t src[8];
  CHECK(put(r, xfer(1, src, 8, 0, 0, 0)) == GIN_ERR_REMOTE, "put fails");
  r->ops->fini(r->st);
}

static void sc_goodbye(rank_ctx_t *r) {
  win_add(r, 0, 4096, 4096, 1);
  win_add(r, 1, SIG_BYTES, SIG_BYTES, 1);
  CHECK(init_all(r) == GIN_SUCCESS, "init");
  gin_bs_barrier(r->bs);
  if (r->job.rank == 1) {
    r->ops->fini(r->st);
    return;
  }
  CHECK(pump(r, -1, 0, 300) == GIN_SUCCESS, "a goodbye is no error");
  static uint8_t src[8];
  CHECK(put(r, xfer(1, src, 8, 0, 0, 0)) == GIN_ERR_REMOTE &&
            strstr(gin_last_error(), "destroyed"),
        "put after the goodbye");
  r->ops->fini(r->st);
}

/* Rank 0 would use tcp with rank 1, rank 1 not with rank 0. */
static void sc_asymmetric(rank_ctx_t *r) {
  win_add(r, 0, 4096, 4096, 1);
  uint8_t use[2] = {0, r->job.rank == 0};
  gin_result_t res = r->ops->init(&r->job, use, &r->st);
  CHECK(res == GIN_ERR_INVALID && strstr(gin_last_error(), "other way"),
        "init refused on rank %d: %d", r->job.rank, res);
}

/* Rank 0 is driven by hand: it joins the all-gather with tcp.c's entry
 * layout (status i32, family u16, port u16, addr[16], then a bit per rank
 * it uses tcp with), knocks on rank 1 with bad hellos, then says the right
 * one and sends a put by hand (after a flood of silent connections).
 * Rank 1 runs the real init. */
#define TCP_FLOOD 150 /* silent connections, over 2x the pending table */
static int knock(const uint8_t *entry, const void *bytes, size_t len) {
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_port = htons((uint16_t)(entry[6] | entry[7] << 8));
  memcpy(&a.sin_addr, entry + 8, 4);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) return -1;
  if (len && send(fd, bytes, len, MSG_NOSIGNAL) != (ssize_t)len) return -1;
  return fd;
}

/* Whether the peer closed fd within 5 s (EOF or a reset; a timeout or
 * data is not a close). */
static int closed_by_peer(int fd) {
  struct timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char b;
  ssize_t n = recv(fd, &b, 1, 0);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static void sc_bad_hellos(rank_ctx_t *r) {
  win_add(r, 0, 4096, 4096, 1);
  win_add(r, 1, SIG_BYTES, SIG_BYTES, 1);
  if (r->job.rank == 1) {
    CHECK(init_all(r) == GIN_SUCCESS, "init despite the bad knocks");
    CHECK(pump(r, 0, 1, 5000) == GIN_SUCCESS && sig_load(r, 0) == 1,
          "hand-encoded put applied");
    CHECK(all_bytes((uint8_t *)r->wins[0].ptr + 64, 0x42, 16) &&
              all_bytes(r->wins[0].ptr, 0xee, 64),
          "its payload in place");
    gin_bs_barrier(r->bs);
    r->ops->fini(r->st);
    return;
  }
  uint8_t all[2][32];
  memset(all, 0, sizeof all);
  all[0][24] = 1u << 1; /* rank 0 uses tcp with rank 1 */
  CHECK(gin_bs_allgather(r->bs, all, 32) == GIN_SUCCESS, "all-gather");
  gin_bs_uid_t u;
  memcpy(&u, r->uid.bytes, sizeof u);
  gin_tcp_hello_t h = {.magic = GIN_TCP_HELLO_MAGIC,
                       .version = GIN_TCP_VERSION,
                       .rank = 0,
                       .nranks = 2};
  memcpy(h.secret, u.secret, 16);
  uint8_t good[GIN_TCP_HELLO_BYTES], bad[GIN_TCP_HELLO_BYTES];
  gin_tcp_hello_encode(&h, good);
  int fds[5 + TCP_FLOOD], nf = 0;
  fds[nf++] = knock(all[1], NULL, 0); /* silent */
  fds[nf++] = knock(all[1], "not a hello", 11);
  h.secret[3] ^= 1;
  gin_tcp_hello_encode(&h, bad);
  fds[nf++] = knock(all[1], bad, sizeof bad); /* wrong secret */
  h.secret[3] ^= 1;
  h.version = 99;
  gin_tcp_hello_encode(&h, bad);
  fds[nf++] = knock(all[1], bad, sizeof bad); /* wrong version */
  h.version = GIN_TCP_VERSION;
  h.rank = 1;
  gin_tcp_hello_encode(&h, bad);
  fds[nf++] = knock(all[1], bad, sizeof bad); /* not a lower rank */
  /* A flood, more than the listener's pending table holds: the oldest
   * silent ones are dropped as new ones come, the rest closed once the
   * real rank has connected. */
  for (int i = 0; i < TCP_FLOOD; i++)
    fds[nf++] = knock(all[1], NULL, 0);
  usleep(200000);                            /* refused before... */
  int fd = knock(all[1], good, sizeof good); /* ...the real one */
  for (int i = 0; i < nf; i++)
    CHECK(fds[i] >= 0 && closed_by_peer(fds[i]), "knock %d refused", i);
  gin_tcp_hdr_t op = {.magic = GIN_TCP_HDR_MAGIC,
                      .version = GIN_TCP_VERSION,
                      .op = GIN_TCP_OP_PUT,
                      .flags = GIN_TCP_F_SIGNAL,
                      .dst_gen = 1,
                      .dst_off = 64,
                      .bytes = 16,
                      .sig_win = 1,
                      .sig_gen = 1,
                      .sig_add = 1};
  uint8_t msg[GIN_TCP_HDR_BYTES + 16];
  gin_tcp_hdr_encode(&op, msg);
  memset(msg + GIN_TCP_HDR_BYTES, 0x42, 16);
  CHECK(fd >= 0 && send(fd, msg, sizeof msg, MSG_NOSIGNAL) == sizeof msg,
        "hand-encoded put sent");
  gin_bs_barrier(r->bs);
  for (int i = 0; i < nf; i++)
    close(fds[i]);
  close(fd);
}

/* Ranks 0..2 are driven by hand: each says a valid hello to rank 3, which
 * runs the real init (one connection per pair: a peer's bad operation
 * fails that connection for good, hence one peer per hostile message),
 * then in turn: rank 0 half an operation header and closes, rank 1 a put
 * header of GIN_TCP_MAX_CHUNK + 1 bytes and a payload after it, rank 2
 * 256 bytes of junk. Rank 3 fails each connection alone, naming the peer,
 * writes nothing, and later puts to that peer fail. (A put header outside
 * the window after a valid hello: sc_put_outside.) */
#define BAD_OPS 3 /* hand-driven ranks; the real one is rank BAD_OPS */
static void sc_bad_ops(rank_ctx_t *r) {
  int me = r->job.rank, n = BAD_OPS + 1;
  win_add(r, 0, 4096, 65536, 1); /* 4 KiB registered, 64 KiB checked */
  win_add(r, 1, SIG_BYTES, SIG_BYTES, 1);
  if (me == BAD_OPS) {
    static const struct {
      gin_result_t res;
      const char *word;
    } want[BAD_OPS] = {{GIN_ERR_REMOTE, "rank 0 closed the connection"},
                       {GIN_ERR_PROTOCOL, "1048577 bytes in one chunk"},
                       {GIN_ERR_PROTOCOL, "bad magic"}};
    CHECK(init_all(r) == GIN_SUCCESS, "init with the hand-driven peers");
    for (int k = 0; k < BAD_OPS; k++) {
      gin_bs_barrier(r->bs); /* rank k sends now */
      gin_result_t res = pump(r, -1, 0, 5000);
      char peer[32];
      snprintf(peer, sizeof peer, "rank %d, peer %d:", me, k);
      CHECK(res == want[k].res && strstr(gin_last_error(), peer) &&
                strstr(gin_last_error(), want[k].word),
            "message from rank %d refused: %d (%s)", k, res, gin_last_error());
      CHECK(pump(r, -1, 0, 50) == GIN_SUCCESS, "reported once");
      static uint8_t src[8];
      CHECK(put(r, xfer(k, src, 8, 0, 1, 0)) == want[k].res,
            "later puts to rank %d fail", k);
      CHECK(all_bytes(r->wins[0].ptr, 0xee, 65536) &&
                all_bytes(r->wins[1].ptr, 0, SIG_BYTES),
            "nothing written after rank %d's message", k);
      gin_bs_barrier(r->bs); /* rank k has seen its connection closed */
    }
    r->ops->fini(r->st);
    return;
  }
  uint8_t all[BAD_OPS + 1][32], use[BAD_OPS + 1] = {0};
  CHECK(gin_tcp_entry_bytes(n) == sizeof all[0], "entry size");
  use[BAD_OPS] = 1; /* this rank uses tcp with the real one only */
  gin_tcp_entry_encode(GIN_SUCCESS, NULL, use, n, all[me]);
  CHECK(gin_bs_allgather(r->bs, all, sizeof all[0]) == GIN_SUCCESS &&
            gin_tcp_entries_check(all, sizeof all, n, NULL, 0, NULL) ==
                GIN_SUCCESS,
        "all-gather");
  gin_bs_uid_t u;
  memcpy(&u, r->uid.bytes, sizeof u);
  gin_tcp_hello_t h = {.magic = GIN_TCP_HELLO_MAGIC,
                       .version = GIN_TCP_VERSION,
                       .rank = me,
                       .nranks = n};
  memcpy(h.secret, u.secret, 16);
  uint8_t msg[GIN_TCP_HDR_BYTES + 4096];
  gin_tcp_hello_encode(&h, msg);
  int fd = knock(all[BAD_OPS], msg, GIN_TCP_HELLO_BYTES);
  CHECK(fd >= 0, "valid hello sent");
  size_t len = sizeof msg;
  gin_tcp_hdr_t op = {.magic = GIN_TCP_HDR_MAGIC,
                      .version = GIN_TCP_VERSION,
                      .op = GIN_TCP_OP_PUT,
                      .flags = GIN_TCP_F_SIGNAL,
                      .dst_gen = 1,
                      .bytes = GIN_TCP_MAX_CHUNK + 1,
                      .sig_win = 1,
                      .sig_gen = 1,
                      .sig_add = 1};
  gin_tcp_hdr_encode(&op, msg);
  memset(msg + GIN_TCP_HDR_BYTES, 0x5a, sizeof msg - GIN_TCP_HDR_BYTES);
  if (me == 0) { /* half a header */
    op.bytes = 16;
    gin_tcp_hdr_encode(&op, msg);
    len = GIN_TCP_HDR_BYTES / 2;
  } else if (me == 2) { /* junk */
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (size_t i = 0; i < sizeof msg; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      msg[i] = (uint8_t)(x >> 24);
    }
    len = 256;
  }
  for (int k = 0; k < BAD_OPS; k++) {
    gin_bs_barrier(r->bs);
    if (k == me && fd >= 0) {
      CHECK(send(fd, msg, len, MSG_NOSIGNAL) == (ssize_t)len, "message sent");
      if (me == 0) {
        close(fd);
        fd = -1;
      } else {
        CHECK(closed_by_peer(fd), "rank %d's connection closed", me);
      }
    }
    gin_bs_barrier(r->bs);
  }
  if (fd >= 0) close(fd);
}

/* 3 ranks: 5 MiB puts in both directions through 64 KiB send buffers,
 * put_value, a signal with its mode word, a put to self. */
#define BIG (5u << 20)
static void sc_traffic(rank_ctx_t *r) {
  int me = r->job.rank, n = r->job.nranks;
  win_add(r, 0, (size_t)n * BIG, (size_t)n * BIG, 1);
  win_add(r, 1, SIG_BYTES, SIG_BYTES, 1);
  CHECK(init_all(r) == GIN_SUCCESS, "init");
  uint8_t *src = malloc(BIG);
  for (size_t i = 0; i < BIG; i++)
    src[i] = (uint8_t)(i * 31 + me);
  for (int p = 0; p < n; p++) {
    gin_xfer_t x = xfer(p, src, BIG, (size_t)me * BIG, 1, 8 * (size_t)me);
    x.mode_off = 128 + 4 * (size_t)me;
    x.mode_bit = 1;
    CHECK(put(r, x) == GIN_SUCCESS, "big put to %d", p);
    gin_xfer_t v = {.op = GIN_OP_PUT_VALUE,
                    .peer = p,
                    .bytes = 8,
                    .value = 0x1122334455667788ull + (uint64_t)me,
                    .dst_win = 0,
                    .dst_off = (size_t)me * BIG,
                    .has_signal = 1,
                    .sig_win = 1,
                    .sig_off = 64,
                    .sig_add = 10};
    CHECK(put(r, v) == GIN_SUCCESS, "put_value to %d", p);
  }
  CHECK(r->ops->flush(r->st) == GIN_SUCCESS, "flush"); /* src is freed */
  CHECK(pump(r, 8, 10 * (uint64_t)n, 10000) == GIN_SUCCESS &&
            sig_load(r, 8) == 10 * (uint64_t)n,
        "all put_values arrived");
  for (int p = 0; p < n; p++) {
    const uint8_t *got = (const uint8_t *)r->wins[0].ptr + (size_t)p * BIG;
    uint64_t v = 0x1122334455667788ull + (uint64_t)p;
    int ok = sig_load(r, p) == 1 && memcmp(got, &v, 8) == 0;
    for (size_t i = 8; ok && i < BIG; i++)
      ok = got[i] == (uint8_t)(i * 31 + p);
    uint32_t mode = ((uint32_t *)r->wins[1].ptr)[32 + p];
    CHECK(ok && mode == 1, "data, signal and mode from rank %d", p);
  }
  free(src);
  barrier_progressing(r); /* peers may still wait for our queued bytes */
  r->ops->fini(r->st);
}

/* 2 ranks, a 16 MiB send buffer: rank 0 puts 8 MiB in large, middle and
 * small pieces (sent from the source, received in place or staged) while
 * rank 1 reads nothing, flushes, and overwrites the source at once; rank
 * 1 must see the bytes from before the flush, in order, signal last. */
#define FLUSH_BYTES (8u << 20)
static const size_t flush_sizes[] = {1u << 20, 5000,   8,    40000, 4096,
                                     100,      300000, 4095, 65536};
static void sc_flush_reuse(rank_ctx_t *r) {
  setenv("GIN_TCP_SEND_BUFFER", "16777216", 1); /* read at init */
  int me = r->job.rank;
  win_add(r, 0, FLUSH_BYTES, FLUSH_BYTES, 1);
  win_add(r, 1, SIG_BYTES, SIG_BYTES, 1);
  CHECK(init_all(r) == GIN_SUCCESS, "init");
  if (me == 0) {
    uint8_t *src = malloc(FLUSH_BYTES);
    for (size_t i = 0; i < FLUSH_BYTES; i++)
      src[i] = (uint8_t)(i * 7 + i / 4099);
    size_t off = 0;
    for (int k = 0; off < FLUSH_BYTES; k++) {
      size_t len = flush_sizes[k % (sizeof flush_sizes / sizeof *flush_sizes)];
      if (len > FLUSH_BYTES - off) len = FLUSH_BYTES - off;
      gin_xfer_t x = xfer(1, src + off, len, off, off + len == FLUSH_BYTES, 0);
      CHECK(put(r, x) == GIN_SUCCESS, "put %d", k);
      off += len;
    }
    CHECK(r->ops->flush(r->st) == GIN_SUCCESS, "flush");
    memset(src, 0x55, FLUSH_BYTES); /* the sources are free again */
    free(src);
  }
  gin_bs_barrier(r->bs); /* rank 1 starts reading only now */
  if (me == 1) {
    CHECK(pump(r, 0, 1, 60000) == GIN_SUCCESS && sig_load(r, 0) == 1,
          "signal arrived");
    const uint8_t *got = (const uint8_t *)r->wins[0].ptr;
    size_t bad = 0;
    for (size_t i = 0; i < FLUSH_BYTES; i++)
      bad += got[i] != (uint8_t)(i * 7 + i / 4099);
    CHECK(bad == 0, "%zu of %u bytes differ from the source before flush", bad,
          FLUSH_BYTES);
  }
  barrier_progressing(r); /* rank 0 may still hold queued bytes */
  r->ops->fini(r->st);
}

int main(void) {
  setenv("GIN_TCP_SEND_BUFFER", "65536", 1);
  int bad = 0;
  bad |= run("put outside the window", 2, 5000, sc_put_outside);
  bad |= run("signal outside the window", 2, 5000, sc_signal_outside);
  bad |= run("window registered late", 2, 5000, sc_late_window);
  bad |= run("window never registered", 2, 400, sc_never_registered);
  bad |= run("peer exits", 2, 5000, sc_peer_exits);
  bad |= run("peer says goodbye", 2, 5000, sc_goodbye);
  bad |= run("asymmetric tcp use", 2, 5000, sc_asymmetric);
  bad |= run("bad hellos refused", 2, 5000, sc_bad_hellos);
  bad |= run("bad operations after a hello", BAD_OPS + 1, 5000, sc_bad_ops);
  bad |= run("traffic: big, value, mode, self", 3, 10000, sc_traffic);
  bad |= run("sources reusable after flush", 2, 60000, sc_flush_reuse);
  printf("tcp peer: %s\n", bad ? "FAILED" : "passed");
  return bad;
}
