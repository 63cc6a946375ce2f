/*
 * EP buffers, host side: configuration checks (local and across ranks),
 * the window, device communicator and output arrays of a buffer, and the
 * phases of dispatch and combine, which only launch kernels on the
 * caller's stream.
 */
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ep/ep_kernels.h"
#include "gin/ep_format.h"

struct gin_ep {
  gin_comm_t comm;
  gin_ep_config_t cfg;
  gin_ep_geom_t g;
  void *mem;
  gin_window_t win;
  gin_devcomm_t dc;
  gin_ep_recv_t r;
  int32_t *src_k;
  void *outputs;     /* one allocation behind r's arrays and src_k */
  uint64_t *scratch; /* [E + 1 + L] dispatch counters, zero between
                        launches */
  int near;          /* ranks on this rank's device, itself included */
  int pull;          /* GIN_EP_PULL when created */
  int set_next;      /* buffer set of the next dispatch */
  int set_cur;       /* buffer set of the last completed dispatch, -1 none */
  int last_T;
  int dispatch_sent, combine_sent; /* send phase issued, receive not yet */
  int combines;                    /* combines of the last dispatch */
  int fenced; /* a barrier ran since the last combine (combine_fence) */
  gin_ep_dispatch_opts_t sent; /* the issued send phase's options */
};

GIN_PARAM_INT(param_ep_pull, "EP_PULL", 1,
              "1: an EP dispatch receiver copies each row straight from the "
              "sender's window where it is mapped (one copy); 0: senders put "
              "every row into the receiver's window and it is copied from "
              "there (two)");

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* Checks a configuration for nranks ranks; fills the geometry. */
static gin_result_t geom_make(const gin_ep_config_t *c, int nranks, int me,
                              gin_ep_geom_t *g) {
  GIN_ARG_CHECK(c, "gin_ep: configuration is NULL");
  GIN_ARG_CHECK(c->max_tokens >= 1 && c->max_tokens <= (1 << 20),
                "gin_ep: max_tokens %d outside [1, 2^20]", c->max_tokens);
  GIN_ARG_CHECK(c->hidden >= 1 && c->hidden <= (1 << 20),
                "gin_ep: hidden %d outside [1, 2^20]", c->hidden);
  GIN_ARG_CHECK(c->topk >= 1 && c->topk <= 32,
                "gin_ep: topk %d outside [1, 32]", c->topk);
  GIN_ARG_CHECK(c->fp8 == 0 || c->fp8 == 1 || c->fp8 == GIN_EP_FP8_ANY,
                "gin_ep: fp8 is %d, not 0, 1 or GIN_EP_FP8_ANY (%d)", c->fp8,
                GIN_EP_FP8_ANY);
  GIN_ARG_CHECK(!c->fp8 || c->hidden % GIN_EP_FP8_GROUP == 0,
                "gin_ep: hidden %d is not a multiple of %d, which fp8 "
                "dispatch needs (one scale per %d channels)",
                c->hidden, GIN_EP_FP8_GROUP, GIN_EP_FP8_GROUP);
  GIN_ARG_CHECK(c->num_experts >= nranks && c->num_experts % nranks == 0,
                "gin_ep: num_experts %d is not a positive multiple of the %d "
                "ranks",
                c->num_experts, nranks);
  memset(g, 0, sizeof *g);
  g->R = nranks;
  g->E = c->num_experts;
  g->L = c->num_experts / nranks;
  g->M = c->max_tokens;
  g->K = c->topk;
  g->H = c->hidden;
  g->fp8 = c->fp8;
  g->me = me;
  /* With GIN_EP_FP8_ANY rows are sized for bf16, which holds an fp8 row
   * and its scales (H + H / 32 bytes). */
  size_t payload = c->fp8 == 1
                       ? (size_t)g->H + (size_t)(g->H / GIN_EP_FP8_GROUP) * 4
                       : (size_t)g->H * 2;
  g->msg = align_up(GIN_EP_HEADER + payload, 16);
  size_t off = 0;
  g->off_send = off;
  off = align_up(off + 2 * (size_t)g->M * g->msg, 256);
  g->off_recv = off;
  off = align_up(off + 2 * (size_t)g->L * g->R * g->M * g->msg, 256);
  g->off_csend = off;
  off = align_up(off + (size_t)g->L * g->R * g->M * g->H * 2, 256);
  g->off_crecv = off;
  off = align_up(off + 2 * (size_t)g->M * g->K * g->H * 2, 256);
  g->off_where = off;
  off = align_up(off + 2 * (size_t)g->M * g->K * 8, 256);
  g->off_hdr = off;
  off = align_up(off + 2 * (size_t)g->L * g->R * g->M * 8, 256);
  g->win_bytes = off;
  GIN_ARG_CHECK(gin_ep_nsignals(g) <= (1 << 20),
                "gin_ep: 2 x (%d local experts x %d ranks + %d max_tokens) "
                "signals are more than 2^20",
                g->L, g->R, g->M);
  return GIN_SUCCESS;
}

/* Bytes of the output arrays (x, scales, src_rank, src_token, src_k,
 * count, layout) and the dispatch's scratch counters, each 256-aligned. */
#define EP_NARRAYS 8
static size_t outputs_bytes(const gin_ep_geom_t *g, size_t *offs) {
  size_t slots = (size_t)g->L * g->R * g->M, off = 0;
  size_t sizes[EP_NARRAYS] = {
      slots * (size_t)g->H * (g->fp8 == 1 ? 1 : 2),
      g->fp8 ? slots * (size_t)(g->H / GIN_EP_FP8_GROUP) * 4 : 0,
      slots * 4,
      slots * 4,
      slots * 4,
      (size_t)g->L * 4,
      (size_t)g->L * g->R * 2 * 4,
      ((size_t)g->E + 1 + (size_t)g->L) * 8};
  for (int i = 0; i < EP_NARRAYS; i++) {
    offs[i] = off;
    off = align_up(off + sizes[i], 256);
  }
  return off;
}

gin_result_t gin_ep_size_hint(const gin_ep_config_t *cfg, int nranks,
                              size_t *bytes_out) {
  GIN_ARG_CHECK(bytes_out, "gin_ep_size_hint: bytes_out is NULL");
  GIN_ARG_CHECK(nranks >= 1, "gin_ep_size_hint: nranks %d < 1", nranks);
  gin_ep_geom_t g;
  GIN_CHECK(geom_make(cfg, nranks, 0, &g));
  size_t offs[EP_NARRAYS];
  *bytes_out = g.win_bytes + outputs_bytes(&g, offs);
  return GIN_SUCCESS;
}

/* This rank in its communicator, through the public API (EP is its
 * client): rank, size, and the ranks on this rank's device. */
typedef struct ep_who {
  int rank, nranks, near;
} ep_who_t;

/* Every rank's configuration must be this rank's (collective). */
static gin_result_t config_agree(gin_comm_t comm, const ep_who_t *who,
                                 const gin_ep_config_t *mine, int ok) {
  int32_t v[6] = {mine->max_tokens,  mine->hidden, mine->topk,
                  mine->num_experts, mine->fp8,    ok};
  int n = who->nranks;
  int32_t *all = (int32_t *)calloc((size_t)n, sizeof v);
  if (!all) return GIN_ERROR(GIN_ERR_NOMEM, "gin_ep_create");
  gin_result_t res = gin_comm_allgather(comm, v, all, sizeof v);
  static const char *const names[5] = {"max_tokens", "hidden", "topk",
                                       "num_experts", "fp8"};
  for (int r = 0; r < n && res == GIN_SUCCESS; r++) {
    const int32_t *o = all + (size_t)r * 6;
    if (!o[5]) {
      res = GIN_ERROR(GIN_ERR_INVALID,
                      "gin_ep_create: rank %d's configuration is invalid", r);
      break;
    }
    for (int i = 0; i < 5; i++)
      if (o[i] != v[i]) {
        res = GIN_ERROR(GIN_ERR_INVALID,
                        "gin_ep_create: %s is %d on rank %d but %d on rank %d "
                        "(every rank must pass the same configuration)",
                        names[i], o[i], r, v[i], who->rank);
        break;
      }
  }
  free(all);
  return res;
}

/* This rank's own checks of gin_ep_create's arguments. */
static gin_result_t create_args(const ep_who_t *who, const gin_ep_config_t *cfg,
                                const gin_ep_t *ep_out, gin_ep_geom_t *g) {
  GIN_ARG_CHECK(ep_out, "gin_ep_create: ep_out is NULL");
  return geom_make(cfg, who->nranks, who->rank, g);
}

gin_result_t gin_ep_create(gin_comm_t comm, const gin_ep_config_t *cfg,
                           gin_ep_t *ep_out) {
  GIN_ARG_CHECK(comm, "gin_ep_create: comm is NULL");
  ep_who_t who;
  if (gin_comm_rank(comm, &who.rank) != GIN_SUCCESS ||
      gin_comm_size(comm, &who.nranks) != GIN_SUCCESS ||
      gin_comm_device_ranks(comm, &who.near) != GIN_SUCCESS)
    return GIN_ERROR(GIN_ERR_STATE,
                     "gin_ep_create: communicator %p is not live (destroyed "
                     "already?)",
                     (void *)comm);
  gin_ep_geom_t g;
  gin_ep_config_t zero;
  memset(&zero, 0, sizeof zero);
  gin_result_t local = create_args(&who, cfg, ep_out, &g);
  /* A rank with bad arguments still takes part, so all fail at once. */
  gin_result_t res =
      config_agree(comm, &who, cfg ? cfg : &zero, local == GIN_SUCCESS);
  if (local != GIN_SUCCESS)
    return create_args(&who, cfg, ep_out, &g); /* its message */
  GIN_CHECK(res);

  gin_ep_t ep = (gin_ep_t)calloc(1, sizeof *ep);
  if (!ep) return GIN_ERROR(GIN_ERR_NOMEM, "gin_ep_create");
  ep->comm = comm;
  ep->cfg = *cfg;
  ep->g = g;
  ep->set_cur = -1;
  ep->pull = param_ep_pull() != 0;
  const char *why = "";
  res = gin_ep_kernels_load(&why) == GIN_SUCCESS
            ? gin_mem_alloc(g.win_bytes, &ep->mem)
            : GIN_ERROR(GIN_ERR_CUDA,
                        "gin_ep_create: loading the EP kernels: %s", why);
  /* Combine's `where` words start (and are left by each receive) zero.
   * Zeroed before the registration, after which peers may write into the
   * window (a first dispatch's headers can come before this rank's create
   * returns). */
  if (res == GIN_SUCCESS)
    res =
        gin_mem_set((char *)ep->mem + g.off_where, 0, g.off_hdr - g.off_where);
  /* Collective from here: a rank that failed to allocate registers NULL,
   * which fails on every rank. */
  gin_result_t wres = gin_window_register(
      comm, res == GIN_SUCCESS ? ep->mem : NULL, g.win_bytes, &ep->win);
  if (res == GIN_SUCCESS) res = wres;
  if (res != GIN_SUCCESS) goto free_mem;
  gin_devcomm_reqs_t reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.contexts = who.nranks < 8 ? who.nranks : 8;
  reqs.signals = (int)gin_ep_nsignals(&g); /* <= 2^20, checked */
  reqs.counters = 1;
  reqs.barriers = 1;
  GIN_CHECK_GOTO(gin_devcomm_create(comm, &reqs, &ep->dc), res, deregister);

  size_t offs[EP_NARRAYS], bytes = outputs_bytes(&g, offs);
  GIN_CHECK_GOTO(gin_mem_alloc(bytes, &ep->outputs), res, destroy_dc);
  char *o = (char *)ep->outputs;
  ep->r.x = o + offs[0];
  /* The scales of fp8 dispatches (a bf16 one hands out NULL: dispatch_opts
   * sets r.scales and r.fp8 per call). */
  ep->r.scales = g.fp8 ? (float *)(o + offs[1]) : NULL;
  ep->r.src_rank = (int32_t *)(o + offs[2]);
  ep->r.src_token = (int32_t *)(o + offs[3]);
  ep->src_k = (int32_t *)(o + offs[4]);
  ep->r.count = (int32_t *)(o + offs[5]);
  ep->r.layout = (int32_t *)(o + offs[6]);
  ep->scratch = (uint64_t *)(o + offs[7]);
  GIN_CHECK_GOTO(gin_mem_set(ep->scratch, 0, ((size_t)g.E + 1 + g.L) * 8), res,
                 free_outputs);
  ep->near = who.near;
  ep->r.local_experts = g.L;
  ep->r.ranks = g.R;
  ep->r.slots_per_expert = g.R * g.M;
  GIN_INFO(INIT,
           "rank %d: EP buffer: %d experts (%d local), %d tokens x %d, hidden "
           "%d, %s, window %zu bytes",
           who.rank, g.E, g.L, g.M, g.K, g.H,
           g.fp8 == GIN_EP_FP8_ANY ? "fp8 or bf16"
           : g.fp8                 ? "fp8"
                                   : "bf16",
           g.win_bytes);
  *ep_out = ep;
  return GIN_SUCCESS;

free_outputs:
  gin_mem_free(ep->outputs);
destroy_dc:
  gin_devcomm_destroy(comm, &ep->dc);
deregister:
  gin_window_deregister(comm, ep->win);
free_mem:
  if (ep->mem) gin_mem_free(ep->mem);
  free(ep);
  return res;
}

gin_result_t gin_ep_destroy(gin_ep_t ep) {
  GIN_ARG_CHECK(ep, "gin_ep_destroy: ep is NULL");
  gin_comm_t comm = ep->comm;
  gin_result_t res = gin_devcomm_destroy(comm, &ep->dc);
  gin_result_t r2 = gin_window_deregister(comm, ep->win);
  if (res == GIN_SUCCESS) res = r2;
  gin_mem_free(ep->outputs);
  gin_mem_free(ep->mem);
  free(ep);
  return res;
}

static void args_make(gin_ep_t ep, int set, int T, gin_ep_args_t *a) {
  memset(a, 0, sizeof *a);
  a->dc = ep->dc;
  a->win = ep->win;
  a->g = ep->g;
  a->set = set;
  a->T = T;
  a->base = (char *)ep->win.local;
  a->r = ep->r;
  a->src_k = ep->src_k;
  a->scratch = ep->scratch;
  a->near = ep->near;
  a->pull = ep->pull;
}

/* Checks a dispatch's options against the buffer; sets a's. */
static gin_result_t dispatch_opts(gin_ep_t ep, const gin_ep_dispatch_opts_t *o,
                                  gin_ep_args_t *a) {
  int cfg = ep->g.fp8;
  GIN_ARG_CHECK(o->payload >= GIN_EP_PAYLOAD_BUFFER &&
                    o->payload <= GIN_EP_PAYLOAD_FP8,
                "gin_ep_dispatch: payload %d is not GIN_EP_PAYLOAD_BUFFER, "
                "_BF16 or _FP8",
                o->payload);
  GIN_ARG_CHECK(o->payload != GIN_EP_PAYLOAD_BUFFER || cfg != GIN_EP_FP8_ANY,
                "gin_ep_dispatch: the buffer was created with fp8 = "
                "GIN_EP_FP8_ANY: the payload must be GIN_EP_PAYLOAD_BF16 or "
                "GIN_EP_PAYLOAD_FP8");
  int fp8 = o->payload == GIN_EP_PAYLOAD_BUFFER
                ? cfg
                : o->payload == GIN_EP_PAYLOAD_FP8;
  GIN_ARG_CHECK(cfg == GIN_EP_FP8_ANY || fp8 == cfg,
                "gin_ep_dispatch: a %s payload, but the buffer was created "
                "for %s rows only (fp8 = %d; GIN_EP_FP8_ANY lets each "
                "dispatch choose)",
                fp8 ? "fp8" : "bf16", cfg ? "fp8" : "bf16", cfg);
  GIN_ARG_CHECK(o->round_scale == 0 || o->round_scale == 1,
                "gin_ep_dispatch: round_scale %d is not 0 or 1",
                o->round_scale);
  GIN_ARG_CHECK(!o->round_scale || fp8,
                "gin_ep_dispatch: round_scale needs an fp8 payload");
  GIN_ARG_CHECK(o->scale_layout >= GIN_EP_SCALES_ROWS &&
                    o->scale_layout <= GIN_EP_SCALES_UE8M0,
                "gin_ep_dispatch: scale_layout %d is not GIN_EP_SCALES_ROWS, "
                "_COLS or _UE8M0",
                o->scale_layout);
  GIN_ARG_CHECK(o->scale_layout == GIN_EP_SCALES_ROWS || fp8,
                "gin_ep_dispatch: scale_layout %d needs an fp8 payload",
                o->scale_layout);
  GIN_ARG_CHECK(o->scale_layout != GIN_EP_SCALES_UE8M0 || o->round_scale,
                "gin_ep_dispatch: GIN_EP_SCALES_UE8M0 needs round_scale (a "
                "UE8M0 scale is a power of two)");
  GIN_ARG_CHECK(o->layout == GIN_EP_LAYOUT_PAIRS ||
                    o->layout == GIN_EP_LAYOUT_PACKED,
                "gin_ep_dispatch: layout %d is not GIN_EP_LAYOUT_PAIRS or "
                "GIN_EP_LAYOUT_PACKED",
                o->layout);
  GIN_ARG_CHECK(o->idx64 == 0 || o->idx64 == 1,
                "gin_ep_dispatch: idx64 %d is not 0 or 1", o->idx64);
  a->fp8 = fp8;
  a->pow2 = o->round_scale;
  a->scale_layout = o->scale_layout;
  a->packed = o->layout == GIN_EP_LAYOUT_PACKED;
  a->idx64 = o->idx64;
  a->stats = o->recv_stats;
  a->r.fp8 = fp8;
  a->r.scales = fp8 ? ep->r.scales : NULL;
  a->r.scale_layout = o->scale_layout;
  return GIN_SUCCESS;
}

/* The first option in which a receive phase's differ from its send's. */
static const char *opts_differ(const gin_ep_dispatch_opts_t *a,
                               const gin_ep_dispatch_opts_t *b) {
  return a->payload != b->payload             ? "payload"
         : a->round_scale != b->round_scale   ? "round_scale"
         : a->scale_layout != b->scale_layout ? "scale_layout"
         : a->layout != b->layout             ? "layout"
         : a->idx64 != b->idx64               ? "idx64"
         : a->recv_stats != b->recv_stats     ? "recv_stats"
                                              : NULL;
}

gin_result_t gin_ep_dispatch_ex(gin_ep_t ep, const uint16_t *x,
                                const void *topk_idx, int num_tokens,
                                const gin_ep_dispatch_opts_t *opts,
                                gin_ep_recv_t *recv, void *stream, int phases) {
  GIN_ARG_CHECK(ep, "gin_ep_dispatch: ep is NULL");
  GIN_ARG_CHECK(phases >= GIN_EP_SEND && phases <= GIN_EP_BOTH,
                "gin_ep_dispatch: phases %d is not GIN_EP_SEND, GIN_EP_RECV "
                "or GIN_EP_BOTH",
                phases);
  GIN_ARG_CHECK(num_tokens >= 0 && num_tokens <= ep->g.M,
                "gin_ep_dispatch: %d tokens, the buffer holds at most %d",
                num_tokens, ep->g.M);
  GIN_ARG_CHECK((x && topk_idx) || num_tokens == 0 || !(phases & GIN_EP_SEND),
                "gin_ep_dispatch: %s is NULL", x ? "topk_idx" : "x");
  GIN_ARG_CHECK(!(phases & GIN_EP_SEND) || !ep->dispatch_sent,
                "gin_ep_dispatch: the previous send phase was not received "
                "yet (call with GIN_EP_RECV first)");
  GIN_ARG_CHECK(!(phases == GIN_EP_RECV) || ep->dispatch_sent,
                "gin_ep_dispatch: GIN_EP_RECV without a send phase before");
  GIN_ARG_CHECK(!ep->combine_sent,
                "gin_ep_dispatch: a combine's receive phase is outstanding");
  gin_ep_dispatch_opts_t o;
  if (opts)
    o = *opts;
  else
    memset(&o, 0, sizeof o);
  const char *differs = phases == GIN_EP_RECV ? opts_differ(&o, &ep->sent) : 0;
  GIN_ARG_CHECK(!differs,
                "gin_ep_dispatch: the receive phase's %s differs from its send "
                "phase's (pass the same options to both)",
                differs);
  gin_ep_args_t a;
  args_make(ep, ep->set_next, num_tokens, &a);
  GIN_CHECK(dispatch_opts(ep, &o, &a));
  a.x = x;
  a.topk = topk_idx;
  if (phases & GIN_EP_SEND) {
    GIN_CHECK(gin_ep_launch_dispatch_send(&a, stream));
    ep->dispatch_sent = 1;
    ep->sent = o;
    ep->last_T = num_tokens;
  }
  if (phases & GIN_EP_RECV) {
    GIN_CHECK(gin_ep_launch_dispatch_recv(&a, stream));
    ep->dispatch_sent = 0;
    ep->combines = 0;
    ep->fenced = 0;
    ep->set_cur = ep->set_next;
    ep->set_next ^= 1;
  }
  if (recv) *recv = a.r;
  return GIN_SUCCESS;
}

gin_result_t gin_ep_dispatch(gin_ep_t ep, const uint16_t *x,
                             const int32_t *topk_idx, int num_tokens,
                             gin_ep_recv_t *recv, void *stream, int phases) {
  return gin_ep_dispatch_ex(ep, x, topk_idx, num_tokens, NULL, recv, stream,
                            phases);
}

gin_result_t gin_ep_combine_ex(gin_ep_t ep, const uint16_t *y,
                               const void *topk_idx, const float *topk_weights,
                               int num_tokens,
                               const gin_ep_combine_opts_t *opts, uint16_t *out,
                               void *stream, int phases) {
  GIN_ARG_CHECK(ep, "gin_ep_combine: ep is NULL");
  GIN_ARG_CHECK(phases >= GIN_EP_SEND && phases <= GIN_EP_BOTH,
                "gin_ep_combine: phases %d is not GIN_EP_SEND, GIN_EP_RECV "
                "or GIN_EP_BOTH",
                phases);
  GIN_ARG_CHECK(ep->set_cur >= 0 && !ep->dispatch_sent,
                "gin_ep_combine: no completed dispatch to combine");
  GIN_ARG_CHECK(!opts || opts->idx64 == 0 || opts->idx64 == 1,
                "gin_ep_combine: idx64 %d is not 0 or 1", opts->idx64);
  GIN_ARG_CHECK(num_tokens == ep->last_T,
                "gin_ep_combine: %d tokens, but the dispatch had %d",
                num_tokens, ep->last_T);
  GIN_ARG_CHECK(!(phases & GIN_EP_SEND) || y,
                "gin_ep_combine: y (the experts' outputs) is NULL");
  GIN_ARG_CHECK(!(phases & GIN_EP_RECV) || num_tokens == 0 ||
                    (topk_idx && topk_weights && out),
                "gin_ep_combine: %s is NULL",
                !topk_idx       ? "topk_idx"
                : !topk_weights ? "topk_weights"
                                : "out");
  GIN_ARG_CHECK(!(phases & GIN_EP_SEND) || !ep->combine_sent,
                "gin_ep_combine: the previous send phase was not received yet");
  GIN_ARG_CHECK(!(phases == GIN_EP_RECV) || ep->combine_sent,
                "gin_ep_combine: GIN_EP_RECV without a send phase before");
  /* y in the combine buffer: only at its start (rows are found by slot;
   * staging a row would copy it onto another). */
  uintptr_t cb = (uintptr_t)ep->mem + ep->g.off_csend, yc = (uintptr_t)y;
  uintptr_t cb_bytes = (uintptr_t)ep->g.L * ep->g.R * ep->g.M * ep->g.H * 2;
  GIN_ARG_CHECK(!(phases & GIN_EP_SEND) || yc == cb || yc + cb_bytes <= cb ||
                    yc >= cb + cb_bytes,
                "gin_ep_combine: y overlaps the combine buffer but does not "
                "start where it does; pass gin_ep_combine_buffer's pointer "
                "itself, or memory outside it");
  gin_ep_args_t a;
  args_make(ep, ep->set_cur, num_tokens, &a);
  a.y = y;
  a.zc = yc == cb;
  a.topk = topk_idx;
  a.idx64 = opts ? opts->idx64 : 0;
  a.weights = topk_weights;
  a.out = out;
  if (phases & GIN_EP_SEND) {
    /* A dispatch combined again: every rank's last combine receive must
     * be over before rows of this one arrive anywhere. */
    if (ep->combines > 0 && !ep->fenced)
      GIN_CHECK(gin_ep_launch_barrier(&a, stream));
    GIN_CHECK(gin_ep_launch_combine_send(&a, stream));
    ep->combine_sent = 1;
    ep->combines++;
    ep->fenced = 0;
  }
  if (phases & GIN_EP_RECV) {
    GIN_CHECK(gin_ep_launch_combine_recv(&a, stream));
    ep->combine_sent = 0;
  }
  return GIN_SUCCESS;
}

gin_result_t gin_ep_combine(gin_ep_t ep, const uint16_t *y,
                            const int32_t *topk_idx, const float *topk_weights,
                            int num_tokens, uint16_t *out, void *stream,
                            int phases) {
  return gin_ep_combine_ex(ep, y, topk_idx, topk_weights, num_tokens, NULL, out,
                           stream, phases);
}

gin_result_t gin_ep_combine_fence(gin_ep_t ep, void *stream) {
  GIN_ARG_CHECK(ep, "gin_ep_combine_fence: ep is NULL");
  GIN_ARG_CHECK(!ep->combine_sent,
                "gin_ep_combine_fence: a combine's receive phase is "
                "outstanding (call gin_ep_combine with GIN_EP_RECV first)");
  if (ep->combines == 0 || ep->fenced) return GIN_SUCCESS;
  gin_ep_args_t a;
  args_make(ep, ep->set_cur, 0, &a);
  GIN_CHECK(gin_ep_launch_barrier(&a, stream));
  ep->fenced = 1;
  return GIN_SUCCESS;
}

gin_result_t gin_ep_combine_buffer(gin_ep_t ep, uint16_t **y_out) {
  GIN_ARG_CHECK(ep, "gin_ep_combine_buffer: ep is NULL");
  GIN_ARG_CHECK(y_out, "gin_ep_combine_buffer: y_out is NULL");
  *y_out = (uint16_t *)((char *)ep->mem + ep->g.off_csend);
  return GIN_SUCCESS;
}

float gin_bf16_to_float(uint16_t v) { return gin_ep_bf16_to_float(v); }
uint16_t gin_float_to_bf16(float f) { return gin_ep_float_to_bf16(f); }
float gin_fp8e4m3_to_float(uint8_t v) { return gin_ep_fp8_to_float(v); }
uint8_t gin_float_to_fp8e4m3(float f) { return gin_ep_float_to_fp8(f); }
