/*
 * Bootstrap over TCP (IPv4 and IPv6): a root thread that introduces the
 * ranks of one job to each other, a ring of connections among the ranks,
 * and all-gather / barrier over that ring.
 *
 * Wire formats (all integers little endian, addresses in network order):
 *   hello (52 B): magic u32, version u16, kind u16, secret[16], rank i32,
 *                 nranks i32, family u16, port u16, addr[16]
 *   root reply (24 B): magic u32, status u32, nranks i32, a i32, b i32, c i32
 *                 OK:      followed by nranks entries (family u16, port u16,
 *                          addr[16]): every rank's listen address
 *                 TIMEOUT: a = ranks joined, b = first missing, c = timeout ms
 *                 REFUSED: a = reason (enum bs_reason), b = detail
 *   collective header (16 B): magic u32 "GINA", sequence u32, bytes u64
 *
 * Every blocking step is a poll() bounded by a deadline; sockets are
 * non-blocking and sends use MSG_NOSIGNAL.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap.h"
#include "core.h"

#define BS_HELLO_BYTES 52
#define BS_REPLY_BYTES 24
#define BS_ENTRY_BYTES 20
#define BS_COLL_BYTES 16
#define BS_COLL_MAGIC 0x47494e41u /* "GINA" */
#define BS_HELLO_WAIT_MS 1000     /* a connection must say hello this fast */
#define BS_MAX_PENDING 64         /* connections waiting for their hello */
#define BS_RETRY_MS 20            /* pause between connection attempts */
#define BS_ADDRSTR 64

enum { BS_STATUS_OK = 0, BS_STATUS_TIMEOUT = 1, BS_STATUS_REFUSED = 2 };

/* Why a hello was refused (also sent to the rank in a REFUSED reply). */
enum bs_reason {
  BS_OK = 0,
  BS_LENGTH,
  BS_MAGIC,
  BS_VERSION,
  BS_KIND,
  BS_SECRET,
  BS_NRANKS,
  BS_RANK,
  BS_ADDR,
  BS_DUP
};

typedef struct bs_addr {
  uint16_t family;
  uint16_t port; /* host order */
  uint8_t addr[16];
} bs_addr_t;

struct gin_bs {
  int rank, nranks;
  int64_t timeout_ms;
  int next_fd, prev_fd; /* ring: send to rank+1, receive from rank-1 */
  uint32_t seq;         /* collectives so far, checked against the peer */
  int broken;           /* a collective failed: the ring is unusable */
  bs_addr_t next_addr, prev_addr;
};

/* ------------------------------------------------------- wire helpers */

static void put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint16_t get16(const uint8_t *p) {
  return (uint16_t)(p[0] | (p[1] << 8));
}
static uint32_t get32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static void bs_entry_put(uint8_t *p, const bs_addr_t *a) {
  put16(p, a->family);
  put16(p + 2, a->port);
  memcpy(p + 4, a->addr, 16);
}
static void bs_entry_get(const uint8_t *p, bs_addr_t *a) {
  a->family = get16(p);
  a->port = get16(p + 2);
  memcpy(a->addr, p + 4, 16);
}

static void bs_hello_encode(const gin_bs_hello_t *h, uint8_t *p) {
  put32(p, h->magic);
  put16(p + 4, h->version);
  put16(p + 6, h->kind);
  memcpy(p + 8, h->secret, 16);
  put32(p + 24, (uint32_t)h->rank);
  put32(p + 28, (uint32_t)h->nranks);
  put16(p + 32, h->family);
  put16(p + 34, h->port);
  memcpy(p + 36, h->addr, 16);
}

static void bs_hello_decode(const uint8_t *p, gin_bs_hello_t *h) {
  h->magic = get32(p);
  h->version = get16(p + 4);
  h->kind = get16(p + 6);
  memcpy(h->secret, p + 8, 16);
  h->rank = (int32_t)get32(p + 24);
  h->nranks = (int32_t)get32(p + 28);
  h->family = get16(p + 32);
  h->port = get16(p + 34);
  memcpy(h->addr, p + 36, 16);
}

/* Checks a decoded hello; returns BS_OK or why it is refused. Pure. */
static enum bs_reason bs_hello_verify(const gin_bs_hello_t *h,
                                      const uint8_t secret[16], int nranks,
                                      int kind) {
  if (h->magic != GIN_BS_MAGIC) return BS_MAGIC;
  if (h->version != GIN_BS_VERSION) return BS_VERSION;
  if (h->kind != kind) return BS_KIND;
  unsigned diff = 0; /* constant time: do not leak how much matched */
  for (int i = 0; i < 16; i++) diff |= (unsigned)(h->secret[i] ^ secret[i]);
  if (diff) return BS_SECRET;
  if (h->nranks != nranks) return BS_NRANKS;
  if (h->rank < 0 || h->rank >= nranks) return BS_RANK;
  if (kind == GIN_BS_HELLO_ROOT &&
      ((h->family != AF_INET && h->family != AF_INET6) ||
       (h->port == 0 && nranks > 1)))
    return BS_ADDR;
  return BS_OK;
}

/* Formats why a hello was refused; h may be NULL for BS_LENGTH. */
static const char *bs_reason_str(enum bs_reason r, const gin_bs_hello_t *h,
                                 int nranks, int kind, char *buf, size_t len) {
  switch (r) {
  case BS_OK: snprintf(buf, len, "accepted"); break;
  case BS_LENGTH: snprintf(buf, len, "hello too short"); break;
  case BS_MAGIC: snprintf(buf, len, "bad magic 0x%08x", h->magic); break;
  case BS_VERSION:
    snprintf(buf, len, "protocol version %u, expected %d", h->version,
             GIN_BS_VERSION);
    break;
  case BS_KIND:
    snprintf(buf, len, "hello kind %u, expected %d", h->kind, kind);
    break;
  case BS_SECRET: snprintf(buf, len, "wrong job secret"); break;
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
  }
  return buf;
}

gin_result_t gin_bs_hello_check(const void *buf, size_t len,
                                const uint8_t secret[16], int nranks,
                                int kind, gin_bs_hello_t *out) {
  /* Pure: no logging, no last-error record; callers report. */
  if (!buf || !secret) return GIN_ERR_INVALID;
  if (len != BS_HELLO_BYTES) return GIN_ERR_PROTOCOL;
  gin_bs_hello_t h;
  bs_hello_decode(buf, &h);
  if (bs_hello_verify(&h, secret, nranks, kind) != BS_OK)
    return GIN_ERR_PROTOCOL;
  if (out) *out = h;
  return GIN_SUCCESS;
}

/* ------------------------------------------------------ socket helpers */

static socklen_t bs_addr_to_sockaddr(const bs_addr_t *a,
                                     struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof *ss);
  if (a->family == AF_INET6) {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(a->port);
    memcpy(&s6->sin6_addr, a->addr, 16);
    return sizeof *s6;
  }
  struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
  s4->sin_family = AF_INET;
  s4->sin_port = htons(a->port);
  memcpy(&s4->sin_addr, a->addr, 4);
  return sizeof *s4;
}

static int bs_addr_from_sockaddr(const struct sockaddr *sa, bs_addr_t *a) {
  memset(a, 0, sizeof *a);
  if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
    a->family = AF_INET6;
    a->port = ntohs(s6->sin6_port);
    memcpy(a->addr, &s6->sin6_addr, 16);
    return 0;
  }
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
    a->family = AF_INET;
    a->port = ntohs(s4->sin_port);
    memcpy(a->addr, &s4->sin_addr, 4);
    return 0;
  }
  return -1;
}

static const char *bs_addr_str(const bs_addr_t *a, char *buf, size_t len) {
  char ip[INET6_ADDRSTRLEN] = "?";
  int v6 = a->family == AF_INET6;
  inet_ntop(v6 ? AF_INET6 : AF_INET, a->addr, ip, sizeof ip);
  snprintf(buf, len, v6 ? "[%s]:%u" : "%s:%u", ip, a->port);
  return buf;
}

/* Resolves a numeric address or host name ("[v6]" accepted) to *out. */
static int bs_resolve(const char *host, int port, bs_addr_t *out,
                      const char **why) {
  char name[256];
  size_t n = strlen(host);
  if (n >= 2 && host[0] == '[' && host[n - 1] == ']') host++, n -= 2;
  if (n == 0 || n >= sizeof name) {
    *why = "empty or too long";
    return -1;
  }
  memcpy(name, host, n);
  name[n] = '\0';
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
  int rc = getaddrinfo(name, NULL, &hints, &res);
  if (rc != 0) {
    *why = gai_strerror(rc);
    return -1;
  }
  int found = -1;
  for (struct addrinfo *ai = res; ai && found < 0; ai = ai->ai_next)
    found = bs_addr_from_sockaddr(ai->ai_addr, out);
  freeaddrinfo(res);
  if (found < 0) {
    *why = "no IPv4 or IPv6 address";
    return -1;
  }
  out->port = (uint16_t)port;
  return 0;
}

static int bs_remaining_ms(uint64_t deadline_ns) {
  uint64_t now = gin_now_ns();
  if (now >= deadline_ns) return 0;
  uint64_t ms = (deadline_ns - now + 999999) / 1000000;
  return ms > 1000000000 ? 1000000000 : (int)ms;
}

static uint64_t bs_deadline(int64_t timeout_ms) {
  return gin_now_ns() + (uint64_t)timeout_ms * 1000000ull;
}

static void bs_set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Opens a non-blocking listening socket on a (port 0: any); writes the
 * bound address to *bound. Returns the fd, or -1 with errno set. */
static int bs_listen(const bs_addr_t *a, int backlog, bs_addr_t *bound) {
  struct sockaddr_storage ss;
  socklen_t sl = bs_addr_to_sockaddr(a, &ss);
  int fd = socket(a->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, backlog) != 0)
    goto err_close;
  sl = sizeof ss;
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0 ||
      bs_addr_from_sockaddr((struct sockaddr *)&ss, bound) != 0)
    goto err_close;
  return fd;
err_close:;
  int e = errno;
  close(fd);
  errno = e;
  return -1;
}

static int bs_connect_retryable(int err) {
  return err != EAFNOSUPPORT && err != EINVAL && err != EACCES &&
         err != EPERM && err != EPROTONOSUPPORT;
}

/* Connects to a, retrying (the peer may not listen yet) until the
 * deadline. Returns a non-blocking fd, or -1 with *err_out set. */
static int bs_connect(const bs_addr_t *a, uint64_t deadline, int *err_out) {
  struct sockaddr_storage ss;
  socklen_t sl = bs_addr_to_sockaddr(a, &ss);
  int err = ETIMEDOUT;
  for (;;) {
    int fd = socket(a->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      *err_out = errno;
      return -1;
    }
    if (connect(fd, (struct sockaddr *)&ss, sl) == 0) return fd;
    err = errno;
    if (err == EINPROGRESS) {
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      int n = poll(&p, 1, bs_remaining_ms(deadline));
      socklen_t el = sizeof err;
      if (n > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 &&
          err == 0)
        return fd;
      if (n == 0) err = ETIMEDOUT;
      else if (n < 0) err = errno;
    }
    close(fd);
    int left = bs_remaining_ms(deadline);
    if (!bs_connect_retryable(err) || left == 0) break;
    int ms = left < BS_RETRY_MS ? left : BS_RETRY_MS;
    struct timespec ts = {0, (long)ms * 1000000L};
    nanosleep(&ts, NULL);
  }
  *err_out = err;
  return -1;
}

enum { BS_IO_OK = 0, BS_IO_TIMEOUT = -1, BS_IO_EOF = -2 };

/* Sends (dir_send) or receives exactly len bytes before the deadline.
 * Returns BS_IO_OK, BS_IO_TIMEOUT, BS_IO_EOF or a positive errno. */
static int bs_io_all(int fd, void *buf, size_t len, int dir_send,
                     uint64_t deadline) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = dir_send ? send(fd, (char *)buf + done, len - done,
                                MSG_NOSIGNAL | MSG_DONTWAIT)
                         : recv(fd, (char *)buf + done, len - done,
                                MSG_DONTWAIT);
    if (n > 0) {
      done += (size_t)n;
      continue;
    }
    if (n == 0 && !dir_send) return BS_IO_EOF;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return errno;
    struct pollfd p = {.fd = fd, .events = dir_send ? POLLOUT : POLLIN};
    int left = bs_remaining_ms(deadline);
    if (left == 0) return BS_IO_TIMEOUT;
    if (poll(&p, 1, left) < 0 && errno != EINTR) return errno;
  }
  return BS_IO_OK;
}

/* Records an I/O failure of bs_io_all; `what` says who did what to whom. */
static gin_result_t bs_io_error(int io, int64_t timeout_ms, const char *what) {
  if (io == BS_IO_TIMEOUT)
    return GIN_ERROR(GIN_ERR_TIMEOUT, "%s: no answer within %lld ms", what,
                     (long long)timeout_ms);
  if (io == BS_IO_EOF)
    return GIN_ERROR(GIN_ERR_REMOTE, "%s: connection closed by the peer",
                     what);
  return GIN_ERROR(GIN_ERR_REMOTE, "%s: %s", what, strerror(io));
}

/* ------------------------------------------------------------ acceptor */

/* Accepts connections on a listening socket and reads their hellos, many
 * at once (poll), so a client that connects and stays silent cannot block
 * the real ranks. */
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

/* Sends a REFUSED reply (best effort), closes and logs. */
static void bs_acceptor_refuse(bs_acceptor_t *a, int fd, const char *peer,
                               enum bs_reason r, const gin_bs_hello_t *h) {
  char why[96];
  GIN_WARN(BOOTSTRAP, "%s: refused connection from %s: %s", a->who, peer,
           bs_reason_str(r, h, a->nranks, a->kind, why, sizeof why));
  if (a->reply) {
    uint8_t rep[BS_REPLY_BYTES] = {0};
    put32(rep, GIN_BS_MAGIC);
    put32(rep + 4, BS_STATUS_REFUSED);
    put32(rep + 8, (uint32_t)a->nranks);
    put32(rep + 12, (uint32_t)r);
    put32(rep + 16, (uint32_t)(h ? h->rank : -1));
    ssize_t n = send(fd, rep, sizeof rep, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)n;
  }
  close(fd);
}

static void bs_acceptor_add(bs_acceptor_t *a, int fd,
                            const struct sockaddr *sa) {
  bs_addr_t pa;
  if (a->npend == BS_MAX_PENDING) { /* a flood: drop the oldest */
    int old = 0;
    for (int i = 1; i < a->npend; i++)
      if (a->pend[i].deadline_ns < a->pend[old].deadline_ns) old = i;
    GIN_WARN(BOOTSTRAP, "%s: %d connections without a hello; dropping %s",
             a->who, BS_MAX_PENDING, a->pend[old].peer);
    bs_pending_drop(a, old, 1);
  }
  bs_pending_t *p = &a->pend[a->npend++];
  p->fd = fd;
  p->got = 0;
  p->deadline_ns = bs_deadline(BS_HELLO_WAIT_MS);
  if (bs_addr_from_sockaddr(sa, &pa) == 0)
    bs_addr_str(&pa, p->peer, sizeof p->peer);
  else
    snprintf(p->peer, sizeof p->peer, "unknown peer");
}

/* Reads from pending connection i; returns 1 when it holds a valid hello
 * (moved out to *fd_out / *h_out), 0 otherwise (it may have been closed). */
static int bs_acceptor_read(bs_acceptor_t *a, int i, int *fd_out,
                            gin_bs_hello_t *h_out, char *peer_out) {
  bs_pending_t *p = &a->pend[i];
  ssize_t n = recv(p->fd, p->buf + p->got, BS_HELLO_BYTES - p->got,
                   MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return 0;
  if (n <= 0) {
    GIN_WARN(BOOTSTRAP, "%s: refused connection from %s: short read "
             "(%zu of %d hello bytes, then %s)", a->who, p->peer, p->got,
             BS_HELLO_BYTES, n == 0 ? "closed" : strerror(errno));
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
    bs_pending_drop(a, i, 0);
    return 0;
  }
  *fd_out = p->fd;
  *h_out = h;
  snprintf(peer_out, BS_ADDRSTR, "%s", p->peer);
  bs_pending_drop(a, i, 0);
  return 1;
}

/* Waits for the next connection that presents a valid hello. Returns
 * GIN_SUCCESS with its fd, hello and peer address; GIN_ERR_TIMEOUT at the
 * deadline (not recorded: the caller knows what it waited for). */
static gin_result_t bs_accept_hello(bs_acceptor_t *a, uint64_t deadline,
                                    int *fd_out, gin_bs_hello_t *h_out,
                                    char *peer_out) {
  struct pollfd pfd[BS_MAX_PENDING + 1];
  for (;;) {
    uint64_t now = gin_now_ns(), wake = deadline;
    for (int i = a->npend - 1; i >= 0; i--) {
      if (now >= a->pend[i].deadline_ns) {
        GIN_WARN(BOOTSTRAP, "%s: refused connection from %s: no hello "
                 "within %d ms (%zu of %d bytes)", a->who, a->pend[i].peer,
                 BS_HELLO_WAIT_MS, a->pend[i].got, BS_HELLO_BYTES);
        bs_pending_drop(a, i, 1);
      } else if (a->pend[i].deadline_ns < wake) {
        wake = a->pend[i].deadline_ns;
      }
    }
    if (now >= deadline) return GIN_ERR_TIMEOUT;
    int np = a->npend;
    pfd[0] = (struct pollfd){.fd = a->lfd, .events = POLLIN};
    for (int i = 0; i < np; i++)
      pfd[i + 1] = (struct pollfd){.fd = a->pend[i].fd, .events = POLLIN};
    int n = poll(pfd, (nfds_t)np + 1, bs_remaining_ms(wake));
    if (n < 0 && errno != EINTR)
      return GIN_ERROR(GIN_ERR_SYSTEM, "%s: poll: %s", a->who,
                       strerror(errno));
    if (n <= 0) continue;
    /* Descending, so dropping i (swap with the last) keeps pfd aligned. */
    for (int i = np - 1; i >= 0; i--)
      if (pfd[i + 1].revents &&
          bs_acceptor_read(a, i, fd_out, h_out, peer_out))
        return GIN_SUCCESS;
    if (!(pfd[0].revents & POLLIN)) continue;
    for (;;) {
      struct sockaddr_storage ss;
      socklen_t sl = sizeof ss;
      int fd = accept4(a->lfd, (struct sockaddr *)&ss, &sl,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break; /* EAGAIN, or a connection reset before accept */
      bs_acceptor_add(a, fd, (struct sockaddr *)&ss);
    }
  }
}

static void bs_acceptor_close(bs_acceptor_t *a) {
  while (a->npend > 0) bs_pending_drop(a, a->npend - 1, 1);
  if (a->lfd >= 0) close(a->lfd);
  a->lfd = -1;
}

/* ---------------------------------------------------------------- root */

typedef struct bs_root {
  bs_acceptor_t acc;
  int nranks;
  int64_t timeout_ms;
  uint64_t deadline_ns;
  int *fds;        /* per rank; -1 until it joined */
  bs_addr_t *addr; /* per rank: its listen address */
} bs_root_t;

static void bs_root_reply(bs_root_t *root, const uint8_t *msg, size_t len) {
  uint64_t deadline = bs_deadline(root->timeout_ms);
  for (int r = 0; r < root->nranks; r++) {
    if (root->fds[r] < 0) continue;
    int io = bs_io_all(root->fds[r], (void *)msg, len, 1, deadline);
    if (io != BS_IO_OK)
      GIN_WARN(BOOTSTRAP, "%s: could not answer rank %d: %s", root->acc.who,
               r, io == BS_IO_TIMEOUT ? "timed out" : strerror(io));
  }
}

static void bs_root_finish(bs_root_t *root, int joined) {
  int n = root->nranks;
  if (joined == n) {
    size_t len = BS_REPLY_BYTES + (size_t)n * BS_ENTRY_BYTES;
    uint8_t *msg = calloc(1, len);
    if (!msg) {
      GIN_WARN(BOOTSTRAP, "%s: out of memory for the table", root->acc.who);
      return;
    }
    put32(msg, GIN_BS_MAGIC);
    put32(msg + 4, BS_STATUS_OK);
    put32(msg + 8, (uint32_t)n);
    for (int r = 0; r < n; r++)
      bs_entry_put(msg + BS_REPLY_BYTES + (size_t)r * BS_ENTRY_BYTES,
                   &root->addr[r]);
    bs_root_reply(root, msg, len);
    free(msg);
    GIN_INFO(BOOTSTRAP, "%s: all %d ranks joined", root->acc.who, n);
    return;
  }
  int missing = 0;
  while (root->fds[missing] >= 0) missing++;
  /* A job that never used the bootstrap (ginrun of a plain program) is
   * not worth a warning. */
  if (joined == 0)
    GIN_INFO(BOOTSTRAP, "%s: no rank joined within %lld ms", root->acc.who,
             (long long)root->timeout_ms);
  else
    GIN_WARN(BOOTSTRAP, "%s: rank %d%s did not join within %lld ms (%d of %d "
             "joined); giving up", root->acc.who, missing,
             n - joined > 1 ? " and others" : "", (long long)root->timeout_ms,
             joined, n);
  uint8_t rep[BS_REPLY_BYTES];
  put32(rep, GIN_BS_MAGIC);
  put32(rep + 4, BS_STATUS_TIMEOUT);
  put32(rep + 8, (uint32_t)n);
  put32(rep + 12, (uint32_t)joined);
  put32(rep + 16, (uint32_t)missing);
  put32(rep + 20, (uint32_t)(root->timeout_ms > INT32_MAX ? INT32_MAX
                                                          : root->timeout_ms));
  bs_root_reply(root, rep, sizeof rep);
}

static void *bs_root_main(void *arg) {
  bs_root_t *root = arg;
  int joined = 0;
  while (joined < root->nranks) {
    int fd;
    gin_bs_hello_t h;
    char peer[BS_ADDRSTR];
    if (bs_accept_hello(&root->acc, root->deadline_ns, &fd, &h, peer) !=
        GIN_SUCCESS)
      break;
    if (root->fds[h.rank] >= 0) {
      bs_acceptor_refuse(&root->acc, fd, peer, BS_DUP, &h);
      continue;
    }
    root->fds[h.rank] = fd;
    root->addr[h.rank] =
        (bs_addr_t){.family = h.family, .port = h.port};
    memcpy(root->addr[h.rank].addr, h.addr, 16);
    joined++;
    GIN_TRACE(BOOTSTRAP, "%s: rank %d joined from %s (%d of %d)",
              root->acc.who, (int)h.rank, peer, joined, root->nranks);
  }
  bs_acceptor_close(&root->acc);
  bs_root_finish(root, joined);
  for (int r = 0; r < root->nranks; r++)
    if (root->fds[r] >= 0) close(root->fds[r]);
  free(root->fds);
  free(root->addr);
  free(root);
  return NULL;
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
  gin_result_t res = GIN_SUCCESS;
  bs_addr_t want, bound;
  const char *why = NULL;
  if (bs_resolve(addr, port, &want, &why) != 0)
    return GIN_ERROR(GIN_ERR_INVALID,
                     "bootstrap root: cannot resolve address \"%s\": %s",
                     addr, why);
  char astr[BS_ADDRSTR];
  int lfd = bs_listen(&want, SOMAXCONN, &bound);
  if (lfd < 0)
    return GIN_ERROR(GIN_ERR_SYSTEM, "bootstrap root: cannot listen on %s: "
                     "%s%s", bs_addr_str(&want, astr, sizeof astr),
                     strerror(errno),
                     port ? " (choose another GIN_ROOT_PORT)" : "");
  bs_root_t *root = calloc(1, sizeof *root);
  if (!root) {
    res = GIN_ERROR(GIN_ERR_NOMEM, "bootstrap root: out of memory");
    goto err_close_listen;
  }
  root->fds = malloc(sizeof *root->fds * (size_t)nranks);
  root->addr = calloc((size_t)nranks, sizeof *root->addr);
  if (!root->fds || !root->addr) {
    res = GIN_ERROR(GIN_ERR_NOMEM, "bootstrap root: out of memory for %d "
                    "ranks", nranks);
    goto err_free_root;
  }
  for (int r = 0; r < nranks; r++) root->fds[r] = -1;
  root->nranks = nranks;
  root->timeout_ms = timeout_ms;
  root->deadline_ns = bs_deadline(timeout_ms);
  root->acc.lfd = lfd;
  root->acc.kind = GIN_BS_HELLO_ROOT;
  root->acc.nranks = nranks;
  root->acc.reply = 1;
  memcpy(root->acc.secret, secret, 16);
  snprintf(root->acc.who, sizeof root->acc.who, "bootstrap root %s",
           bs_addr_str(&bound, astr, sizeof astr));

  gin_bs_uid_t u = {.magic = GIN_BS_MAGIC, .version = GIN_BS_VERSION,
                    .family = bound.family, .port = bound.port,
                    .nranks = nranks};
  memcpy(u.addr, bound.addr, 16);
  memcpy(u.secret, secret, 16);
  gin_unique_id_t uid;
  memset(&uid, 0, sizeof uid);
  memcpy(uid.bytes, &u, sizeof u);

  /* The thread blocks every signal: they belong to the application. */
  pthread_attr_t attr;
  sigset_t all, old;
  sigfillset(&all);
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t tid;
  int rc = pthread_create(&tid, &attr, bs_root_main, root);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    res = GIN_ERROR(GIN_ERR_SYSTEM, "bootstrap root: cannot start thread: %s",
                    strerror(rc));
    goto err_free_root;
  }
  GIN_INFO(BOOTSTRAP, "%s: serving %d ranks for %lld ms", astr, nranks,
           (long long)timeout_ms);
  *uid_out = uid;
  return GIN_SUCCESS;

err_free_root:
  free(root->fds);
  free(root->addr);
  free(root);
err_close_listen:
  close(lfd);
  return res;
}

/* ---------------------------------------------------------------- rank */

/* Registers with the root: sends the hello, receives the table of listen
 * addresses into addrs (nranks entries). */
static gin_result_t bs_register(gin_bs_t *bs, int rfd, const char *rstr,
                                const gin_bs_hello_t *hello, bs_addr_t *addrs,
                                uint64_t deadline) {
  char what[160], why[96];
  int n = bs->nranks, io;
  uint8_t msg[BS_REPLY_BYTES > BS_HELLO_BYTES ? BS_REPLY_BYTES
                                              : BS_HELLO_BYTES];
  bs_hello_encode(hello, msg);
  snprintf(what, sizeof what, "bootstrap: rank %d registering with root %s",
           bs->rank, rstr);
  if ((io = bs_io_all(rfd, msg, BS_HELLO_BYTES, 1, deadline)) ||
      (io = bs_io_all(rfd, msg, BS_REPLY_BYTES, 0, deadline)))
    return bs_io_error(io, bs->timeout_ms, what);
  uint32_t status = get32(msg + 4);
  int rn = (int)get32(msg + 8), a = (int)get32(msg + 12),
      b = (int)get32(msg + 16), c = (int)get32(msg + 20);
  if (get32(msg) != GIN_BS_MAGIC)
    return GIN_ERROR(GIN_ERR_PROTOCOL, "%s: bad reply magic 0x%08x", what,
                     get32(msg));
  if (status == BS_STATUS_TIMEOUT)
    return GIN_ERROR(GIN_ERR_TIMEOUT, "bootstrap: rank %d%s did not join "
                     "within %d ms (%d of %d joined; root %s gave up)", b,
                     n - a > 1 ? " and others" : "", c, a, n, rstr);
  if (status == BS_STATUS_REFUSED) {
    gin_bs_hello_t h = *hello;
    h.rank = b;
    return GIN_ERROR(GIN_ERR_PROTOCOL, "%s: refused: %s", what,
                     bs_reason_str((enum bs_reason)a, &h, rn,
                                   GIN_BS_HELLO_ROOT, why, sizeof why));
  }
  if (status != BS_STATUS_OK || rn != n)
    return GIN_ERROR(GIN_ERR_PROTOCOL, "%s: bad reply (status %u, %d ranks)",
                     what, status, rn);
  size_t len = (size_t)n * BS_ENTRY_BYTES;
  uint8_t *table = malloc(len);
  if (!table) return GIN_ERROR(GIN_ERR_NOMEM, "%s: out of memory", what);
  io = bs_io_all(rfd, table, len, 0, deadline);
  for (int r = 0; io == BS_IO_OK && r < n; r++)
    bs_entry_get(table + (size_t)r * BS_ENTRY_BYTES, &addrs[r]);
  free(table);
  if (io) return bs_io_error(io, bs->timeout_ms, what);
  for (int r = 0; r < n; r++)
    if ((addrs[r].family != AF_INET && addrs[r].family != AF_INET6) ||
        (addrs[r].port == 0 && n > 1))
      return GIN_ERROR(GIN_ERR_PROTOCOL, "%s: bad address of rank %d in the "
                       "table (family %u, port %u)", what, r,
                       addrs[r].family, addrs[r].port);
  if (addrs[bs->rank].port != hello->port ||
      memcmp(addrs[bs->rank].addr, hello->addr, 16) != 0)
    return GIN_ERROR(GIN_ERR_PROTOCOL, "%s: the table's entry for this rank "
                     "is not the address it sent", what);
  return GIN_SUCCESS;
}

/* Connects the ring: to rank+1, and accepts rank-1 on lfd. */
static gin_result_t bs_ring_connect(gin_bs_t *bs, int lfd,
                                    const gin_bs_hello_t *hello,
                                    const bs_addr_t *addrs,
                                    uint64_t deadline) {
  int n = bs->nranks, next = (bs->rank + 1) % n, prev = (bs->rank + n - 1) % n;
  char nstr[BS_ADDRSTR], what[160];
  bs->next_addr = addrs[next];
  bs->prev_addr = addrs[prev];
  bs_addr_str(&addrs[next], nstr, sizeof nstr);
  int err = 0;
  bs->next_fd = bs_connect(&addrs[next], deadline, &err);
  if (bs->next_fd < 0)
    return GIN_ERROR(bs_connect_retryable(err) ? GIN_ERR_TIMEOUT
                                               : GIN_ERR_SYSTEM,
                     "bootstrap: rank %d could not connect to rank %d at %s "
                     "within %lld ms: %s", bs->rank, next, nstr,
                     (long long)bs->timeout_ms, strerror(err));
  gin_bs_hello_t h = *hello;
  h.kind = GIN_BS_HELLO_RING;
  uint8_t msg[BS_HELLO_BYTES];
  bs_hello_encode(&h, msg);
  int io = bs_io_all(bs->next_fd, msg, sizeof msg, 1, deadline);
  if (io) {
    snprintf(what, sizeof what, "bootstrap: rank %d greeting rank %d at %s",
             bs->rank, next, nstr);
    return bs_io_error(io, bs->timeout_ms, what);
  }
  bs_acceptor_t *a = calloc(1, sizeof *a);
  if (!a) return GIN_ERROR(GIN_ERR_NOMEM, "bootstrap: out of memory");
  a->lfd = lfd;
  a->kind = GIN_BS_HELLO_RING;
  a->nranks = n;
  memcpy(a->secret, hello->secret, 16);
  snprintf(a->who, sizeof a->who, "bootstrap: rank %d", bs->rank);
  gin_result_t res = GIN_SUCCESS;
  while (bs->prev_fd < 0) {
    int fd;
    char peer[BS_ADDRSTR];
    res = bs_accept_hello(a, deadline, &fd, &h, peer);
    if (res == GIN_ERR_TIMEOUT)
      res = GIN_ERROR(GIN_ERR_TIMEOUT, "bootstrap: rank %d: no connection "
                      "from rank %d (%s) within %lld ms", bs->rank, prev,
                      bs_addr_str(&addrs[prev], nstr, sizeof nstr),
                      (long long)bs->timeout_ms);
    if (res != GIN_SUCCESS) break;
    if (h.rank == prev) {
      bs->prev_fd = fd;
      break;
    }
    GIN_WARN(BOOTSTRAP, "bootstrap: rank %d: refused connection from %s: "
             "rank %d is not the ring predecessor %d", bs->rank, peer,
             (int)h.rank, prev);
    close(fd);
  }
  a->lfd = -1; /* the caller closes the listening socket */
  bs_acceptor_close(a);
  free(a);
  if (res != GIN_SUCCESS) return res;
  bs_set_nodelay(bs->next_fd);
  bs_set_nodelay(bs->prev_fd);
  return GIN_SUCCESS;
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
                "version %u, family %u, port %u)", rank, u.magic, u.version,
                u.family, u.port);
  GIN_ARG_CHECK(u.nranks == nranks, "bootstrap: rank %d: the unique id is "
                "for a job of %d ranks, called with nranks %d", rank,
                (int)u.nranks, nranks);
  gin_result_t res = GIN_SUCCESS;
  uint64_t deadline = bs_deadline(timeout_ms);
  bs_addr_t root = {.family = u.family, .port = u.port}, me;
  memcpy(root.addr, u.addr, 16);
  char rstr[BS_ADDRSTR];
  bs_addr_str(&root, rstr, sizeof rstr);

  gin_bs_t *bs = calloc(1, sizeof *bs);
  bs_addr_t *addrs = calloc((size_t)nranks, sizeof *addrs);
  if (!bs || !addrs) {
    res = GIN_ERROR(GIN_ERR_NOMEM, "bootstrap: rank %d: out of memory", rank);
    goto err_free;
  }
  *bs = (gin_bs_t){.rank = rank, .nranks = nranks, .timeout_ms = timeout_ms,
                   .next_fd = -1, .prev_fd = -1};
  int err = 0, lfd = -1;
  int rfd = bs_connect(&root, deadline, &err);
  if (rfd < 0) {
    res = GIN_ERROR(bs_connect_retryable(err) ? GIN_ERR_TIMEOUT
                                              : GIN_ERR_SYSTEM,
                    "bootstrap: rank %d could not reach root %s within %lld "
                    "ms: %s", rank, rstr, (long long)timeout_ms,
                    strerror(err));
    goto err_free;
  }
  /* Listen on the local address that reaches the root. */
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  if (getsockname(rfd, (struct sockaddr *)&ss, &sl) != 0 ||
      bs_addr_from_sockaddr((struct sockaddr *)&ss, &me) != 0) {
    res = GIN_ERROR(GIN_ERR_SYSTEM, "bootstrap: rank %d: getsockname: %s",
                    rank, strerror(errno));
    goto err_close_root;
  }
  me.port = 0;
  if (nranks > 1 && (lfd = bs_listen(&me, SOMAXCONN, &me)) < 0) {
    char mstr[BS_ADDRSTR];
    res = GIN_ERROR(GIN_ERR_SYSTEM, "bootstrap: rank %d cannot listen on %s: "
                    "%s", rank, bs_addr_str(&me, mstr, sizeof mstr),
                    strerror(errno));
    goto err_close_root;
  }
  gin_bs_hello_t hello = {.magic = GIN_BS_MAGIC, .version = GIN_BS_VERSION,
                          .kind = GIN_BS_HELLO_ROOT, .rank = rank,
                          .nranks = nranks, .family = me.family,
                          .port = me.port};
  memcpy(hello.secret, u.secret, 16);
  memcpy(hello.addr, me.addr, 16);
  GIN_CHECK_GOTO(bs_register(bs, rfd, rstr, &hello, addrs, deadline), res,
                 err_close_listen);
  close(rfd);
  rfd = -1;
  if (nranks > 1)
    GIN_CHECK_GOTO(bs_ring_connect(bs, lfd, &hello, addrs, deadline), res,
                   err_close_listen);
  if (lfd >= 0) close(lfd);
  free(addrs);
  GIN_INFO(BOOTSTRAP, "bootstrap: rank %d of %d joined via root %s", rank,
           nranks, rstr);
  *bs_out = bs;
  return GIN_SUCCESS;

err_close_listen:
  if (lfd >= 0) close(lfd);
err_close_root:
  if (rfd >= 0) close(rfd);
err_free:
  if (bs && bs->next_fd >= 0) close(bs->next_fd);
  if (bs && bs->prev_fd >= 0) close(bs->prev_fd);
  free(addrs);
  free(bs);
  return res;
}

/* ---------------------------------------------------------- collectives */

/* Marks the ring unusable and shuts it so the neighbours notice now. */
static gin_result_t bs_break(gin_bs_t *bs, gin_result_t res) {
  bs->broken = 1;
  shutdown(bs->next_fd, SHUT_RDWR);
  shutdown(bs->prev_fd, SHUT_RDWR);
  return res;
}

/* Ring all-gather, pipelined: the send stream is this rank's block then
 * the blocks received from rank-1 (all but the last), so byte p of it may
 * go once byte p - bytes of the receive stream has arrived. Send and
 * receive progress together under one poll: no deadlock at any size. */
gin_result_t gin_bs_allgather(gin_bs_t *bs, void *buf, size_t bytes) {
  GIN_ARG_CHECK(bs, "bootstrap allgather: NULL bootstrap");
  GIN_ARG_CHECK(buf || bytes == 0, "bootstrap allgather: rank %d: NULL "
                "buffer for %zu bytes", bs->rank, bytes);
  if (bs->broken)
    return GIN_ERROR(GIN_ERR_STATE, "bootstrap allgather: rank %d: an "
                     "earlier collective failed; the ring is unusable",
                     bs->rank);
  size_t n = (size_t)bs->nranks, r = (size_t)bs->rank;
  GIN_ARG_CHECK(bytes <= SIZE_MAX / n, "bootstrap allgather: rank %d: %zu "
                "bytes per rank times %zu ranks overflows", bs->rank, bytes, n);
  uint32_t seq = bs->seq++;
  if (n == 1) return GIN_SUCCESS;
  char *p = buf, nstr[BS_ADDRSTR], pstr[BS_ADDRSTR];
  int next = (int)((r + 1) % n), prev = (int)((r + n - 1) % n);
  uint8_t hout[BS_COLL_BYTES], hin[BS_COLL_BYTES];
  put32(hout, BS_COLL_MAGIC);
  put32(hout + 4, seq);
  put64(hout + 8, bytes);
  size_t total = (n - 1) * bytes, hs = 0, hr = 0, sp = 0, rp = 0;
  uint64_t deadline = bs_deadline(bs->timeout_ms);
  while (hs < BS_COLL_BYTES || sp < total || hr < BS_COLL_BYTES ||
         rp < total) {
    size_t limit = bytes + rp < total ? bytes + rp : total;
    int want_send = hs < BS_COLL_BYTES || sp < limit;
    int want_recv = hr < BS_COLL_BYTES || rp < total;
    struct pollfd pfd[2] = {
        {.fd = want_send ? bs->next_fd : -1, .events = POLLOUT},
        {.fd = want_recv ? bs->prev_fd : -1, .events = POLLIN}};
    int left = bs_remaining_ms(deadline);
    int np = left ? poll(pfd, 2, left) : 0;
    if (np == 0)
      return bs_break(bs, GIN_ERROR(GIN_ERR_TIMEOUT, "bootstrap allgather "
                      "%u: rank %d: no progress within %lld ms (sent %zu of "
                      "%zu bytes to rank %d at %s, received %zu of %zu from "
                      "rank %d at %s)", seq, bs->rank,
                      (long long)bs->timeout_ms, sp, total, next,
                      bs_addr_str(&bs->next_addr, nstr, sizeof nstr), rp,
                      total, prev,
                      bs_addr_str(&bs->prev_addr, pstr, sizeof pstr)));
    if (np < 0) {
      if (errno == EINTR) continue;
      return bs_break(bs, GIN_ERROR(GIN_ERR_SYSTEM, "bootstrap allgather: "
                                    "poll: %s", strerror(errno)));
    }
    if (pfd[0].revents) {
      const char *src = (const char *)hout + hs;
      size_t len = BS_COLL_BYTES - hs;
      if (hs == BS_COLL_BYTES) {
        size_t blk = (r + n - sp / bytes) % n, off = sp % bytes;
        src = p + blk * bytes + off;
        len = bytes - off < limit - sp ? bytes - off : limit - sp;
      }
      ssize_t k = send(bs->next_fd, src, len, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        return bs_break(bs, GIN_ERROR(GIN_ERR_REMOTE, "bootstrap allgather "
                        "%u: rank %d: sending to rank %d at %s: %s", seq,
                        bs->rank, next,
                        bs_addr_str(&bs->next_addr, nstr, sizeof nstr),
                        strerror(errno)));
      if (k > 0 && hs < BS_COLL_BYTES) hs += (size_t)k;
      else if (k > 0) sp += (size_t)k;
    }
    if (pfd[1].revents) {
      char *dst = (char *)hin + hr;
      size_t len = BS_COLL_BYTES - hr;
      if (hr == BS_COLL_BYTES) {
        size_t blk = (r + 2 * n - 1 - rp / bytes) % n, off = rp % bytes;
        dst = p + blk * bytes + off;
        len = bytes - off;
      }
      ssize_t k = recv(bs->prev_fd, dst, len, MSG_DONTWAIT);
      if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                     errno != EINTR))
        return bs_break(bs, GIN_ERROR(GIN_ERR_REMOTE, "bootstrap allgather "
                        "%u: rank %d: connection from rank %d at %s %s "
                        "(received %zu of %zu bytes)", seq, bs->rank, prev,
                        bs_addr_str(&bs->prev_addr, pstr, sizeof pstr),
                        k == 0 ? "closed" : strerror(errno), rp, total));
      if (k > 0 && hr < BS_COLL_BYTES) {
        hr += (size_t)k;
        if (hr == BS_COLL_BYTES &&
            (get32(hin) != BS_COLL_MAGIC || get32(hin + 4) != seq ||
             get64(hin + 8) != bytes))
          return bs_break(bs, GIN_ERROR(GIN_ERR_PROTOCOL, "bootstrap "
                          "allgather %u: rank %d: mismatch with rank %d: it "
                          "sent collective %u of %llu bytes per rank (magic "
                          "0x%08x), this rank expects %u of %zu bytes", seq,
                          bs->rank, prev, get32(hin + 4),
                          (unsigned long long)get64(hin + 8), get32(hin),
                          seq, bytes));
      } else if (k > 0) {
        rp += (size_t)k;
      }
    }
  }
  return GIN_SUCCESS;
}

gin_result_t gin_bs_barrier(gin_bs_t *bs) {
  GIN_ARG_CHECK(bs, "bootstrap barrier: NULL bootstrap");
  uint8_t tmp[GIN_MAX_RANKS] = {0};
  tmp[bs->rank] = 1;
  return gin_bs_allgather(bs, tmp, 1);
}

void gin_bs_destroy(gin_bs_t *bs) {
  if (!bs) return;
  if (bs->next_fd >= 0) close(bs->next_fd);
  if (bs->prev_fd >= 0) close(bs->prev_fd);
  free(bs);
}
