/*
 * Communicators: joining a job, deciding how each peer is reached, the
 * control page (abort word and device error record), abort, dead peers,
 * and the asynchronous error report.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "comm/build.h"
#include "comm/comm.h"
#include "comm/sharing.h"

#define GIN_COMM_MAGIC 0x67696e636f6d6d31ull /* "gincomm1" */
/* Most a report waits for the watcher to name a dead rank when what it
 * has (a closed connection, a broken bootstrap ring) suggests one. */
#define COMM_SETTLE_MS 1000
/* How long such a report waits for a death even when the watcher has no
 * news yet: a dying process's sockets close one after another, and a
 * proxy sleeping in poll() sees its transport's connection close before
 * the watcher's link does. From the first such report on. */
#define COMM_DEATH_GRACE_MS 50

GIN_PARAM_STR(param_hostid, "HOSTID", "",
              "identity of this host for locality (default: hostname, boot "
              "id and network namespace); ranks with equal ids may map each "
              "other's memory")

GIN_PARAM_STR(param_backend, "BACKEND", "auto",
              "path to peers: auto (direct where mapped, proxy elsewhere), "
              "direct (load/store only), proxy (every peer through the CPU "
              "proxy, also those that could go direct)")

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
    if (while_busy && !gin_watch_busy_(c)) return comm_death_known(c);
    nanosleep(&(struct timespec){0, 1000000L}, NULL);
  }
}

/* The bootstrap's abort check (gin_bs_set_abort): this communicator's
 * error once it is aborted or knows of a dead rank. */
static gin_result_t comm_bs_abort(void *arg, int settle_ms) {
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

static void hostid_make(char *out, size_t len) {
  const char *forced = param_hostid();
  if (forced[0]) {
    snprintf(out, len, "%s", forced);
    return;
  }
  char host[64] = "?", boot[40] = "?";
  gethostname(host, sizeof host - 1);
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (!fgets(boot, sizeof boot, f)) boot[0] = '?';
    boot[strcspn(boot, "\n")] = '\0';
    fclose(f);
  }
  /* Ranks in different network namespaces are treated as different hosts
   * (that is how the multi-host tests build their hosts). */
  struct stat st;
  unsigned long long netns = 0;
  if (stat("/proc/self/ns/net", &st) == 0)
    netns = (unsigned long long)st.st_ino;
  snprintf(out, len, "%s/%s/%llu", host, boot, netns);
}

static const char *path_name(int p) {
  return p == GIN_PATH_SELF     ? "self"
         : p == GIN_PATH_DIRECT ? "direct"
         : p == GIN_PATH_PROXY  ? "proxy"
                                : "none";
}

/* Decides how each peer is reached (GIN_BACKEND, GIN_TRANSPORT) and which
 * peers form the lsa team (memory mapped here). */
static gin_result_t comm_setup_paths(gin_comm_t c) {
  gin_peer_info_t *me = &c->peers[c->rank];
  const char *backend = param_backend();
  int force_proxy = strcmp(backend, "proxy") == 0;
  int direct_only = strcmp(backend, "direct") == 0;
  if (!force_proxy && !direct_only && strcmp(backend, "auto") != 0)
    return GIN_ERROR(GIN_ERR_INVALID,
                     "GIN_BACKEND=%s: expected auto, direct or proxy", backend);
  c->lsa_size = 0;
  int here = 0; /* ranks on this machine, this one included */
  for (int r = 0; r < c->nranks; r++) {
    gin_peer_info_t *p = &c->peers[r];
    int same_host = strncmp(p->hostid, me->hostid, GIN_HOSTID_BYTES) == 0;
    here += same_host;
    c->path_mapped[r] =
        r == c->rank || (same_host && gin_arch_can_map(&me->dev, &p->dev));
    int t;
    GIN_CHECK(gin_transport_select(c->path_mapped[r], &t));
    if (c->path_mapped[r] && !force_proxy)
      c->path[r] = r == c->rank ? GIN_PATH_SELF : GIN_PATH_DIRECT;
    else if (!direct_only)
      c->path[r] = GIN_PATH_PROXY;
    else
      c->path[r] = GIN_PATH_NONE;
    c->transport[r] = (uint8_t)t;
    if (c->path_mapped[r]) {
      if (r == c->rank) c->lsa_rank = c->lsa_size;
      c->lsa_ranks[c->lsa_size++] = r;
    }
    GIN_INFO(INIT, "rank %d: peer %d path %s%s%s%s", c->rank, r,
             path_name(c->path[r]), c->path[r] == GIN_PATH_PROXY ? " (" : "",
             c->path[r] == GIN_PATH_PROXY ? gin_transport_get(t)->name : "",
             c->path[r] == GIN_PATH_PROXY ? ")" : "");
  }
  gin_arch_local_ranks(here);
  GIN_CHECK(gin_arch_copy(c->path_dev, c->path, (size_t)c->nranks));
  GIN_CHECK(gin_arch_copy(c->lsa_ranks_dev, c->lsa_ranks,
                          sizeof(int) * (size_t)c->lsa_size));
  return GIN_SUCCESS;
}

/* Ranks that share a GPU without MPS run at a time slice per exchange: the
 * job's lowest such rank says so, once per process (comm/sharing.h). Costs
 * one pass over the records where no GPU time-slices. */
static void comm_note_sharing(gin_comm_t c) {
  static int noted;
  int n = c->nranks, any = 0;
  if (gin_arch_param_mps() == 0 || __atomic_load_n(&noted, __ATOMIC_RELAXED))
    return;
  for (int i = 0; i < n && !any; i++)
    any = gin_arch_time_sliced(&c->peers[i].dev);
  if (!any) return;
  int *dev_of = (int *)malloc((size_t)n * sizeof *dev_of);
  uint8_t *sliced = (uint8_t *)malloc((size_t)n);
  if (dev_of && sliced) {
    for (int i = 0; i < n; i++) {
      const gin_peer_info_t *p = &c->peers[i];
      sliced[i] = (uint8_t)gin_arch_time_sliced(&p->dev);
      dev_of[i] = i;
      for (int j = 0; j < i && dev_of[i] == i; j++)
        if (!strncmp(c->peers[j].hostid, p->hostid, GIN_HOSTID_BYTES) &&
            gin_arch_same_device(&c->peers[j].dev, &p->dev))
          dev_of[i] = j;
    }
    char msg[512];
    if (gin_sharing_note(n, dev_of, sliced, c->rank, msg, sizeof msg) &&
        !__atomic_exchange_n(&noted, 1, __ATOMIC_RELAXED))
      GIN_WARN(INIT, "%s", msg);
  }
  free(dev_of);
  free(sliced);
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

/* Logical OR of `mine` over all ranks. */
static gin_result_t comm_any(gin_comm_t c, int mine, int *any_out) {
  int first = -1;
  int32_t word = 0;
  GIN_CHECK(gin_comm_statuses_(c, mine != 0, &first, &word));
  *any_out = first >= 0;
  return GIN_SUCCESS;
}

static int comm_has_proxied(gin_comm_t c) {
  for (int r = 0; r < c->nranks; r++)
    if (c->path[r] == GIN_PATH_PROXY) return 1;
  return 0;
}

static gin_result_t comm_map_peer_ctrl(gin_comm_t c) {
  gin_ctrl_t **devtab =
      (gin_ctrl_t **)calloc((size_t)c->nranks, sizeof *devtab);
  if (!devtab) return GIN_ERROR(GIN_ERR_NOMEM, "peer control table");
  gin_result_t res = GIN_SUCCESS;
  for (int r = 0; r < c->nranks && res == GIN_SUCCESS; r++) {
    if (r == c->rank) {
      devtab[r] = c->ctrl_dev;
      continue;
    }
    if (!c->path_mapped[r]) continue;
    void *host = NULL, *dev = NULL;
    res = gin_arch_hostmem_import(&c->peers[r].ctrl, sizeof(gin_ctrl_t), &host,
                                  &dev, &c->peer_ctrl_cookie[r]);
    if (res == GIN_SUCCESS) {
      c->peer_ctrl[r] = (gin_ctrl_t *)host;
      devtab[r] = (gin_ctrl_t *)dev;
    }
  }
  if (res == GIN_SUCCESS)
    res = gin_arch_copy(c->peer_ctrl_devtab, devtab,
                        sizeof(gin_ctrl_t *) * (size_t)c->nranks);
  free(devtab);
  return res;
}

/* Every rank must be able to map what each of its load/store peers will
 * allocate (gin_arch_shm_*): each rank takes (and closes) a descriptor of
 * every mapped peer whose memory is imported that way. Where one cannot,
 * every rank falls back to the method any process can import (cuda: CUDA
 * IPC instead of VMM), or, if some rank forced the method, every rank
 * fails naming the ranks and the errno. The same decision on every rank:
 * it is made from all-gathered words only. */
static gin_result_t comm_agree_shm(gin_comm_t c) {
  int32_t *mode = (int32_t *)calloc((size_t)c->nranks, sizeof *mode);
  if (!mode) return GIN_ERROR(GIN_ERR_NOMEM, "gin_comm_init: shm modes");
  mode[c->rank] = gin_arch_shm_mode();
  gin_result_t res = gin_bs_allgather(c->bs, mode, sizeof *mode);
  /* Which peer this rank cannot take from: errno + 4096 x peer. */
  int32_t mine = 0, word = 0;
  int forced = -1, first = -1, any_fd = 0;
  for (int r = 0; res == GIN_SUCCESS && r < c->nranks; r++) {
    if ((mode[r] & GIN_ARCH_SHM_FORCED) && forced < 0) forced = r;
    any_fd |= (mode[r] & GIN_ARCH_SHM_TAKES_FD) != 0;
    if (r == c->rank || !c->path_mapped[r] ||
        !(mode[r] & GIN_ARCH_SHM_TAKES_FD))
      continue;
    int e = gin_arch_shm_fd_check(&c->peers[r].ctrl);
    if (e != 0 && mine == 0) mine = (e & 4095) + 4096 * r;
  }
  free(mode);
  if (res != GIN_SUCCESS || !any_fd) return res; /* alike on every rank */
  res = gin_comm_statuses_(c, mine, &first, &word);
  if (res != GIN_SUCCESS || first < 0) return res;
  int peer = word / 4096, e = word % 4096;
  if (forced >= 0)
    return GIN_ERROR(GIN_ERR_UNSUPPORTED,
                     "gin_comm_init: rank %d cannot take rank %d's memory "
                     "descriptors (pidfd_getfd: %s), and rank %d has "
                     "GIN_CUDA_VMM=1; unset it or set it to 0",
                     first, peer, strerror(e), forced);
  GIN_INFO(INIT,
           "rank %d cannot take rank %d's memory descriptors (pidfd_getfd: "
           "%s): later windows from the method every rank can map",
           first, peer, strerror(e));
  gin_arch_shm_fallback();
  return GIN_SUCCESS;
}

static void comm_free(gin_comm_t c) {
  gin_watch_stop(c); /* its thread writes the control pages */
  if (c->peer_ctrl)
    for (int r = 0; r < c->nranks; r++)
      if (c->peer_ctrl[r] && r != c->rank)
        gin_arch_hostmem_unimport(c->peer_ctrl[r], sizeof(gin_ctrl_t),
                                  c->peer_ctrl_cookie[r]);
  if (c->ctrl)
    gin_arch_hostmem_free(c->ctrl, sizeof(gin_ctrl_t), c->ctrl_cookie);
  gin_arch_dev_free(c->gate_dev);
  gin_arch_dev_free(c->path_dev);
  gin_arch_dev_free(c->lsa_ranks_dev);
  gin_arch_dev_free(c->peer_ctrl_devtab);
  free(c->peer_ctrl);
  free(c->peer_ctrl_cookie);
  free(c->statuses);
  free(c->lsa_ranks);
  free(c->path);
  free(c->path_mapped);
  free(c->transport);
  free(c->peers);
  if (c->bs) gin_bs_destroy(c->bs);
  free(c);
}

/* The job's calls up (gin_job_t): the bootstrap's all-gather, and an
 * abort by this rank. */
static gin_result_t comm_job_allgather(void *owner, void *all, size_t bytes) {
  return gin_bs_allgather(((gin_comm_t)owner)->bs, all, bytes);
}
static void comm_job_abort(void *owner) {
  gin_comm_abort_cpu_((gin_comm_t)owner);
}

/* What the proxy and the transports see of c: filled once the peers'
 * paths, the control page and the window table are set up. */
static void comm_job_fill(gin_comm_t c) {
  gin_job_t *j = &c->job;
  gin_bs_uid_t u;
  memcpy(&u, c->uid.bytes, sizeof u);
  j->rank = c->rank;
  j->nranks = c->nranks;
  j->timeout_ms = c->timeout_ms;
  memset(&j->root, 0, sizeof j->root);
  j->root.family = u.family;
  j->root.port = u.port;
  memcpy(j->root.addr, u.addr, sizeof j->root.addr);
  memcpy(j->secret, u.secret, sizeof j->secret);
  j->path = c->path;
  j->mapped = c->path_mapped;
  j->transport = c->transport;
  j->wins = c->wins;
  j->max_windows = c->max_windows;
  j->ctrl = c->ctrl;
  j->proxy_msg = c->proxy_msg;
  j->proxy_msg_len = sizeof c->proxy_msg;
  j->owner = c;
  j->allgather = comm_job_allgather;
  j->abort = comm_job_abort;
}

gin_result_t gin_comm_init_built_(gin_comm_t *comm_out, int nranks, int rank,
                                  const gin_unique_id_t *uid,
                                  const gin_config_t *cfg,
                                  const gin_build_t_ *build) {
  GIN_CHECK(gin_build_check_(build, "gin_comm_init"));
  GIN_ARG_CHECK(comm_out && uid, "gin_comm_init: %s is NULL",
                comm_out ? "uid" : "comm_out");
  GIN_ARG_CHECK(nranks >= 1 && nranks <= GIN_MAX_RANKS,
                "gin_comm_init: nranks %d outside [1, %d]", nranks,
                GIN_MAX_RANKS);
  GIN_ARG_CHECK(rank >= 0 && rank < nranks,
                "gin_comm_init: rank %d outside [0, %d)", rank, nranks);
  GIN_CHECK(gin_config_check_(cfg, "gin_comm_init"));

  gin_result_t res;
  gin_comm_t c = (gin_comm_t)calloc(1, sizeof *c);
  if (!c) return GIN_ERROR(GIN_ERR_NOMEM, "gin_comm_init: no host memory");
  c->magic = GIN_COMM_MAGIC;
  c->rank = rank;
  c->nranks = nranks;
  c->timeout_ms = (cfg && cfg->size && cfg->timeout_ms) ? cfg->timeout_ms
                                                        : gin_timeout_ms();
  size_t n = (size_t)nranks;
  c->peers = (gin_peer_info_t *)calloc(n, sizeof *c->peers);
  c->path = (uint8_t *)calloc(n, 1);
  c->path_mapped = (uint8_t *)calloc(n, 1);
  c->transport = (uint8_t *)calloc(n, 1);
  c->lsa_ranks = (int *)calloc(n, sizeof(int));
  c->peer_ctrl = (gin_ctrl_t **)calloc(n, sizeof(gin_ctrl_t *));
  c->peer_ctrl_cookie = (void **)calloc(n, sizeof(void *));
  c->statuses = (int32_t *)calloc(n, sizeof(int32_t));
  if (!c->peers || !c->path || !c->path_mapped || !c->transport ||
      !c->lsa_ranks || !c->peer_ctrl || !c->peer_ctrl_cookie || !c->statuses) {
    res =
        GIN_ERROR(GIN_ERR_NOMEM, "gin_comm_init: tables for %d ranks", nranks);
    goto free_comm;
  }
  c->uid = *uid;
  GIN_CHECK_GOTO(gin_bs_init(uid, rank, nranks, c->timeout_ms, &c->bs), res,
                 free_comm);

  gin_peer_info_t *me = &c->peers[rank];
  hostid_make(me->hostid, sizeof me->hostid);
  me->pid = (int32_t)getpid();
  me->rank = rank;
  me->watch = gin_watch_wanted_();
  GIN_CHECK_GOTO(gin_arch_init(&me->dev), res, free_comm);
  void *ctrl_host = NULL, *ctrl_dev = NULL;
  GIN_CHECK_GOTO(gin_arch_hostmem_alloc(sizeof(gin_ctrl_t), &ctrl_host,
                                        &ctrl_dev, &me->ctrl, &c->ctrl_cookie),
                 res, free_comm);
  c->ctrl = (gin_ctrl_t *)ctrl_host;
  c->ctrl_dev = (gin_ctrl_t *)ctrl_dev;
  GIN_CHECK_GOTO(gin_arch_dev_alloc(sizeof(uint32_t), (void **)&c->gate_dev),
                 res, free_comm);
  /* From here on, collectives stop once the communicator is aborted. */
  gin_bs_set_abort(c->bs, comm_bs_abort, c);

  /* Every rank's record, checked alike on every rank before any is used
   * (gin_peer_recs_check); c->peers holds only this rank's until then. */
  uint8_t *recs = (uint8_t *)calloc(n, GIN_PEER_REC_BYTES);
  if (!recs) {
    res = GIN_ERROR(GIN_ERR_NOMEM, "gin_comm_init: peer records for %d ranks",
                    nranks);
    goto free_comm;
  }
  gin_peer_rec_encode(me, recs + (size_t)rank * GIN_PEER_REC_BYTES);
  res = gin_bs_allgather(c->bs, recs, GIN_PEER_REC_BYTES);
  if (res == GIN_SUCCESS) {
    char why[160];
    res = gin_peer_recs_check(recs, n * GIN_PEER_REC_BYTES, nranks, why,
                              sizeof why, c->peers);
    if (res != GIN_SUCCESS) res = GIN_ERROR(res, "gin_comm_init: %s", why);
  }
  free(recs);
  if (res != GIN_SUCCESS) goto free_comm;
  GIN_CHECK_GOTO(gin_arch_dev_alloc(n, (void **)&c->path_dev), res, free_comm);
  GIN_CHECK_GOTO(
      gin_arch_dev_alloc(n * sizeof(int), (void **)&c->lsa_ranks_dev), res,
      free_comm);
  GIN_CHECK_GOTO(gin_arch_dev_alloc(n * sizeof(gin_ctrl_t *),
                                    (void **)&c->peer_ctrl_devtab),
                 res, free_comm);
  GIN_CHECK_GOTO(comm_setup_paths(c), res, free_comm);
  comm_note_sharing(c);
  GIN_CHECK_GOTO(comm_map_peer_ctrl(c), res, free_comm);
  GIN_CHECK_GOTO(comm_agree_shm(c), res, free_comm);
  /* Every rank has its ring now (the exchange above): link and watch.
   * After the peers' control pages are mapped: the watcher writes them
   * (its thread's start orders the mapping before). */
  GIN_CHECK_GOTO(gin_watch_start(c), res, free_comm);
  GIN_CHECK_GOTO(gin_window_init_(c), res, fini_windows);
  /* Every rank takes part, so that a transport's setup is collective. */
  int any_proxy = comm_has_proxied(c), all_proxy = 0;
  GIN_CHECK_GOTO(comm_any(c, any_proxy, &all_proxy), res, fini_windows);
  if (all_proxy) {
    comm_job_fill(c);
    GIN_CHECK_GOTO(gin_proxy_attach(&c->job, &c->proxy), res, fini_windows);
  }
  /* Nobody returns before every peer has mapped what it needs. */
  GIN_CHECK_GOTO(gin_bs_barrier(c->bs), res, detach_proxy);

  pthread_mutex_lock(&live_lock);
  c->next_live = live_head;
  live_head = c;
  pthread_mutex_unlock(&live_lock);
  GIN_INFO(INIT, "rank %d of %d ready: %d load/store peers (lsa rank %d)", rank,
           nranks, c->lsa_size, c->lsa_rank);
  *comm_out = c;
  return GIN_SUCCESS;

detach_proxy:
  gin_proxy_detach(c->proxy);
  c->proxy = NULL;
fini_windows:
  gin_window_fini_(c);
free_comm:
  comm_free(c);
  return res;
}

gin_result_t gin_comm_destroy(gin_comm_t comm) {
  GIN_CHECK(comm_find(comm, "gin_comm_destroy"));
  pthread_mutex_lock(&live_lock);
  struct gin_comm **pp = &live_head;
  while (*pp && *pp != comm)
    pp = &(*pp)->next_live;
  int found = *pp != NULL;
  if (found) *pp = comm->next_live;
  pthread_mutex_unlock(&live_lock);
  if (!found) /* another thread destroyed it meanwhile */
    return GIN_ERROR(GIN_ERR_STATE,
                     "gin_comm_destroy: communicator %p destroyed twice",
                     (void *)comm);
  /* The goodbye first: from now on this rank's going is no death. */
  gin_watch_stop(comm);
  gin_proxy_detach(comm->proxy);
  comm->proxy = NULL;
  gin_window_fini_(comm);
  gin_devcomm_fini_(comm);
  comm_free(comm);
  return GIN_SUCCESS;
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
      gin_watch_poke_(c);
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
  case GIN_DEVERR_PEER_DEAD:
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

gin_result_t gin_comm_rank(gin_comm_t comm, int *rank_out) {
  GIN_CHECK(comm_find(comm, "gin_comm_rank"));
  GIN_ARG_CHECK(rank_out, "gin_comm_rank: rank_out is NULL");
  *rank_out = comm->rank;
  return GIN_SUCCESS;
}

gin_result_t gin_comm_device_ranks(gin_comm_t comm, int *count_out) {
  GIN_CHECK(comm_find(comm, "gin_comm_device_ranks"));
  GIN_ARG_CHECK(count_out, "gin_comm_device_ranks: count_out is NULL");
  int n = 0;
  for (int i = 0; i < comm->nranks; i++)
    n += gin_arch_same_device(&comm->peers[comm->rank].dev,
                              &comm->peers[i].dev) != 0;
  *count_out = n < 1 ? 1 : n;
  return GIN_SUCCESS;
}

gin_result_t gin_comm_peer_path(gin_comm_t comm, int peer, int *path_out) {
  GIN_CHECK(comm_find(comm, "gin_comm_peer_path"));
  GIN_ARG_CHECK(path_out, "gin_comm_peer_path: path_out is NULL");
  GIN_ARG_CHECK(peer >= 0 && peer < comm->nranks,
                "gin_comm_peer_path: peer %d outside [0, %d)", peer,
                comm->nranks);
  int near = gin_arch_same_device(&comm->peers[comm->rank].dev,
                                  &comm->peers[peer].dev);
  *path_out = comm->path[peer] | (near ? GIN_PATH_NEAR : 0);
  return GIN_SUCCESS;
}

gin_result_t gin_comm_size(gin_comm_t comm, int *nranks_out) {
  GIN_CHECK(comm_find(comm, "gin_comm_size"));
  GIN_ARG_CHECK(nranks_out, "gin_comm_size: nranks_out is NULL");
  *nranks_out = comm->nranks;
  return GIN_SUCCESS;
}

gin_result_t gin_comm_barrier(gin_comm_t comm) {
  GIN_CHECK(gin_comm_check_(comm, "gin_comm_barrier"));
  return gin_bs_barrier(comm->bs);
}

gin_result_t gin_comm_allgather(gin_comm_t comm, const void *sendbuf,
                                void *recvbuf, size_t bytes) {
  GIN_CHECK(gin_comm_check_(comm, "gin_comm_allgather"));
  /* A rank with a bad argument still takes part (its status word says
   * which), so that every rank fails now instead of waiting for it until
   * the timeout. */
  static const char *const what[4] = {"", "a NULL sendbuf", "a NULL recvbuf",
                                      "a size that overflows"};
  size_t n = (size_t)comm->nranks;
  /* (No object is larger than PTRDIFF_MAX bytes.) */
  int32_t st = !sendbuf                          ? 1
               : !recvbuf                        ? 2
               : bytes > (size_t)PTRDIFF_MAX / n ? 3
                                                 : 0;
  int first = -1;
  int32_t word = 0;
  GIN_CHECK(gin_comm_statuses_(comm, st, &first, &word));
  if (st == 3)
    return GIN_ERROR(GIN_ERR_INVALID,
                     "gin_comm_allgather: %zu bytes times %zu ranks overflows",
                     bytes, n);
  if (st)
    return GIN_ERROR(GIN_ERR_INVALID, "gin_comm_allgather: %s is NULL",
                     st == 1 ? "sendbuf" : "recvbuf");
  if (first >= 0)
    return GIN_ERROR(GIN_ERR_INVALID, "gin_comm_allgather: rank %d passed %s",
                     first,
                     word > 0 && word < 4 ? what[word] : "bad arguments");
  char *mine = (char *)recvbuf + (size_t)comm->rank * bytes;
  if (mine != sendbuf) memmove(mine, sendbuf, bytes);
  return gin_bs_allgather(comm->bs, recvbuf, bytes);
}
