/*
 * Device communicators: the signal, barrier and signal-mode memory that
 * load/store peers write (an internal window), plus local counters,
 * shadows and barrier epochs, packed into the gin_devcomm_t kernels get.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

GIN_PARAM_INT(param_near_scope, "NEAR_SCOPE", 1,
              "1: signals to a peer on this same GPU are ordered at GPU scope "
              "(cheaper); 0: at system scope, as for every other peer")

struct gin_devcomm_res {
  uint64_t id;
  void *shared;                 /* gin_mem_alloc: signals | barriers | modes */
  gin_window_t win;             /* its internal window */
  void *local;                  /* dev memory: shadows | counters | epochs */
  void *peertab;                /* dev memory: 3 x nranks pointers */
  struct gin_proxy_ring *rings; /* proxy rings, one per context */
  int nrings;
  void *ring_table;   /* device view of the rings */
  gin_win_mem_t pmem; /* host memory the proxy updates (if proxied) */
  void *pmem_cookie;
  gin_window_t pwin; /* its internal window */
  int pwin_live;
  struct gin_devcomm_res *next;
};

#define DC_MAX_CONTEXTS 64
#define DC_MAX_SIGNALS (1 << 20)
#define DC_MAX_BARRIERS 64

static gin_result_t reqs_resolve(const gin_devcomm_reqs_t *in,
                                 gin_devcomm_reqs_t *out) {
  gin_devcomm_reqs_t r = {4, 256, 256, 4};
  if (in) {
    if (in->contexts) r.contexts = in->contexts;
    if (in->signals) r.signals = in->signals;
    if (in->counters) r.counters = in->counters;
    if (in->barriers) r.barriers = in->barriers;
  }
  GIN_ARG_CHECK(r.contexts > 0 && r.contexts <= DC_MAX_CONTEXTS,
                "gin_devcomm_create: contexts %d outside [1, %d]", r.contexts,
                DC_MAX_CONTEXTS);
  GIN_ARG_CHECK(r.signals > 0 && r.signals <= DC_MAX_SIGNALS,
                "gin_devcomm_create: signals %d outside [1, %d]", r.signals,
                DC_MAX_SIGNALS);
  GIN_ARG_CHECK(r.counters > 0 && r.counters <= DC_MAX_SIGNALS,
                "gin_devcomm_create: counters %d outside [1, %d]", r.counters,
                DC_MAX_SIGNALS);
  GIN_ARG_CHECK(r.barriers > 0 && r.barriers <= DC_MAX_BARRIERS,
                "gin_devcomm_create: barriers %d outside [1, %d]", r.barriers,
                DC_MAX_BARRIERS);
  *out = r;
  return GIN_SUCCESS;
}

static void res_free(gin_comm_t c, gin_devcomm_res_t *d, int registered) {
  gin_proxy_rings_destroy(c->proxy, d->rings, d->nrings, d->ring_table);
  if (registered && d->pwin_live) gin_window_deregister_(c, d->pwin, 1);
  if (d->pmem.host)
    gin_arch_hostmem_free(d->pmem.host, d->pmem.size, d->pmem_cookie);
  if (registered) gin_window_deregister_(c, d->win, 1);
  if (d->shared) gin_mem_free(d->shared);
  gin_arch_dev_free(d->local);
  gin_arch_dev_free(d->peertab);
  free(d);
}

/* This rank's own checks (its message recorded last). */
static gin_result_t local_args(const gin_devcomm_reqs_t *reqs,
                               const gin_devcomm_t *dcomm_out,
                               gin_devcomm_reqs_t *r) {
  GIN_ARG_CHECK(dcomm_out, "gin_devcomm_create: dcomm_out is NULL");
  return reqs_resolve(reqs, r);
}

gin_result_t gin_devcomm_create(gin_comm_t comm, const gin_devcomm_reqs_t *reqs,
                                gin_devcomm_t *dcomm_out) {
  GIN_CHECK(gin_comm_check_(comm, "gin_devcomm_create"));
  gin_devcomm_reqs_t r;
  /* A rank with bad arguments still joins the collective window
   * registration below with a NULL pointer, so every rank fails at once
   * (not when the others' waits time out). */
  gin_result_t res = local_args(reqs, dcomm_out, &r);
  gin_result_t bad = res;
  if (bad != GIN_SUCCESS) r = (gin_devcomm_reqs_t){1, 1, 1, 1};

  size_t n = (size_t)comm->nranks, nbar = (size_t)GIN_NUM_TEAMS * r.barriers;
  size_t sig_bytes = sizeof(uint64_t) * (size_t)r.signals;
  size_t bar_bytes = sizeof(uint64_t) * nbar;
  size_t mode_bytes = sizeof(uint32_t) * (size_t)r.signals;
  size_t shared_bytes = sig_bytes + bar_bytes + mode_bytes;
  gin_devcomm_res_t *d = (gin_devcomm_res_t *)calloc(1, sizeof *d);
  if (!d) return GIN_ERROR(GIN_ERR_NOMEM, "gin_devcomm_create");
  if (bad == GIN_SUCCESS) res = gin_mem_alloc(shared_bytes, &d->shared);
  /* Collective step: a local failure above makes everyone fail here. */
  gin_result_t wres =
      gin_window_register_(comm, res == GIN_SUCCESS ? d->shared : NULL,
                           shared_bytes, 1, NULL, &d->win);
  if (res == GIN_SUCCESS) res = wres;
  if (res != GIN_SUCCESS) {
    res_free(comm, d, 0);
    /* Record the rank's own reason again: the collective step above
     * overwrote the message. */
    return bad != GIN_SUCCESS ? local_args(reqs, dcomm_out, &r) : res;
  }
  size_t local_bytes =
      sizeof(uint64_t) * ((size_t)r.signals + r.counters + nbar);
  GIN_CHECK_GOTO(gin_arch_dev_alloc(local_bytes, &d->local), res, free_res);
  GIN_CHECK_GOTO(gin_arch_dev_alloc(3 * n * sizeof(void *), &d->peertab), res,
                 free_res);

  /* Peer tables: every mapped rank's signals, barriers and modes. */
  void **tab = (void **)calloc(3 * n, sizeof(void *));
  if (!tab) {
    res = GIN_ERROR(GIN_ERR_NOMEM, "gin_devcomm_create");
    goto free_res;
  }
  char **bases = comm->wins[d->win.idx].bases;
  for (size_t i = 0; i < n; i++) {
    if (!bases[i]) continue;
    tab[i] = bases[i];
    tab[n + i] = bases[i] + sig_bytes;
    tab[2 * n + i] = bases[i] + sig_bytes + bar_bytes;
  }
  res = gin_arch_copy(d->peertab, tab, 3 * n * sizeof(void *));
  free(tab);
  if (res != GIN_SUCCESS) goto free_res;

  gin_devcomm_t dc;
  memset(&dc, 0, sizeof dc);
  dc.rank = comm->rank;
  dc.nranks = comm->nranks;
  dc.nctx = r.contexts;
  dc.nsignals = r.signals;
  dc.ncounters = r.counters;
  dc.nbarriers = r.barriers;
  dc.lsa_size = comm->lsa_size;
  dc.lsa_rank = comm->lsa_rank;
  dc.timeout_ns = (uint64_t)comm->timeout_ms * 1000000ull;
  char *sh = (char *)d->shared;
  dc.signals = (uint64_t *)sh;
  dc.bar = (uint64_t *)(sh + sig_bytes);
  dc.sigmode = (uint32_t *)(sh + sig_bytes + bar_bytes);
  void **pt = (void **)d->peertab;
  dc.peer_signals = (uint64_t **)pt;
  dc.peer_bar = (uint64_t **)(pt + n);
  dc.peer_sigmode = (uint32_t **)(pt + 2 * n);
  for (size_t i = 0; i < n && i < GIN_INLINE_PEERS; i++) {
    dc.peer_sig_inline[i] = bases[i] ? (uint64_t *)bases[i] : NULL;
    uint64_t p = comm->path[i];
    if ((p == GIN_PATH_SELF || p == GIN_PATH_DIRECT) && param_near_scope() &&
        gin_arch_same_device(&comm->peers[comm->rank].dev, &comm->peers[i].dev))
      p |= GIN_PATH_NEAR;
    dc.path_inline |= p << (8 * i);
  }
  uint64_t *loc = (uint64_t *)d->local;
  dc.shadows = loc;
  dc.counters = loc + r.signals;
  dc.bar_epoch = loc + r.signals + r.counters;
  dc.path = comm->path_dev;
  dc.lsa_ranks = comm->lsa_ranks_dev;
  dc.windows = comm->wins_dev;
  dc.win_bases = comm->bases_dev;
  dc.max_windows = comm->max_windows;
  dc.ctrl = comm->ctrl_dev;
  dc.gate = comm->gate_dev;
  dc.peer_ctrl = comm->peer_ctrl_devtab;
  d->id = dc.id = ++comm->next_devcomm_id;
  if (comm->proxy) {
    /* What the proxy updates lives in host memory the device maps, with
     * the same layout as the shared part (signals | barriers | modes),
     * then this rank's counters: CPU atomics there are atomic, where CPU
     * and GPU atomics on one word would not be. */
    size_t cnt_off = (shared_bytes + 63) / 64 * 64;
    d->pmem.size = cnt_off + sizeof(uint64_t) * (size_t)r.counters;
    GIN_CHECK_GOTO(gin_arch_hostmem_alloc(d->pmem.size, &d->pmem.host,
                                          &d->pmem.dev, &d->pmem.handle,
                                          &d->pmem_cookie),
                   res, free_res);
    GIN_CHECK_GOTO(gin_window_register_(comm, d->pmem.dev, shared_bytes, 1,
                                        &d->pmem, &d->pwin),
                   res, free_res);
    d->pwin_live = 1;
    char *pd = (char *)d->pmem.dev;
    dc.psignals = (uint64_t *)pd;
    dc.pmode = (uint32_t *)(pd + sig_bytes + bar_bytes);
    dc.pcounters = (uint64_t *)(pd + cnt_off);
    GIN_CHECK_GOTO(gin_proxy_rings_create(
                       comm->proxy, &dc, d->pwin.idx, r.signals + (int)nbar,
                       (uint64_t *)((char *)d->pmem.host + cnt_off), &d->rings),
                   res, free_res);
    d->nrings = dc.nctx;
    d->ring_table = dc.rings;
  }

  /* Peers may signal as soon as they return: wait until all are set up. */
  GIN_CHECK_GOTO(gin_bs_barrier(comm->bs), res, free_res);
  d->next = comm->devcomms;
  comm->devcomms = d;
  GIN_INFO(DEVCOMM,
           "rank %d: devcomm %llu: %d contexts, %d signals, %d counters, %d "
           "barrier slots",
           comm->rank, (unsigned long long)d->id, r.contexts, r.signals,
           r.counters, r.barriers);
  *dcomm_out = dc;
  return GIN_SUCCESS;

free_res:
  res_free(comm, d, 1);
  return res;
}

gin_result_t gin_devcomm_destroy(gin_comm_t comm, gin_devcomm_t *dcomm) {
  GIN_CHECK(gin_comm_check_live_(comm, "gin_devcomm_destroy"));
  gin_devcomm_res_t **pp = &comm->devcomms;
  while (dcomm && *pp && (*pp)->id != dcomm->id)
    pp = &(*pp)->next;
  /* Every rank says whether its handle is live (1: NULL, 2: not live), a
   * failing rank too, so that all fail now and none destroys anything
   * (the others' collective teardown would wait for it until the
   * timeout). Once the communicator aborted, the teardown is local. */
  int32_t mine = !dcomm ? 1 : !*pp ? 2 : 0, word = 0;
  int first = -1;
  gin_result_t res = gin_comm_statuses_(comm, mine, &first, &word);
  if (res != GIN_SUCCESS && mine == 0 && gin_comm_aborted_by_(comm))
    res = GIN_SUCCESS; /* aborted: the teardown is local */
  else if (res == GIN_SUCCESS && mine == 1)
    res = GIN_ERROR(GIN_ERR_INVALID, "gin_devcomm_destroy: dcomm is NULL");
  else if (res == GIN_SUCCESS && mine == 2)
    res = GIN_ERROR(GIN_ERR_INVALID,
                    "gin_devcomm_destroy: device communicator %llu is not "
                    "live on this communicator (destroyed twice?)",
                    (unsigned long long)dcomm->id);
  else if (res == GIN_SUCCESS && first >= 0)
    res = GIN_ERROR(
        GIN_ERR_INVALID, "gin_devcomm_destroy: rank %d passed %s", first,
        word == 1 ? "a NULL dcomm" : "a device communicator that is not live");
  GIN_CHECK(res);
  /* Its rings may still hold descriptors: let the proxy consume them. */
  GIN_CHECK(gin_proxy_quiesce(comm->proxy, 0));
  gin_devcomm_res_t *d = *pp;
  *pp = d->next;
  res_free(comm, d, 1);
  memset(dcomm, 0, sizeof *dcomm);
  return GIN_SUCCESS;
}

/* Local teardown at gin_comm_destroy, after the window table is gone (so
 * the shared memory is no longer referenced): no collective step. */
void gin_devcomm_fini_(gin_comm_t comm) {
  while (comm->devcomms) {
    gin_devcomm_res_t *d = comm->devcomms;
    comm->devcomms = d->next;
    res_free(comm, d, 0);
  }
}
