/*
 * Bootstrap over TCP (IPv4 and IPv6): a root thread that introduces the
 * ranks of one job to each other, a ring of connections among the ranks,
 * and all-gather / barrier over that ring.
 *
 * Wire formats (integers little endian, addresses in network order):
 *   hello (52 B): magic u32, version u16, kind u16, secret[16], rank i32,
 *     nranks i32, family u16, port u16, addr[16] (the sender's listen address)
 *   root reply (24 B): magic u32, status u32, nranks i32, a, b, c (i32)
 *     OK:      then nranks entries (family u16, port u16, addr[16])
 *     TIMEOUT: a = ranks joined, b = first missing rank, c = timeout in ms
 *     REFUSED: a = reason (enum bs_reason), b = the rank the hello named
 *   collective header (16 B): magic u32 "GINA", sequence u32, bytes u64
 * What arrives goes through the pure checks (gin_bs_*_check: no I/O, no
 * logging; fuzzed, tests/fuzz) before anything acts on it.
 *
 * Every blocking step is a poll() bounded by a deadline; sockets are
 * non-blocking and sends use MSG_NOSIGNAL.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "base/net.h"
#include "comm/bootstrap.h"

#define BS_HELLO_BYTES GIN_BS_HELLO_BYTES
#define BS_REPLY_BYTES GIN_BS_REPLY_BYTES
#define BS_ENTRY_BYTES GIN_BS_ENTRY_BYTES
#define BS_COLL_BYTES GIN_BS_COLL_BYTES
#define BS_HELLO_WAIT_MS 1000 /* a connection must say hello this fast */
#define BS_MAX_PENDING 64     /* connections waiting for their hello */
#define BS_ADDRSTR 64
/* Collectives check the owner's abort this often; a broken ring waits at
 * most this long for the owner to name its cause (a dead rank). */
#define BS_ABORT_SLICE_MS 20
#define BS_SETTLE_MS 1000

/* Why a hello was refused (also sent to the rank in a REFUSED reply). */
enum bs_reason {
  BS_OK,
  BS_MAGIC,
  BS_VERSION,
  BS_KIND,
  BS_SECRET,
  BS_NRANKS,
  BS_RANK,
  BS_ADDR,
  BS_DUP
};

struct gin_bs {
  int rank, nranks;
  int64_t timeout_ms;
  int next_fd, prev_fd; /* ring: send to rank+1, receive from rank-1 */
  uint32_t seq;         /* collectives so far, checked against the peer */
  int broken;           /* a collective failed: the ring is unusable */
  gin_net_addr_t next_addr, prev_addr;
  int lfd;                  /* listening socket until gin_bs_link, or -1 */
  gin_net_addr_t *addrs;    /* [nranks] listen addresses, for gin_bs_link */
  uint8_t secret[16];       /* the job's, for gin_bs_link's hellos */
  gin_bs_abort_fn abort_fn; /* the owner's abort state, or NULL */
  void *abort_arg;
};

/* ------------------------------------------------------------- wire */

void gin_bs_hello_encode(const gin_bs_hello_t *h, uint8_t *p) {
  gin_le_put32(p, (uint32_t)h->magic);
  gin_le_put16(p + 4, (uint16_t)h->version);
  gin_le_put16(p + 6, (uint16_t)h->kind);
  memcpy(p + 8, h->secret, 16);
  gin_le_put32(p + 24, (uint32_t)h->rank);
  gin_le_put32(p + 28, (uint32_t)h->nranks);
  gin_le_put16(p + 32, (uint16_t)h->family);
  gin_le_put16(p + 34, (uint16_t)h->port);
  memcpy(p + 36, h->addr, 16);
}

static void bs_hello_decode(const uint8_t *p, gin_bs_hello_t *h) {
  h->magic = (uint32_t)gin_le_get32(p);
  h->version = (uint16_t)gin_le_get16(p + 4);
  h->kind = (uint16_t)gin_le_get16(p + 6);
  memcpy(h->secret, p + 8, 16);
  h->rank = (int32_t)gin_le_get32(p + 24);
  h->nranks = (int32_t)gin_le_get32(p + 28);
  h->family = (uint16_t)gin_le_get16(p + 32);
  h->port = (uint16_t)gin_le_get16(p + 34);
  memcpy(h->addr, p + 36, 16);
}

void gin_bs_reply_encode(const gin_bs_reply_t *r, uint8_t *p) {
  gin_le_put32(p, (uint32_t)GIN_BS_MAGIC);
  gin_le_put32(p + 4, (uint32_t)r->status);
  gin_le_put32(p + 8, (uint32_t)r->nranks);
  gin_le_put32(p + 12, (uint32_t)r->a);
  gin_le_put32(p + 16, (uint32_t)r->b);
  gin_le_put32(p + 20, (uint32_t)r->c);
}

static void bs_reply_put(uint8_t *p, int status, int nranks, int a, int b,
                         int c) {
  gin_bs_reply_t r = {
      .status = (uint32_t)status, .nranks = nranks, .a = a, .b = b, .c = c};
  gin_bs_reply_encode(&r, p);
}

gin_result_t gin_bs_reply_check(const void *buf, size_t len, int nranks,
                                char *why, size_t why_len,
                                gin_bs_reply_t *out) {
  if (!buf) return GIN_ERR_INVALID;
  const uint8_t *p = buf;
  gin_result_t bad = GIN_ERR_PROTOCOL;
  if (len != BS_REPLY_BYTES)
    return gin_net_why(why, why_len, bad, "reply of %zu bytes, expected %d",
                       len, BS_REPLY_BYTES);
  uint32_t magic = (uint32_t)gin_le_get32(p);
  gin_bs_reply_t r = {.status = (uint32_t)gin_le_get32(p + 4),
                      .nranks = (int32_t)gin_le_get32(p + 8),
                      .a = (int32_t)gin_le_get32(p + 12),
                      .b = (int32_t)gin_le_get32(p + 16),
                      .c = (int32_t)gin_le_get32(p + 20)};
  if (magic != GIN_BS_MAGIC)
    return gin_net_why(why, why_len, bad, "bad reply magic 0x%08x", magic);
  /* TIMEOUT and REFUSED are news for the caller to report, whatever the
   * numbers; only OK must be for this job. */
  if (r.status != GIN_BS_STATUS_TIMEOUT && r.status != GIN_BS_STATUS_REFUSED &&
      (r.status != GIN_BS_STATUS_OK || r.nranks != nranks))
    return gin_net_why(why, why_len, bad, "bad reply (status %u, %d ranks)",
                       r.status, (int)r.nranks);
  if (out) *out = r;
  return GIN_SUCCESS;
}

void gin_bs_table_encode(const gin_net_addr_t *addrs, int nranks, uint8_t *p) {
  for (int r = 0; r < nranks; r++) {
    uint8_t *e = p + (size_t)r * BS_ENTRY_BYTES;
    gin_le_put16(e, (uint16_t)addrs[r].family);
    gin_le_put16(e + 2, (uint16_t)addrs[r].port);
    memcpy(e + 4, addrs[r].addr, 16);
  }
}

gin_result_t gin_bs_table_check(const void *buf, size_t len, int nranks,
                                int self, const gin_net_addr_t *own, char *why,
                                size_t why_len, gin_net_addr_t *addrs_out) {
  if (!buf || !own || nranks < 1 || self < 0 || self >= nranks)
    return GIN_ERR_INVALID;
  const uint8_t *p = buf;
  gin_result_t bad = GIN_ERR_PROTOCOL;
  size_t want = (size_t)nranks * BS_ENTRY_BYTES;
  if (len != want)
    return gin_net_why(why, why_len, bad,
                       "address table of %zu bytes, expected %zu (%d ranks)",
                       len, want, nranks);
  for (int r = 0; r < nranks; r++) {
    const uint8_t *e = p + (size_t)r * BS_ENTRY_BYTES;
    unsigned family = (unsigned)gin_le_get16(e),
             port = (unsigned)gin_le_get16(e + 2);
    if ((family != AF_INET && family != AF_INET6) || (port == 0 && nranks > 1))
      return gin_net_why(why, why_len, bad,
                         "bad address of rank %d in the table (family %u, port "
                         "%u)",
                         r, family, port);
  }
  const uint8_t *mine = p + (size_t)self * BS_ENTRY_BYTES;
  if (gin_le_get16(mine + 2) != own->port ||
      memcmp(mine + 4, own->addr, 16) != 0)
    return gin_net_why(why, why_len, bad,
                       "the table's entry for this rank is not the address it "
                       "sent");
  for (int r = 0; addrs_out && r < nranks; r++) {
    const uint8_t *e = p + (size_t)r * BS_ENTRY_BYTES;
    addrs_out[r].family = (uint16_t)gin_le_get16(e);
    addrs_out[r].port = (uint16_t)gin_le_get16(e + 2);
    memcpy(addrs_out[r].addr, e + 4, 16);
  }
  return GIN_SUCCESS;
}

void gin_bs_coll_encode(uint32_t seq, uint64_t bytes, uint8_t *p) {
  gin_le_put32(p, (uint32_t)GIN_BS_COLL_MAGIC);
  gin_le_put32(p + 4, (uint32_t)seq);
  gin_le_put64(p + 8, (uint64_t)bytes);
}

gin_result_t gin_bs_coll_check(const void *buf, size_t len, uint32_t seq,
                               uint64_t bytes, char *why, size_t why_len) {
  if (!buf) return GIN_ERR_INVALID;
  const uint8_t *p = buf;
  if (len != BS_COLL_BYTES)
    return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                       "collective header of %zu bytes, expected %d", len,
                       BS_COLL_BYTES);
  uint32_t magic = (uint32_t)gin_le_get32(p),
           got_seq = (uint32_t)gin_le_get32(p + 4);
  uint64_t got_bytes = gin_le_get64(p + 8);
  if (magic != GIN_BS_COLL_MAGIC || got_seq != seq || got_bytes != bytes)
    return gin_net_why(why, why_len, GIN_ERR_PROTOCOL,
                       "mismatch: the previous rank sent collective %u of %llu "
                       "bytes per rank (magic 0x%08x), this rank expects %u of "
                       "%llu bytes",
                       got_seq, (unsigned long long)got_bytes, magic, seq,
                       (unsigned long long)bytes);
  return GIN_SUCCESS;
}

/* Checks a decoded hello; returns BS_OK or why it is refused. Pure. */
static enum bs_reason bs_hello_verify(const gin_bs_hello_t *h,
                                      const uint8_t secret[16], int nranks,
                                      int kind) {
  if (h->magic != GIN_BS_MAGIC) return BS_MAGIC;
  if (h->version != GIN_BS_VERSION) return BS_VERSION;
  if (h->kind != kind) return BS_KIND;
  unsigned diff = 0; /* constant time: do not leak how much matched */
  for (int i = 0; i < 16; i++)
    diff |= (unsigned)(h->secret[i] ^ secret[i]);
  if (diff) return BS_SECRET;
  if (h->nranks != nranks) return BS_NRANKS;
  if (h->rank < 0 || h->rank >= nranks) return BS_RANK;
  if (kind == GIN_BS_HELLO_ROOT &&
      ((h->family != AF_INET && h->family != AF_INET6) ||
       (h->port == 0 && nranks > 1)))
    return BS_ADDR;
  return BS_OK;
}

/* Says why hello h was refused by a job of nranks expecting `kind`. */
static const char *bs_reason_str(enum bs_reason r, const gin_bs_hello_t *h,
                                 int nranks, int kind, char *buf, size_t len) {
  const char *fixed = NULL;
  switch (r) {
  case BS_OK: fixed = "accepted"; break;
  case BS_SECRET: fixed = "wrong job secret"; break;
  case BS_MAGIC: snprintf(buf, len, "bad magic 0x%08x", h->magic); break;
  case BS_VERSION:
    snprintf(buf, len, "protocol version %u, expected %d", h->version,
             GIN_BS_VERSION);
    break;
  case BS_KIND:
    snprintf(buf, len, "hello kind %u, expected %d", h->kind, kind);
    break;
  case BS_NRANKS:
    snprintf(buf, len, "job size %d, expected %d", (int)h->nranks, nranks);
    break;
  case BS_RANK:
    snprintf(buf, len, "rank %d out of range [0, %d)", (int)h->rank, nranks);
    break;
  case BS_ADDR:
    snprintf(buf, len, "bad listen address (family %u, port %u)", h->family,
             h->port);
    break;
  case BS_DUP:
    snprintf(buf, len, "rank %d already joined", (int)h->rank);
    break;
  default: snprintf(buf, len, "reason %d", (int)r); break;
  }
  if (fixed) snprintf(buf, len, "%s", fixed);
  return buf;
}

gin_result_t gin_bs_hello_check(const void *buf, size_t len,
                                const uint8_t secret[16], int nranks, int kind,
                                gin_bs_hello_t *out) {
  /* Pure: no logging, no last-error record; the callers report. */
  if (!buf || !secret) return GIN_ERR_INVALID;
  if (len != BS_HELLO_BYTES) return GIN_ERR_PROTOCOL;
  gin_bs_hello_t h;
  bs_hello_decode(buf, &h);
  if (bs_hello_verify(&h, secret, nranks, kind) != BS_OK)
    return GIN_ERR_PROTOCOL;
  if (out) *out = h;
  return GIN_SUCCESS;
}

/* ------------------------------------------------------------ sockets */

static uint64_t bs_deadline(int64_t timeout_ms) {
  return gin_now_ns() + (uint64_t)timeout_ms * 1000000ull;
}

/* Records a failure of gin_net_io_all; `what` says who did what with whom. */
static gin_result_t bs_io_error(int io, int64_t timeout_ms, const char *what) {
  if (io == GIN_NET_IO_TIMEOUT)
    return GIN_ERROR(GIN_ERR_TIMEOUT, "%s: no answer within %lld ms", what,
                     (long long)timeout_ms);
  if (io == GIN_NET_IO_EOF)
    return GIN_ERROR(GIN_ERR_REMOTE, "%s: connection closed by the peer", what);
  return GIN_ERROR(GIN_ERR_REMOTE, "%s: %s", what, strerror(io));
}

/* ----------------------------------------------------------- acceptor */

/* Accepts connections and reads their hellos, many at once (poll), so a
 * client that connects and stays silent cannot hold up the real ranks. */
typedef struct bs_pending {
  int fd;
  uint64_t deadline_ns;
  size_t got;
  uint8_t buf[BS_HELLO_BYTES];
  char peer[BS_ADDRSTR];
} bs_pending_t;

typedef struct bs_acceptor {
  int lfd;
  int kind, nranks;
  uint8_t secret[16];
  int reply;     /* root: tell a refused client why */
  char who[128]; /* for log lines */
  int npend;
  bs_pending_t pend[BS_MAX_PENDING];
} bs_acceptor_t;

static void bs_pending_drop(bs_acceptor_t *a, int i, int close_fd) {
  if (close_fd) close(a->pend[i].fd);
  a->pend[i] = a->pend[--a->npend];
}

/* Logs, sends a REFUSED reply (root, best effort) and closes. */
static void bs_acceptor_refuse(bs_acceptor_t *a, int fd, const char *peer,
                               enum bs_reason r, const gin_bs_hello_t *h) {
  char why[96];
  GIN_WARN(BOOTSTRAP, "%s: refused connection from %s: %s", a->who, peer,
           bs_reason_str(r, h, a->nranks, a->kind, why, sizeof why));
  if (a->reply) {
    uint8_t rep[BS_REPLY_BYTES];
    bs_reply_put(rep, GIN_BS_STATUS_REFUSED, a->nranks, r, h->rank, 0);
    ssize_t n = send(fd, rep, sizeof rep, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)n;
  }
  close(fd);
}

static void bs_acceptor_add(bs_acceptor_t *a, int fd,
                            const struct sockaddr *sa) {
  if (a->npend == BS_MAX_PENDING) { /* a flood: drop the oldest */
    int old = 0;
    for (int i = 1; i < a->npend; i++)
      if (a->pend[i].deadline_ns < a->pend[old].deadline_ns) old = i;
    GIN_WARN(BOOTSTRAP, "%s: %d connections without a hello; dropping %s",
             a->who, BS_MAX_PENDING, a->pend[old].peer);
    bs_pending_drop(a, old, 1);
  }
  bs_pending_t *p = &a->pend[a->npend++];
  gin_net_addr_t pa;
  gin_net_tune(fd);
  *p = (bs_pending_t){.fd = fd, .deadline_ns = bs_deadline(BS_HELLO_WAIT_MS)};
  if (gin_net_addr_from_sockaddr(sa, &pa) == GIN_SUCCESS)
    gin_net_addr_str(&pa, p->peer, sizeof p->peer);
  else
    snprintf(p->peer, sizeof p->peer, "unknown peer");
}

/* Reads from pending connection i; returns 1 once it holds a valid hello
 * (moved out to the outputs), else 0 (it may have been refused). */
static int bs_acceptor_read(bs_acceptor_t *a, int i, int *fd_out,
                            gin_bs_hello_t *h_out, char *peer_out) {
  bs_pending_t *p = &a->pend[i];
  ssize_t n =
      recv(p->fd, p->buf + p->got, BS_HELLO_BYTES - p->got, MSG_DONTWAIT);
  if (n < 0 && gin_net_again(errno)) return 0;
  if (n <= 0) {
    GIN_WARN(BOOTSTRAP,
             "%s: refused connection from %s: short read (%zu of %d hello "
             "bytes, then %s)",
             a->who, p->peer, p->got, BS_HELLO_BYTES,
             n == 0 ? "closed" : strerror(errno));
    bs_pending_drop(a, i, 1);
    return 0;
  }
  p->got += (size_t)n;
  if (p->got < BS_HELLO_BYTES) return 0;
  gin_bs_hello_t h;
  bs_hello_decode(p->buf, &h);
  enum bs_reason r = bs_hello_verify(&h, a->secret, a->nranks, a->kind);
  if (r != BS_OK) {
    bs_acceptor_refuse(a, p->fd, p->peer, r, &h);
  } else {
    *fd_out = p->fd;
    *h_out = h;
    snprintf(peer_out, BS_ADDRSTR, "%s", p->peer);
  }
  bs_pending_drop(a, i, 0);
  return r == BS_OK;
}

/* Waits for the next connection that presents a valid hello: GIN_SUCCESS
 * with its fd, hello and address, or GIN_ERR_TIMEOUT at the deadline (not
 * recorded: the caller knows what it waited for). */
static gin_result_t bs_accept_hello(bs_acceptor_t *a, uint64_t deadline,
                                    int *fd_out, gin_bs_hello_t *h_out,
                                    char *peer_out) {
  struct pollfd pfd[BS_MAX_PENDING + 1];
  for (;;) {
    uint64_t now = gin_now_ns(), wake = deadline;
    for (int i = a->npend - 1; i >= 0; i--) {
      bs_pending_t *p = &a->pend[i];
      if (now < p->deadline_ns) {
        wake = p->deadline_ns < wake ? p->deadline_ns : wake;
        continue;
      }
      GIN_WARN(BOOTSTRAP,
               "%s: refused connection from %s: no hello within %d ms (%zu "
               "of %d bytes)",
               a->who, p->peer, BS_HELLO_WAIT_MS, p->got, BS_HELLO_BYTES);
      bs_pending_drop(a, i, 1);
    }
    if (now >= deadline) return GIN_ERR_TIMEOUT;
    int np = a->npend;
    pfd[0] = (struct pollfd){.fd = a->lfd, .events = POLLIN};
    for (int i = 0; i < np; i++)
      pfd[i + 1] = (struct pollfd){.fd = a->pend[i].fd, .events = POLLIN};
    int n = poll(pfd, (nfds_t)np + 1, gin_net_poll_timeout_ms(wake));
    if (n < 0 && errno != EINTR)
      return GIN_ERROR(GIN_ERR_SYSTEM, "%s: poll: %s", a->who, strerror(errno));
    if (n <= 0) continue;
    /* Descending, so dropping i (swapping in the last) keeps pfd aligned. */
    for (int i = np - 1; i >= 0; i--)
      if (pfd[i + 1].revents && bs_acceptor_read(a, i, fd_out, h_out, peer_out))
        return GIN_SUCCESS;
    while (pfd[0].revents & POLLIN) {
      struct sockaddr_storage ss;
      int fd = accept4(a->lfd, (struct sockaddr *)&ss, &(socklen_t){sizeof ss},
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break; /* EAGAIN, or a connection reset before accept */
      bs_acceptor_add(a, fd, (struct sockaddr *)&ss);
    }
  }
}

/* Closes the pending connections (not the listening socket). */
static void bs_acceptor_drain(bs_acceptor_t *a) {
  while (a->npend > 0)
    bs_pending_drop(a, a->npend - 1, 1);
}

/* --------------------------------------------------------------- root */

typedef struct bs_root {
  bs_acceptor_t acc;
  int nranks;
  int64_t timeout_ms;
  uint64_t deadline_ns;
  int *fds;             /* per rank; -1 until it joined */
  gin_net_addr_t *addr; /* per rank: its listen address */
} bs_root_t;

/* Sends msg to every rank that joined. */
static void bs_root_send(bs_root_t *root, const uint8_t *msg, size_t len) {
  uint64_t deadline = bs_deadline(root->timeout_ms);
  for (int r = 0; r < root->nranks; r++) {
    if (root->fds[r] < 0) continue;
    int io = gin_net_io_all(root->fds[r], (void *)msg, len, 1, deadline);
    if (io != 0)
      GIN_WARN(BOOTSTRAP, "%s: could not answer rank %d: %s", root->acc.who, r,
               io == GIN_NET_IO_TIMEOUT ? "timed out" : strerror(io));
  }
}

/* Sends every rank the table (all joined) or the news that it gave up. */
static void bs_root_finish(bs_root_t *root, int joined) {
  int n = root->nranks, missing = 0;
  if (joined == n) {
    size_t len = BS_REPLY_BYTES + (size_t)n * BS_ENTRY_BYTES;
    uint8_t *msg = malloc(len);
    if (!msg) {
      GIN_WARN(BOOTSTRAP, "%s: out of memory for the table", root->acc.who);
      return;
    }
    bs_reply_put(msg, GIN_BS_STATUS_OK, n, 0, 0, 0);
    gin_bs_table_encode(root->addr, n, msg + BS_REPLY_BYTES);
    bs_root_send(root, msg, len);
    free(msg);
    GIN_INFO(BOOTSTRAP, "%s: all %d ranks joined", root->acc.who, n);
    return;
  }
  while (root->fds[missing] >= 0)
    missing++;
  /* A job that never used the bootstrap (ginrun of a plain program) is
   * not worth a warning. */
  if (joined == 0)
    GIN_INFO(BOOTSTRAP, "%s: no rank joined within %lld ms", root->acc.who,
             (long long)root->timeout_ms);
  else
    GIN_WARN(BOOTSTRAP,
             "%s: rank %d%s did not join within %lld ms (%d of %d joined); "
             "giving up",
             root->acc.who, missing, n - joined > 1 ? " and others" : "",
             (long long)root->timeout_ms, joined, n);
  uint8_t rep[BS_REPLY_BYTES];
  bs_reply_put(rep, GIN_BS_STATUS_TIMEOUT, n, joined, missing,
               root->timeout_ms > INT32_MAX ? INT32_MAX
                                            : (int)root->timeout_ms);
  bs_root_send(root, rep, sizeof rep);
}

static void *bs_root_main(void *arg) {
  bs_root_t *root = arg;
  int joined = 0, fd;
  gin_bs_hello_t h;
  char peer[BS_ADDRSTR];
  while (joined < root->nranks &&
         bs_accept_hello(&root->acc, root->deadline_ns, &fd, &h, peer) ==
             GIN_SUCCESS) {
    if (root->fds[h.rank] >= 0) {
      bs_acceptor_refuse(&root->acc, fd, peer, BS_DUP, &h);
      continue;
    }
    root->fds[h.rank] = fd;
    root->addr[h.rank] = (gin_net_addr_t){.family = h.family, .port = h.port};
    memcpy(root->addr[h.rank].addr, h.addr, 16);
    joined++;
    GIN_TRACE(BOOTSTRAP, "%s: rank %d joined from %s (%d of %d)", root->acc.who,
              (int)h.rank, peer, joined, root->nranks);
  }
  bs_acceptor_drain(&root->acc);
  close(root->acc.lfd);
  bs_root_finish(root, joined);
  for (int r = 0; r < root->nranks; r++)
    if (root->fds[r] >= 0) close(root->fds[r]);
  free(root->fds);
  free(root->addr);
  free(root);
  return NULL;
}

/* Starts bs_root_main with every signal blocked: they belong to the
 * application's threads. */
static int bs_root_thread_start(bs_root_t *root) {
  pthread_attr_t attr;
  pthread_t tid;
  sigset_t all, old;
  sigfillset(&all);
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&tid, &attr, bs_root_main, root);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  return rc;
}

gin_result_t gin_bs_root_start(int nranks, const char *addr, int port,
                               const uint8_t secret[16], int64_t timeout_ms,
                               gin_unique_id_t *uid_out) {
  GIN_ARG_CHECK(nranks >= 1 && nranks <= GIN_MAX_RANKS,
                "bootstrap root: nranks %d out of range [1, %d]", nranks,
                GIN_MAX_RANKS);
  GIN_ARG_CHECK(addr && secret && uid_out,
                "bootstrap root: NULL address, secret or uid_out");
  GIN_ARG_CHECK(port >= 0 && port <= 65535,
                "bootstrap root: port %d out of range [0, 65535]", port);
  GIN_ARG_CHECK(timeout_ms > 0, "bootstrap root: timeout %lld ms must be > 0",
                (long long)timeout_ms);
  gin_result_t res;
  gin_net_addr_t want, bound;
  const char *why;
  char astr[BS_ADDRSTR];
  if (gin_net_resolve(addr, port, &want, &why) != 0)
    return GIN_ERROR(GIN_ERR_INVALID,
                     "bootstrap root: cannot resolve address \"%s\": %s", addr,
                     why);
  int lfd = gin_net_listen(&want, &bound);
  if (lfd < 0)
    return GIN_ERROR(
        GIN_ERR_SYSTEM, "bootstrap root: cannot listen on %s: %s%s",
        gin_net_addr_str(&want, astr, sizeof astr), strerror(errno),
        port ? " (choose another GIN_ROOT_PORT)" : "");
  bs_root_t *root = calloc(1, sizeof *root);
  int *fds = malloc(sizeof *fds * (size_t)nranks);
  gin_net_addr_t *addrs = calloc((size_t)nranks, sizeof *addrs);
  if (!root || !fds || !addrs) {
    res = GIN_ERROR(GIN_ERR_NOMEM, "bootstrap root: out of memory for %d ranks",
                    nranks);
    goto err_free;
  }
  for (int r = 0; r < nranks; r++)
    fds[r] = -1;
  root->fds = fds;
  root->addr = addrs;
  root->nranks = nranks;
  root->timeout_ms = timeout_ms;
  root->deadline_ns = bs_deadline(timeout_ms);
  root->acc.lfd = lfd;
  root->acc.kind = GIN_BS_HELLO_ROOT;
  root->acc.nranks = nranks;
  root->acc.reply = 1;
  memcpy(root->acc.secret, secret, 16);
  gin_net_addr_str(&bound, astr, sizeof astr);
  snprintf(root->acc.who, sizeof root->acc.who, "bootstrap root %s", astr);

  gin_bs_uid_t u = {.magic = GIN_BS_MAGIC,
                    .version = GIN_BS_VERSION,
                    .family = bound.family,
                    .port = bound.port,
                    .nranks = nranks};
  memcpy(u.addr, bound.addr, 16);
  memcpy(u.secret, secret, 16);
  gin_unique_id_t uid;
  memset(&uid, 0, sizeof uid);
  memcpy(uid.bytes, &u, sizeof u);
  int rc = bs_root_thread_start(root);
  if (rc != 0) {
    res = GIN_ERROR(GIN_ERR_SYSTEM, "bootstrap root: cannot start thread: %s",
                    strerror(rc));
    goto err_free;
  }
  GIN_INFO(BOOTSTRAP, "bootstrap root %s: serving %d ranks for %lld ms", astr,
           nranks, (long long)timeout_ms);
  *uid_out = uid;
  return GIN_SUCCESS;

err_free:
  free(addrs);
  free(fds);
  free(root);
  close(lfd);
  return res;
}

/* --------------------------------------------------------------- rank */

/* Registers with the root: sends the hello, receives every rank's listen
 * address into addrs (nranks entries). */
static gin_result_t bs_register(gin_bs_t *bs, int rfd, const char *rstr,
                                const gin_bs_hello_t *hello,
                                gin_net_addr_t *addrs, uint64_t deadline) {
  char what[160], why[128] = "";
  int n = bs->nranks, io;
  uint8_t msg[BS_HELLO_BYTES]; /* the hello, then the reply header */
  gin_bs_reply_t rep = {0};    /* set by gin_bs_reply_check on success */
  gin_bs_hello_encode(hello, msg);
  snprintf(what, sizeof what, "bootstrap: rank %d registering with root %s",
           bs->rank, rstr);
  if ((io = gin_net_io_all(rfd, msg, BS_HELLO_BYTES, 1, deadline)) ||
      (io = gin_net_io_all(rfd, msg, BS_REPLY_BYTES, 0, deadline)))
    return bs_io_error(io, bs->timeout_ms, what);
  if (gin_bs_reply_check(msg, BS_REPLY_BYTES, n, why, sizeof why, &rep) !=
      GIN_SUCCESS)
    return GIN_ERROR(GIN_ERR_PROTOCOL, "%s: %s", what, why);
  /* The root's numbers, any values: a < n - 1 is n - a > 1 without
   * overflow. */
  if (rep.status == GIN_BS_STATUS_TIMEOUT)
    return GIN_ERROR(GIN_ERR_TIMEOUT,
                     "bootstrap: rank %d%s did not join within %d ms (%d of %d "
                     "joined; root %s gave up)",
                     (int)rep.b, rep.a < n - 1 ? " and others" : "", (int)rep.c,
                     (int)rep.a, n, rstr);
  if (rep.status == GIN_BS_STATUS_REFUSED) {
    gin_bs_hello_t h = *hello;
    h.rank = rep.b;
    return GIN_ERROR(GIN_ERR_PROTOCOL, "%s: refused: %s", what,
                     bs_reason_str((enum bs_reason)rep.a, &h, (int)rep.nranks,
                                   GIN_BS_HELLO_ROOT, why, sizeof why));
  }
  size_t tlen = (size_t)n * BS_ENTRY_BYTES;
  uint8_t *table = malloc(tlen);
  if (!table) return GIN_ERROR(GIN_ERR_NOMEM, "%s: out of memory", what);
  gin_net_addr_t own = {.family = hello->family, .port = hello->port};
  memcpy(own.addr, hello->addr, 16);
  gin_result_t res = GIN_SUCCESS;
  io = gin_net_io_all(rfd, table, tlen, 0, deadline);
  if (io == 0)
    res = gin_bs_table_check(table, tlen, n, bs->rank, &own, why, sizeof why,
                             addrs);
  free(table);
  if (io) return bs_io_error(io, bs->timeout_ms, what);
  if (res != GIN_SUCCESS)
    return GIN_ERROR(GIN_ERR_PROTOCOL, "%s: %s", what, why);
  return GIN_SUCCESS;
}

/* Connects the ring: to rank+1, and accepts rank-1 on lfd. */
static gin_result_t bs_ring_connect(gin_bs_t *bs, int lfd,
                                    const gin_bs_hello_t *hello,
                                    const gin_net_addr_t *addrs,
                                    uint64_t deadline) {
  int n = bs->nranks, next = (bs->rank + 1) % n, prev = (bs->rank + n - 1) % n;
  char nstr[BS_ADDRSTR], pstr[BS_ADDRSTR], what[160];
  bs->next_addr = addrs[next];
  bs->prev_addr = addrs[prev];
  gin_net_addr_str(&addrs[next], nstr, sizeof nstr);
  gin_net_addr_str(&addrs[prev], pstr, sizeof pstr);
  int err = 0;
  bs->next_fd = gin_net_connect(&addrs[next], deadline, &err);
  if (bs->next_fd < 0)
    return GIN_ERROR(gin_net_retryable(err) ? GIN_ERR_TIMEOUT : GIN_ERR_SYSTEM,
                     "bootstrap: rank %d could not connect to rank %d at %s "
                     "within %lld ms: %s",
                     bs->rank, next, nstr, (long long)bs->timeout_ms,
                     strerror(err));
  gin_bs_hello_t h = *hello;
  h.kind = GIN_BS_HELLO_RING;
  uint8_t msg[BS_HELLO_BYTES];
  gin_bs_hello_encode(&h, msg);
  int io = gin_net_io_all(bs->next_fd, msg, sizeof msg, 1, deadline);
  if (io) {
    snprintf(what, sizeof what, "bootstrap: rank %d greeting rank %d at %s",
             bs->rank, next, nstr);
    return bs_io_error(io, bs->timeout_ms, what);
  }
  bs_acceptor_t *a = calloc(1, sizeof *a);
  if (!a) return GIN_ERROR(GIN_ERR_NOMEM, "bootstrap: out of memory");
  *a = (bs_acceptor_t){.lfd = lfd, .kind = GIN_BS_HELLO_RING, .nranks = n};
  memcpy(a->secret, hello->secret, 16);
  snprintf(a->who, sizeof a->who, "bootstrap: rank %d", bs->rank);
  gin_result_t res;
  int fd;
  char peer[BS_ADDRSTR];
  while ((res = bs_accept_hello(a, deadline, &fd, &h, peer)) == GIN_SUCCESS) {
    if (h.rank == prev) {
      bs->prev_fd = fd;
      break;
    }
    GIN_WARN(BOOTSTRAP,
             "bootstrap: rank %d: refused connection from %s: rank %d is not "
             "the ring predecessor %d",
             bs->rank, peer, (int)h.rank, prev);
    close(fd);
  }
  bs_acceptor_drain(a);
  free(a);
  if (res == GIN_ERR_TIMEOUT)
    return GIN_ERROR(GIN_ERR_TIMEOUT,
                     "bootstrap: rank %d: no connection from rank %d (%s) "
                     "within %lld ms",
                     bs->rank, prev, pstr, (long long)bs->timeout_ms);
  return res;
}

/* Joins: root connection, own listening socket, registration, ring. */
static gin_result_t bs_join(gin_bs_t *bs, const gin_bs_uid_t *u,
                            uint64_t deadline) {
  gin_result_t res;
  gin_net_addr_t root = {.family = u->family, .port = u->port}, me,
                 *addrs = NULL;
  memcpy(root.addr, u->addr, 16);
  char rstr[BS_ADDRSTR], mstr[BS_ADDRSTR];
  gin_net_addr_str(&root, rstr, sizeof rstr);
  int err = 0, lfd = -1, rfd = gin_net_connect(&root, deadline, &err);
  if (rfd < 0)
    return GIN_ERROR(gin_net_retryable(err) ? GIN_ERR_TIMEOUT : GIN_ERR_SYSTEM,
                     "bootstrap: rank %d could not reach root %s within %lld "
                     "ms: %s",
                     bs->rank, rstr, (long long)bs->timeout_ms, strerror(err));
  /* Listen on the local address that reaches the root. */
  struct sockaddr_storage ss;
  if (getsockname(rfd, (struct sockaddr *)&ss, &(socklen_t){sizeof ss}) != 0 ||
      gin_net_addr_from_sockaddr((struct sockaddr *)&ss, &me) != GIN_SUCCESS) {
    res = GIN_ERROR(GIN_ERR_SYSTEM, "bootstrap: rank %d: getsockname: %s",
                    bs->rank, strerror(errno));
    goto out_close_root;
  }
  me.port = 0;
  if (bs->nranks > 1 && (lfd = gin_net_listen(&me, &me)) < 0) {
    res = GIN_ERROR(GIN_ERR_SYSTEM,
                    "bootstrap: rank %d cannot listen on %s: %s", bs->rank,
                    gin_net_addr_str(&me, mstr, sizeof mstr), strerror(errno));
    goto out_close_root;
  }
  if (!(addrs = calloc((size_t)bs->nranks, sizeof *addrs))) {
    res =
        GIN_ERROR(GIN_ERR_NOMEM, "bootstrap: rank %d: out of memory", bs->rank);
    goto out_close_listen;
  }
  gin_bs_hello_t hello = {.magic = GIN_BS_MAGIC,
                          .version = GIN_BS_VERSION,
                          .kind = GIN_BS_HELLO_ROOT,
                          .rank = bs->rank,
                          .nranks = bs->nranks,
                          .family = me.family,
                          .port = me.port};
  memcpy(hello.secret, u->secret, 16);
  memcpy(hello.addr, me.addr, 16);
  GIN_CHECK_GOTO(bs_register(bs, rfd, rstr, &hello, addrs, deadline), res,
                 out_free_addrs);
  if (bs->nranks > 1)
    GIN_CHECK_GOTO(bs_ring_connect(bs, lfd, &hello, addrs, deadline), res,
                   out_free_addrs);
  GIN_INFO(BOOTSTRAP, "bootstrap: rank %d of %d joined via root %s", bs->rank,
           bs->nranks, rstr);
  /* Kept for gin_bs_link (more connections among the ranks). */
  bs->lfd = lfd;
  lfd = -1;
  bs->addrs = addrs;
  addrs = NULL;
out_free_addrs:
  free(addrs);
out_close_listen:
  if (lfd >= 0) close(lfd);
out_close_root:
  close(rfd);
  return res;
}

gin_result_t gin_bs_init(const gin_unique_id_t *uid, int rank, int nranks,
                         int64_t timeout_ms, gin_bs_t **bs_out) {
  GIN_ARG_CHECK(uid && bs_out, "bootstrap: NULL uid or bs_out");
  GIN_ARG_CHECK(nranks >= 1 && nranks <= GIN_MAX_RANKS,
                "bootstrap: nranks %d out of range [1, %d]", nranks,
                GIN_MAX_RANKS);
  GIN_ARG_CHECK(rank >= 0 && rank < nranks,
                "bootstrap: rank %d out of range [0, %d)", rank, nranks);
  GIN_ARG_CHECK(timeout_ms > 0, "bootstrap: timeout %lld ms must be > 0",
                (long long)timeout_ms);
  gin_bs_uid_t u;
  memcpy(&u, uid->bytes, sizeof u);
  GIN_ARG_CHECK(u.magic == GIN_BS_MAGIC && u.version == GIN_BS_VERSION &&
                    (u.family == AF_INET || u.family == AF_INET6) && u.port,
                "bootstrap: rank %d: not a valid unique id (magic 0x%08x, "
                "version %u, family %u, port %u)",
                rank, u.magic, u.version, u.family, u.port);
  GIN_ARG_CHECK(u.nranks == nranks,
                "bootstrap: rank %d: the unique id is for a job of %d ranks, "
                "called with nranks %d",
                rank, (int)u.nranks, nranks);
  gin_bs_t *bs = malloc(sizeof *bs);
  if (!bs)
    return GIN_ERROR(GIN_ERR_NOMEM, "bootstrap: rank %d: out of memory", rank);
  *bs = (gin_bs_t){.rank = rank,
                   .nranks = nranks,
                   .timeout_ms = timeout_ms,
                   .next_fd = -1,
                   .prev_fd = -1,
                   .lfd = -1};
  memcpy(bs->secret, u.secret, 16);
  gin_result_t res = bs_join(bs, &u, bs_deadline(timeout_ms));
  if (res != GIN_SUCCESS) {
    gin_bs_destroy(bs);
    return res;
  }
  *bs_out = bs;
  return GIN_SUCCESS;
}

/* -------------------------------------------------------------- links */

/* Closes the link fds opened so far and returns res. */
static gin_result_t bs_link_fail(int *fds, int n, gin_result_t res) {
  for (int i = 0; i < n; i++)
    if (fds[i] >= 0) {
      close(fds[i]);
      fds[i] = -1;
    }
  return res;
}

/* Accepts the links of the lower ranks among peers, answering each with
 * this rank's hello. */
static gin_result_t bs_link_accept(gin_bs_t *bs, const int *peers, int n,
                                   int *fds, const uint8_t *msg,
                                   uint64_t deadline) {
  int want = 0;
  for (int i = 0; i < n; i++)
    want += peers[i] < bs->rank;
  if (want == 0) return GIN_SUCCESS;
  bs_acceptor_t *a = calloc(1, sizeof *a);
  if (!a) return GIN_ERROR(GIN_ERR_NOMEM, "bootstrap: out of memory");
  *a = (bs_acceptor_t){
      .lfd = bs->lfd, .kind = GIN_BS_HELLO_LINK, .nranks = bs->nranks};
  memcpy(a->secret, bs->secret, 16);
  snprintf(a->who, sizeof a->who, "bootstrap: rank %d (links)", bs->rank);
  gin_result_t res = GIN_SUCCESS;
  int fd, slot, missing = -1;
  gin_bs_hello_t h;
  char peer[BS_ADDRSTR];
  while (want > 0 &&
         (res = bs_accept_hello(a, deadline, &fd, &h, peer)) == GIN_SUCCESS) {
    for (slot = 0; slot < n; slot++)
      if (peers[slot] == h.rank && h.rank < bs->rank && fds[slot] < 0) break;
    if (slot == n ||
        gin_net_io_all(fd, (void *)msg, BS_HELLO_BYTES, 1, deadline)) {
      GIN_WARN(BOOTSTRAP,
               "bootstrap: rank %d: refused link from %s (rank %d): %s",
               bs->rank, peer, (int)h.rank,
               slot == n ? "not an expected link" : "could not answer");
      close(fd);
      continue;
    }
    fds[slot] = fd;
    want--;
  }
  bs_acceptor_drain(a);
  free(a);
  if (res != GIN_ERR_TIMEOUT) return res;
  for (int i = 0; i < n && missing < 0; i++)
    if (peers[i] < bs->rank && fds[i] < 0) missing = peers[i];
  return GIN_ERROR(GIN_ERR_TIMEOUT,
                   "bootstrap: rank %d: no link from rank %d within %lld ms",
                   bs->rank, missing, (long long)bs->timeout_ms);
}

gin_result_t gin_bs_link(gin_bs_t *bs, const int *peers, int n, int *fds_out) {
  GIN_ARG_CHECK(bs && n >= 0 && (n == 0 || (peers && fds_out)),
                "bootstrap link: NULL argument or n %d < 0", n);
  GIN_ARG_CHECK(bs->addrs && (bs->lfd >= 0 || bs->nranks == 1),
                "bootstrap link: rank %d: linked already", bs->rank);
  for (int i = 0; i < n; i++) {
    GIN_ARG_CHECK(peers[i] >= 0 && peers[i] < bs->nranks &&
                      peers[i] != bs->rank,
                  "bootstrap link: rank %d: peer %d out of range or self",
                  bs->rank, peers[i]);
    for (int j = 0; j < i; j++)
      GIN_ARG_CHECK(peers[j] != peers[i],
                    "bootstrap link: rank %d: peer %d listed twice", bs->rank,
                    peers[i]);
    fds_out[i] = -1;
  }
  uint64_t deadline = bs_deadline(bs->timeout_ms);
  gin_bs_hello_t h = {.magic = GIN_BS_MAGIC,
                      .version = GIN_BS_VERSION,
                      .kind = GIN_BS_HELLO_LINK,
                      .rank = bs->rank,
                      .nranks = bs->nranks,
                      .family = bs->addrs[bs->rank].family,
                      .port = bs->addrs[bs->rank].port};
  memcpy(h.secret, bs->secret, 16);
  memcpy(h.addr, bs->addrs[bs->rank].addr, 16);
  uint8_t msg[BS_HELLO_BYTES], buf[BS_HELLO_BYTES];
  gin_bs_hello_encode(&h, msg);
  char astr[BS_ADDRSTR], what[160];
  /* Connect to the higher ranks first: that needs nothing from them (the
   * kernel completes the connection), so no two ranks wait for each
   * other; then answer the lower ones; then read the higher ones' answers. */
  for (int i = 0; i < n; i++) {
    if (peers[i] < bs->rank) continue;
    int err = 0, io;
    const gin_net_addr_t *pa = &bs->addrs[peers[i]];
    gin_net_addr_str(pa, astr, sizeof astr);
    fds_out[i] = gin_net_connect(pa, deadline, &err);
    if (fds_out[i] < 0)
      return bs_link_fail(
          fds_out, n,
          GIN_ERROR(gin_net_retryable(err) ? GIN_ERR_TIMEOUT : GIN_ERR_SYSTEM,
                    "bootstrap: rank %d could not link to rank %d at %s "
                    "within %lld ms: %s",
                    bs->rank, peers[i], astr, (long long)bs->timeout_ms,
                    strerror(err)));
    if ((io = gin_net_io_all(fds_out[i], msg, sizeof msg, 1, deadline))) {
      snprintf(what, sizeof what, "bootstrap: rank %d linking to rank %d at %s",
               bs->rank, peers[i], astr);
      return bs_link_fail(fds_out, n, bs_io_error(io, bs->timeout_ms, what));
    }
  }
  gin_result_t res = bs_link_accept(bs, peers, n, fds_out, msg, deadline);
  if (res != GIN_SUCCESS) return bs_link_fail(fds_out, n, res);
  for (int i = 0; i < n; i++) {
    if (peers[i] < bs->rank) continue;
    gin_bs_hello_t got;
    snprintf(what, sizeof what,
             "bootstrap: rank %d waiting for rank %d's link answer", bs->rank,
             peers[i]);
    int io = gin_net_io_all(fds_out[i], buf, sizeof buf, 0, deadline);
    if (io)
      return bs_link_fail(fds_out, n, bs_io_error(io, bs->timeout_ms, what));
    if (gin_bs_hello_check(buf, sizeof buf, bs->secret, bs->nranks,
                           GIN_BS_HELLO_LINK, &got) != GIN_SUCCESS ||
        got.rank != peers[i])
      return bs_link_fail(
          fds_out, n,
          GIN_ERROR(GIN_ERR_PROTOCOL, "%s: not a valid answer", what));
  }
  gin_bs_unlisten(bs);
  return GIN_SUCCESS;
}

void gin_bs_unlisten(gin_bs_t *bs) {
  if (bs->lfd >= 0) close(bs->lfd);
  bs->lfd = -1;
}

/* -------------------------------------------------------- collectives */

/* One all-gather in progress. The send stream is the header, this rank's
 * block, then the blocks received from rank-1 except the last; the
 * receive stream is the header and the n-1 blocks of the others. Byte p of
 * the send stream's data may go once byte p - bytes has been received. */
typedef struct bs_coll {
  gin_bs_t *bs;
  char *buf;
  size_t bytes, total; /* per rank; data bytes in each stream */
  uint32_t seq;
  uint8_t hout[BS_COLL_BYTES], hin[BS_COLL_BYTES];
  size_t hs, hr, sp, rp; /* header and data sent, received */
} bs_coll_t;

/* Marks the ring unusable and shuts it, so that the neighbours notice now
 * rather than at their timeout. */
static void bs_ring_break(gin_bs_t *bs) {
  bs->broken = 1;
  shutdown(bs->next_fd, SHUT_RDWR);
  shutdown(bs->prev_fd, SHUT_RDWR);
}

/* The owner's abort, if it has one (settle_ms: how long to wait for a
 * cause to appear), as this collective's error; GIN_SUCCESS if none. The
 * caller breaks the ring. */
static gin_result_t bs_coll_aborted(bs_coll_t *c, int settle_ms) {
  gin_bs_t *bs = c->bs;
  if (!bs->abort_fn) return GIN_SUCCESS;
  if (settle_ms > bs->timeout_ms) settle_ms = (int)bs->timeout_ms;
  gin_result_t res = bs->abort_fn(bs->abort_arg, settle_ms);
  if (res == GIN_SUCCESS) return GIN_SUCCESS;
  return GIN_ERROR(res, "bootstrap allgather %u: %s", c->seq, gin_last_error());
}

/* Records the failure (or the owner's abort that explains it) and breaks
 * the ring. */
__attribute__((format(printf, 3, 4))) static gin_result_t
bs_coll_fail(bs_coll_t *c, gin_result_t res, const char *fmt, ...) {
  char msg[512], nstr[BS_ADDRSTR], pstr[BS_ADDRSTR];
  gin_bs_t *bs = c->bs;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* Break first: the neighbours must not wait for our verdict. A peer
   * that closed or reset the ring is most often a rank that died (or one
   * that stopped because of it): the owner's watcher names it soon. */
  bs_ring_break(bs);
  gin_result_t why = bs_coll_aborted(
      c, res == GIN_ERR_REMOTE || res == GIN_ERR_SYSTEM ? BS_SETTLE_MS : 0);
  if (why != GIN_SUCCESS) return why;
  res = GIN_ERROR(res,
                  "bootstrap allgather %u: rank %d: %s (sent %zu of %zu bytes "
                  "to rank %d at %s, received %zu of %zu from rank %d at %s)",
                  c->seq, bs->rank, msg, c->sp, c->total,
                  (bs->rank + 1) % bs->nranks,
                  gin_net_addr_str(&bs->next_addr, nstr, sizeof nstr), c->rp,
                  c->total, (bs->rank + bs->nranks - 1) % bs->nranks,
                  gin_net_addr_str(&bs->prev_addr, pstr, sizeof pstr));
  return res;
}

/* How far the send stream may go now. */
static size_t bs_coll_send_limit(const bs_coll_t *c) {
  return c->bytes + c->rp < c->total ? c->bytes + c->rp : c->total;
}

static gin_result_t bs_coll_send(bs_coll_t *c) {
  size_t n = (size_t)c->bs->nranks, r = (size_t)c->bs->rank;
  const char *src = (const char *)c->hout + c->hs;
  size_t len = BS_COLL_BYTES - c->hs;
  if (c->hs == BS_COLL_BYTES) {
    size_t blk = (r + n - c->sp / c->bytes) % n, off = c->sp % c->bytes;
    size_t limit = bs_coll_send_limit(c);
    src = c->buf + blk * c->bytes + off;
    len = c->bytes - off < limit - c->sp ? c->bytes - off : limit - c->sp;
  }
  ssize_t k = send(c->bs->next_fd, src, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (k < 0 && !gin_net_again(errno))
    return bs_coll_fail(c, GIN_ERR_REMOTE, "send: %s", strerror(errno));
  if (k > 0 && c->hs < BS_COLL_BYTES)
    c->hs += (size_t)k;
  else if (k > 0)
    c->sp += (size_t)k;
  return GIN_SUCCESS;
}

static gin_result_t bs_coll_recv(bs_coll_t *c) {
  size_t n = (size_t)c->bs->nranks, r = (size_t)c->bs->rank;
  char *dst = (char *)c->hin + c->hr;
  size_t len = BS_COLL_BYTES - c->hr;
  if (c->hr == BS_COLL_BYTES) {
    size_t blk = (r + 2 * n - 1 - c->rp / c->bytes) % n, off = c->rp % c->bytes;
    dst = c->buf + blk * c->bytes + off;
    len = c->bytes - off;
  }
  ssize_t k = recv(c->bs->prev_fd, dst, len, MSG_DONTWAIT);
  if (k == 0 || (k < 0 && !gin_net_again(errno)))
    return bs_coll_fail(c, GIN_ERR_REMOTE, "connection from rank %d %s",
                        (c->bs->rank + c->bs->nranks - 1) % c->bs->nranks,
                        k == 0 ? "closed" : strerror(errno));
  if (k <= 0) return GIN_SUCCESS;
  if (c->hr == BS_COLL_BYTES) {
    c->rp += (size_t)k;
    return GIN_SUCCESS;
  }
  c->hr += (size_t)k;
  char why[256];
  if (c->hr == BS_COLL_BYTES &&
      gin_bs_coll_check(c->hin, BS_COLL_BYTES, c->seq, c->bytes, why,
                        sizeof why) != GIN_SUCCESS)
    return bs_coll_fail(c, GIN_ERR_PROTOCOL, "%s", why);
  return GIN_SUCCESS;
}

gin_result_t gin_bs_allgather(gin_bs_t *bs, void *buf, size_t bytes) {
  GIN_ARG_CHECK(bs, "bootstrap allgather: NULL bootstrap");
  GIN_ARG_CHECK(buf || bytes == 0,
                "bootstrap allgather: rank %d: NULL buffer for %zu bytes",
                bs->rank, bytes);
  bs_coll_t c = {.bs = bs, .buf = buf, .bytes = bytes, .seq = bs->seq};
  gin_result_t why = bs_coll_aborted(&c, 0);
  if (why != GIN_SUCCESS) {
    if (!bs->broken) bs_ring_break(bs); /* the neighbours stop too */
    return why;
  }
  if (bs->broken)
    return GIN_ERROR(GIN_ERR_STATE,
                     "bootstrap allgather: rank %d: an earlier collective "
                     "failed; the ring is unusable",
                     bs->rank);
  size_t n = (size_t)bs->nranks;
  GIN_ARG_CHECK(bytes <= SIZE_MAX / n,
                "bootstrap allgather: rank %d: %zu bytes per rank times %zu "
                "ranks overflows",
                bs->rank, bytes, n);
  c.total = (n - 1) * bytes;
  bs->seq++;
  if (n == 1) return GIN_SUCCESS;
  gin_bs_coll_encode(c.seq, bytes, c.hout);
  uint64_t deadline = bs_deadline(bs->timeout_ms);
  for (int aborted = 0;;) {
    int want_send = c.hs < BS_COLL_BYTES || c.sp < bs_coll_send_limit(&c);
    int want_recv = c.hr < BS_COLL_BYTES || c.rp < c.total;
    if (!want_send && !want_recv) return GIN_SUCCESS;
    struct pollfd pfd[2] = {
        {.fd = want_send ? bs->next_fd : -1, .events = POLLOUT},
        {.fd = want_recv ? bs->prev_fd : -1, .events = POLLIN}};
    /* In slices, so that the owner's abort (another thread, a peer
     * through the control pages, the watcher) ends the wait; once
     * aborted, only what is ready now is taken: a collective whose bytes
     * all arrived still completes (the peers may have left it already). */
    int left = gin_net_poll_timeout_ms(deadline), slice = left;
    if (bs->abort_fn && slice > BS_ABORT_SLICE_MS) slice = BS_ABORT_SLICE_MS;
    if (aborted) slice = 0;
    int np = slice || aborted ? poll(pfd, 2, slice) : 0, perr = errno;
    if (np > 0) {
      if (pfd[0].revents) GIN_CHECK(bs_coll_send(&c));
      if (pfd[1].revents) GIN_CHECK(bs_coll_recv(&c));
      continue;
    }
    if (np < 0 && perr != EINTR)
      return bs_coll_fail(&c, GIN_ERR_SYSTEM, "poll: %s", strerror(perr));
    if (aborted) {
      bs_ring_break(bs);
      return why;
    }
    if ((why = bs_coll_aborted(&c, 0)) != GIN_SUCCESS) {
      aborted = 1;
      continue;
    }
    if (np == 0 && slice == left)
      return bs_coll_fail(&c, GIN_ERR_TIMEOUT, "no progress within %lld ms",
                          (long long)bs->timeout_ms);
  }
}

gin_result_t gin_bs_barrier(gin_bs_t *bs) {
  GIN_ARG_CHECK(bs, "bootstrap barrier: NULL bootstrap");
  uint8_t tmp[GIN_MAX_RANKS] = {0};
  tmp[bs->rank] = 1;
  return gin_bs_allgather(bs, tmp, 1);
}

void gin_bs_set_abort(gin_bs_t *bs, gin_bs_abort_fn fn, void *arg) {
  bs->abort_fn = fn;
  bs->abort_arg = arg;
}

void gin_bs_destroy(gin_bs_t *bs) {
  if (!bs) return;
  if (bs->next_fd >= 0) close(bs->next_fd);
  if (bs->prev_fd >= 0) close(bs->prev_fd);
  if (bs->lfd >= 0) close(bs->lfd);
  free(bs->addrs);
  free(bs);
}
