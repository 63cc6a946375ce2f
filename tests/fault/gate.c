/*
 * Direct writes stop once a communicator aborted (gin_devcomm_t.gate, the
 * guard against writing into a dead peer's memory after its teardown).
 * On a communicator of its own (the world one coordinates and is never
 * aborted), every rank first runs a kernel of direct gin_put (with a
 * signal), gin_put_value, gin_signal and gin_barrier to its next rank,
 * issued by a thread, a warp and a block: all succeed and the bytes
 * arrive. Then rank 0 calls gin_comm_abort. Each rank retries the kernel
 * (new bytes each time) until every call returns GIN_ERR_ABORTED, which
 * must happen within GATE_BOUND_MS; after that a kernel with yet other
 * bytes must be refused the same way, its value put must not land and
 * none of its signals may arrive (a put's own bytes may: it acts on the
 * gate after its copy, gin_dev_shut_); the report names rank 0.
 *   ginrun -n N gate_host   (N >= 2 on one host: the direct path)
 * Prints "gate: rank R: OK ..." or "... FAIL ...", exit 0 pass, 1 fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault_util.h"
#include "test_common.h"

#define SLOT 64            /* window: source | put dest | value dest */
#define NCALLS 4           /* put, put_value, signal, barrier */
#define GATE_BOUND_MS 2000 /* abort seen -> every direct write refused */
#define LAST_ROUND 0xffff  /* the round after the refusals */

static const gin_coop_t coops[] = {GIN_COOP_THREAD, GIN_COOP_WARP,
                                   GIN_COOP_BLOCK};

typedef struct kargs {
  gin_devcomm_t dc;
  gin_window_t win;
  uint64_t value;
  gin_coop_t coop;
  int *rc_out; /* [NCALLS] */
} kargs_t;

/* This rank's signals 0 and 1 into rc_out (as two uint64). */
GIN_KERNEL(k_sigs, kargs_t) {
  uint64_t *out = (uint64_t *)args.rc_out;
  out[0] = gin_signal_read(&args.dc, 0);
  out[1] = gin_signal_read(&args.dc, 1);
}

GIN_KERNEL(k_gate, kargs_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int peer = (dc->rank + 1) % dc->nranks, rc[NCALLS];
  rc[0] = gin_put(dc, 0, world, peer, args.win, SLOT, args.win, 0, SLOT,
                  gin_remote_signal_inc(0), gin_local_none(), args.coop);
  rc[1] = gin_put_value(dc, 0, world, peer, args.win, 2 * SLOT, args.value, 8,
                        gin_remote_none(), args.coop);
  rc[2] = gin_signal(dc, 0, world, peer, gin_remote_signal_inc(1), args.coop);
  rc[3] = gin_barrier(dc, world, 0, args.coop);
  if (gin_thread_idx() == 0)
    for (int i = 0; i < NCALLS; i++)
      args.rc_out[i] = rc[i];
}

static double now_ms(void) { return (double)now_ns() / 1e6; }

typedef struct run {
  int rank, fails;
  gin_comm_t c;
  gin_devcomm_t dc;
  gin_window_t win;
  char *mem;
  int *rcs_dev; /* [NCALLS] ints, or two uint64 */
} run_t;

#define FAIL(r, ...) FAULT_FAIL("gate", r, __VA_ARGS__)

/* The value a kernel sends: its round, coop and sender, in every byte
 * position that matters. */
static uint64_t value_of(int round, int coop, int rank) {
  return 0x6761746500000000ull | (uint64_t)round << 16 | (uint64_t)coop << 8 |
         (uint64_t)rank;
}

/* Fills the source slot with the value, runs the kernel, returns how
 * many of its calls returned GIN_ERR_ABORTED (-1: any other failure). */
static int gate_kernel(run_t *r, int coop, uint64_t v) {
  uint64_t src[SLOT / 8];
  for (int i = 0; i < SLOT / 8; i++)
    src[i] = v;
  TCHECK(gin_mem_copy(r->mem, src, SLOT));
  kargs_t a = {r->dc, r->win, v, coops[coop], r->rcs_dev};
  TCHECK(gin_launch(k_gate, 1, test_block_threads(coops[coop]), 0, &a));
  TCHECK(gin_stream_synchronize(0));
  int rcs[NCALLS], refused = 0;
  TCHECK(gin_mem_copy(rcs, r->rcs_dev, sizeof rcs));
  for (int i = 0; i < NCALLS; i++) {
    if (rcs[i] == GIN_ERR_ABORTED)
      refused++;
    else if (rcs[i] != GIN_SUCCESS)
      return -1;
  }
  return refused;
}

/* Whether this rank's destination slots hold the value: the put's
 * (put) or the value put's. */
static int arrived(run_t *r, uint64_t v, int put) {
  uint64_t got[2 * SLOT / 8];
  TCHECK(gin_mem_copy(got, r->mem + SLOT, sizeof got));
  if (!put) return got[SLOT / 8] == v;
  for (int i = 0; i < SLOT / 8; i++)
    if (got[i] != v) return 0;
  return 1;
}

/* This rank's signals 0 and 1. */
static void signals(run_t *r, uint64_t out[2]) {
  kargs_t a = {r->dc, r->win, 0, GIN_COOP_THREAD, r->rcs_dev};
  TCHECK(gin_launch(k_sigs, 1, 1, 0, &a));
  TCHECK(gin_stream_synchronize(0));
  TCHECK(gin_mem_copy(out, r->rcs_dev, 2 * sizeof(uint64_t)));
}

int main(void) {
  test_require_device();
  int nranks = 0;
  run_t r;
  memset(&r, 0, sizeof r);
  gin_comm_t world = test_world_init(&r.rank, &nranks, 2);
  r.c = test_comm_fresh(world, r.rank, nranks);
  TCHECK(gin_mem_alloc(3 * SLOT, (void **)&r.mem));
  TCHECK(gin_mem_alloc(sizeof(int) * NCALLS + 2 * sizeof(uint64_t),
                       (void **)&r.rcs_dev));
  TCHECK(gin_window_register(r.c, r.mem, 3 * SLOT, &r.win));
  gin_devcomm_reqs_t reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.contexts = 1;
  reqs.signals = 2;
  TCHECK(gin_devcomm_create(r.c, &reqs, &r.dc));
  int prev = (r.rank + nranks - 1) % nranks, ncoops = 3;

  /* Before the abort: every call succeeds and the bytes arrive. */
  for (int k = 0; k < ncoops; k++) {
    TCHECK(gin_comm_barrier(world));
    int refused = gate_kernel(&r, k, value_of(0, k, r.rank));
    TCHECK(gin_comm_barrier(world));
    if (refused != 0)
      FAIL(&r, "%s kernel before the abort: %d refused",
           test_coop_name(coops[k]), refused);
    else if (!arrived(&r, value_of(0, k, prev), 1) ||
             !arrived(&r, value_of(0, k, prev), 0))
      FAIL(&r, "%s kernel before the abort: rank %d's bytes missing",
           test_coop_name(coops[k]), prev);
  }

  TCHECK(gin_comm_barrier(world));
  if (r.rank == 0) TCHECK(gin_comm_abort(r.c));
  /* Every rank learns of it (shared abort words, the peer watch)... */
  double t0 = now_ms();
  while (gin_comm_get_async_error(r.c) != GIN_ERR_ABORTED &&
         now_ms() - t0 < GATE_BOUND_MS)
    usleep(1000);
  /* ... and then its direct writes stop: retried until refused. */
  double worst = 0;
  int round = 1;
  for (int k = 0; k < ncoops; k++) {
    double t1 = now_ms();
    int refused;
    while ((refused = gate_kernel(&r, k, value_of(round++, k, r.rank))) !=
               NCALLS &&
           refused >= 0 && now_ms() - t0 < GATE_BOUND_MS)
      usleep(5000);
    if (refused != NCALLS) {
      FAIL(&r, "%s kernel: %d of %d calls refused %.0f ms after the abort",
           test_coop_name(coops[k]), refused, NCALLS, now_ms() - t0);
      continue;
    }
    if (now_ms() - t1 > worst) worst = now_ms() - t1;
  }
  /* Once refused, nothing arrives: each coop's kernel in turn, the same
   * round on every rank (the retries above took different numbers). */
  for (int k = 0; k < ncoops; k++) {
    uint64_t sig0[2], sig1[2], v = value_of(LAST_ROUND, k, r.rank);
    TCHECK(gin_comm_barrier(world));
    signals(&r, sig0);
    TCHECK(gin_comm_barrier(world));
    int refused = gate_kernel(&r, k, v);
    if (refused != NCALLS)
      FAIL(&r, "%s kernel after the gate: %d of %d calls refused",
           test_coop_name(coops[k]), refused, NCALLS);
    TCHECK(gin_comm_barrier(world));
    signals(&r, sig1);
    v = value_of(LAST_ROUND, k, prev);
    if (arrived(&r, v, 0))
      FAIL(&r, "rank %d's %s value put landed after its writes were refused",
           prev, test_coop_name(coops[k]));
    if (sig1[0] != sig0[0] || sig1[1] != sig0[1])
      FAIL(&r,
           "%s: signals moved after the writes were refused: %llu %llu "
           "-> %llu %llu",
           test_coop_name(coops[k]), (unsigned long long)sig0[0],
           (unsigned long long)sig0[1], (unsigned long long)sig1[0],
           (unsigned long long)sig1[1]);
  }
  /* The first error recorded: a refusal, or a retry's barrier wait that
   * the abort stopped; either names the aborter. */
  gin_result_t rc = gin_comm_get_async_error(r.c);
  if (rc != GIN_ERR_ABORTED || !strstr(gin_last_error(), "aborted by rank 0"))
    FAIL(&r, "report: %s: %s", gin_strerror(rc), gin_last_error());

  TCHECK(gin_devcomm_destroy(r.c, &r.dc));
  rc = gin_window_deregister(r.c, r.win);
  if (rc != GIN_SUCCESS && rc != GIN_ERR_ABORTED)
    FAIL(&r, "gin_window_deregister: %s", gin_strerror(rc));
  TCHECK(gin_comm_destroy(r.c));
  TCHECK(gin_mem_free(r.mem));
  TCHECK(gin_mem_free(r.rcs_dev));
  TCHECK(gin_comm_barrier(world));
  TCHECK(gin_comm_destroy(world));
  if (r.fails) return 1;
  printf("gate: rank %d: OK: direct put, put_value, signal and barrier "
         "(thread, warp, block) refused at most %.1f ms after the abort was "
         "known; no value put or signal landed after\n",
         r.rank, worst);
  return 0;
}
