/*
 * Public host API, bad arguments: a table of cases, each a call of one
 * public function with one bad argument class (null, range, state,
 * destroyed), its expected result code and words its gin_last_error()
 * message must contain. Rows with no class are setup steps that must
 * succeed. Every rank runs every row in order (collective calls with the
 * same bad arguments everywhere, or one rank's bad and the others' good
 * where the API promises that all fail); after each row the ranks compare
 * results, and rank 0 prints one line per case. Cases badinput.c and
 * test_bootstrap.c already cover are not repeated here. No leaks: the
 * program frees everything it made (run under ASan/LSan by `make asan`).
 * Not tested (undefined by design): using a gin_ep_t after gin_ep_destroy
 * (a freed heap object), and a destroyed gin_comm_t whose address a later
 * gin_comm_init happened to reuse (it is live again).
 * Run with ginrun -n N (N >= 2), host target. Exit 0 pass, 1 fail, 77 skip.
 */
#include <stdint.h>

#include "gin/gin_ep.h"
#include "test_common.h"

#define WIN 4096
#define EP_TOKENS 4
#define EP_HIDDEN 128
#define EP_T 2 /* tokens in the dispatch the state cases run around */

typedef struct ctx {
  gin_comm_t world, dead; /* dead: a communicator destroyed in setup */
  int rank, nranks;
  gin_unique_id_t uid;
  gin_comm_t c; /* outputs of calls that must fail: stay NULL */
  void *p;
  void *mem;
  gin_window_t win, w;
  gin_devcomm_t dc, d;
  gin_ep_config_t cfg;
  gin_ep_t ep;
  uint16_t *x, *y, *out;
  uint16_t *cbuf; /* gin_ep_combine_buffer's */
  int32_t *idx;
  float *wts;
  int i;
  size_t n;
  char str[2 * GIN_UNIQUE_ID_BYTES + 1];
  gin_setting_t set; /* gin_param_info's output: stays zero */
} ctx_t;

typedef gin_result_t (*call_fn)(ctx_t *t);

typedef struct bad_case {
  const char *fn;  /* the public function called */
  const char *cls; /* null, range, state, destroyed; NULL: setup step */
  call_fn call;
  gin_result_t code;   /* expected result */
  const char *words;   /* gin_last_error() contains this (rank 0) */
  const char *words_r; /* on the other ranks, if different */
} bad_case_t;

/* One call per row; t is the test's state. */
#define CALL(name, ...)                                                        \
  static gin_result_t name(ctx_t *t) {                                         \
    (void)t;                                                                   \
    return __VA_ARGS__;                                                        \
  }

/* Returns a failing setup step's result. */
#define TRY(call)                                                              \
  do {                                                                         \
    gin_result_t r_ = (call);                                                  \
    if (r_ != GIN_SUCCESS) return r_;                                          \
  } while (0)

static gin_devcomm_reqs_t reqs(int contexts, int signals, int counters,
                               int barriers) {
  gin_devcomm_reqs_t r = {contexts, signals, counters, barriers};
  return r;
}

static gin_config_t config(size_t size, int timeout_ms) {
  gin_config_t c = {size, timeout_ms};
  return c;
}

static gin_ep_config_t ep_config(int nranks, int max_tokens, int hidden,
                                 int fp8) {
  gin_ep_config_t c = {max_tokens, hidden, 1, nranks, fp8};
  return c;
}

static gin_window_t win_idx(gin_window_t w, uint32_t idx, uint32_t gen) {
  w.idx = idx;
  w.gen = gen;
  return w;
}

/* ------------------------------------------------------------ setup */

static gin_result_t setup_uid(ctx_t *t) {
  gin_unique_id_t *ids =
      (gin_unique_id_t *)calloc((size_t)t->nranks, sizeof *ids);
  gin_unique_id_t mine;
  memset(&mine, 0, sizeof mine);
  gin_result_t r = GIN_SUCCESS;
  if (t->rank == 0) r = gin_get_unique_id(t->nranks, &mine);
  if (r == GIN_SUCCESS)
    r = gin_comm_allgather(t->world, &mine, ids, sizeof mine);
  t->uid = ids[0];
  free(ids);
  return r;
}
CALL(setup_dead, gin_comm_init(&t->dead, t->nranks, t->rank, &t->uid, NULL))
CALL(setup_dead_destroy, gin_comm_destroy(t->dead))
CALL(setup_mem, gin_mem_alloc(WIN, &t->mem))
CALL(setup_win, gin_window_register(t->world, t->mem, WIN, &t->win))
CALL(setup_dc, gin_devcomm_create(t->world, NULL, &t->dc))
CALL(setup_dc_destroy, gin_devcomm_destroy(t->world, &t->dc))
static gin_result_t setup_ep_arrays(ctx_t *t) {
  size_t hb = (size_t)EP_TOKENS * EP_HIDDEN * 2;
  TRY(gin_mem_alloc(hb, (void **)&t->x));
  TRY(gin_mem_alloc((size_t)EP_TOKENS * 4, (void **)&t->idx));
  TRY(gin_mem_alloc((size_t)EP_TOKENS * 4, (void **)&t->wts));
  TRY(gin_mem_alloc(hb * (size_t)t->nranks, (void **)&t->y));
  return gin_mem_alloc(hb, (void **)&t->out);
}
static gin_result_t setup_ep(ctx_t *t) {
  t->cfg = ep_config(t->nranks, EP_TOKENS, EP_HIDDEN, 0);
  return gin_ep_create(t->world, &t->cfg, &t->ep);
}
CALL(setup_dispatch_send,
     gin_ep_dispatch(t->ep, t->x, t->idx, EP_T, NULL, NULL, GIN_EP_SEND))
CALL(setup_dispatch_recv,
     gin_ep_dispatch(t->ep, t->x, t->idx, EP_T, NULL, NULL, GIN_EP_RECV))
CALL(setup_combine_send, gin_ep_combine(t->ep, t->y, t->idx, t->wts, EP_T,
                                        t->out, NULL, GIN_EP_SEND))
static gin_result_t setup_combine_recv(ctx_t *t) {
  TRY(gin_ep_combine(t->ep, t->y, t->idx, t->wts, EP_T, t->out, NULL,
                     GIN_EP_RECV));
  TRY(gin_stream_synchronize(0));
  return gin_comm_get_async_error(t->world);
}
CALL(setup_ep_destroy, gin_ep_destroy(t->ep))
static gin_result_t teardown(ctx_t *t) {
  TRY(gin_window_deregister(t->world, t->win));
  void *all[6] = {t->mem, t->x, t->idx, t->wts, t->y, t->out};
  for (int i = 0; i < 6; i++)
    TRY(gin_mem_free(all[i]));
  return GIN_SUCCESS;
}

/* --------------------------------------------------- errors, settings */

CALL(strerror_unknown, strcmp(gin_strerror(-999), "unknown error") == 0
                           ? GIN_SUCCESS
                           : GIN_ERR_INTERNAL)
CALL(param_info_neg, gin_param_info(-1, &t->set))
CALL(param_info_past, gin_param_info(gin_param_count(), &t->set))
CALL(param_info_null, gin_param_info(0, NULL))

/* --------------------------------------------------------- unique id */

CALL(uid_get_neg, gin_get_unique_id(-1, &t->uid))
CALL(uid_get_null, gin_get_unique_id(2, NULL))
CALL(uid_to_null_uid, gin_unique_id_to_string(NULL, t->str, sizeof t->str))
CALL(uid_to_null_buf, gin_unique_id_to_string(&t->uid, NULL, sizeof t->str))
static gin_result_t uid_from_null_out(ctx_t *t) {
  TRY(gin_unique_id_to_string(&t->uid, t->str, sizeof t->str));
  return gin_unique_id_from_string(t->str, NULL);
}

/* ------------------------------------------------------ communicator */

CALL(init_null_out, gin_comm_init(NULL, t->nranks, t->rank, &t->uid, NULL))
CALL(init_nranks_neg, gin_comm_init(&t->c, -1, 0, &t->uid, NULL))
CALL(init_nranks_big, gin_comm_init(&t->c, GIN_MAX_RANKS + 1, 0, &t->uid, NULL))
CALL(init_rank_neg, gin_comm_init(&t->c, 2, -1, &t->uid, NULL))
static gin_result_t init_cfg_size(ctx_t *t) {
  gin_config_t c = config(sizeof(gin_config_t) + 8, 0);
  return gin_comm_init(&t->c, t->nranks, t->rank, &t->uid, &c);
}
static gin_result_t init_cfg_timeout(ctx_t *t) {
  gin_config_t c = config(sizeof(gin_config_t), -5);
  return gin_comm_init(&t->c, t->nranks, t->rank, &t->uid, &c);
}
CALL(init_env_null, gin_comm_init_from_env(NULL, NULL))
/* A program built against other headers, or by nvcc for the cuda target
 * but linked with gin_host: refused at init, saying what to rebuild. */
static gin_result_t init_built(ctx_t *t, int what, int env) {
  gin_build_t_ b = GIN_BUILD_INIT_;
  if (what == 0) b.version += 100; /* the next minor release's headers */
  if (what == 1) b.devcomm_bytes += 8;
  if (what == 2) b.cuda = 1;
  return env ? gin_comm_init_from_env_built_(&t->c, NULL, &b)
             : gin_comm_init_built_(&t->c, t->nranks, t->rank, &t->uid, NULL,
                                    &b);
}
CALL(init_built_version, init_built(t, 0, 0))
CALL(init_built_sizes, init_built(t, 1, 0))
CALL(init_built_cuda, init_built(t, 2, 0))
CALL(init_env_built_version, init_built(t, 0, 1))
CALL(init_env_built_cuda, init_built(t, 2, 1))
static gin_result_t init_env_cfg(ctx_t *t) {
  gin_config_t c = config(1, 0);
  return gin_comm_init_from_env(&t->c, &c);
}
CALL(rank_null_out, gin_comm_rank(t->world, NULL))
CALL(size_null_out, gin_comm_size(t->world, NULL))
CALL(devranks_null_out, gin_comm_device_ranks(t->world, NULL))
CALL(peerpath_null_out, gin_comm_peer_path(t->world, 0, NULL))
CALL(peerpath_neg, gin_comm_peer_path(t->world, -1, &t->i))
CALL(peerpath_past, gin_comm_peer_path(t->world, t->nranks, &t->i))
CALL(allgather_null_send, gin_comm_allgather(t->world, NULL, &t->i, 4))
CALL(allgather_null_recv, gin_comm_allgather(t->world, &t->i, NULL, 4))
/* Only rank 0's buffer is NULL: the others must fail at once with it. */
static int gather_buf[1024];
CALL(allgather_one_null_recv,
     gin_comm_allgather(t->world, &t->i, t->rank ? gather_buf : NULL, 4))
CALL(allgather_huge,
     gin_comm_allgather(t->world, &t->i, gather_buf, SIZE_MAX / 2))
/* The good path the status words ride along: 13 bytes a rank (odd, so
 * blocks are not word-aligned), from apart and in place; every byte
 * checked. */
static gin_result_t allgather_values(ctx_t *t) {
  enum { B = 13 };
  unsigned char mine[B], *all = (unsigned char *)gather_buf;
  if ((size_t)t->nranks * B > sizeof gather_buf) return GIN_ERR_INTERNAL;
  for (int pass = 0; pass < 2; pass++) {
    memset(all, 0xee, sizeof gather_buf);
    unsigned char *src = pass ? all + (size_t)t->rank * B : mine;
    for (int i = 0; i < B; i++)
      src[i] = (unsigned char)(t->rank * 31 + i + pass);
    gin_result_t r = gin_comm_allgather(t->world, src, all, B);
    if (r != GIN_SUCCESS) return r;
    for (int q = 0; q < t->nranks; q++)
      for (int i = 0; i < B; i++)
        if (all[(size_t)q * B + (size_t)i] !=
            (unsigned char)(q * 31 + i + pass))
          return GIN_ERR_INTERNAL;
  }
  return GIN_SUCCESS;
}

CALL(destroy_null, gin_comm_destroy(NULL))
CALL(abort_null, gin_comm_abort(NULL))
CALL(destroy_dead, gin_comm_destroy(t->dead))
CALL(rank_dead, gin_comm_rank(t->dead, &t->i))
CALL(devranks_dead, gin_comm_device_ranks(t->dead, &t->i))
CALL(async_null, gin_comm_get_async_error(NULL))
CALL(size_null, gin_comm_size(NULL, &t->i))
CALL(barrier_null, gin_comm_barrier(NULL))
CALL(allgather_null, gin_comm_allgather(NULL, &t->i, &t->i, 4))
CALL(winreg_null, gin_window_register(NULL, t->mem, WIN, &t->w))
CALL(windereg_null, gin_window_deregister(NULL, t->win))
CALL(dccreate_null, gin_devcomm_create(NULL, NULL, &t->d))
CALL(dcdestroy_null, gin_devcomm_destroy(NULL, &t->d))
CALL(epcreate_null, gin_ep_create(NULL, &t->cfg, &t->ep))

CALL(abort_dead, gin_comm_abort(t->dead))
CALL(async_dead, gin_comm_get_async_error(t->dead))
CALL(size_dead, gin_comm_size(t->dead, &t->i))
CALL(barrier_dead, gin_comm_barrier(t->dead))
CALL(allgather_dead, gin_comm_allgather(t->dead, &t->i, &t->i, 4))
CALL(winreg_dead, gin_window_register(t->dead, t->mem, WIN, &t->w))
CALL(windereg_dead, gin_window_deregister(t->dead, t->win))
CALL(dccreate_dead, gin_devcomm_create(t->dead, NULL, &t->d))
CALL(dcdestroy_dead, gin_devcomm_destroy(t->dead, &t->d))
static gin_result_t epcreate_dead(ctx_t *t) {
  t->cfg = ep_config(t->nranks, EP_TOKENS, EP_HIDDEN, 0);
  return gin_ep_create(t->dead, &t->cfg, &t->ep);
}

/* ------------------------------------------------------------ memory */

CALL(alloc_null_out, gin_mem_alloc(WIN, NULL))
CALL(alloc_zero, gin_mem_alloc(0, &t->p))
CALL(alloc_huge, gin_mem_alloc(SIZE_MAX, &t->p))
CALL(alloc_neg, gin_mem_alloc((size_t)-4096, &t->p))
CALL(free_null, gin_mem_free(NULL))
CALL(free_interior, gin_mem_free((char *)t->mem + 8))
CALL(copy_null_dst, gin_mem_copy(NULL, t->mem, 8))
CALL(copy_null_src, gin_mem_copy(t->mem, NULL, 8))
CALL(set_null_dst, gin_mem_set(NULL, 0, 8))

/* ------------------------------------------------------------ windows */

CALL(winreg_null_out, gin_window_register(t->world, t->mem, WIN, NULL))
CALL(winreg_null_ptr, gin_window_register(t->world, NULL, WIN, &t->w))
CALL(winreg_zero, gin_window_register(t->world, t->mem, 0, &t->w))
CALL(winreg_huge, gin_window_register(t->world, t->mem, SIZE_MAX, &t->w))
CALL(winreg_one_null_out,
     gin_window_register(t->world, t->mem, WIN, t->rank ? &t->w : NULL))
CALL(winreg_one_null,
     gin_window_register(t->world, t->rank ? t->mem : NULL, WIN, &t->w))
CALL(windereg_idx,
     gin_window_deregister(t->world, win_idx(t->win, 1u << 30, t->win.gen)))
CALL(windereg_gen, gin_window_deregister(t->world, win_idx(t->win, t->win.idx,
                                                           t->win.gen + 1)))
CALL(windereg_one_stale,
     gin_window_deregister(t->world,
                           win_idx(t->win, t->win.idx,
                                   t->win.gen + (t->rank == 1 ? 5 : 0))))

/* ------------------------------------------------ device communicator */

static gin_result_t dc_create(ctx_t *t, gin_devcomm_reqs_t r) {
  return gin_devcomm_create(t->world, &r, &t->d);
}
CALL(dccreate_null_out, gin_devcomm_create(t->world, NULL, NULL))
/* Only rank 0's output pointer is NULL: the others must fail at once with
 * it, not wait for it until the timeout. */
CALL(dccreate_one_null_out,
     gin_devcomm_create(t->world, NULL, t->rank ? &t->d : NULL))
CALL(dccreate_ctx_neg, dc_create(t, reqs(-1, 0, 0, 0)))
CALL(dccreate_ctx_big, dc_create(t, reqs(65, 0, 0, 0)))
CALL(dccreate_sig_big, dc_create(t, reqs(0, (1 << 20) + 1, 0, 0)))
CALL(dccreate_cnt_neg, dc_create(t, reqs(0, 0, -2, 0)))
CALL(dccreate_cnt_big, dc_create(t, reqs(0, 0, 1 << 21, 0)))
CALL(dccreate_bar_big, dc_create(t, reqs(0, 0, 0, 65)))
CALL(dccreate_one_ctx, dc_create(t, reqs(t->rank == 0 ? 65 : 0, 0, 0, 0)))
CALL(dcdestroy_null_dc, gin_devcomm_destroy(t->world, NULL))
static gin_result_t dcdestroy_unknown(ctx_t *t) {
  t->d = t->dc;
  t->d.id += 1000;
  return gin_devcomm_destroy(t->world, &t->d);
}
/* Only rank 0's handle is wrong: the others, whose handles are live, must
 * fail at once and keep them (the setup row after destroys them). */
static gin_result_t dcdestroy_one_unknown(ctx_t *t) {
  t->d = t->dc;
  if (t->rank == 0) t->d.id += 1000;
  return gin_devcomm_destroy(t->world, &t->d);
}
static gin_result_t dcdestroy_one_null(ctx_t *t) {
  t->d = t->dc;
  return gin_devcomm_destroy(t->world, t->rank ? &t->d : NULL);
}

/* ----------------------------------------------------------------- EP */

static gin_result_t hint(ctx_t *t, gin_ep_config_t c) {
  return gin_ep_size_hint(&c, t->nranks, &t->n);
}
CALL(hint_null_out, gin_ep_size_hint(&t->cfg, t->nranks, NULL))
CALL(hint_null_cfg, gin_ep_size_hint(NULL, t->nranks, &t->n))
CALL(hint_nranks, gin_ep_size_hint(&t->cfg, 0, &t->n))
CALL(hint_tokens, hint(t, ep_config(t->nranks, 0, EP_HIDDEN, 0)))
CALL(hint_hidden, hint(t, ep_config(t->nranks, EP_TOKENS, -1, 0)))
CALL(hint_fp8, hint(t, ep_config(t->nranks, EP_TOKENS, EP_HIDDEN, 3)))
CALL(epcreate_null_out, gin_ep_create(t->world, &t->cfg, NULL))
CALL(epcreate_one_null_out,
     gin_ep_create(t->world, &t->cfg, t->rank ? &t->ep : NULL))
CALL(epcreate_null_cfg, gin_ep_create(t->world, NULL, &t->ep))
static gin_result_t epcreate_tokens(ctx_t *t) {
  gin_ep_config_t c = ep_config(t->nranks, -1, EP_HIDDEN, 0);
  return gin_ep_create(t->world, &c, &t->ep);
}
CALL(epdestroy_null, gin_ep_destroy(NULL))

static gin_result_t dispatch(ctx_t *t, gin_ep_t ep, const uint16_t *x,
                             const int32_t *idx, int tokens, int phases) {
  (void)t;
  return gin_ep_dispatch(ep, x, idx, tokens, NULL, NULL, phases);
}
static gin_result_t combine(ctx_t *t, gin_ep_t ep, int tokens,
                            const uint16_t *y, const float *w, uint16_t *out,
                            int phases) {
  return gin_ep_combine(ep, y, t->idx, w, tokens, out, NULL, phases);
}
CALL(disp_null_ep, dispatch(t, NULL, t->x, t->idx, EP_T, GIN_EP_BOTH))
CALL(disp_phase0, dispatch(t, t->ep, t->x, t->idx, EP_T, 0))
CALL(disp_phase4, dispatch(t, t->ep, t->x, t->idx, EP_T, 4))
CALL(disp_recv_first, dispatch(t, t->ep, t->x, t->idx, EP_T, GIN_EP_RECV))
CALL(disp_null_x, dispatch(t, t->ep, NULL, t->idx, EP_T, GIN_EP_BOTH))
CALL(disp_null_idx, dispatch(t, t->ep, t->x, NULL, EP_T, GIN_EP_SEND))
CALL(disp_send_twice, dispatch(t, t->ep, t->x, t->idx, EP_T, GIN_EP_SEND))
CALL(disp_in_combine, dispatch(t, t->ep, t->x, t->idx, EP_T, GIN_EP_BOTH))
CALL(comb_null_ep, combine(t, NULL, EP_T, t->y, t->wts, t->out, GIN_EP_BOTH))
static gin_result_t dispatch_ex(ctx_t *t, gin_ep_t ep, int payload) {
  gin_ep_dispatch_opts_t o;
  memset(&o, 0, sizeof o);
  o.payload = payload;
  return gin_ep_dispatch_ex(ep, t->x, t->idx, EP_T, &o, NULL, NULL,
                            GIN_EP_BOTH);
}
static gin_result_t combine_ex(ctx_t *t, gin_ep_t ep, int idx64) {
  gin_ep_combine_opts_t o;
  memset(&o, 0, sizeof o);
  o.idx64 = idx64;
  return gin_ep_combine_ex(ep, t->y, t->idx, t->wts, EP_T, &o, t->out, NULL,
                           GIN_EP_BOTH);
}
CALL(fence_null, gin_ep_combine_fence(NULL, NULL))
CALL(fence_in_combine, gin_ep_combine_fence(t->ep, NULL))
CALL(dispx_null_ep, dispatch_ex(t, NULL, 0))
CALL(dispx_payload, dispatch_ex(t, t->ep, 9))
CALL(combx_null_ep, combine_ex(t, NULL, 0))
CALL(combx_idx64, combine_ex(t, t->ep, 3))
CALL(comb_phase0, combine(t, t->ep, EP_T, t->y, t->wts, t->out, 0))
CALL(comb_phase7, combine(t, t->ep, EP_T, t->y, t->wts, t->out, 7))
CALL(comb_no_dispatch,
     combine(t, t->ep, EP_T, t->y, t->wts, t->out, GIN_EP_BOTH))
CALL(comb_tokens,
     combine(t, t->ep, EP_T + 1, t->y, t->wts, t->out, GIN_EP_BOTH))
CALL(comb_null_y, combine(t, t->ep, EP_T, NULL, t->wts, t->out, GIN_EP_BOTH))
CALL(comb_null_w, combine(t, t->ep, EP_T, t->y, NULL, t->out, GIN_EP_BOTH))
CALL(comb_null_out, combine(t, t->ep, EP_T, t->y, t->wts, NULL, GIN_EP_RECV))
CALL(comb_recv_first,
     combine(t, t->ep, EP_T, t->y, t->wts, t->out, GIN_EP_RECV))
CALL(comb_send_twice,
     combine(t, t->ep, EP_T, t->y, t->wts, t->out, GIN_EP_SEND))
CALL(cbuf_null_ep, gin_ep_combine_buffer(NULL, &t->cbuf))
CALL(cbuf_null_out, gin_ep_combine_buffer(t->ep, NULL))
CALL(setup_cbuf, gin_ep_combine_buffer(t->ep, &t->cbuf))
/* y inside the combine buffer but not at its start. */
CALL(comb_y_inside,
     combine(t, t->ep, EP_T, t->cbuf + 8, t->wts, t->out, GIN_EP_BOTH))

/* -------------------------------------------------------------- table */

#define NUL "null"
#define RNG "range"
#define BLD "build" /* the program's build does not match the library's */
#define STA "state"
#define DEAD "destroyed"
#define SETUP NULL
#define INV GIN_ERR_INVALID
#define ST GIN_ERR_STATE
#define OK GIN_SUCCESS

static const bad_case_t cases[] = {
    {"gin_strerror", RNG, strerror_unknown, OK, "", NULL},
    {"gin_param_info", RNG, param_info_neg, INV, "index -1 out of range", NULL},
    {"gin_param_info", RNG, param_info_past, INV, "out of range [0, ", NULL},
    {"gin_param_info", NUL, param_info_null, INV, "info_out is NULL", NULL},

    {"gin_comm_init", SETUP, setup_uid, OK, "", NULL},
    {"gin_get_unique_id", RNG, uid_get_neg, INV, "nranks -1 out of range",
     NULL},
    {"gin_get_unique_id", NUL, uid_get_null, INV, "uid_out is NULL", NULL},
    {"gin_unique_id_to_string", NUL, uid_to_null_uid, INV, "NULL uid", NULL},
    {"gin_unique_id_to_string", NUL, uid_to_null_buf, INV, "or buffer", NULL},
    {"gin_unique_id_from_string", NUL, uid_from_null_out, INV, "uid_out", NULL},

    {"gin_comm_init", NUL, init_null_out, INV, "comm_out is NULL", NULL},
    {"gin_comm_init", RNG, init_nranks_neg, INV, "nranks -1 outside", NULL},
    {"gin_comm_init", RNG, init_nranks_big, INV, "nranks 1025 outside", NULL},
    {"gin_comm_init", RNG, init_rank_neg, INV, "rank -1 outside", NULL},
    {"gin_comm_init", RNG, init_cfg_size, INV, "cfg->size", NULL},
    {"gin_comm_init", RNG, init_cfg_timeout, INV, "timeout_ms -5", NULL},
    {"gin_comm_init", BLD, init_built_version, INV,
     "compiled with gin's headers of version 0.", NULL},
    {"gin_comm_init", BLD, init_built_sizes, INV,
     "gin_devcomm_t and gin_window_t are", NULL},
    {"gin_comm_init", BLD, init_built_cuda, INV,
     "compiled by nvcc for the cuda target but is linked with gin_host", NULL},
    {"gin_comm_init_from_env", BLD, init_env_built_version, INV,
     "rebuild it against that library's headers", NULL},
    {"gin_comm_init_from_env", BLD, init_env_built_cuda, INV, "link gin_cuda",
     NULL},
    {"gin_comm_init_from_env", NUL, init_env_null, INV, "comm_out is NULL",
     NULL},
    {"gin_comm_init_from_env", RNG, init_env_cfg, INV, "cfg->size 1", NULL},
    {"gin_comm_rank", NUL, rank_null_out, INV, "rank_out is NULL", NULL},
    {"gin_comm_size", NUL, size_null_out, INV, "nranks_out is NULL", NULL},
    {"gin_comm_device_ranks", NUL, devranks_null_out, INV, "count_out is NULL",
     NULL},
    {"gin_comm_peer_path", NUL, peerpath_null_out, INV, "path_out is NULL",
     NULL},
    {"gin_comm_peer_path", RNG, peerpath_neg, INV, "peer -1 outside", NULL},
    {"gin_comm_peer_path", RNG, peerpath_past, INV, "outside [0, ", NULL},
    {"gin_comm_allgather", NUL, allgather_null_send, INV, "sendbuf is NULL",
     NULL},
    {"gin_comm_allgather", NUL, allgather_null_recv, INV, "recvbuf is NULL",
     NULL},
    {"gin_comm_allgather", NUL, allgather_one_null_recv, INV, "recvbuf is NULL",
     "rank 0 passed a NULL recvbuf"},
    {"gin_comm_allgather", RNG, allgather_huge, INV, "overflows", NULL},
    {"gin_comm_allgather", SETUP, allgather_values, OK, "", NULL},

    {"gin_comm_destroy", NUL, destroy_null, INV, "comm is NULL", NULL},
    {"gin_comm_abort", NUL, abort_null, INV, "abort: comm is NULL", NULL},
    {"gin_comm_get_async_error", NUL, async_null, INV, "error: comm is NULL",
     NULL},
    {"gin_comm_size", NUL, size_null, INV, "size: comm is NULL", NULL},
    {"gin_comm_barrier", NUL, barrier_null, INV, "barrier: comm is NULL", NULL},
    {"gin_comm_allgather", NUL, allgather_null, INV, "allgather: comm is NULL",
     NULL},

    {"gin_comm_init", SETUP, setup_dead, OK, "", NULL},
    {"gin_comm_destroy", SETUP, setup_dead_destroy, OK, "", NULL},
    {"gin_comm_destroy", DEAD, destroy_dead, ST, "destroy: communicator", NULL},
    {"gin_comm_rank", DEAD, rank_dead, ST, "rank: communicator", NULL},
    {"gin_comm_device_ranks", DEAD, devranks_dead, ST,
     "device_ranks: communicator", NULL},
    {"gin_comm_abort", DEAD, abort_dead, ST, "abort: communicator", NULL},
    {"gin_comm_get_async_error", DEAD, async_dead, ST, "error: communicator",
     NULL},
    {"gin_comm_size", DEAD, size_dead, ST, "size: communicator", NULL},
    {"gin_comm_barrier", DEAD, barrier_dead, ST, "barrier: communicator", NULL},
    {"gin_comm_allgather", DEAD, allgather_dead, ST, "allgather: communicator",
     NULL},

    {"gin_mem_alloc", NUL, alloc_null_out, INV, "ptr_out is NULL", NULL},
    {"gin_mem_alloc", RNG, alloc_zero, INV, "size is 0", NULL},
    {"gin_mem_alloc", RNG, alloc_huge, INV, "size 18446744073709551615", NULL},
    {"gin_mem_alloc", RNG, alloc_neg, INV, "size 18446744073709547520", NULL},
    {"gin_mem_alloc", SETUP, setup_mem, OK, "", NULL},
    {"gin_mem_free", NUL, free_null, INV, "ptr is NULL", NULL},
    {"gin_mem_free", RNG, free_interior, INV, "not an allocation", NULL},
    {"gin_mem_copy", NUL, copy_null_dst, INV, "NULL dst", NULL},
    {"gin_mem_copy", NUL, copy_null_src, INV, "NULL src", NULL},
    {"gin_mem_set", NUL, set_null_dst, INV, "dst is NULL", NULL},

    {"gin_window_register", NUL, winreg_null, INV, "register: comm is NULL",
     NULL},
    {"gin_window_register", DEAD, winreg_dead, ST, "register: communicator",
     NULL},
    {"gin_window_register", NUL, winreg_null_out, INV, "win_out is NULL", NULL},
    {"gin_window_register", NUL, winreg_null_ptr, INV, "ptr is NULL", NULL},
    {"gin_window_register", RNG, winreg_zero, INV, "size is 0", NULL},
    {"gin_window_register", RNG, winreg_huge, INV, "runs past its allocation",
     NULL},
    {"gin_window_register", NUL, winreg_one_null, INV, "rank 0: ptr is NULL",
     "rank 0 failed its part"},
    {"gin_window_register", NUL, winreg_one_null_out, INV, "win_out is NULL",
     "rank 0 failed its part"},
    {"gin_window_register", SETUP, setup_win, OK, "", NULL},
    {"gin_window_deregister", NUL, windereg_null, INV,
     "deregister: comm is NULL", NULL},
    {"gin_window_deregister", DEAD, windereg_dead, ST,
     "deregister: communicator", NULL},
    {"gin_window_deregister", RNG, windereg_idx, INV, "is not a live window",
     NULL},
    {"gin_window_deregister", STA, windereg_gen, INV, "is not a live window",
     NULL},
    {"gin_window_deregister", STA, windereg_one_stale, INV,
     "rank 1 passed a handle", "is not a live window"},

    {"gin_devcomm_create", NUL, dccreate_null, INV, "create: comm is NULL",
     NULL},
    {"gin_devcomm_create", DEAD, dccreate_dead, ST, "create: communicator",
     NULL},
    {"gin_devcomm_create", NUL, dccreate_null_out, INV, "dcomm_out is NULL",
     NULL},
    {"gin_devcomm_create", NUL, dccreate_one_null_out, INV, "dcomm_out is NULL",
     "rank 0 failed its part"},
    {"gin_devcomm_create", RNG, dccreate_ctx_neg, INV, "contexts -1 outside",
     NULL},
    {"gin_devcomm_create", RNG, dccreate_ctx_big, INV, "contexts 65 outside",
     NULL},
    {"gin_devcomm_create", RNG, dccreate_sig_big, INV,
     "signals 1048577 outside", NULL},
    {"gin_devcomm_create", RNG, dccreate_cnt_neg, INV, "counters -2 outside",
     NULL},
    {"gin_devcomm_create", RNG, dccreate_cnt_big, INV,
     "counters 2097152 outside", NULL},
    {"gin_devcomm_create", RNG, dccreate_bar_big, INV, "barriers 65 outside",
     NULL},
    {"gin_devcomm_create", RNG, dccreate_one_ctx, INV, "contexts 65 outside",
     "rank 0 failed its part"},
    {"gin_devcomm_create", SETUP, setup_dc, OK, "", NULL},
    {"gin_devcomm_destroy", NUL, dcdestroy_null, INV, "destroy: comm is NULL",
     NULL},
    {"gin_devcomm_destroy", DEAD, dcdestroy_dead, ST, "destroy: communicator",
     NULL},
    {"gin_devcomm_destroy", NUL, dcdestroy_null_dc, INV, "dcomm is NULL", NULL},
    {"gin_devcomm_destroy", STA, dcdestroy_unknown, INV, "is not live", NULL},
    {"gin_devcomm_destroy", STA, dcdestroy_one_unknown, INV, "is not live",
     "rank 0 passed a device communicator that is not live"},
    {"gin_devcomm_destroy", NUL, dcdestroy_one_null, INV, "dcomm is NULL",
     "rank 0 passed a NULL dcomm"},
    {"gin_devcomm_destroy", SETUP, setup_dc_destroy, OK, "", NULL},

    {"gin_ep_size_hint", NUL, hint_null_out, INV, "bytes_out is NULL", NULL},
    {"gin_ep_size_hint", NUL, hint_null_cfg, INV, "configuration is NULL",
     NULL},
    {"gin_ep_size_hint", RNG, hint_nranks, INV, "nranks 0", NULL},
    {"gin_ep_size_hint", RNG, hint_tokens, INV, "max_tokens 0 outside", NULL},
    {"gin_ep_size_hint", RNG, hint_hidden, INV, "hidden -1 outside", NULL},
    {"gin_ep_size_hint", RNG, hint_fp8, INV, "fp8 is 3", NULL},
    {"gin_ep_create", NUL, epcreate_null, INV, "create: comm is NULL", NULL},
    {"gin_ep_create", DEAD, epcreate_dead, ST, "ep_create: communicator", NULL},
    {"gin_ep_create", NUL, epcreate_null_out, INV, "ep_out is NULL", NULL},
    {"gin_ep_create", NUL, epcreate_one_null_out, INV, "ep_out is NULL",
     "rank 0's configuration is invalid"},
    {"gin_ep_create", NUL, epcreate_null_cfg, INV, "configuration is NULL",
     NULL},
    {"gin_ep_create", RNG, epcreate_tokens, INV, "max_tokens -1 outside", NULL},
    {"gin_ep_destroy", NUL, epdestroy_null, INV, "ep is NULL", NULL},
    {"gin_mem_alloc", SETUP, setup_ep_arrays, OK, "", NULL},
    {"gin_ep_create", SETUP, setup_ep, OK, "", NULL},
    {"gin_ep_dispatch", NUL, disp_null_ep, INV, "ep is NULL", NULL},
    {"gin_ep_dispatch", RNG, disp_phase0, INV, "phases 0 is not", NULL},
    {"gin_ep_dispatch", RNG, disp_phase4, INV, "phases 4 is not", NULL},
    {"gin_ep_dispatch", STA, disp_recv_first, INV, "GIN_EP_RECV without", NULL},
    {"gin_ep_dispatch", NUL, disp_null_x, INV, "x is NULL", NULL},
    {"gin_ep_dispatch", NUL, disp_null_idx, INV, "topk_idx is NULL", NULL},
    {"gin_ep_dispatch_ex", NUL, dispx_null_ep, INV, "ep is NULL", NULL},
    {"gin_ep_dispatch_ex", RNG, dispx_payload, INV, "payload 9 is not", NULL},
    {"gin_ep_combine_ex", NUL, combx_null_ep, INV, "ep is NULL", NULL},
    {"gin_ep_combine_fence", NUL, fence_null, INV, "ep is NULL", NULL},
    {"gin_ep_combine", NUL, comb_null_ep, INV, "ep is NULL", NULL},
    {"gin_ep_combine", RNG, comb_phase0, INV, "phases 0 is not", NULL},
    {"gin_ep_combine", RNG, comb_phase7, INV, "phases 7 is not", NULL},
    {"gin_ep_combine", STA, comb_no_dispatch, INV, "no completed dispatch",
     NULL},
    {"gin_ep_dispatch", SETUP, setup_dispatch_send, OK, "", NULL},
    {"gin_ep_dispatch", STA, disp_send_twice, INV, "was not received", NULL},
    {"gin_ep_combine", STA, comb_no_dispatch, INV, "no completed dispatch",
     NULL},
    {"gin_ep_dispatch", SETUP, setup_dispatch_recv, OK, "", NULL},
    {"gin_ep_combine", RNG, comb_tokens, INV, "3 tokens, but the dispatch had",
     NULL},
    {"gin_ep_combine_ex", RNG, combx_idx64, INV, "idx64 3 is not", NULL},
    {"gin_ep_combine", NUL, comb_null_y, INV, "y (the experts' outputs)", NULL},
    {"gin_ep_combine", NUL, comb_null_w, INV, "topk_weights is NULL", NULL},
    {"gin_ep_combine", NUL, comb_null_out, INV, "out is NULL", NULL},
    {"gin_ep_combine", STA, comb_recv_first, INV, "GIN_EP_RECV without", NULL},
    {"gin_ep_combine_buffer", NUL, cbuf_null_ep, INV, "ep is NULL", NULL},
    {"gin_ep_combine_buffer", NUL, cbuf_null_out, INV, "y_out is NULL", NULL},
    {"gin_ep_combine_buffer", SETUP, setup_cbuf, OK, "", NULL},
    {"gin_ep_combine", RNG, comb_y_inside, INV, "overlaps the combine buffer",
     NULL},
    {"gin_ep_combine", SETUP, setup_combine_send, OK, "", NULL},
    {"gin_ep_dispatch", STA, disp_in_combine, INV, "receive phase is outstand",
     NULL},
    {"gin_ep_combine_fence", STA, fence_in_combine, INV,
     "receive phase is outstanding", NULL},
    {"gin_ep_combine", STA, comb_send_twice, INV, "was not received", NULL},
    {"gin_ep_combine", SETUP, setup_combine_recv, OK, "", NULL},
    {"gin_ep_destroy", SETUP, setup_ep_destroy, OK, "", NULL},
    {"gin_mem_free", SETUP, teardown, OK, "", NULL},
};

#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* Sets this thread's last error to a known message, so a case that fails
 * without recording one of its own is caught. */
static void reset_last_error(void) {
  gin_setting_t set;
  (void)gin_param_info(-7777, &set);
}

/* Runs one row; returns 1 if this rank saw something wrong. */
static int run_case(ctx_t *t, const bad_case_t *k) {
  reset_last_error();
  char before[64];
  snprintf(before, sizeof before, "%s", gin_last_error());
  gin_result_t r = k->call(t);
  const char *msg = gin_last_error();
  const char *words = t->rank != 0 && k->words_r ? k->words_r : k->words;
  int bad = r != k->code;
  if (r != GIN_SUCCESS)
    bad |= !strstr(msg, words) || strcmp(msg, before) == 0 || !msg[0];
  /* Outputs are written only on success: no case may set these. */
  if (t->c || t->p || t->set.name) {
    fprintf(stderr, "rank %d: %s (%s) wrote its output\n", t->rank, k->fn,
            k->cls ? k->cls : "setup");
    bad = 1;
  }
  if (bad)
    fprintf(stderr, "rank %d: %s (%s): %s '%s' (wanted %s, '%s')\n", t->rank,
            k->fn, k->cls ? k->cls : "setup", gin_strerror(r), msg,
            gin_strerror(k->code), words);
  return bad;
}

int main(void) {
  ctx_t t;
  memset(&t, 0, sizeof t);
  t.world = test_world_init(&t.rank, &t.nranks, 2);
  t.cfg = ep_config(t.nranks, EP_TOKENS, EP_HIDDEN, 0);
  int *all = (int *)calloc((size_t)t.nranks, sizeof(int));
  int failed = 0, ncases = 0;
  for (int i = 0; i < NCASES; i++) {
    const bad_case_t *k = &cases[i];
    int bad = run_case(&t, k), sum = 0;
    /* Every rank's verdict, which also keeps the ranks in step. */
    TCHECK(gin_comm_allgather(t.world, &bad, all, sizeof bad));
    for (int r = 0; r < t.nranks; r++)
      sum += all[r];
    if (k->cls) ncases++;
    if (t.rank == 0 && (k->cls || sum))
      printf("%-26s %-9s %-34s %s\n", k->fn, k->cls ? k->cls : "setup",
             k->words[0] ? k->words : "-", sum ? "FAIL" : "ok");
    failed += sum != 0;
    if (sum && !k->cls) break; /* a setup step failed: later rows need it */
  }
  free(all);
  TCHECK(gin_comm_destroy(t.world));
  if (t.rank == 0)
    printf("api_badargs: %d cases, %s\n", ncases, failed ? "FAILED" : "passed");
  return failed ? 1 : 0;
}
