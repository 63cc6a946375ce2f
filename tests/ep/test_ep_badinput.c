/*
 * gin EP bad input: bad configurations fail gin_ep_create with
 * GIN_ERR_INVALID on every rank (also one rank's config differing from the
 * others'), with *ep_out untouched; too many tokens fail dispatch and
 * combine with GIN_ERR_INVALID, run nothing and leave *recv untouched (the
 * steps after it still match the reference); an expert id out of range is
 * reported through gin_comm_get_async_error (GIN_ERR_INVALID on the rank
 * that passed it, GIN_ERR_INVALID or GIN_ERR_ABORTED on the others); bad
 * dispatch and combine options fail with GIN_ERR_INVALID naming the
 * option, run nothing, and the steps after them still match; ranks whose
 * dispatches ask for different payloads, or for power-of-two scales on one
 * rank only, get GIN_ERR_INVALID naming the payload (or
 * GIN_ERR_ABORTED). The async cases abort their communicator,
 * so each runs on a sub-communicator of its own. Run with ginrun -n N (N >= 2).
 * Exit 0 pass, 1 fail, 77 skip.
 */
#include <time.h>
#include <unistd.h>

#include "ep/ep_ref.h"
#include "gin/gin_ep.h"
#include "test_common.h"

#define MAX_TOKENS 8
#define HIDDEN 256
#define TOPK 2

#define EXPECT(call, code, words)                                              \
  do {                                                                         \
    gin_result_t r_ = (call);                                                  \
    if (r_ != (code) || !strstr(gin_last_error(), (words))) {                  \
      fprintf(stderr, "rank %d: %s -> %s '%s' (wanted %s, '%s')\n", rank,      \
              #call, gin_strerror(r_), gin_last_error(), gin_strerror(code),   \
              words);                                                          \
      fails++;                                                                 \
    }                                                                          \
  } while (0)

static gin_ep_config_t good_config(int nranks) {
  gin_ep_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.max_tokens = MAX_TOKENS;
  cfg.hidden = HIDDEN;
  cfg.topk = TOPK;
  cfg.num_experts = 2 * nranks;
  cfg.fp8 = 1;
  return cfg;
}

/* A handle value no create returns: failed creates must not touch it. */
#define UNTOUCHED ((gin_ep_t)(uintptr_t)0x5a5a)

static int config_cases(gin_comm_t world, int rank, int nranks) {
  int fails = 0;
  gin_ep_t ep = UNTOUCHED;
  gin_ep_config_t cfg = good_config(nranks);
  cfg.hidden = 200; /* not a multiple of 128 with fp8 */
  EXPECT(gin_ep_create(world, &cfg, &ep), GIN_ERR_INVALID, "hidden");
  cfg = good_config(nranks);
  cfg.num_experts = 2 * nranks + 1;
  EXPECT(gin_ep_create(world, &cfg, &ep), GIN_ERR_INVALID, "num_experts");
  cfg = good_config(nranks);
  cfg.topk = 0;
  EXPECT(gin_ep_create(world, &cfg, &ep), GIN_ERR_INVALID, "topk");
  cfg.topk = 33;
  EXPECT(gin_ep_create(world, &cfg, &ep), GIN_ERR_INVALID, "topk");
  /* One rank's configuration differs: every rank fails, naming the field. */
  cfg = good_config(nranks);
  if (rank == 1) cfg.hidden = 384;
  EXPECT(gin_ep_create(world, &cfg, &ep), GIN_ERR_INVALID, "hidden");
  cfg = good_config(nranks);
  if (rank == nranks - 1) cfg.fp8 = 0;
  EXPECT(gin_ep_create(world, &cfg, &ep), GIN_ERR_INVALID, "fp8");
  /* One rank's configuration is invalid, the others' fine: all fail. */
  cfg = good_config(nranks);
  if (rank == 0) cfg.hidden = 200;
  EXPECT(gin_ep_create(world, &cfg, &ep), GIN_ERR_INVALID,
         rank == 0 ? "hidden" : "rank 0");
  if (ep != UNTOUCHED) {
    fprintf(stderr, "rank %d: a failed gin_ep_create wrote *ep_out\n", rank);
    fails++;
  }
  return fails;
}

/* Device copies of rank `rank`'s inputs of (seed). */
typedef struct dev_in {
  uint16_t *x;
  int32_t *idx;
  float *w;
  uint16_t *y, *out;
} dev_in_t;

static void upload(const ep_ref_input_t *in, dev_in_t *d) {
  int T = in->num_tokens;
  if (T == 0) return;
  TCHECK(gin_mem_copy(d->x, in->x, (size_t)T * HIDDEN * 2));
  TCHECK(gin_mem_copy(d->idx, in->topk_idx, (size_t)T * TOPK * 4));
  TCHECK(gin_mem_copy(d->w, in->weights, (size_t)T * TOPK * 4));
}

/* A good dispatch + combine, checked against the reference. */
static int good_step(gin_comm_t comm, gin_ep_t ep, int rank, int nranks,
                     uint64_t seed, dev_in_t *d) {
  int fails = 0, L = 2, E = 2 * nranks;
  ep_ref_input_t *ins = (ep_ref_input_t *)calloc((size_t)nranks, sizeof *ins);
  for (int r = 0; r < nranks; r++)
    TASSERT(ep_ref_input_make(seed, r, MAX_TOKENS - r % 2, HIDDEN, TOPK, E,
                              EP_ROUTE_RANDOM, &ins[r]) == 0,
            "inputs");
  upload(&ins[rank], d);
  int T = ins[rank].num_tokens;
  gin_ep_recv_t recv;
  TCHECK(gin_ep_dispatch(ep, d->x, d->idx, T, &recv, NULL, GIN_EP_BOTH));
  TCHECK(gin_stream_synchronize(0));
  TCHECK(gin_comm_get_async_error(comm));
  ep_ref_recv_t want, got;
  TASSERT(ep_ref_recv_alloc(L, nranks, MAX_TOKENS, HIDDEN, 1, &want) == 0 &&
              ep_ref_recv_alloc(L, nranks, MAX_TOKENS, HIDDEN, 1, &got) == 0,
          "out of memory");
  TCHECK(gin_mem_copy(got.x, recv.x, ep_ref_recv_x_bytes(&got)));
  TCHECK(gin_mem_copy(got.scales, recv.scales, ep_ref_recv_scales_bytes(&got)));
  TCHECK(
      gin_mem_copy(got.src_rank, recv.src_rank, ep_ref_recv_slot_bytes(&got)));
  TCHECK(gin_mem_copy(got.src_token, recv.src_token,
                      ep_ref_recv_slot_bytes(&got)));
  TCHECK(gin_mem_copy(got.count, recv.count, (size_t)L * 4));
  TCHECK(gin_mem_copy(got.layout, recv.layout, (size_t)L * nranks * 2 * 4));
  ep_ref_dispatch(ins, nranks, rank, &want);
  char msg[512];
  if (ep_ref_check_recv(&want, &got, rank, msg, sizeof msg)) {
    fprintf(stderr, "rank %d: dispatch after bad calls: %s\n", rank, msg);
    fails++;
  }
  size_t ny = (size_t)L * got.slots * HIDDEN;
  uint16_t *y = (uint16_t *)calloc(ny, 2);
  uint16_t *out = (uint16_t *)calloc((size_t)MAX_TOKENS * HIDDEN, 2);
  uint16_t *ref = (uint16_t *)calloc((size_t)MAX_TOKENS * HIDDEN, 2);
  ep_ref_experts(&got, rank, y);
  TCHECK(gin_mem_copy(d->y, y, ny * 2));
  TCHECK(gin_ep_combine(ep, d->y, d->idx, d->w, T, d->out, NULL, GIN_EP_BOTH));
  TCHECK(gin_stream_synchronize(0));
  TCHECK(gin_comm_get_async_error(comm));
  TCHECK(gin_mem_copy(out, d->out, (size_t)T * HIDDEN * 2));
  ep_ref_combine(&ins[rank], 1, ref);
  if (ep_ref_check_out(ref, out, T, HIDDEN, msg, sizeof msg)) {
    fprintf(stderr, "rank %d: combine after bad calls: %s\n", rank, msg);
    fails++;
  }
  free(y);
  free(out);
  free(ref);
  ep_ref_recv_free(&want);
  ep_ref_recv_free(&got);
  for (int r = 0; r < nranks; r++)
    ep_ref_input_free(&ins[r]);
  free(ins);
  return fails;
}

static void dev_alloc(int nranks, dev_in_t *d) {
  TCHECK(gin_mem_alloc((size_t)MAX_TOKENS * HIDDEN * 2, (void **)&d->x));
  TCHECK(gin_mem_alloc((size_t)MAX_TOKENS * TOPK * 4, (void **)&d->idx));
  TCHECK(gin_mem_alloc((size_t)MAX_TOKENS * TOPK * 4, (void **)&d->w));
  TCHECK(gin_mem_alloc((size_t)2 * nranks * MAX_TOKENS * HIDDEN * 2,
                       (void **)&d->y));
  TCHECK(gin_mem_alloc((size_t)MAX_TOKENS * HIDDEN * 2, (void **)&d->out));
}

static void dev_free(dev_in_t *d) {
  TCHECK(gin_mem_free(d->x));
  TCHECK(gin_mem_free(d->idx));
  TCHECK(gin_mem_free(d->w));
  TCHECK(gin_mem_free(d->y));
  TCHECK(gin_mem_free(d->out));
}

/* Too many tokens: refused, nothing run (the next steps still match). */
static int token_cases(gin_comm_t world, int rank, int nranks) {
  int fails = 0;
  gin_ep_config_t cfg = good_config(nranks);
  gin_ep_t ep;
  TCHECK(gin_ep_create(world, &cfg, &ep));
  dev_in_t d;
  dev_alloc(nranks, &d);
  fails += good_step(world, ep, rank, nranks, 101, &d);
  gin_ep_recv_t recv, before;
  memset(&recv, 0xab, sizeof recv);
  before = recv;
  EXPECT(
      gin_ep_dispatch(ep, d.x, d.idx, MAX_TOKENS + 1, &recv, NULL, GIN_EP_BOTH),
      GIN_ERR_INVALID, "tokens");
  EXPECT(gin_ep_dispatch(ep, d.x, d.idx, -1, &recv, NULL, GIN_EP_BOTH),
         GIN_ERR_INVALID, "tokens");
  EXPECT(
      gin_ep_dispatch(ep, d.x, d.idx, MAX_TOKENS + 1, &recv, NULL, GIN_EP_SEND),
      GIN_ERR_INVALID, "tokens");
  if (memcmp(&recv, &before, sizeof recv) != 0) {
    fprintf(stderr, "rank %d: a refused dispatch wrote *recv\n", rank);
    fails++;
  }
  EXPECT(gin_ep_combine(ep, d.y, d.idx, d.w, MAX_TOKENS + 1, d.out, NULL,
                        GIN_EP_BOTH),
         GIN_ERR_INVALID, "tokens");
  TCHECK(gin_stream_synchronize(0));
  TCHECK(gin_comm_get_async_error(world));
  /* Both buffer sets, after the refused calls. */
  fails += good_step(world, ep, rank, nranks, 102, &d);
  fails += good_step(world, ep, rank, nranks, 103, &d);
  dev_free(&d);
  TCHECK(gin_ep_destroy(ep));
  return fails;
}

/* Bad options: refused with the option named, nothing run; a split
 * dispatch whose receive phase's options differ is refused and can still
 * be received; good steps follow. */
static int option_cases(gin_comm_t world, int rank, int nranks) {
  int fails = 0;
  gin_ep_config_t cfg = good_config(nranks);
  gin_ep_t ep;
  TCHECK(gin_ep_create(world, &cfg, &ep));
  dev_in_t d;
  dev_alloc(nranks, &d);
  gin_ep_recv_t recv;
  gin_ep_dispatch_opts_t o;
  struct {
    int field, value;
    const char *words;
  } bad[] = {
      {0, GIN_EP_PAYLOAD_BF16, "bf16 payload"},
      {0, 7, "payload 7"},
      {1, 2, "round_scale 2"},
      {2, GIN_EP_SCALES_UE8M0, "needs round_scale"},
      {2, -1, "scale_layout -1"},
      {3, 2, "layout 2"},
      {4, 3, "idx64 3"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memset(&o, 0, sizeof o);
    int *f[5] = {&o.payload, &o.round_scale, &o.scale_layout, &o.layout,
                 &o.idx64};
    *f[bad[i].field] = bad[i].value;
    EXPECT(gin_ep_dispatch_ex(ep, d.x, d.idx, 1, &o, &recv, NULL, GIN_EP_BOTH),
           GIN_ERR_INVALID, bad[i].words);
  }
  /* A receive phase whose options are not its send's. */
  memset(&o, 0, sizeof o);
  o.layout = GIN_EP_LAYOUT_PACKED;
  TCHECK(gin_ep_dispatch_ex(ep, d.x, d.idx, 0, &o, &recv, NULL, GIN_EP_SEND));
  o.layout = GIN_EP_LAYOUT_PAIRS;
  EXPECT(gin_ep_dispatch_ex(ep, d.x, d.idx, 0, &o, &recv, NULL, GIN_EP_RECV),
         GIN_ERR_INVALID, "layout differs");
  o.layout = GIN_EP_LAYOUT_PACKED;
  TCHECK(gin_ep_dispatch_ex(ep, d.x, d.idx, 0, &o, &recv, NULL, GIN_EP_RECV));
  gin_ep_combine_opts_t co = {2};
  EXPECT(
      gin_ep_combine_ex(ep, d.y, d.idx, d.w, 0, &co, d.out, NULL, GIN_EP_BOTH),
      GIN_ERR_INVALID, "idx64 2");
  TCHECK(gin_ep_combine(ep, d.y, d.idx, d.w, 0, d.out, NULL, GIN_EP_BOTH));
  TCHECK(gin_stream_synchronize(0));
  TCHECK(gin_comm_get_async_error(world));
  fails += good_step(world, ep, rank, nranks, 104, &d);
  fails += good_step(world, ep, rank, nranks, 105, &d);
  TCHECK(gin_ep_destroy(ep));
  /* A buffer whose dispatches choose: each must say what it sends. */
  cfg.fp8 = GIN_EP_FP8_ANY;
  TCHECK(gin_ep_create(world, &cfg, &ep));
  memset(&o, 0, sizeof o);
  EXPECT(gin_ep_dispatch_ex(ep, d.x, d.idx, 1, &o, &recv, NULL, GIN_EP_BOTH),
         GIN_ERR_INVALID, "GIN_EP_FP8_ANY");
  o.payload = GIN_EP_PAYLOAD_BF16;
  o.scale_layout = GIN_EP_SCALES_COLS;
  EXPECT(gin_ep_dispatch_ex(ep, d.x, d.idx, 1, &o, &recv, NULL, GIN_EP_BOTH),
         GIN_ERR_INVALID, "needs an fp8 payload");
  TCHECK(gin_stream_synchronize(0));
  TCHECK(gin_comm_get_async_error(world));
  dev_free(&d);
  TCHECK(gin_ep_destroy(ep));
  return fails;
}

/* A fresh communicator over the same ranks (rank 0 makes the uid). */
static gin_comm_t sub_comm(gin_comm_t world, int rank, int nranks,
                           int timeout_ms) {
  gin_unique_id_t *ids = (gin_unique_id_t *)calloc((size_t)nranks, sizeof *ids);
  gin_unique_id_t mine;
  memset(&mine, 0, sizeof mine);
  if (rank == 0) TCHECK(gin_get_unique_id(nranks, &mine));
  TCHECK(gin_comm_allgather(world, &mine, ids, sizeof mine));
  gin_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.size = sizeof cfg;
  cfg.timeout_ms = timeout_ms;
  gin_comm_t c;
  TCHECK(gin_comm_init(&c, nranks, rank, &ids[0], &cfg));
  free(ids);
  return c;
}

/* The last rank passes what it should not, and every rank learns of it
 * through gin_comm_get_async_error: an expert id out of range (payload 0),
 * power-of-two scales where the others' are not (payload 2), or
 * (payload 1) an fp8 payload where the others send bf16 on a
 * GIN_EP_FP8_ANY buffer, which every receiver of the other format's rows
 * names. */
static int async_case(gin_comm_t world, int rank, int nranks, int payload) {
  int fails = 0, bad_rank = nranks - 1;
  gin_comm_t sub = sub_comm(world, rank, nranks, 20000);
  gin_ep_config_t cfg = good_config(nranks);
  if (payload) cfg.fp8 = GIN_EP_FP8_ANY;
  const char *words = payload == 2 ? "power-of-two" /* in the formats */
                      : payload    ? "payload"
                                   : "expert";
  gin_ep_t ep;
  TCHECK(gin_ep_create(sub, &cfg, &ep));
  dev_in_t d;
  dev_alloc(nranks, &d);
  ep_ref_input_t in;
  TASSERT(ep_ref_input_make(7, rank, MAX_TOKENS, HIDDEN, TOPK, cfg.num_experts,
                            EP_ROUTE_RANDOM, &in) == 0,
          "inputs");
  if (rank == bad_rank && !payload) in.topk_idx[3 * TOPK + 1] = cfg.num_experts;
  /* Every rank sends rank 0 and the last rank a token (top-k slots 0 and
   * 1), so each of them receives rows of both payloads. */
  in.topk_idx[0] = 0;
  in.topk_idx[1] = cfg.num_experts - 1;
  upload(&in, &d);
  ep_ref_input_free(&in);
  time_t t0 = time(NULL);
  gin_ep_recv_t recv;
  gin_ep_dispatch_opts_t o;
  memset(&o, 0, sizeof o);
  o.payload = rank == bad_rank || payload == 2 ? GIN_EP_PAYLOAD_FP8
                                               : GIN_EP_PAYLOAD_BF16;
  o.round_scale = payload == 2 && rank == bad_rank;
  gin_result_t rc =
      gin_ep_dispatch_ex(ep, d.x, d.idx, MAX_TOKENS, payload ? &o : NULL, &recv,
                         NULL, GIN_EP_BOTH);
  gin_result_t sync = gin_stream_synchronize(0);
  gin_result_t async = gin_comm_get_async_error(sub);
  /* A rank whose own receive found nothing wrong (with 3 or more ranks
   * one may get rows of its own format only) learns of the failure from
   * the abort, which may come after its dispatch ended: ask again every
   * 10 ms, for up to 10 s. */
  for (int i = 0; i < 1000 && async == GIN_SUCCESS; i++) {
    usleep(10000);
    async = gin_comm_get_async_error(sub);
  }
  const char *msg = gin_last_error();
  long secs = (long)(time(NULL) - t0);
  /* Expert out of range: found by its own rank. Payloads: rank 0 and the
   * last rank each get rows of the other kind; whoever records first
   * aborts the others. */
  int named = async == GIN_ERR_INVALID && strstr(msg, words) != NULL;
  int ok = (rank == bad_rank && !payload) ? named
                                          : named || async == GIN_ERR_ABORTED;
  if (!ok || sync != GIN_SUCCESS) {
    fprintf(stderr,
            "rank %d: %s (on rank %d): dispatch %s, sync %s, async %s '%s' "
            "(wanted %s)\n",
            rank, payload ? "payloads differ" : "expert id out of range",
            bad_rank, gin_strerror(rc), gin_strerror(sync), gin_strerror(async),
            msg,
            rank == bad_rank && !payload ? "INVALID naming it"
                                         : "INVALID naming it, or ABORTED");
    fails++;
  }
  /* Someone named it. */
  int *all = (int *)calloc((size_t)nranks, sizeof(int));
  TCHECK(gin_comm_allgather(world, &named, all, sizeof(int)));
  int any = 0;
  for (int r = 0; r < nranks; r++)
    any |= all[r];
  free(all);
  if (!any) {
    fprintf(stderr, "rank %d: no rank's error named the %s\n", rank, words);
    fails++;
  }
  if (secs > 15) {
    fprintf(stderr, "rank %d: the failed dispatch took %ld s\n", rank, secs);
    fails++;
  }
  /* The communicator is aborted: tear down locally, whatever it says. */
  (void)gin_ep_destroy(ep);
  dev_free(&d);
  TCHECK(gin_comm_destroy(sub));
  return fails;
}

int main(void) {
  test_require_device();
  int rank, nranks;
  gin_comm_t world = test_world_init(&rank, &nranks, 2);
  int total = 0;
  const char *names[6] = {"bad configurations", "too many tokens",
                          "bad options",        "expert id out of range",
                          "payloads differ",    "round_scale differs"};
  for (int i = 0; i < 6; i++) {
    int f = i == 0   ? config_cases(world, rank, nranks)
            : i == 1 ? token_cases(world, rank, nranks)
            : i == 2 ? option_cases(world, rank, nranks)
                     : async_case(world, rank, nranks, i - 3);
    TCHECK(gin_comm_barrier(world));
    if (rank == 0 || f) printf("%-32s %s\n", names[i], f ? "FAIL" : "ok");
    total += f;
  }
  int *all = (int *)calloc((size_t)nranks, sizeof(int));
  TCHECK(gin_comm_allgather(world, &total, all, sizeof(int)));
  int sum = 0;
  for (int r = 0; r < nranks; r++)
    sum += all[r];
  free(all);
  TCHECK(gin_comm_destroy(world));
  if (rank == 0) printf("test_ep_badinput: %s\n", sum ? "FAILED" : "passed");
  return sum ? 1 : 0;
}
