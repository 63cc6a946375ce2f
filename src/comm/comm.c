/*
 * Communicators: joining a job, deciding how each peer is reached, the
 * control pages, and the host API on a live communicator; its state
 * (checks, abort, dead peers, the error report) is state.c's.
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

GIN_PARAM_STR(param_hostid, "HOSTID", "",
              "identity of this host for locality (default: hostname, boot "
              "id and network namespace); ranks with equal ids may map each "
              "other's memory")

GIN_PARAM_STR(param_backend, "BACKEND", "auto",
              "path to peers: auto (direct where mapped, proxy elsewhere), "
              "direct (load/store only), proxy (every peer through the CPU "
              "proxy, also those that could go direct)")

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
  gin_bs_set_abort(c->bs, gin_comm_bs_abort_, c);

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

  gin_comm_live_add_(c);
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
  GIN_CHECK(gin_comm_check_live_(comm, "gin_comm_destroy"));
  if (!gin_comm_live_remove_(comm)) /* another thread destroyed it meanwhile */
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

gin_result_t gin_comm_rank(gin_comm_t comm, int *rank_out) {
  GIN_CHECK(gin_comm_check_live_(comm, "gin_comm_rank"));
  GIN_ARG_CHECK(rank_out, "gin_comm_rank: rank_out is NULL");
  *rank_out = comm->rank;
  return GIN_SUCCESS;
}

gin_result_t gin_comm_device_ranks(gin_comm_t comm, int *count_out) {
  GIN_CHECK(gin_comm_check_live_(comm, "gin_comm_device_ranks"));
  GIN_ARG_CHECK(count_out, "gin_comm_device_ranks: count_out is NULL");
  int n = 0;
  for (int i = 0; i < comm->nranks; i++)
    n += gin_arch_same_device(&comm->peers[comm->rank].dev,
                              &comm->peers[i].dev) != 0;
  *count_out = n < 1 ? 1 : n;
  return GIN_SUCCESS;
}

gin_result_t gin_comm_peer_path(gin_comm_t comm, int peer, int *path_out) {
  GIN_CHECK(gin_comm_check_live_(comm, "gin_comm_peer_path"));
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
  GIN_CHECK(gin_comm_check_live_(comm, "gin_comm_size"));
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
