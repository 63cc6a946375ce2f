/*
 * A live communicator's state, below its setup (comm.c), windows
 * (window.c), device communicators (devcomm.c) and peer watch (watch.c),
 * which all use it: the list of live communicators and the checks of a
 * handle, abort (the abort words, the gate on direct writes), dead peers,
 * the ranks' status exchange, and the asynchronous error report (the
 * device's error records worded). The watcher is reached through the two
 * calls it registers in the communicator (watch_busy, watch_poke).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/comm.h"

/* Most a report waits for the watcher to name a dead rank when what it
 * has (a closed connection, a broken bootstrap ring) suggests one. */
#define COMM_SETTLE_MS 1000
/* How long such a report waits for a death even when the watcher has no
 * news yet: a dying process's sockets close one after another, and a
 * proxy sleeping in poll() sees its transport's connection close before
 * the watcher's link does. From the first such report on. */
#define COMM_DEATH_GRACE_MS 50

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

static struct gin_comm *live_head;

/* comm if it is live, else NULL; the caller holds live_lock. */
static struct gin_comm *comm_live_locked(gin_comm_t comm) {
  struct gin_comm *c = live_head;
  while (c && c != comm)
    c = c->next_live;
  return c;
}

static gin_result_t comm_find(gin_comm_t comm, const char *fn) {
  if (!comm) return GIN_ERROR(GIN_ERR_INVALID, "%s: comm is NULL", fn);
  pthread_mutex_lock(&live_lock);
  struct gin_comm *c = comm_live_locked(comm);
  pthread_mutex_unlock(&live_lock);
  if (!c)
    return GIN_ERROR(GIN_ERR_STATE,
                     "%s: communicator %p is not live (destroyed already?)", fn,
                     (void *)comm);
  return GIN_SUCCESS;
}

void gin_comm_live_add_(gin_comm_t c) {
  pthread_mutex_lock(&live_lock);
  c->next_live = live_head;
  live_head = c;
  pthread_mutex_unlock(&live_lock);
}

int gin_comm_live_remove_(gin_comm_t comm) {
  pthread_mutex_lock(&live_lock);
  struct gin_comm **pp = &live_head;
  while (*pp && *pp != comm)
    pp = &(*pp)->next_live;
  int found = *pp != NULL;
  if (found) *pp = comm->next_live;
  pthread_mutex_unlock(&live_lock);
  return found;
}

gin_result_t gin_comm_check_live_(gin_comm_t comm, const char *fn) {
  return comm_find(comm, fn);
}

static gin_result_t comm_async_error(gin_comm_t c);

gin_result_t gin_comm_check_(gin_comm_t comm, const char *fn) {
  GIN_CHECK(comm_find(comm, fn));
  if (gin_comm_aborted_by_(comm)) {
    gin_result_t res = comm_async_error(comm);
    return GIN_ERROR(res ? res : GIN_ERR_ABORTED, "%s: %s", fn,
                     gin_last_error());
  }
  return GIN_SUCCESS;
}

static int comm_death_known(gin_comm_t c) {
  return __atomic_load_n(&c->dead.ready, __ATOMIC_ACQUIRE) != 0;
}

/* Waits up to ms for the watcher to record a death (or, with `or_abort`,
 * for any abort); with `while_busy`, only while the watcher has news it
 * has not recorded yet. Returns whether one came. */
static int comm_settle(gin_comm_t c, int ms, int or_abort, int while_busy) {
  uint64_t until = gin_now_ns() + (uint64_t)ms * 1000000ull;
  for (;;) {
    if (comm_death_known(c) || (or_abort && gin_comm_aborted_by_(c))) return 1;
    if (!c->watch || ms <= 0 || gin_now_ns() >= until) return 0;
    if (while_busy && !c->watch_busy(c)) return comm_death_known(c);
    nanosleep(&(struct timespec){0, 1000000L}, NULL);
  }
}

/* The bootstrap's abort check (gin_bs_set_abort): this communicator's
 * error once it is aborted or knows of a dead rank. */
gin_result_t gin_comm_bs_abort_(void *arg, int settle_ms) {
  gin_comm_t c = (gin_comm_t)arg;
  if (!comm_settle(c, settle_ms, 1, 0)) return GIN_SUCCESS;
  gin_result_t res = comm_async_error(c);
  return res != GIN_SUCCESS
             ? res
             : GIN_ERROR(GIN_ERR_ABORTED, "rank %d: communicator aborted",
                         c->rank);
}

/* Whether a link that failed with err says only that the rank cannot be
 * reached (no answer: its host, or the network between, is down; the
 * rank may well be alive), rather than that its process is gone (its
 * kernel closed or reset the connection). */
static int death_unreachable(int how, int err) {
  return how == GIN_DEATH_ERROR &&
         (err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH ||
          err == ENETDOWN || err == EHOSTDOWN);
}

/* The message for rank `dead` found dead (or unreachable) by rank `by`,
 * reported by rank `owner`: names the rank, its pid and host, and how it
 * was seen. */
static gin_result_t death_report(gin_comm_t c, int owner, int dead, int by,
                                 int how, int err) {
  char host[64];
  const char *hid = c->peers[dead].hostid;
  size_t n = strcspn(hid, "/");
  snprintf(host, sizeof host, "%.*s", (int)(n < 63 ? n : 63), hid);
  if (death_unreachable(how, err))
    return GIN_ERROR(GIN_ERR_REMOTE,
                     "rank %d: rank %d (pid %d on %s) unreachable: its "
                     "connection to rank %d failed (%s): its host or the "
                     "network between them failed",
                     owner, dead, (int)c->peers[dead].pid, host, by,
                     strerror(err));
  char cause[160];
  if (how == GIN_DEATH_ERROR)
    snprintf(cause, sizeof cause, "failed (%s)", strerror(err));
  else
    snprintf(cause, sizeof cause, "closed without gin_comm_destroy");
  return GIN_ERROR(GIN_ERR_REMOTE,
                   "rank %d: rank %d (pid %d on %s) died: its connection to "
                   "rank %d %s",
                   owner, dead, (int)c->peers[dead].pid, host, by, cause);
}

void gin_comm_peer_dead_(gin_comm_t c, int dead, int by, int how, int err) {
  gin_comm_death_t *d = &c->dead;
  uint32_t zero = 0;
  if (__atomic_compare_exchange_n(&d->claimed, &zero, 1, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE)) {
    d->rank = dead;
    d->by = by;
    d->how = how;
    d->err = err;
    __atomic_store_n(&d->ready, 1, __ATOMIC_RELEASE);
  }
  GIN_WARN(BOOTSTRAP,
           "rank %d: rank %d (pid %d) %s: its connection to rank %d %s; "
           "communicator aborted",
           c->rank, dead, (int)c->peers[dead].pid,
           death_unreachable(how, err) ? "unreachable" : "died", by,
           how == GIN_DEATH_ERROR ? "failed" : "closed without a goodbye");
  /* The CPU-side records first, then the abort words (a wait that sees the
   * word finds the record): this rank's and its load/store peers', the
   * dead rank's word too (no record: nobody reads it). Its page is shared
   * host memory this process still maps; the dead process's kernels, which
   * run on until the driver (or MPS, ~130 ms later) tears its context down,
   * read that word in their waits and so end within microseconds instead of
   * at their timeout: a kernel still running at its MPS teardown takes the
   * survivors' contexts with it (docs/RELIABILITY.md; the fault tests'
   * late_ cases check it). A rank taken for dead that still runs
   * (unreachable) is aborted so too, its word naming itself. */
  for (int r = 0; r < c->nranks; r++) {
    gin_ctrl_t *pc = r == c->rank ? c->ctrl : c->peer_ctrl[r];
    if (!pc) continue;
    gin_dev_error_t *e = &pc->herr;
    zero = 0;
    if (r != dead &&
        __atomic_compare_exchange_n(&e->claimed, &zero, 1, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      e->kind = GIN_DEVERR_PEER_DEAD;
      e->rank = r;
      e->peer = dead;
      e->id = by;
      e->expected = 0;
      e->seen = 0;
      e->arg0 = (uint64_t)how;
      e->arg1 = (uint64_t)err;
      __atomic_store_n(&e->ready, 1, __ATOMIC_RELEASE);
    }
    zero = 0;
    __atomic_compare_exchange_n(&pc->habort, &zero, (uint32_t)dead + 1, 0,
                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  }
}

gin_result_t gin_comm_statuses_(gin_comm_t comm, int32_t mine, int *first,
                                int32_t *word) {
  int32_t *all = comm->statuses; /* the all-gather fills every entry */
  all[comm->rank] = mine;
  gin_result_t res = gin_bs_allgather(comm->bs, all, sizeof *all);
  if (res == GIN_SUCCESS) {
    int r = 0;
    while (r < comm->nranks && all[r] == 0)
      r++;
    *first = r < comm->nranks ? r : -1;
    *word = r < comm->nranks ? all[r] : 0;
  }
  return res;
}

uint32_t gin_comm_aborted_by_(gin_comm_t c) {
  return gin_ctrl_aborted_by(c->ctrl);
}

void gin_comm_gate_shut_(gin_comm_t c) {
  uint32_t zero = 0;
  if (!c->gate_dev ||
      !__atomic_compare_exchange_n(&c->gate_shut, &zero, 1, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return;
  if (gin_arch_dev_flag_set(c->gate_dev) != GIN_SUCCESS) {
    GIN_WARN(INIT, "rank %d: could not stop direct writes after the abort",
             c->rank);
    __atomic_store_n(&c->gate_shut, 0, __ATOMIC_RELEASE); /* try again */
  }
}

void gin_comm_abort_cpu_(gin_comm_t c) {
  gin_comm_abort_as_(c, (uint32_t)c->rank + 1);
}

void gin_comm_abort_as_(gin_comm_t c, uint32_t who) {
  for (int r = 0; r < c->nranks; r++) {
    gin_ctrl_t *pc = r == c->rank ? c->ctrl : c->peer_ctrl[r];
    uint32_t zero = 0;
    if (pc)
      __atomic_compare_exchange_n(&pc->habort, &zero, who, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE);
  }
}

gin_result_t gin_comm_abort(gin_comm_t comm) {
  /* Under the list's lock: a gin_comm_destroy racing this one cannot free
   * the communicator (and the gate the copy engine is told to write). */
  pthread_mutex_lock(&live_lock);
  struct gin_comm *c = comm ? comm_live_locked(comm) : NULL;
  int rank = c ? c->rank : -1;
  if (c) {
    gin_comm_abort_cpu_(c);
    /* The watcher, woken now, tells ranks on other hosts (they share no
     * abort word) and shuts the gate from its own thread: this one may be
     * anywhere, a CUDA stream callback included, where no CUDA call may
     * be made. Without a watcher, the gate is shut here. */
    if (c->watch)
      c->watch_poke(c);
    else
      gin_comm_gate_shut_(c);
  }
  pthread_mutex_unlock(&live_lock);
  if (!c) return comm_find(comm, "gin_comm_abort"); /* says why */
  GIN_INFO(INIT, "rank %d: communicator aborted", rank);
  return GIN_SUCCESS;
}

static const char *dev_kind_name(int64_t kind) {
  switch (kind) {
  case GIN_DEVERR_TIMEOUT_SIGNAL: return "signal";
  case GIN_DEVERR_TIMEOUT_COUNTER: return "counter";
  case GIN_DEVERR_TIMEOUT_BARRIER: return "barrier slot";
  case GIN_DEVERR_TIMEOUT_RING: return "a free ring slot of context";
  case GIN_DEVERR_TIMEOUT_FLUSH: return "the proxy (flush) of context";
  default: return "object";
  }
}

/* Turns a device error record into a result and a message. */
/* An EP dispatch's row format as its receive reports it (1: fp8, | 2:
 * power-of-two scales). */
static const char *ep_format_name(uint64_t code) {
  return code == 0   ? "bf16"
         : code == 1 ? "fp8"
         : code == 3 ? "fp8 (power-of-two scales)"
                     : "unknown";
}

static gin_result_t dev_error_report(gin_comm_t c, const gin_dev_error_t *e) {
  unsigned long long exp = e->expected, seen = e->seen, a0 = e->arg0,
                     a1 = e->arg1;
  long long id = e->id, peer = e->peer;
  int r = e->rank;
  switch (e->kind) {
  case GIN_DEVERR_TIMEOUT_SIGNAL:
  case GIN_DEVERR_TIMEOUT_COUNTER:
  case GIN_DEVERR_TIMEOUT_BARRIER:
    return GIN_ERROR(GIN_ERR_TIMEOUT,
                     "rank %d: device wait on %s %lld timed out after %llu ms: "
                     "waited for >= %llu, saw %llu",
                     r, dev_kind_name(e->kind), id, a0 / 1000000ull, exp, seen);
  case GIN_DEVERR_ABORTED: {
    uint32_t who = gin_comm_aborted_by_(c);
    if (a1 == 1 && peer >= 0)
      return GIN_ERROR(GIN_ERR_ABORTED,
                       "rank %d: direct write to rank %lld refused: "
                       "communicator aborted by rank %d",
                       r, peer, (int)who - 1);
    if (a1 == 1)
      return GIN_ERROR(GIN_ERR_ABORTED,
                       "rank %d: device barrier refused: communicator aborted "
                       "by rank %d",
                       r, (int)who - 1);
    return GIN_ERROR(GIN_ERR_ABORTED,
                     "rank %d: device wait on %s %lld (waiting for >= %llu, "
                     "saw %llu) stopped: communicator aborted by rank %d",
                     r, dev_kind_name((int64_t)a0), id, exp, seen,
                     (int)who - 1);
  }
  case GIN_DEVERR_BAD_PEER:
    return GIN_ERROR(GIN_ERR_INVALID,
                     "rank %d: peer %lld is outside team %lld (size %llu)", r,
                     peer, id, a0);
  case GIN_DEVERR_BAD_WINDOW:
    return GIN_ERROR(GIN_ERR_INVALID,
                     "rank %d: window handle {idx %lld, gen %llu} (peer %lld) "
                     "is not a registered window%s",
                     r, id, a0, peer,
                     (uint64_t)id < c->max_windows ? " (deregistered?)"
                                                   : " (index out of range)");
  case GIN_DEVERR_BAD_RANGE: {
    unsigned long long wsize = (uint64_t)id < c->max_windows
                                   ? (unsigned long long)c->wins[id].size
                                   : 0;
    return GIN_ERROR(GIN_ERR_INVALID,
                     "rank %d: offset %llu + %llu bytes is outside window %lld "
                     "of %llu bytes (peer %lld)",
                     r, a0, a1, id, wsize, peer);
  }
  case GIN_DEVERR_BAD_SIGNAL:
    if (a1 == 1)
      return GIN_ERROR(GIN_ERR_INVALID,
                       "rank %d: remote action kind %llu is not a signal "
                       "action (peer %lld)",
                       r, a0, peer);
    if (a1 == 2)
      return GIN_ERROR(GIN_ERR_INVALID,
                       "rank %d: gin_signal to peer %lld without a signal "
                       "action",
                       r, peer);
    return GIN_ERROR(GIN_ERR_INVALID,
                     "rank %d: signal %lld outside [0, %llu) (peer %lld)", r,
                     id, a0, peer);
  case GIN_DEVERR_BAD_COUNTER:
    return GIN_ERROR(GIN_ERR_INVALID,
                     "rank %d: counter %lld outside [0, %llu)%s", r, id, a0,
                     a1 == 1 ? " or bad local action kind" : "");
  case GIN_DEVERR_BAD_CONTEXT:
    return GIN_ERROR(GIN_ERR_INVALID, "rank %d: context %lld outside [0, %llu)",
                     r, id, a0);
  case GIN_DEVERR_SIGNAL_MIX:
    if (exp == 1) /* found by the sender (its update went out) */
      return GIN_ERROR(GIN_ERR_INVALID,
                       "rank %d: signal %lld of rank %lld was updated with "
                       "both SIGNAL_INC and SIGNAL_ADD since its last reset "
                       "(this %s); use one kind between resets",
                       r, id, peer, a1 == 1 ? "SIGNAL_INC" : "SIGNAL_ADD");
    return GIN_ERROR(GIN_ERR_INVALID,
                     "rank %d: signal %lld was updated with both SIGNAL_INC "
                     "and SIGNAL_ADD since its last reset; use one kind "
                     "between resets",
                     r, id);
  case GIN_DEVERR_BAD_BARRIER:
    return GIN_ERROR(GIN_ERR_INVALID,
                     "rank %d: barrier slot %lld outside [0, %llu) or bad team",
                     r, id, a0);
  case GIN_DEVERR_TIMEOUT_RING: {
    /* The proxy may be held up by another peer than this put's. */
    int sp;
    uint64_t sms;
    const char *tn;
    if (gin_proxy_stuck(c->proxy, &sp, &sms, &tn))
      return GIN_ERROR(GIN_ERR_TIMEOUT,
                       "rank %d: no free slot in the proxy ring of context "
                       "%lld for %llu ms (peer %lld): the proxy was held up "
                       "%llu ms by peer %d: no room in transport %s to send "
                       "to it (it takes nothing: stopped, or too slow)",
                       r, id, a0 / 1000000ull, peer, (unsigned long long)sms,
                       sp, tn);
    return GIN_ERROR(GIN_ERR_TIMEOUT,
                     "rank %d: no free slot in the proxy ring of context %lld "
                     "for %llu ms (peer %lld): the proxy is stuck or too slow",
                     r, id, a0 / 1000000ull, peer);
  }
  case GIN_DEVERR_TIMEOUT_FLUSH:
    return GIN_ERROR(GIN_ERR_TIMEOUT,
                     "rank %d: flush of context %lld waited %llu ms for the "
                     "proxy (consumed %llu of %llu)",
                     r, id, a0 / 1000000ull, seen, exp);
  case GIN_DEVERR_BAD_DESC:
  case GIN_DEVERR_TRANSPORT:
  case GIN_DEVERR_TIMEOUT_TRANSPORT:
    /* A peer that takes nothing for the timeout is a timeout (it may be
     * alive: stopped, or slow); a closed or failed connection is the
     * peer's failure (a dead or unreachable rank, which the watcher then
     * names). */
    return GIN_ERROR(e->kind == GIN_DEVERR_BAD_DESC    ? GIN_ERR_INVALID
                     : e->kind == GIN_DEVERR_TRANSPORT ? GIN_ERR_REMOTE
                                                       : GIN_ERR_TIMEOUT,
                     "rank %d: %s", r, c->proxy_msg);
  case GIN_DEVERR_EP_ROUTING:
    if (a1 == 5) /* seen, a0: the sender's and this rank's row formats */
      return GIN_ERROR(GIN_ERR_INVALID,
                       "rank %d: EP dispatch receive: rank %lld sent %s rows "
                       "for local expert %llu, but this rank's dispatch takes "
                       "%s rows (every rank's dispatch must ask for the same "
                       "payload and round_scale); nothing more was copied",
                       r, peer, ep_format_name(seen), exp, ep_format_name(a0));
    if (a1 == 2)
      return GIN_ERROR(GIN_ERR_REMOTE,
                       "rank %d: EP dispatch receive: rank %lld announced %lld "
                       "tokens for local expert %llu, outside [0, max_tokens "
                       "%llu]; nothing was copied",
                       r, peer, id, exp, a0);
    if (a1 == 7) /* EP normal mode's notes */
      return GIN_ERROR(GIN_ERR_INVALID,
                       "rank %d: EP normal dispatch: rank %lld's call uses "
                       "%llu channels, this rank's %llu (every rank's must "
                       "use the same)",
                       r, peer, seen, exp);
    if (a1 == 8)
      return GIN_ERROR(GIN_ERR_INVALID,
                       "rank %d: EP normal dispatch: %lld rows come to this "
                       "rank, but its outputs hold %llu (the handle's "
                       "capacity); nothing was received",
                       r, id, exp);
    if (a1 == 9)
      return GIN_ERROR(GIN_ERR_TIMEOUT,
                       "rank %d: EP normal mode: channel %lld's ring with rank "
                       "%lld made no progress for %llu ms (waiting for "
                       "position %llu, at %llu): that rank is stuck, slow, or "
                       "not in the same call",
                       r, id, peer, a0 / 1000000ull, exp, seen);
    if (a1 == 10)
      return GIN_ERROR(GIN_ERR_REMOTE,
                       "rank %d: EP normal dispatch: rank %lld's row for "
                       "receive row %llu names token %lld or an expert "
                       "outside [-1, %llu); nothing more was received",
                       r, peer, exp, id, a0);
    if (a1 == 13) /* peer: the destination rank, id: the channel */
      return GIN_ERROR(GIN_ERR_INVALID,
                       "rank %d: EP normal dispatch: the handle's in_rank has "
                       "fewer tokens to rank %lld in channel %lld than its "
                       "counts say (rewritten after gin_epn_notify?); nothing "
                       "more was sent",
                       r, peer, id);
    if (a1 == 12)
      return GIN_ERROR(GIN_ERR_REMOTE,
                       "rank %d: EP normal dispatch: rank %lld's counts (for "
                       "%lld tokens) name more rows than it has, or fewer "
                       "than none; nothing was received",
                       r, peer, id);
    if (a1 == 11) /* format words: fp8 | top-k slots << 1 */
      return GIN_ERROR(GIN_ERR_INVALID,
                       "rank %d: EP normal dispatch: rank %lld sent %s rows "
                       "with %llu top-k slots, but this rank's dispatch takes "
                       "%s rows with %llu (every rank's dispatch must pass "
                       "the same fp8 and num_topk); nothing more was received",
                       r, peer, (seen & 1) ? "fp8" : "bf16", seen >> 1,
                       (exp & 1) ? "fp8" : "bf16", exp >> 1);
    if (a1 == 6) /* id: the token, a0: the buffer set */
      return GIN_ERROR(GIN_ERR_REMOTE,
                       "rank %d: EP combine receive: token %lld (buffer set "
                       "%llu) had %llu returns, but %llu of its top-k slots "
                       "are routed: a return meant for another token or "
                       "another combine reached it; its output was not "
                       "written",
                       r, id, a0, seen, exp);
    if (a1 == 4)
      return GIN_ERROR(GIN_ERR_REMOTE,
                       "rank %d: EP combine receive: rank %lld's reply for "
                       "token %lld, top-k slot %llu, names row %llu of its "
                       "combine buffer, which is not one of expert %llu's, or "
                       "that buffer is not mapped here; nothing was read",
                       r, peer, id, exp, seen, a0);
    if (a1 == 3)
      return GIN_ERROR(GIN_ERR_REMOTE,
                       "rank %d: EP dispatch receive: rank %lld's message for "
                       "local expert %llu names token %lld and top-k slot %llu "
                       "(max_tokens %llu, top-k of this buffer), or a payload "
                       "in its window, which is not mapped here; nothing more "
                       "was copied",
                       r, peer, exp, id, seen, a0);
    if (a1 == 0)
      return GIN_ERROR(GIN_ERR_INVALID,
                       "rank %d: EP dispatch: topk_idx[%lld][%llu] = %lld is "
                       "not an expert in [0, %llu) or -1; nothing was sent",
                       r, id, exp, peer, a0);
    return GIN_ERROR(GIN_ERR_INVALID,
                     "rank %d: EP dispatch: token %lld names expert %lld "
                     "twice (topk_idx[%lld][%llu]); nothing was sent",
                     r, id, peer, id, exp);
  case GIN_DEVERR_PEER_DEAD: /* recorded by the host; a kernel may lie */
    if (peer < 0 || peer >= c->nranks || id < 0 || id >= c->nranks)
      return GIN_ERROR(GIN_ERR_INTERNAL,
                       "rank %d: a dead-rank record naming rank %lld (seen by "
                       "%lld), outside [0, %d)",
                       r, peer, id, c->nranks);
    return death_report(c, r, (int)peer, (int)id, (int)a0, (int)a1);
  case GIN_DEVERR_USER: { /* gin_record_error: the code in `expected` */
    int code = (int)(int64_t)exp;
    if (code >= 0 || code < GIN_ERR_INTERNAL) code = GIN_ERR_INTERNAL;
    return GIN_ERROR(code,
                     "rank %d: a kernel reported error %lld (peer %lld; "
                     "values %llu, %llu, %llu)",
                     r, id, peer, seen, a0, a1);
  }
  case GIN_DEVERR_UNREACHABLE:
    return GIN_ERROR(
        GIN_ERR_UNSUPPORTED,
        "rank %d: peer %lld has no path from this rank (path %llu)", r, peer,
        seen);
  default:
    return GIN_ERROR(GIN_ERR_INTERNAL, "rank %d: unknown device error kind %d",
                     r, (int)e->kind);
  }
}

static gin_result_t comm_async_error(gin_comm_t comm) {
  const gin_dev_error_t *e = &comm->ctrl->err, *h = &comm->ctrl->herr;
  int dev = __atomic_load_n(&e->ready, __ATOMIC_ACQUIRE) != 0;
  int host = __atomic_load_n(&h->ready, __ATOMIC_ACQUIRE) != 0;
  /* A dead rank first: what else failed (timeouts, aborted waits, closed
   * transport connections) followed from it. A transport that lost a
   * connection or had no room (a vanished host), or an abort by another
   * rank with no cause recorded here, is often a rank that died or cannot
   * be reached: if the watcher has news pending, let it record it first. */
  uint32_t who = gin_comm_aborted_by_(comm);
  int foreign = who && (int)who - 1 != comm->rank && !host &&
                !(dev && e->kind != GIN_DEVERR_ABORTED);
  if ((host && (h->kind == GIN_DEVERR_TRANSPORT ||
                h->kind == GIN_DEVERR_TIMEOUT_TRANSPORT)) ||
      foreign) {
    /* The grace runs from the first such report; every report waits out
     * what is left of it (threads reporting at once agree). */
    uint64_t now = gin_now_ns(), zero = 0;
    uint64_t until = now + COMM_DEATH_GRACE_MS * 1000000ull;
    if (!__atomic_compare_exchange_n(&comm->death_grace_until, &zero, until, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      until = zero; /* the first report's */
    if (until > now)
      comm_settle(comm, (int)((until - now + 999999) / 1000000), 0, 0);
    comm_settle(comm, COMM_SETTLE_MS, 0, 1);
    dev = __atomic_load_n(&e->ready, __ATOMIC_ACQUIRE) != 0;
    host = __atomic_load_n(&h->ready, __ATOMIC_ACQUIRE) != 0;
  }
  if (comm_death_known(comm)) {
    const gin_comm_death_t *d = &comm->dead;
    return death_report(comm, comm->rank, d->rank, d->by, d->how, d->err);
  }
  if (host && h->kind == GIN_DEVERR_PEER_DEAD) return dev_error_report(comm, h);
  /* The kernels' record first, then the proxy's; but a kernel that only
   * saw the abort the proxy raised reports the proxy's cause. */
  if (dev && !(host && e->kind == GIN_DEVERR_ABORTED))
    return dev_error_report(comm, e);
  if (host) return dev_error_report(comm, h);
  if (who)
    return GIN_ERROR(GIN_ERR_ABORTED,
                     "rank %d: communicator aborted by rank %d%s", comm->rank,
                     (int)who - 1,
                     (int)who - 1 == comm->rank ? " (gin_comm_abort)" : "");
  return GIN_SUCCESS;
}

gin_result_t gin_comm_get_async_error(gin_comm_t comm) {
  GIN_CHECK(comm_find(comm, "gin_comm_get_async_error"));
  /* Descriptors published to the proxy and not yet consumed may hold an
   * error: the proxy takes them first, so that the error of a kernel that
   * has ended shows now, not after a gin_flush. A proxy held up by a
   * transport gives up within the timeout and records why (aborting the
   * communicator, which ends this wait): the grace lets that record be
   * the answer rather than this wait's own timeout. */
  if (!gin_comm_aborted_by_(comm)) {
    gin_result_t q = gin_proxy_quiesce(comm->proxy, 1000);
    if (q != GIN_SUCCESS) {
      gin_result_t a = comm_async_error(comm);
      return a != GIN_SUCCESS ? a : q;
    }
  }
  return comm_async_error(comm);
}
