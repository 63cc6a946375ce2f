/*
 * EP normal-mode buffers, host side: configuration checks (local and
 * across ranks), the window and device communicator of a buffer, the
 * arguments of each call, and the launches, on the caller's stream.
 */
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ep/epn_kernels.h"
#include "gin/ep_format.h"

struct gin_epn {
  gin_comm_t comm;
  gin_epn_config_t cfg;
  gin_epn_geom_t g;
  void *mem;
  gin_window_t win;
  gin_devcomm_t dc;
  uint64_t *scratch;
  int max_channels; /* by the device's room for every rank's blocks */
};

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* Checks a configuration for nranks ranks; fills the geometry, with
 * staging slots for rows to proxied peers where `staged`. */
static gin_result_t geom_make(const gin_epn_config_t *c, int nranks, int me,
                              int staged, gin_epn_geom_t *g) {
  GIN_ARG_CHECK(c, "gin_epn: configuration is NULL");
  GIN_ARG_CHECK(nranks <= GIN_EPN_MAX_RANKS,
                "gin_epn: %d ranks, more than the %d normal mode supports",
                nranks, GIN_EPN_MAX_RANKS);
  GIN_ARG_CHECK(c->hidden >= 8 && c->hidden <= (1 << 20) && c->hidden % 8 == 0,
                "gin_epn: hidden %d is not a multiple of 8 in [8, 2^20] (rows "
                "move in 16-byte pieces, and the top-k words after a row must "
                "be aligned)",
                c->hidden);
  GIN_ARG_CHECK(c->topk >= 1 && c->topk <= 32,
                "gin_epn: topk %d outside [1, 32]", c->topk);
  GIN_ARG_CHECK(c->num_experts >= nranks && c->num_experts % nranks == 0,
                "gin_epn: num_experts %d is not a positive multiple of the %d "
                "ranks",
                c->num_experts, nranks);
  GIN_ARG_CHECK(c->channels >= 1 && c->channels <= GIN_EPN_MAX_CHANNELS,
                "gin_epn: channels %d outside [1, %d]", c->channels,
                GIN_EPN_MAX_CHANNELS);
  GIN_ARG_CHECK(c->ring_tokens >= 1 && c->ring_tokens <= (1 << 16),
                "gin_epn: ring_tokens %d outside [1, 2^16]", c->ring_tokens);
  memset(g, 0, sizeof *g);
  g->R = nranks;
  g->E = c->num_experts;
  g->L = c->num_experts / nranks;
  g->H = c->hidden;
  g->K = c->topk;
  g->C = c->channels;
  g->S = c->ring_tokens;
  g->me = me;
  g->staged = staged;
  g->dslot =
      align_up(GIN_EPN_SLOT_HEAD + (size_t)g->H * 2 + (size_t)g->K * 8, 16);
  g->cslot = align_up((size_t)g->H * 2 + (size_t)g->K * 4, 16);
  g->note = align_up(((size_t)2 + (size_t)g->C + (size_t)g->L) * 4, 16);
  size_t ring = (size_t)g->R * (size_t)g->C * (size_t)g->S, off = 0;
  size_t stage = staged ? ring : 0;
  g->off_dring = off;
  off = align_up(off + ring * g->dslot, 256);
  g->off_dstage = off;
  off = align_up(off + stage * g->dslot, 256);
  g->off_cring = off;
  off = align_up(off + ring * g->cslot, 256);
  g->off_cstage = off;
  off = align_up(off + stage * g->cslot, 256);
  g->off_note = off;
  off = align_up(off + 2 * (size_t)g->R * g->note, 256);
  g->off_nstage = off;
  off = align_up(off + 2 * (size_t)g->R * g->note, 256);
  g->win_bytes = off;
  return GIN_SUCCESS;
}

gin_result_t gin_epn_size_hint(const gin_epn_config_t *cfg, int nranks,
                               size_t *bytes_out) {
  GIN_ARG_CHECK(bytes_out, "gin_epn_size_hint: bytes_out is NULL");
  GIN_ARG_CHECK(nranks >= 1, "gin_epn_size_hint: nranks %d < 1", nranks);
  gin_epn_geom_t g;
  GIN_CHECK(geom_make(cfg, nranks, 0, 1, &g));
  *bytes_out = g.win_bytes + gin_epn_scratch_words(&g) * 8;
  return GIN_SUCCESS;
}

/* Every rank's configuration must be this rank's (collective); ok: this
 * rank's own checks passed. *all_direct: whether every rank reaches every
 * peer directly (`direct`: this one does). */
static gin_result_t config_agree(gin_comm_t comm, int rank, int nranks,
                                 const gin_epn_config_t *mine, int ok,
                                 int direct, int *all_direct) {
  enum { NV = 7 }; /* the fields compared, then ok, then direct */
  int32_t v[NV] = {mine->hidden,   mine->topk,        mine->num_experts,
                   mine->channels, mine->ring_tokens, ok,
                   direct};
  static const char *const names[NV - 2] = {"hidden", "topk", "num_experts",
                                            "channels", "ring_tokens"};
  int32_t *all = (int32_t *)calloc((size_t)nranks, sizeof v);
  if (!all) return GIN_ERROR(GIN_ERR_NOMEM, "gin_epn_create");
  gin_result_t res = gin_comm_allgather(comm, v, all, sizeof v);
  *all_direct = 1;
  for (int r = 0; r < nranks && res == GIN_SUCCESS; r++) {
    const int32_t *o = all + (size_t)r * NV;
    *all_direct &= o[NV - 1] != 0;
    if (!o[NV - 2]) {
      res = GIN_ERROR(GIN_ERR_INVALID,
                      "gin_epn_create: rank %d's configuration is invalid", r);
      break;
    }
    for (int i = 0; i < NV - 2 && res == GIN_SUCCESS; i++)
      if (o[i] != v[i])
        res = GIN_ERROR(GIN_ERR_INVALID,
                        "gin_epn_create: %s is %d on rank %d but %d on rank "
                        "%d (every rank must pass the same configuration)",
                        names[i], o[i], r, v[i], rank);
  }
  free(all);
  return res;
}

gin_result_t gin_epn_create(gin_comm_t comm, const gin_epn_config_t *cfg,
                            gin_epn_t *ep_out) {
  GIN_ARG_CHECK(comm, "gin_epn_create: comm is NULL");
  int rank, nranks, near;
  if (gin_comm_rank(comm, &rank) != GIN_SUCCESS ||
      gin_comm_size(comm, &nranks) != GIN_SUCCESS ||
      gin_comm_device_ranks(comm, &near) != GIN_SUCCESS)
    return GIN_ERROR(GIN_ERR_STATE,
                     "gin_epn_create: communicator %p is not live (destroyed "
                     "already?)",
                     (void *)comm);
  /* Rows are staged only for proxied peers: where every rank reaches
   * every peer directly, the window has no staging slots (half the rows). */
  int direct = 1, all_direct = 0;
  for (int r = 0; r < nranks; r++) {
    int path = GIN_PATH_NONE;
    gin_comm_peer_path(comm, r, &path);
    path &= ~GIN_PATH_NEAR;
    direct &= path == GIN_PATH_SELF || path == GIN_PATH_DIRECT;
  }
  gin_epn_geom_t g;
  gin_epn_config_t zero;
  memset(&zero, 0, sizeof zero);
  gin_result_t local =
      ep_out ? geom_make(cfg, nranks, rank, 1, &g)
             : GIN_ERROR(GIN_ERR_INVALID, "gin_epn_create: ep_out is NULL");
  /* A rank with bad arguments still takes part, so all fail at once. */
  gin_result_t res = config_agree(comm, rank, nranks, cfg ? cfg : &zero,
                                  local == GIN_SUCCESS, direct, &all_direct);
  if (local != GIN_SUCCESS)
    return ep_out ? geom_make(cfg, nranks, rank, 1, &g) /* its message */
                  : GIN_ERROR(GIN_ERR_INVALID, "gin_epn_create: ep_out is "
                                               "NULL");
  GIN_CHECK(res);
  GIN_CHECK(geom_make(cfg, nranks, rank, !all_direct, &g));

  gin_epn_t ep = (gin_epn_t)calloc(1, sizeof *ep);
  if (!ep) return GIN_ERROR(GIN_ERR_NOMEM, "gin_epn_create");
  ep->comm = comm;
  ep->cfg = *cfg;
  ep->g = g;
  const char *why = "";
  int per_sm = 0;
  res = gin_epn_kernels_load(&per_sm, &why) == GIN_SUCCESS
            ? gin_mem_alloc(g.win_bytes, &ep->mem)
            : GIN_ERROR(GIN_ERR_CUDA,
                        "gin_epn_create: loading the EP kernels: %s", why);
  /* Every rank's dispatch and combine blocks must run at once (senders
   * wait for receivers' credits): 2 x channels blocks per rank sharing
   * the device. */
  ep->max_channels = GIN_EPN_MAX_CHANNELS;
  if (per_sm > 0) {
    int room = per_sm * gin_device_sms() / (2 * (near > 0 ? near : 1));
    ep->max_channels = room < 1 ? 1 : room;
  }
  /* Collective from here: a rank that failed to allocate registers NULL,
   * which fails on every rank. */
  gin_result_t wres = gin_window_register(
      comm, res == GIN_SUCCESS ? ep->mem : NULL, g.win_bytes, &ep->win);
  if (res == GIN_SUCCESS) res = wres;
  if (res != GIN_SUCCESS) goto free_mem;
  gin_devcomm_reqs_t reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.contexts = nranks < 8 ? nranks : 8;
  reqs.signals = gin_epn_nsignals(&g);
  reqs.counters = 1;
  reqs.barriers = 1;
  GIN_CHECK_GOTO(gin_devcomm_create(comm, &reqs, &ep->dc), res, deregister);
  size_t words = gin_epn_scratch_words(&g);
  GIN_CHECK_GOTO(gin_mem_alloc(words * 8, (void **)&ep->scratch), res,
                 destroy_dc);
  GIN_CHECK_GOTO(gin_mem_set(ep->scratch, 0, words * 8), res, free_scratch);
  GIN_INFO(INIT,
           "rank %d: EP normal buffer: %d experts (%d local), hidden %d, "
           "top-%d, %d channels (%d usable here) of %d rows, window %zu "
           "bytes (%s)",
           rank, g.E, g.L, g.H, g.K, g.C,
           g.C < ep->max_channels ? g.C : ep->max_channels, g.S, g.win_bytes,
           g.staged ? "rows to proxied peers staged"
                    : "every peer direct: no staging");
  *ep_out = ep;
  return GIN_SUCCESS;

free_scratch:
  gin_mem_free(ep->scratch);
destroy_dc:
  gin_devcomm_destroy(comm, &ep->dc);
deregister:
  gin_window_deregister(comm, ep->win);
free_mem:
  if (ep->mem) gin_mem_free(ep->mem);
  free(ep);
  return res;
}

static void args_make(gin_epn_t ep, gin_epn_args_t *a);

gin_result_t gin_epn_destroy(gin_epn_t ep) {
  GIN_ARG_CHECK(ep, "gin_epn_destroy: ep is NULL");
  gin_comm_t comm = ep->comm;
  /* Signals no wait consumes (a call's last credits, the notes' acks) may
   * still be on their way, through a proxy, into this window: a barrier
   * of every rank lands them before it goes. An aborted communicator
   * skips it (the buffer is freed locally). */
  gin_result_t res = gin_comm_get_async_error(comm);
  if (res == GIN_SUCCESS) {
    gin_epn_args_t a;
    args_make(ep, &a);
    res = gin_epn_barrier_sync(&a);
    if (res == GIN_SUCCESS) res = gin_comm_get_async_error(comm);
  }
  gin_result_t r2 = gin_devcomm_destroy(comm, &ep->dc);
  if (res == GIN_SUCCESS) res = r2;
  r2 = gin_window_deregister(comm, ep->win);
  if (res == GIN_SUCCESS) res = r2;
  gin_mem_free(ep->scratch);
  gin_mem_free(ep->mem);
  free(ep);
  return res;
}

static void args_make(gin_epn_t ep, gin_epn_args_t *a) {
  memset(a, 0, sizeof *a);
  a->dc = ep->dc;
  a->win = ep->win;
  a->g = ep->g;
  a->base = (char *)ep->mem;
  a->scratch = ep->scratch;
}

gin_result_t gin_epn_layout(gin_epn_t ep, const void *topk_idx, int idx64,
                            int num_tokens, int num_topk, int32_t *per_rank,
                            int32_t *per_expert, uint8_t *in_rank,
                            void *stream) {
  GIN_ARG_CHECK(ep, "gin_epn_layout: ep is NULL");
  GIN_ARG_CHECK(num_tokens >= 0 && num_tokens <= GIN_EPN_MAX_TOKENS,
                "gin_epn_layout: num_tokens %d outside [0, 2^22]", num_tokens);
  GIN_ARG_CHECK(num_topk >= 1 && num_topk <= 32,
                "gin_epn_layout: num_topk %d outside [1, 32]", num_topk);
  GIN_ARG_CHECK(per_rank && per_expert, "gin_epn_layout: per_rank or "
                                        "per_expert is NULL");
  GIN_ARG_CHECK(num_tokens == 0 || (topk_idx && in_rank),
                "gin_epn_layout: topk_idx or in_rank is NULL with %d tokens",
                num_tokens);
  gin_epn_args_t a;
  args_make(ep, &a);
  a.T = num_tokens;
  a.K = num_topk;
  a.idx64 = idx64 != 0;
  a.topk = topk_idx;
  a.per_rank = per_rank;
  a.per_expert_out = per_expert;
  a.in_rank_out = in_rank;
  return gin_epn_launch_layout(&a, stream);
}

/* The channels a call may use. */
static gin_result_t channels_check(gin_epn_t ep, int channels, const char *fn) {
  GIN_ARG_CHECK(channels >= 1 && channels <= ep->g.C,
                "%s: channels %d outside [1, %d] (the buffer's channels)", fn,
                channels, ep->g.C);
  GIN_ARG_CHECK(channels <= ep->max_channels,
                "%s: channels %d: the device holds the dispatch and combine "
                "blocks of %d channels of every rank sharing it at once, "
                "which they need (senders wait for receivers)",
                fn, channels, ep->max_channels);
  return GIN_SUCCESS;
}

gin_result_t gin_epn_notify(gin_epn_t ep, const uint8_t *in_rank,
                            const int32_t *per_expert, int num_tokens,
                            int channels, gin_epn_handle_t *h,
                            int32_t *recv_counts, void *stream) {
  GIN_ARG_CHECK(ep, "gin_epn_notify: ep is NULL");
  GIN_ARG_CHECK(h, "gin_epn_notify: h is NULL");
  GIN_ARG_CHECK(num_tokens >= 0 && num_tokens <= GIN_EPN_MAX_TOKENS,
                "gin_epn_notify: num_tokens %d outside [0, 2^22]", num_tokens);
  GIN_CHECK(channels_check(ep, channels, "gin_epn_notify"));
  GIN_ARG_CHECK(per_expert && recv_counts && (in_rank || num_tokens == 0),
                "gin_epn_notify: in_rank, per_expert or recv_counts is NULL");
  GIN_ARG_CHECK(h->send_head || num_tokens == 0,
                "gin_epn_notify: the handle's send_head is NULL");
  GIN_ARG_CHECK(h->chan_prefix && h->rank_prefix && h->recv_chan_prefix,
                "gin_epn_notify: the handle's chan_prefix, rank_prefix or "
                "recv_chan_prefix is NULL");
  h->num_tokens = num_tokens;
  h->channels = channels;
  h->in_rank = in_rank;
  gin_epn_args_t a;
  args_make(ep, &a);
  a.T = num_tokens;
  a.C = channels;
  a.h = *h;
  a.per_expert = per_expert;
  a.recv_counts = recv_counts;
  return gin_epn_launch_notify(&a, stream);
}

/* A handle good for a dispatch or combine of this buffer. */
static gin_result_t handle_check(gin_epn_t ep, const gin_epn_handle_t *h,
                                 const char *fn) {
  GIN_ARG_CHECK(h, "%s: handle is NULL", fn);
  GIN_CHECK(channels_check(ep, h->channels, fn));
  GIN_ARG_CHECK(h->num_tokens >= 0 && h->capacity >= 0,
                "%s: the handle's num_tokens %d or capacity %d is negative "
                "(not filled by gin_epn_notify?)",
                fn, h->num_tokens, h->capacity);
  GIN_ARG_CHECK((h->in_rank && h->send_head) || h->num_tokens == 0,
                "%s: the handle's in_rank or send_head is NULL", fn);
  GIN_ARG_CHECK(h->chan_prefix && h->rank_prefix && h->recv_chan_prefix,
                "%s: the handle's chan_prefix, rank_prefix or "
                "recv_chan_prefix is NULL",
                fn);
  GIN_ARG_CHECK(h->recv_src_idx || h->capacity == 0,
                "%s: the handle's recv_src_idx is NULL", fn);
  return GIN_SUCCESS;
}

static gin_result_t chunk_check(gin_epn_t ep, int chunk, const char *fn) {
  GIN_ARG_CHECK(chunk >= 1 && chunk <= ep->g.S,
                "%s: chunk %d outside [1, %d] (the buffer's ring_tokens: a "
                "chunk must fit a ring)",
                fn, chunk, ep->g.S);
  return GIN_SUCCESS;
}

gin_result_t gin_epn_dispatch(gin_epn_t ep, const gin_epn_dispatch_args_t *d,
                              const gin_epn_handle_t *h, void *stream) {
  static const char *fn = "gin_epn_dispatch";
  GIN_ARG_CHECK(ep, "%s: ep is NULL", fn);
  GIN_ARG_CHECK(d, "%s: args is NULL", fn);
  GIN_CHECK(handle_check(ep, h, fn));
  GIN_CHECK(chunk_check(ep, d->chunk, fn));
  int T = h->num_tokens, fp8 = d->fp8;
  GIN_ARG_CHECK(fp8 == 0 || fp8 == 1, "%s: fp8 is %d, not 0 or 1", fn, fp8);
  GIN_ARG_CHECK(!fp8 || d->scales || T == 0, "%s: fp8 rows without scales", fn);
  GIN_ARG_CHECK(fp8 || !d->scales, "%s: scales given for bf16 rows (fp8 0)",
                fn);
  GIN_ARG_CHECK(d->x || T == 0, "%s: x is NULL", fn);
  GIN_ARG_CHECK(!fp8 || ep->g.H % GIN_EP_FP8_GROUP == 0,
                "%s: fp8 rows need hidden %d to be a multiple of %d", fn,
                ep->g.H, GIN_EP_FP8_GROUP);
  GIN_ARG_CHECK(d->recv_x || h->capacity == 0, "%s: recv_x is NULL", fn);
  GIN_ARG_CHECK(!fp8 || d->recv_scales || h->capacity == 0,
                "%s: fp8 rows need recv_scales", fn);
  int K = d->num_topk;
  GIN_ARG_CHECK(K >= 0 && K <= ep->g.K,
                "%s: num_topk %d outside [0, %d] (the buffer's topk; 0: no "
                "top-k travels)",
                fn, K, ep->g.K);
  if (K) {
    GIN_ARG_CHECK((d->topk_idx && d->topk_weights) || T == 0,
                  "%s: num_topk %d, but topk_idx or topk_weights is NULL", fn,
                  K);
    GIN_ARG_CHECK((d->recv_topk_idx && d->recv_topk_weights) ||
                      h->capacity == 0,
                  "%s: num_topk %d, but recv_topk_idx or recv_topk_weights is "
                  "NULL",
                  fn, K);
  } else {
    GIN_ARG_CHECK(!d->topk_idx && !d->topk_weights && !d->recv_topk_idx &&
                      !d->recv_topk_weights,
                  "%s: top-k arrays given with num_topk 0", fn);
  }
  gin_epn_args_t a;
  args_make(ep, &a);
  a.T = T;
  a.chunk = d->chunk;
  a.K = K;
  a.idx64 = d->idx64 != 0;
  a.fp8 = fp8;
  a.worst = d->worst != 0;
  a.cap = h->capacity;
  a.sst = d->scale_stride_t;
  a.ssg = d->scale_stride_g;
  a.h = *h;
  a.x = d->x;
  a.scales = d->scales;
  a.topk = d->topk_idx;
  a.weights = d->topk_weights;
  a.recv_x = d->recv_x;
  a.recv_scales = d->recv_scales;
  a.recv_idx = K ? d->recv_topk_idx : NULL;
  a.recv_w = K ? d->recv_topk_weights : NULL;
  return gin_epn_launch_dispatch(&a, stream);
}

gin_result_t gin_epn_combine(gin_epn_t ep, const gin_epn_combine_args_t *c,
                             const gin_epn_handle_t *h, void *stream) {
  static const char *fn = "gin_epn_combine";
  GIN_ARG_CHECK(ep, "%s: ep is NULL", fn);
  GIN_ARG_CHECK(c, "%s: args is NULL", fn);
  GIN_CHECK(handle_check(ep, h, fn));
  GIN_CHECK(chunk_check(ep, c->chunk, fn));
  GIN_ARG_CHECK(c->x || h->capacity == 0, "%s: x is NULL", fn);
  GIN_ARG_CHECK(c->out || h->num_tokens == 0, "%s: out is NULL", fn);
  int K = c->num_topk;
  GIN_ARG_CHECK(K >= 0 && K <= ep->g.K,
                "%s: num_topk %d outside [0, %d] (the buffer's topk; 0: no "
                "weights travel)",
                fn, K, ep->g.K);
  GIN_ARG_CHECK(!K || ((c->topk_weights || h->capacity == 0) &&
                       (c->out_weights || h->num_tokens == 0)),
                "%s: num_topk %d, but topk_weights or out_weights is NULL", fn,
                K);
  GIN_ARG_CHECK(K || (!c->topk_weights && !c->out_weights),
                "%s: topk_weights or out_weights given with num_topk 0", fn);
  gin_epn_args_t a;
  args_make(ep, &a);
  a.T = h->num_tokens;
  a.chunk = c->chunk;
  a.K = K;
  a.h = *h;
  a.x = c->x;
  a.weights = c->topk_weights;
  a.bias0 = c->bias[0];
  a.bias1 = c->bias[1];
  a.out = c->out;
  a.out_w = K ? c->out_weights : NULL;
  return gin_epn_launch_combine(&a, stream);
}
