/*
 * tcp transport: proxied peers on other hosts (or, with GIN_TRANSPORT=tcp,
 * on this one) over one TCP connection per pair of ranks.
 *
 * Setup (init, collective): each rank listens on the local address that
 * reaches the bootstrap root, the addresses and who-uses-tcp-with-whom are
 * all-gathered (and checked alike on every rank: gin_tcp_entries_check),
 * the lower rank of each pair connects and sends a hello
 * (magic, version, job secret, rank, size) that the higher rank checks.
 *
 * Sending (put): the operation is encoded as headers (one per chunk of at
 * most TCP_CHUNK bytes, the signal on the last) followed by the payload,
 * queued in the peer's send ring in stream order; GIN_ERR_AGAIN while the
 * ring is full. Headers and small or device payloads are copied in. A
 * payload of TCP_REF_MIN bytes or more in host memory only reserves its
 * place and is written to the socket straight from its source (one
 * sendmsg with the headers around it); flush copies into the reserved
 * place what the socket has not taken yet, so sources are free once it
 * returns and most bytes are never copied. progress writes the ring as
 * fast as the socket takes it (epoll tells when a full socket drains).
 *
 * Receiving (progress): bytes are staged per connection; each header is
 * checked against this rank's window table before anything is written,
 * then the payload is copied into the window (gin_arch_copy: the window
 * may be device memory), then the mode word is or-ed and the signal added,
 * in connection order. A payload bound for host memory (the host target,
 * or a window of the host kind) is received straight into the window once
 * the staged bytes are used up; after a large one the next header is read
 * alone, so that a stream of large puts is never staged. A header naming
 * a window this rank has not registered yet waits (the sender registered
 * it first), at most timeout_ms. Wire format and checks: tcp.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/net.h"
#include "transport/tcp.h"
#include "transport/transport.h"
#include "transport/wire.h"

GIN_PARAM_INT(param_tcp_send_buffer, "TCP_SEND_BUFFER", 4194304,
              "bytes of operations queued per tcp peer before puts wait for "
              "the socket (64 KiB .. 1 GiB)")

#define TCP_CHUNK (256u << 10)    /* payload per header of a large put */
#define TCP_MIN_CHUNK (16u << 10) /* a partial chunk is at least this */
#define TCP_RX_BYTES (256u << 10) /* receive staging per connection */
#define TCP_RX_ROUNDS 8           /* recv calls per connection per progress */
/* After a payload this large the next header is read alone. */
#define TCP_RX_DIRECT_MIN (32u << 10)
#define TCP_REF_MIN 4096 /* host payloads this large go from their source */
#define TCP_REFS 256     /* such payloads queued per peer at most */
#define TCP_IOV 64       /* iovec entries per sendmsg */
#define TCP_EVENTS 64
#define TCP_HELLO_WAIT_MS 5000 /* a connection must say hello this fast */
#define TCP_MAX_PENDING 64     /* connections waiting for their hello */
#define TCP_FINI_MS 5000       /* fini flushes queued bytes this long */

_Static_assert(TCP_CHUNK <= GIN_TCP_MAX_CHUNK, "chunk within the protocol");

/* ------------------------------------------------------------ sockets */

/* The local address that routes to the bootstrap root (a UDP connect sends
 * nothing), else loopback. Port 0. */
static void tcp_local_addr(const gin_job_t *job, gin_net_addr_t *out) {
  const gin_net_addr_t *root = &job->root;
  int ok = gin_net_route_source(root, out) == GIN_SUCCESS;
  if (!ok) {
    memset(out, 0, sizeof *out);
    out->family = root->family == AF_INET6 ? AF_INET6 : AF_INET;
    if (out->family == AF_INET6)
      out->addr[15] = 1;
    else
      memcpy(out->addr, (uint8_t[]){127, 0, 0, 1}, 4);
    GIN_INFO(
        NET,
        "tcp: rank %d: no route to the bootstrap root; listening on loopback",
        job->rank);
  }
  out->port = 0;
}

/* ------------------------------------------------------------ state */

enum { RX_HDR = 0, RX_PAYLOAD = 1 };

/* A payload queued by reference: `len` bytes of the stream from position
 * `pos` on are read from `src` (their place in the send ring is reserved
 * for flush to copy them into). */
typedef struct tcp_ref {
  uint64_t pos;
  size_t len;
  const char *src;
} tcp_ref_t;

typedef struct tcp_conn {
  int fd; /* -1: not a tcp peer, or closed */
  int peer;
  int left;         /* the peer said goodbye */
  int out_armed;    /* EPOLLOUT requested: the socket was full */
  gin_result_t err; /* the connection failed; why in msg */
  char msg[224];
  /* send side: a ring of headers and payload, the first unsent byte at
   * tx_head, stream position tx_sent; refs (a ring too) in stream order */
  uint8_t *tx;
  size_t tx_cap, tx_head, tx_len;
  uint64_t tx_sent;
  tcp_ref_t *refs; /* [TCP_REFS] */
  unsigned ref_head, nrefs;
  int ref_listed;             /* in the state's list of peers with refs */
  gin_wire_partial_t partial; /* an operation partly queued */
  /* receive side */
  uint8_t *rx;
  size_t rx_start, rx_end;
  int rx_state;
  int rx_direct;     /* the payload goes to host memory: recv into it */
  int rx_hdr_alone;  /* the last payload was large: read a header alone */
  gin_tcp_hdr_t hdr; /* the operation being received */
  uint64_t rx_left;
  char *rx_dst;      /* the CPU view where rx_direct, else gin_arch_copy's */
  uint64_t stall_ns; /* since when the next header waits for a window */
} tcp_conn_t;

typedef struct tcp_state {
  const gin_job_t *job;
  pthread_mutex_t lock; /* put and progress run on several proxy threads */
  int epfd;
  int npeers, nstalled;
  int sole; /* the only tcp peer where npeers == 1, else -1 */
  size_t tx_cap;
  int src_host;      /* put sources are host memory (refs allowed) */
  tcp_conn_t *conns; /* [nranks] */
  uint64_t traffic;  /* sends and receives that moved bytes (atomic) */
  int *ref_peers;    /* [nranks] peers that may hold refs */
  int nref_peers;    /* written under lock, read without it by flush */
} tcp_state_t;

/* Bytes moved: an idle proxy does not nap while this count grows. */
static void tcp_traffic_note(tcp_state_t *s) {
  __atomic_fetch_add(&s->traffic, 1, __ATOMIC_RELAXED);
}

static void conn_close(tcp_state_t *s, tcp_conn_t *c) {
  if (c->fd >= 0) {
    if (s->epfd >= 0) epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
  }
  if (c->stall_ns) s->nstalled--;
  c->stall_ns = 0;
}

/* Fails connection c (the first reason sticks), closes it, records and
 * logs the error naming both ranks. */
static gin_result_t conn_fail(tcp_state_t *s, tcp_conn_t *c, gin_result_t res,
                              const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static gin_result_t conn_fail(tcp_state_t *s, tcp_conn_t *c, gin_result_t res,
                              const char *fmt, ...) {
  if (!c->err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
    c->err = res;
  }
  conn_close(s, c);
  return GIN_ERROR(c->err, "tcp: rank %d, peer %d: %s", s->job->rank, c->peer,
                   c->msg);
}

/* Asks epoll to report writability (out) or not. */
static gin_result_t conn_arm(tcp_state_t *s, tcp_conn_t *c, int out) {
  if (c->out_armed == out) return GIN_SUCCESS;
  struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0u),
                           .data.ptr = c};
  if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0)
    return conn_fail(s, c, GIN_ERR_SYSTEM, "epoll_ctl: %s", strerror(errno));
  c->out_armed = out;
  return GIN_SUCCESS;
}

/* The ring index of stream position pos (queued, not yet sent). */
static size_t tx_index(const tcp_conn_t *c, uint64_t pos) {
  return (c->tx_head + (size_t)(pos - c->tx_sent)) % c->tx_cap;
}

/* Fills iov with the queued bytes from the first unsent one on: ring
 * bytes, and refs' sources in their place. Returns the entries used. */
static int tx_iov(const tcp_conn_t *c, struct iovec *iov, int max) {
  int k = 0;
  size_t off = 0; /* from the first unsent byte */
  unsigned r = 0;
  while (off < c->tx_len && k < max) {
    const tcp_ref_t *f =
        r < c->nrefs ? &c->refs[(c->ref_head + r) % TCP_REFS] : NULL;
    uint64_t pos = c->tx_sent + off;
    if (f && f->pos <= pos) { /* inside a ref (its start perhaps sent) */
      size_t skip = (size_t)(pos - f->pos);
      iov[k++] = (struct iovec){(void *)(f->src + skip), f->len - skip};
      off += f->len - skip;
      r++;
      continue;
    }
    size_t end = f ? (size_t)(f->pos - c->tx_sent) : c->tx_len;
    size_t at = tx_index(c, pos), n = end - off;
    if (n > c->tx_cap - at) n = c->tx_cap - at;
    iov[k++] = (struct iovec){c->tx + at, n};
    off += n;
  }
  return k;
}

/* Writes queued bytes while the socket takes them: 0, EAGAIN or errno. */
static int tx_write(tcp_conn_t *c) {
  while (c->tx_len > 0) {
    struct iovec iov[TCP_IOV];
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = tx_iov(c, iov, TCP_IOV)};
    ssize_t n = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EWOULDBLOCK ? EAGAIN : errno;
    c->tx_head = (c->tx_head + (size_t)n) % c->tx_cap;
    c->tx_len -= (size_t)n;
    c->tx_sent += (uint64_t)n;
    while (c->nrefs > 0) { /* drop the refs now sent */
      const tcp_ref_t *f = &c->refs[c->ref_head];
      if (f->pos + f->len > c->tx_sent) break;
      c->ref_head = (c->ref_head + 1) % TCP_REFS;
      c->nrefs--;
    }
  }
  c->tx_head = 0;
  return 0;
}

static gin_result_t conn_send(tcp_state_t *s, tcp_conn_t *c) {
  uint64_t sent = c->tx_sent;
  int e = tx_write(c);
  if (c->tx_sent != sent) tcp_traffic_note(s);
  if (e == 0 || e == EAGAIN) return conn_arm(s, c, e == EAGAIN);
  return conn_fail(s, c, GIN_ERR_REMOTE, "sending to rank %d: %s", c->peer,
                   strerror(e));
}

/* Appends n bytes to the send ring (room checked by the caller); device
 * sources go through gin_arch_copy (the cuda target stages them here). */
static gin_result_t tx_append(tcp_conn_t *c, const void *src, size_t n,
                              int device) {
  if (n == 0) return GIN_SUCCESS;
  size_t tail = (c->tx_head + c->tx_len) % c->tx_cap;
  size_t first = n < c->tx_cap - tail ? n : c->tx_cap - tail;
  if (device) {
    GIN_CHECK(gin_arch_copy(c->tx + tail, src, first));
    GIN_CHECK(gin_arch_copy(c->tx, (const char *)src + first, n - first));
  } else {
    memcpy(c->tx + tail, src, first);
    memcpy(c->tx, (const char *)src + first, n - first);
  }
  c->tx_len += n;
  return GIN_SUCCESS;
}

/* Queues n bytes of host memory by reference: their place in the ring is
 * reserved (room checked by the caller), src is read until sent or
 * copied by tx_settle. 0 if the ref ring is full (copy them instead). */
static int tx_ref(tcp_state_t *s, tcp_conn_t *c, const void *src, size_t n) {
  if (c->nrefs == TCP_REFS) return 0;
  c->refs[(c->ref_head + c->nrefs++) % TCP_REFS] =
      (tcp_ref_t){c->tx_sent + c->tx_len, n, (const char *)src};
  c->tx_len += n;
  if (!c->ref_listed) {
    c->ref_listed = 1;
    s->ref_peers[s->nref_peers] = c->peer;
    __atomic_store_n(&s->nref_peers, s->nref_peers + 1, __ATOMIC_RELEASE);
  }
  return 1;
}

/* Copies what the socket has not taken of every ref into its reserved
 * place in the ring, so that no source is read any more. */
static void tx_settle(tcp_conn_t *c) {
  for (; c->nrefs > 0; c->nrefs--, c->ref_head = (c->ref_head + 1) % TCP_REFS) {
    const tcp_ref_t *f = &c->refs[c->ref_head];
    uint64_t pos = f->pos > c->tx_sent ? f->pos : c->tx_sent;
    size_t skip = (size_t)(pos - f->pos), n = f->len - skip;
    size_t at = tx_index(c, pos);
    size_t first = n < c->tx_cap - at ? n : c->tx_cap - at;
    memcpy(c->tx + at, f->src + skip, first);
    memcpy(c->tx, f->src + skip + first, n - first);
  }
  c->ref_head = 0;
}

/* ------------------------------------------------------------ put */

static gin_result_t conn_put(tcp_state_t *s, tcp_conn_t *c,
                             const gin_xfer_t *x) {
  int me = s->job->rank;
  if (c->err)
    return GIN_ERROR(c->err, "tcp: rank %d cannot reach rank %d: %s", me,
                     c->peer, c->msg);
  if (c->left)
    return GIN_ERROR(
        GIN_ERR_REMOTE,
        "tcp: rank %d has destroyed its communicator (put from rank %d)",
        c->peer, me);
  if (c->fd < 0)
    return GIN_ERROR(GIN_ERR_INTERNAL,
                     "tcp: rank %d is not a tcp peer of rank %d", c->peer, me);
  const char *src;
  uint64_t total, done;
  GIN_CHECK(gin_wire_payload(x, "tcp", &src, &total));
  if (!c->tx) {
    /* Staging for GPU memory: pinned on the cuda target. */
    if (gin_arch_staging_alloc(s->tx_cap, (void **)&c->tx) != GIN_SUCCESS)
      return GIN_ERROR(GIN_ERR_NOMEM, "tcp: send buffer of %zu bytes",
                       s->tx_cap);
    c->tx_cap = s->tx_cap;
  }
  /* Host sources are sent from where they are until flush. */
  int by_ref = x->op == GIN_OP_PUT && s->src_host;
  if (by_ref && !c->refs &&
      !(c->refs = (tcp_ref_t *)calloc(TCP_REFS, sizeof *c->refs)))
    by_ref = 0;
  GIN_CHECK(gin_wire_partial_resume(&c->partial, x, "tcp", c->peer, &done));
  do {
    uint64_t chunk = total - done < TCP_CHUNK ? total - done : TCP_CHUNK;
    size_t need =
        GIN_TCP_HDR_BYTES + (chunk < TCP_MIN_CHUNK ? chunk : TCP_MIN_CHUNK);
    if (c->tx_cap - c->tx_len < need && c->tx_len) GIN_CHECK(conn_send(s, c));
    size_t room = c->tx_cap - c->tx_len;
    if (room < need) {
      gin_wire_partial_save(&c->partial, x, done);
      return GIN_ERR_AGAIN;
    }
    if (chunk > room - GIN_TCP_HDR_BYTES) chunk = room - GIN_TCP_HDR_BYTES;
    gin_tcp_hdr_t h;
    uint8_t wire[GIN_TCP_HDR_BYTES];
    gin_wire_header(s->job, x, done, chunk, done + chunk == total, &h);
    gin_tcp_hdr_encode(&h, wire);
    tx_append(c, wire, sizeof wire, 0);
    gin_result_t res = GIN_SUCCESS;
    if (!by_ref || chunk < TCP_REF_MIN || !tx_ref(s, c, src + done, chunk))
      res = tx_append(c, src + done, chunk, x->op == GIN_OP_PUT);
    if (res != GIN_SUCCESS)
      return conn_fail(s, c, res, "staging %llu bytes: %s",
                       (unsigned long long)chunk, gin_last_error());
    done += chunk;
  } while (done < total);
  gin_wire_partial_save(&c->partial, x, 0);
  return conn_send(s, c);
}

static gin_result_t tcp_put(void *state, const gin_xfer_t *x) {
  tcp_state_t *s = (tcp_state_t *)state;
  if (x->peer < 0 || x->peer >= s->job->nranks)
    return GIN_ERROR(GIN_ERR_INTERNAL, "tcp: peer %d out of range", x->peer);
  if (x->peer == s->job->rank) return gin_wire_self_put(s->job, x);
  pthread_mutex_lock(&s->lock);
  gin_result_t res = conn_put(s, &s->conns[x->peer], x);
  pthread_mutex_unlock(&s->lock);
  return res;
}

/* ------------------------------------------------------------ receive */

/* The next header names a window not registered here yet: wait, at most
 * the communicator's timeout. */
static gin_result_t conn_stall(tcp_state_t *s, tcp_conn_t *c, const char *why) {
  uint64_t now = gin_now_ns();
  if (!c->stall_ns) {
    c->stall_ns = now;
    s->nstalled++;
    return GIN_SUCCESS;
  }
  if (now - c->stall_ns > (uint64_t)s->job->timeout_ms * 1000000ull)
    return conn_fail(s, c, GIN_ERR_PROTOCOL, "rank %d: %s after %lld ms",
                     c->peer, why, (long long)s->job->timeout_ms);
  return GIN_SUCCESS;
}

static gin_result_t conn_signal(tcp_state_t *s, tcp_conn_t *c) {
  gin_result_t res = gin_wire_signal(s->job, &c->hdr);
  if (res != GIN_SUCCESS)
    return conn_fail(s, c, res, "signal from rank %d: %s", c->peer,
                     gin_last_error());
  return GIN_SUCCESS;
}

/* n more payload bytes are in place; the last of them completes the
 * operation (its signal). */
static gin_result_t conn_payload(tcp_state_t *s, tcp_conn_t *c, size_t n) {
  c->rx_dst += n;
  c->rx_left -= n;
  if (c->rx_left > 0) return GIN_SUCCESS;
  c->rx_state = RX_HDR;
  return conn_signal(s, c);
}

/* Applies every complete operation staged in c's receive buffer. */
static gin_result_t conn_apply(tcp_state_t *s, tcp_conn_t *c) {
  const gin_job_t *cm = s->job;
  char why[160];
  for (;;) {
    size_t avail = c->rx_end - c->rx_start;
    const uint8_t *p = c->rx + c->rx_start;
    if (c->rx_state == RX_PAYLOAD) {
      if (avail == 0) break;
      size_t n = avail < c->rx_left ? avail : (size_t)c->rx_left;
      gin_result_t res = GIN_SUCCESS;
      if (c->rx_direct)
        memcpy(c->rx_dst, p, n);
      else
        res = gin_arch_copy(c->rx_dst, p, n);
      if (res != GIN_SUCCESS)
        return conn_fail(s, c, res, "payload from rank %d: %s", c->peer,
                         gin_last_error());
      c->rx_start += n;
      GIN_CHECK(conn_payload(s, c, n));
      continue;
    }
    if (avail < GIN_TCP_HDR_BYTES) break;
    if (c->left)
      return conn_fail(s, c, GIN_ERR_PROTOCOL,
                       "rank %d sent data after its goodbye", c->peer);
    gin_result_t res =
        gin_tcp_header_check(p, GIN_TCP_HDR_BYTES, cm->wins, cm->max_windows,
                             why, sizeof why, &c->hdr);
    if (res == GIN_ERR_AGAIN) return conn_stall(s, c, why);
    if (c->stall_ns) s->nstalled--;
    c->stall_ns = 0;
    if (res != GIN_SUCCESS)
      return conn_fail(s, c, GIN_ERR_PROTOCOL,
                       "rank %d sent a bad operation: %s", c->peer, why);
    c->rx_start += GIN_TCP_HDR_BYTES;
    if (c->hdr.op == GIN_TCP_OP_BYE) {
      c->left = 1;
    } else if (c->hdr.bytes) {
      char *cpu = gin_wire_cpu_dst(cm, &c->hdr);
      c->rx_state = RX_PAYLOAD;
      c->rx_left = c->hdr.bytes;
      c->rx_direct = cpu != NULL;
      c->rx_hdr_alone = cpu && c->hdr.bytes >= TCP_RX_DIRECT_MIN;
      c->rx_dst =
          cpu ? cpu : (char *)cm->wins[c->hdr.dst_win].ptr + c->hdr.dst_off;
    } else {
      GIN_CHECK(conn_signal(s, c));
    }
  }
  if (c->rx_start == c->rx_end) c->rx_start = c->rx_end = 0;
  return GIN_SUCCESS;
}

/* What recv returned other than data (n <= 0): GIN_SUCCESS (nothing
 * more now, or a clean close after the peer's goodbye) or the failure. */
static gin_result_t conn_recv_end(tcp_state_t *s, tcp_conn_t *c, ssize_t n) {
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return GIN_SUCCESS;
  if (c->left) { /* after its goodbye: a clean close */
    conn_close(s, c);
    return GIN_SUCCESS;
  }
  if (n == 0)
    return conn_fail(
        s, c, GIN_ERR_REMOTE,
        "rank %d closed the connection (it failed, refused what this rank "
        "sent, or exited without destroying its communicator)",
        c->peer);
  return conn_fail(s, c, GIN_ERR_REMOTE, "receiving from rank %d: %s", c->peer,
                   strerror(errno));
}

/* Reads what the socket has (a few buffers' worth) and applies it: into
 * the staging buffer, or once that is used up straight into a payload's
 * host memory. */
static gin_result_t conn_recv(tcp_state_t *s, tcp_conn_t *c) {
  if (!c->rx &&
      gin_arch_staging_alloc(TCP_RX_BYTES, (void **)&c->rx) != GIN_SUCCESS)
    return conn_fail(s, c, GIN_ERR_NOMEM, "receive buffer");
  for (int round = 0; round < TCP_RX_ROUNDS && c->fd >= 0; round++) {
    int staged = c->rx_end > c->rx_start;
    if (c->rx_state == RX_PAYLOAD && c->rx_direct && !staged) {
      size_t want = (size_t)c->rx_left;
      ssize_t n = recv(c->fd, c->rx_dst, want, MSG_DONTWAIT);
      if (n > 0) {
        tcp_traffic_note(s);
        GIN_CHECK(conn_payload(s, c, (size_t)n));
        if ((size_t)n < want) break;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      return conn_recv_end(s, c, n);
    }
    if (c->rx_start > 0 && c->rx_end == TCP_RX_BYTES) {
      memmove(c->rx, c->rx + c->rx_start, c->rx_end - c->rx_start);
      c->rx_end -= c->rx_start;
      c->rx_start = 0;
    }
    size_t space = TCP_RX_BYTES - c->rx_end;
    if (space == 0) break; /* stalled on a window, buffer full */
    /* After a large payload, likely another: its header alone, so that
     * its payload is received in place. */
    if (c->rx_hdr_alone && c->rx_state == RX_HDR && !staged)
      space = GIN_TCP_HDR_BYTES;
    ssize_t n = recv(c->fd, c->rx + c->rx_end, space, MSG_DONTWAIT);
    if (n > 0) {
      tcp_traffic_note(s);
      c->rx_end += (size_t)n;
      GIN_CHECK(conn_apply(s, c));
      if ((size_t)n < space) break;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return conn_recv_end(s, c, n);
  }
  return GIN_SUCCESS;
}

/* Sends what the sockets take now, then copies the rest of every payload
 * queued by reference into the send rings: no source is read after this
 * returns. */
static gin_result_t tcp_flush(void *state) {
  tcp_state_t *s = (tcp_state_t *)state;
  /* None listed: this thread's refs (listed when its puts ran) were
   * settled by another flush, whose copies the acquire orders before the
   * caller's reuse of the sources. */
  if (__atomic_load_n(&s->nref_peers, __ATOMIC_ACQUIRE) == 0)
    return GIN_SUCCESS;
  gin_result_t res = GIN_SUCCESS, r;
  pthread_mutex_lock(&s->lock);
  for (int i = 0; i < s->nref_peers; i++) {
    tcp_conn_t *c = &s->conns[s->ref_peers[i]];
    if (c->nrefs > 0 && c->fd >= 0 && (r = conn_send(s, c)) != GIN_SUCCESS &&
        res == GIN_SUCCESS)
      res = r;
    tx_settle(c);
    c->ref_listed = 0;
  }
  __atomic_store_n(&s->nref_peers, 0, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&s->lock);
  return res;
}

static gin_result_t tcp_progress(void *state) {
  tcp_state_t *s = (tcp_state_t *)state;
  if (s->npeers == 0 || pthread_mutex_trylock(&s->lock) != 0)
    return GIN_SUCCESS; /* another thread is progressing */
  gin_result_t res = GIN_SUCCESS, r;
  struct epoll_event ev[TCP_EVENTS];
  int n = 0;
  tcp_conn_t *one = s->sole >= 0 ? &s->conns[s->sole] : NULL;
  if (one && !one->out_armed) {
    /* One connection with room to send: ask its socket for data straight
     * away, one system call a pass as epoll_wait is, and a message is
     * received by that call instead of the one after it (the host
     * target's tcp round trip: docs/PERFORMANCE.md, "Design figures"). A
     * closed or failed socket shows in recv as it does through epoll
     * (conn_recv_end). */
    if (one->fd >= 0 && (r = conn_recv(s, one)) != GIN_SUCCESS) res = r;
  } else {
    n = epoll_wait(s->epfd, ev, TCP_EVENTS, 0);
  }
  for (int i = 0; i < n; i++) {
    tcp_conn_t *c = (tcp_conn_t *)ev[i].data.ptr;
    if (c->fd >= 0 && (ev[i].events & EPOLLOUT) &&
        (r = conn_send(s, c)) != GIN_SUCCESS && res == GIN_SUCCESS)
      res = r;
    if (c->fd >= 0 && (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) &&
        (r = conn_recv(s, c)) != GIN_SUCCESS && res == GIN_SUCCESS)
      res = r;
  }
  for (int p = 0; s->nstalled > 0 && p < s->job->nranks; p++)
    if (s->conns[p].stall_ns &&
        (r = conn_apply(s, &s->conns[p])) != GIN_SUCCESS && res == GIN_SUCCESS)
      res = r;
  pthread_mutex_unlock(&s->lock);
  return res;
}

/* The epoll set of the connections (level-triggered: readable while a
 * socket has data or an armed one has room); busy while a received
 * operation waits to be applied (retried by every progress). */
static int tcp_wait_fd(void *state) {
  tcp_state_t *s = (tcp_state_t *)state;
  if (s->npeers == 0) return -1;
  if (pthread_mutex_trylock(&s->lock) != 0) return GIN_WAIT_BUSY;
  int fd = s->nstalled > 0 ? GIN_WAIT_BUSY : s->epfd;
  pthread_mutex_unlock(&s->lock);
  return fd;
}

/* ------------------------------------------------------------ setup */

/* Waits for the lower ranks in want[] to connect and say hello; refuses
 * (with a warning) anything else. Marks each arrival in want[]. */
static gin_result_t tcp_accept(tcp_state_t *s, int lfd, const uint8_t *use,
                               uint8_t *want, int nwant, uint64_t deadline) {
  const gin_job_t *cm = s->job;
  struct {
    int fd;
    size_t got;
    uint64_t deadline;
    uint8_t buf[GIN_TCP_HELLO_BYTES];
    char from[64];
  } pend[TCP_MAX_PENDING];
  struct pollfd pfd[TCP_MAX_PENDING + 1];
  int np = 0;
  gin_result_t res = GIN_SUCCESS;
  char why[160];
  while (nwant > 0) {
    uint64_t now = gin_now_ns(), wake = deadline;
    for (int i = np - 1; i >= 0; i--)
      if (now >= pend[i].deadline) {
        GIN_WARN(
            NET,
            "tcp: rank %d refused a connection from %s: no hello within %d ms",
            cm->rank, pend[i].from, TCP_HELLO_WAIT_MS);
        close(pend[i].fd);
        pend[i] = pend[--np];
      } else if (pend[i].deadline < wake) {
        wake = pend[i].deadline;
      }
    if (now >= deadline) {
      int r = 0;
      while (!want[r])
        r++;
      res = GIN_ERROR(
          GIN_ERR_TIMEOUT,
          "tcp: rank %d: no connection from rank %d%s within %lld ms", cm->rank,
          r, nwant > 1 ? " and others" : "", (long long)cm->timeout_ms);
      break;
    }
    pfd[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
    for (int i = 0; i < np; i++)
      pfd[i + 1] = (struct pollfd){.fd = pend[i].fd, .events = POLLIN};
    if (poll(pfd, (nfds_t)np + 1, gin_net_poll_timeout_ms(wake)) <= 0) continue;
    for (int i = np - 1; i >= 0; i--) { /* descending: pend[i] may move */
      if (!pfd[i + 1].revents) continue;
      ssize_t n = recv(pend[i].fd, pend[i].buf + pend[i].got,
                       GIN_TCP_HELLO_BYTES - pend[i].got, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      int r = -1, ok = 0;
      if (n > 0 && (pend[i].got += (size_t)n) < GIN_TCP_HELLO_BYTES) continue;
      if (n <= 0)
        snprintf(why, sizeof why, "closed after %zu hello bytes", pend[i].got);
      else if (gin_tcp_hello_check(pend[i].buf, pend[i].got, cm->secret,
                                   cm->rank, cm->nranks, use, why, sizeof why,
                                   &r) == GIN_SUCCESS &&
               !(ok = want[r]))
        snprintf(why, sizeof why, "rank %d connected twice", r);
      if (ok) {
        s->conns[r].fd = pend[i].fd;
        want[r] = 0;
        nwant--;
      } else {
        GIN_WARN(NET, "tcp: rank %d refused a connection from %s: %s", cm->rank,
                 pend[i].from, why);
        close(pend[i].fd);
      }
      pend[i] = pend[--np];
    }
    for (;;) {
      struct sockaddr_storage ss;
      socklen_t sl = sizeof ss;
      int fd = accept4(lfd, (struct sockaddr *)&ss, &sl,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;
      if (np == TCP_MAX_PENDING) { /* a flood: drop the oldest */
        int old = 0;
        for (int i = 1; i < np; i++)
          if (pend[i].deadline < pend[old].deadline) old = i;
        close(pend[old].fd);
        pend[old] = pend[--np];
      }
      gin_net_addr_t from;
      pend[np].fd = fd;
      pend[np].got = 0;
      pend[np].deadline = gin_now_ns() + TCP_HELLO_WAIT_MS * 1000000ull;
      snprintf(pend[np].from, sizeof pend[np].from, "unknown peer");
      if (gin_net_addr_from_sockaddr((struct sockaddr *)&ss, &from) ==
          GIN_SUCCESS)
        gin_net_addr_str(&from, pend[np].from, sizeof pend[np].from);
      np++;
    }
  }
  while (np > 0)
    close(pend[--np].fd);
  return res;
}

/* Connects to the higher ranks in use[] (at addrs[], checked) and greets
 * them. */
static gin_result_t tcp_connect_all(tcp_state_t *s, const uint8_t *use,
                                    const gin_net_addr_t *addrs,
                                    uint64_t deadline) {
  const gin_job_t *cm = s->job;
  gin_tcp_hello_t h = {.magic = GIN_TCP_HELLO_MAGIC,
                       .version = GIN_TCP_VERSION,
                       .rank = cm->rank,
                       .nranks = cm->nranks};
  memcpy(h.secret, cm->secret, 16);
  uint8_t wire[GIN_TCP_HELLO_BYTES];
  gin_tcp_hello_encode(&h, wire);
  for (int r = cm->rank + 1; r < cm->nranks; r++) {
    if (!use[r]) continue;
    const gin_net_addr_t a = addrs[r];
    char astr[64];
    int err = 0, fd = gin_net_connect(&a, deadline, &err);
    int io = fd >= 0 ? gin_net_io_all(fd, wire, sizeof wire, 1, deadline) : 0;
    if (io) {
      err = io == GIN_NET_IO_TIMEOUT ? ETIMEDOUT : io;
      close(fd);
      fd = -1;
    }
    if (fd < 0)
      return GIN_ERROR(
          gin_net_retryable(err) ? GIN_ERR_TIMEOUT : GIN_ERR_REMOTE,
          "tcp: rank %d could not connect to rank %d at %s within %lld ms: %s",
          cm->rank, r, gin_net_addr_str(&a, astr, sizeof astr),
          (long long)cm->timeout_ms, strerror(err));
    s->conns[r].fd = fd;
  }
  return GIN_SUCCESS;
}

/* Flushes what is queued (and a goodbye) for a short while, then closes. */
static void tcp_fini(void *state) {
  tcp_state_t *s = (tcp_state_t *)state;
  if (!s) return;
  int n = s->job->nranks;
  int64_t ms =
      s->job->timeout_ms < TCP_FINI_MS ? s->job->timeout_ms : TCP_FINI_MS;
  uint64_t deadline = gin_now_ns() + (uint64_t)ms * 1000000ull;
  gin_tcp_hdr_t bye = {.magic = GIN_TCP_HDR_MAGIC,
                       .version = GIN_TCP_VERSION,
                       .op = GIN_TCP_OP_BYE};
  uint8_t wire[GIN_TCP_HDR_BYTES];
  gin_tcp_hdr_encode(&bye, wire);
  for (int r = 0; r < n; r++) {
    tcp_conn_t *c = &s->conns[r];
    if (c->fd < 0 || c->left) continue;
    if (!c->tx && gin_arch_staging_alloc(GIN_TCP_HDR_BYTES, (void **)&c->tx) ==
                      GIN_SUCCESS)
      c->tx_cap = GIN_TCP_HDR_BYTES;
    /* Queued chunks are whole operations: the goodbye may follow them. */
    for (int said = 0; c->tx && gin_net_poll_timeout_ms(deadline) > 0;) {
      if (!said && c->tx_cap - c->tx_len >= sizeof wire) {
        tx_append(c, wire, sizeof wire, 0);
        said = 1;
      }
      int e = tx_write(c);
      if ((e == 0 && said) || (e != 0 && e != EAGAIN)) break;
      if (e == EAGAIN)
        poll(&(struct pollfd){.fd = c->fd, .events = POLLOUT}, 1,
             gin_net_poll_timeout_ms(deadline));
    }
  }
  for (int r = 0; r < n; r++) {
    if (s->conns[r].fd >= 0) close(s->conns[r].fd);
    gin_arch_staging_free(s->conns[r].tx);
    gin_arch_staging_free(s->conns[r].rx);
    free(s->conns[r].refs);
  }
  if (s->epfd >= 0) close(s->epfd);
  pthread_mutex_destroy(&s->lock);
  free(s->conns);
  free(s->ref_peers);
  free(s);
}

static gin_result_t tcp_init(const gin_job_t *comm, const uint8_t *use,
                             void **state_out) {
  int64_t txb = param_tcp_send_buffer();
  if (txb < (64 << 10) || txb > (1ll << 30))
    return GIN_ERROR(GIN_ERR_INVALID,
                     "GIN_TCP_SEND_BUFFER=%lld outside [65536, 1073741824]",
                     (long long)txb);
  int n = comm->nranks, lfd = -1, nlow = 0;
  uint64_t start = gin_now_ns();
  uint64_t deadline = start + (uint64_t)comm->timeout_ms * 1000000ull;
  size_t esz = gin_tcp_entry_bytes(n);
  tcp_state_t *s = (tcp_state_t *)calloc(1, sizeof *s);
  uint8_t *all = (uint8_t *)calloc((size_t)n, esz);
  gin_net_addr_t *addrs = (gin_net_addr_t *)calloc((size_t)n, sizeof *addrs);
  uint8_t *want = (uint8_t *)calloc((size_t)n, 2);
  tcp_conn_t *conns = (tcp_conn_t *)calloc((size_t)n, sizeof *conns);
  int *ref_peers = (int *)calloc((size_t)n, sizeof *ref_peers);
  gin_result_t res = GIN_SUCCESS, local = GIN_SUCCESS;
  char why[160];
  if (!s || !all || !addrs || !want || !conns || !ref_peers) {
    free(s);
    free(all);
    free(addrs);
    free(want);
    free(conns);
    free(ref_peers);
    return GIN_ERROR(GIN_ERR_NOMEM, "tcp: state for %d ranks", n);
  }
  pthread_mutex_init(&s->lock, NULL);
  s->job = comm;
  s->epfd = -1;
  s->sole = -1;
  s->conns = conns;
  s->tx_cap = (size_t)txb;
  s->src_host = gin_arch_device_mem_is_host();
  s->ref_peers = ref_peers;
  uint8_t *peers = want + n; /* use[] without this rank: it needs no socket */
  for (int r = 0; r < n; r++) {
    conns[r].fd = -1;
    conns[r].peer = r;
    peers[r] = use[r] && r != comm->rank;
    s->npeers += peers[r];
    if (peers[r]) s->sole = s->npeers == 1 ? r : -1;
    want[r] = r < comm->rank && peers[r];
    nlow += want[r];
  }
  /* My entry: status, listen address, the ranks I use tcp with. Every rank
   * sends one, also a rank that failed, so that all fail together. */
  gin_net_addr_t me = {0};
  char astr[64];
  if (s->npeers) {
    tcp_local_addr(comm, &me);
    if ((lfd = gin_net_listen(&me, &me)) < 0)
      local = GIN_ERROR(GIN_ERR_SYSTEM, "tcp: rank %d cannot listen on %s: %s",
                        comm->rank, gin_net_addr_str(&me, astr, sizeof astr),
                        strerror(errno));
  }
  gin_tcp_entry_encode(local, &me, peers, n, all + (size_t)comm->rank * esz);
  GIN_CHECK_GOTO(comm->allgather(comm->owner, all, esz), res, fini_state);
  GIN_CHECK_GOTO(local, res, fini_state);
  /* Every rank checks every pair, so that all fail together. */
  if ((res = gin_tcp_entries_check(all, (size_t)n * esz, n, why, sizeof why,
                                   addrs)) != GIN_SUCCESS) {
    res = GIN_ERROR(res, "tcp: %s", why);
    goto fini_state;
  }
  GIN_CHECK_GOTO(tcp_connect_all(s, peers, addrs, deadline), res, fini_state);
  GIN_CHECK_GOTO(tcp_accept(s, lfd, peers, want, nlow, deadline), res,
                 fini_state);
  if (s->npeers && (s->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
    res = GIN_ERROR(GIN_ERR_SYSTEM, "tcp: epoll_create1: %s", strerror(errno));
    goto fini_state;
  }
  for (int r = 0; r < n; r++) {
    if (conns[r].fd < 0) continue;
    gin_net_tune(conns[r].fd);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &conns[r]};
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, conns[r].fd, &ev) != 0) {
      res = GIN_ERROR(GIN_ERR_SYSTEM, "tcp: epoll_ctl: %s", strerror(errno));
      goto fini_state;
    }
  }
  /* Staging now, not at the first operation: allocating pinned memory may
   * wait until the device is idle, while a kernel spins on what that
   * operation delivers (seen on the H200: EP over the proxy stalled until
   * the timeout). */
  for (int r = 0; r < n; r++) {
    if (conns[r].fd < 0) continue;
    if (gin_arch_staging_alloc(s->tx_cap, (void **)&conns[r].tx) !=
            GIN_SUCCESS ||
        gin_arch_staging_alloc(TCP_RX_BYTES, (void **)&conns[r].rx) !=
            GIN_SUCCESS) {
      res = GIN_ERROR(GIN_ERR_NOMEM, "tcp: staging buffers for peer %d", r);
      goto fini_state;
    }
    conns[r].tx_cap = s->tx_cap;
  }
  if (lfd >= 0) close(lfd);
  free(all);
  free(addrs);
  free(want);
  if (s->npeers)
    GIN_INFO(NET, "tcp: rank %d on %s: %d peers connected in %.1f ms",
             comm->rank, gin_net_addr_str(&me, astr, sizeof astr), s->npeers,
             (double)(gin_now_ns() - start) / 1e6);
  *state_out = s;
  return GIN_SUCCESS;

fini_state:
  if (lfd >= 0) close(lfd);
  free(all);
  free(addrs);
  free(want);
  for (int r = 0; r < n; r++)
    conns[r].left = 1; /* no goodbyes */
  tcp_fini(s);
  return res;
}

static uint64_t tcp_traffic(void *state) {
  return __atomic_load_n(&((tcp_state_t *)state)->traffic, __ATOMIC_RELAXED);
}

const gin_transport_ops_t gin_transport_tcp = {
    .size = sizeof(gin_transport_ops_t),
    .name = "tcp",
    .init = tcp_init,
    .put = tcp_put,
    .flush = tcp_flush,
    .progress = tcp_progress,
    .fini = tcp_fini,
    .traffic = tcp_traffic,
    .wait_fd = tcp_wait_fd,
};
