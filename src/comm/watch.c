/*
 * Peer watch: how the ranks of a communicator learn that one of them died.
 *
 * Each rank keeps one more TCP connection (a "link", opened through the
 * bootstrap with the job secret) to the ranks at distance 1, 2, 4, ... on
 * either side, about 2 log2 N of them: every rank of a job up to 8 is
 * linked to all others, and larger jobs stay connected through several
 * paths. A thread per communicator sleeps in poll() on its links. When a
 * process dies the kernel closes its sockets, so its linked peers see the
 * link close (or fail: reset, keepalive) without the goodbye that
 * gin_comm_destroy sends. The watcher then records the death (rank, pid,
 * how) and aborts the communicator (gin_comm_peer_dead_), and tells its
 * other links, which pass the news on once: within milliseconds every
 * surviving rank's device waits stop and its host calls fail naming the
 * dead rank. TCP keepalive, scaled to the communicator's timeout, catches
 * a host that vanished without closing anything. An abort travels the
 * same way: a watcher that finds its communicator aborted (gin_comm_abort,
 * a device error, the proxy; it looks every WATCH_ABORT_POLL_MS) tells its
 * links once, and a rank told aborts too, in the aborter's name: ranks on
 * other hosts, which share no abort word with it, stop within
 * milliseconds instead of timing out.
 *
 * Link messages: 16 bytes (comm/watch_msg.h), checked by
 * gin_watch_msg_check before use.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/net.h"
#include "comm/comm.h"
#include "comm/watch_msg.h"

GIN_PARAM_INT(param_watch, "WATCH", 1,
              "1: every rank watches a few others (about 2 log2 N "
              "connections and one sleeping thread per communicator); a "
              "rank that dies without gin_comm_destroy aborts the "
              "communicator on every other rank within milliseconds, with "
              "an error naming it. 0: off (a dead rank shows only as "
              "timeouts). Must be the same on every rank")

#define WATCH_MAX_LINKS 32     /* 2 * log2(GIN_MAX_RANKS) = 20 at most */
#define WATCH_BYE_MS 1000      /* most gin_watch_stop waits for the goodbyes */
#define WATCH_ABORT_POLL_MS 20 /* how often the watcher looks for an abort */

_Static_assert((int)GIN_WATCH_HOW_CLOSED == (int)GIN_DEATH_CLOSED &&
                   (int)GIN_WATCH_HOW_ERROR == (int)GIN_DEATH_ERROR,
               "watch messages carry GIN_DEATH_* values");

typedef struct watch_link {
  int peer;
  int fd;  /* -1 once closed (atomic: gin_watch_busy_ reads it) */
  int bye; /* the peer said goodbye: its closing is no death */
  int err; /* errno of a failed send on it (the socket reports it once) */
  size_t got;
  uint8_t buf[GIN_WATCH_MSG_BYTES];
} watch_link_t;

typedef struct gin_watch {
  gin_comm_t comm;
  int nlinks;
  watch_link_t links[WATCH_MAX_LINKS];
  uint8_t *dead; /* [nranks] deaths this rank knows of (the thread's) */
  int ndead;     /* how many (the thread's) */
  int told;      /* the links were told of this communicator's abort */
  int handling;  /* the thread is handling events (atomic) */
  int wake_fd;   /* eventfd: stop */
  int poke_fd;   /* eventfd: look for an abort now (gin_watch_poke_) */
  pthread_t tid;
} gin_watch_t;

/* The ranks at distance 1, 2, 4, ... either way (symmetric). */
static int watch_peers(int rank, int n, int *out) {
  int k = 0;
  for (int d = 1; d < n; d *= 2)
    for (int s = -1; s <= 1; s += 2) {
      int p = ((rank + s * d) % n + n) % n, seen = p == rank;
      for (int i = 0; i < k && !seen; i++)
        seen = out[i] == p;
      if (!seen && k < WATCH_MAX_LINKS) out[k++] = p;
    }
  return k;
}

/* Keepalive probes scaled to the timeout: a peer host that vanished
 * (power, network) shows as a failed link after about the timeout. Best
 * effort. */
static void watch_keepalive(int fd, int64_t timeout_ms) {
  int on = 1, cnt = 3, idle = (int)(timeout_ms / 2000),
      intvl = (int)(timeout_ms / 8000);
  unsigned user =
      timeout_ms > 0 && timeout_ms < UINT32_MAX ? (unsigned)timeout_ms : 0u;
  idle = idle < 1 ? 1 : idle;
  intvl = intvl < 1 ? 1 : intvl;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user, sizeof user);
}

/* Sends m to every open link but the one to rank `skip` (-1: none). */
static void watch_tell(gin_watch_t *w, const gin_watch_msg_t *m, int skip) {
  uint8_t msg[GIN_WATCH_MSG_BYTES];
  gin_watch_msg_encode(m, msg);
  for (int i = 0; i < w->nlinks; i++) {
    watch_link_t *l = &w->links[i];
    if (l->fd < 0 || l->bye || l->peer == skip || w->dead[l->peer]) continue;
    /* 16 bytes into an idle socket: a short send means the link is gone,
     * which its own poll reports. A failed link reports its error to the
     * first call only: keep it for watch_read, whose recv then sees an
     * end of stream (a timeout must not read as a clean close). */
    ssize_t k = send(l->fd, msg, sizeof msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
        !l->err)
      l->err = errno;
  }
}

/* A death learnt (seen here or reported): record it once, pass it on. */
static void watch_dead(gin_watch_t *w, int dead, int by, int how, int err) {
  if (w->dead[dead]) return;
  w->dead[dead] = 1;
  w->ndead++;
  gin_comm_peer_dead_(w->comm, dead, by, how, err);
  gin_watch_msg_t m = {GIN_WATCH_DEAD, how, err & 0xffff, dead, by};
  watch_tell(w, &m, dead);
}

/* This communicator aborted: tell the links once (not when a death did
 * it: that news is on its way already). Returns who aborted it (1 +
 * rank), 0 if nobody. */
static uint32_t watch_abort_check(gin_watch_t *w) {
  uint32_t who = gin_comm_aborted_by_(w->comm);
  if (!who || w->told || w->ndead) return who;
  w->told = 1;
  gin_watch_msg_t m = {GIN_WATCH_ABORT, 0, 0, (int)who - 1, w->comm->rank};
  watch_tell(w, &m, -1);
  return who;
}

static void watch_handle(gin_watch_t *w, watch_link_t *l,
                         const gin_watch_msg_t *m) {
  gin_comm_t c = w->comm;
  if (m->type == GIN_WATCH_BYE) {
    l->bye = 1;
    GIN_INFO(BOOTSTRAP, "rank %d: rank %d left the communicator", c->rank,
             l->peer);
  } else if (m->type == GIN_WATCH_ABORT) {
    if (!gin_comm_aborted_by_(c))
      GIN_WARN(BOOTSTRAP,
               "rank %d: rank %d aborted the communicator (news from rank "
               "%d); aborting here too",
               c->rank, m->rank, l->peer);
    gin_comm_abort_as_(c, (uint32_t)m->rank + 1);
    watch_abort_check(w);
  } else {
    watch_dead(w, m->rank, m->by, m->how, m->err);
  }
}

/* Reads what link l has; its closing without a goodbye is a death. */
static void watch_read(gin_watch_t *w, watch_link_t *l) {
  gin_comm_t c = w->comm;
  for (;;) {
    ssize_t k =
        recv(l->fd, l->buf + l->got, sizeof l->buf - l->got, MSG_DONTWAIT);
    if (k > 0) {
      l->got += (size_t)k;
      if (l->got < GIN_WATCH_MSG_BYTES) continue;
      l->got = 0;
      gin_watch_msg_t m;
      if (gin_watch_msg_check(l->buf, sizeof l->buf, c->nranks, l->peer, &m) ==
          0)
        watch_handle(w, l, &m);
      else
        GIN_WARN(BOOTSTRAP, "rank %d: malformed watch message from rank %d",
                 c->rank, l->peer);
      continue;
    }
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
      return;
    int err = k < 0 ? errno : l->err;
    int fd = l->fd;
    __atomic_store_n(&l->fd, -1, __ATOMIC_RELAXED);
    close(fd);
    if (!l->bye)
      watch_dead(w, l->peer, c->rank, err ? GIN_DEATH_ERROR : GIN_DEATH_CLOSED,
                 err);
    return;
  }
}

static void *watch_main(void *arg) {
  gin_watch_t *w = (gin_watch_t *)arg;
  struct pollfd pfd[WATCH_MAX_LINKS + 2];
  for (;;) {
    pfd[0] = (struct pollfd){.fd = w->wake_fd, .events = POLLIN};
    for (int i = 0; i < w->nlinks; i++)
      pfd[i + 1] = (struct pollfd){.fd = w->links[i].fd, .events = POLLIN};
    pfd[w->nlinks + 1] = (struct pollfd){.fd = w->poke_fd, .events = POLLIN};
    /* The entries' revents start at 0: a timeout or EINTR reads no link
     * and only looks for an abort. */
    int n = poll(pfd, (nfds_t)w->nlinks + 2, WATCH_ABORT_POLL_MS);
    if (n < 0 && errno != EINTR) {
      GIN_WARN(BOOTSTRAP, "rank %d: peer watch stopped: poll: %s",
               w->comm->rank, strerror(errno));
      return NULL;
    }
    if (pfd[0].revents) return NULL;  /* gin_watch_stop */
    if (pfd[w->nlinks + 1].revents) { /* gin_watch_poke_ */
      uint64_t v;
      ssize_t k = read(w->poke_fd, &v, sizeof v);
      (void)k;
    }
    /* Busy before anything is read, so that gin_watch_busy_ never sees a
     * gap between news pending on a link and news recorded. */
    __atomic_store_n(&w->handling, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < w->nlinks; i++)
      if (pfd[i + 1].revents && w->links[i].fd >= 0)
        watch_read(w, &w->links[i]);
    /* Aborted: this rank's direct writes stop too (the gate). */
    if (watch_abort_check(w)) gin_comm_gate_shut_(w->comm);
    __atomic_store_n(&w->handling, 0, __ATOMIC_RELEASE);
  }
}

int gin_watch_busy_(gin_comm_t c) {
  gin_watch_t *w = c->watch;
  if (!w) return 0;
  if (__atomic_load_n(&w->handling, __ATOMIC_SEQ_CST)) return 1;
  /* A link with bytes or a close not read yet. (A link closed meanwhile
   * may have its number reused: at worst a short needless wait.) */
  struct pollfd pfd[WATCH_MAX_LINKS];
  for (int i = 0; i < w->nlinks; i++)
    pfd[i] = (struct pollfd){
        .fd = __atomic_load_n(&w->links[i].fd, __ATOMIC_RELAXED),
        .events = POLLIN};
  return poll(pfd, (nfds_t)w->nlinks, 0) > 0 ||
         __atomic_load_n(&w->handling, __ATOMIC_SEQ_CST);
}

static void watch_free(gin_watch_t *w) {
  for (int i = 0; i < w->nlinks; i++)
    if (w->links[i].fd >= 0) close(w->links[i].fd);
  if (w->wake_fd >= 0) close(w->wake_fd);
  if (w->poke_fd >= 0) close(w->poke_fd);
  free(w->dead);
  free(w);
}

gin_result_t gin_watch_start(gin_comm_t c) {
  int all = 1;
  for (int r = 0; r < c->nranks; r++)
    all &= c->peers[r].watch != 0;
  if (!all) {
    if (c->peers[c->rank].watch)
      GIN_WARN(BOOTSTRAP,
               "rank %d: some rank has GIN_WATCH=0: no rank is watched, a "
               "dead rank shows only as timeouts",
               c->rank);
    gin_bs_unlisten(c->bs); /* no links: nothing more to accept */
    return GIN_SUCCESS;
  }
  int peers[WATCH_MAX_LINKS], fds[WATCH_MAX_LINKS];
  int n = watch_peers(c->rank, c->nranks, peers);
  if (n == 0) {
    gin_bs_unlisten(c->bs);
    return GIN_SUCCESS;
  }
  gin_watch_t *w = (gin_watch_t *)calloc(1, sizeof *w);
  uint8_t *dead = (uint8_t *)calloc((size_t)c->nranks, 1);
  if (!w || !dead) {
    free(w);
    free(dead);
    return GIN_ERROR(GIN_ERR_NOMEM, "rank %d: peer watch", c->rank);
  }
  w->comm = c;
  w->dead = dead;
  w->wake_fd = w->poke_fd = -1;
  gin_result_t res = gin_bs_link(c->bs, peers, n, fds);
  if (res != GIN_SUCCESS) {
    watch_free(w);
    return res;
  }
  w->nlinks = n;
  for (int i = 0; i < n; i++) {
    w->links[i] = (watch_link_t){.peer = peers[i], .fd = fds[i]};
    watch_keepalive(fds[i], c->timeout_ms);
  }
  w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  w->poke_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (w->wake_fd < 0 || w->poke_fd < 0) {
    res = GIN_ERROR(GIN_ERR_SYSTEM, "rank %d: peer watch: eventfd: %s", c->rank,
                    strerror(errno));
    watch_free(w);
    return res;
  }
  /* Signals belong to the application's threads. */
  sigset_t all_sigs, old;
  sigfillset(&all_sigs);
  pthread_sigmask(SIG_SETMASK, &all_sigs, &old);
  int e = pthread_create(&w->tid, NULL, watch_main, w);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (e != 0) {
    res = GIN_ERROR(GIN_ERR_SYSTEM, "rank %d: peer watch thread: %s", c->rank,
                    strerror(e));
    watch_free(w);
    return res;
  }
  c->watch_busy = gin_watch_busy_;
  c->watch_poke = gin_watch_poke_;
  c->watch = w;
  GIN_INFO(BOOTSTRAP, "rank %d: watching %d peer(s)", c->rank, n);
  return GIN_SUCCESS;
}

void gin_watch_stop(gin_comm_t c) {
  gin_watch_t *w = c->watch;
  if (!w) return;
  uint64_t one = 1;
  ssize_t k = write(w->wake_fd, &one, sizeof one);
  (void)k;
  pthread_join(w->tid, NULL);
  c->watch = NULL;
  /* An abort the thread had no time to pass on goes before the goodbye:
   * the peers would otherwise take the goodbye for a clean exit and wait
   * for this rank until their timeout. */
  watch_abort_check(w);
  /* Goodbye, then wait (bounded) until each peer closed its end, reading
   * what is left: closing with unread bytes would reset the connection
   * and could drop the goodbye on its way. */
  uint8_t msg[GIN_WATCH_MSG_BYTES];
  gin_watch_msg_t m = {GIN_WATCH_BYE, 0, 0, c->rank, c->rank};
  gin_watch_msg_encode(&m, msg);
  for (int i = 0; i < w->nlinks; i++) {
    watch_link_t *l = &w->links[i];
    if (l->fd < 0) continue;
    k = send(l->fd, msg, sizeof msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    shutdown(l->fd, SHUT_WR);
  }
  int64_t ms = c->timeout_ms < WATCH_BYE_MS ? c->timeout_ms : WATCH_BYE_MS;
  uint64_t deadline = gin_now_ns() + (uint64_t)ms * 1000000ull;
  struct pollfd pfd[WATCH_MAX_LINKS];
  for (;;) {
    int open = 0;
    for (int i = 0; i < w->nlinks; i++) {
      pfd[i] = (struct pollfd){.fd = w->links[i].fd, .events = POLLIN};
      open += w->links[i].fd >= 0;
    }
    int left = gin_net_poll_timeout_ms(deadline);
    if (open == 0 || left == 0) break;
    if (poll(pfd, (nfds_t)w->nlinks, left) <= 0) continue;
    for (int i = 0; i < w->nlinks; i++) {
      watch_link_t *l = &w->links[i];
      if (l->fd < 0 || !pfd[i].revents) continue;
      uint8_t junk[256];
      ssize_t r = recv(l->fd, junk, sizeof junk, MSG_DONTWAIT);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
        close(l->fd);
        l->fd = -1;
      }
    }
  }
  watch_free(w);
}

/* Whether this rank asks to be watched (GIN_WATCH), for the exchange. */
int gin_watch_wanted_(void) { return param_watch() != 0; }

void gin_watch_poke_(gin_comm_t c) {
  gin_watch_t *w = c->watch;
  if (!w || w->poke_fd < 0) return;
  uint64_t one = 1;
  ssize_t k = write(w->poke_fd, &one, sizeof one);
  (void)k;
}
