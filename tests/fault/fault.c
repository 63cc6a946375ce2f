/*
 * A rank killed in the middle of traffic: one rank (the victim) raises
 * SIGKILL from a second thread while it is inside the scenario's calls;
 * every other rank must see its pending call fail with an error naming the
 * dead rank ("rank V (pid P ...) died"), within 2 x GIN_TIMEOUT_MS of the
 * kill, and so must its later calls (host barrier and all-gather, window
 * registration, device communicator and EP buffer creation, a device
 * wait). Then it tears down and checks that nothing is left: every gin
 * memory freed (the windows were released), no TCP socket, no gin memfd,
 * no extra thread (host target).
 *
 *   ginrun -n N fault_host SCENARIO --stamp DIR [--victim V] [--expect E]
 *
 * SCENARIO:
 *   puts         every rank puts 4 KiB with a signal to every other rank,
 *                round after round, each round waited for (direct or proxy
 *                path, as GIN_BACKEND says)
 *   devbarrier   gin_barrier over the world team in a loop
 *   hostbarrier  gin_comm_barrier in a loop
 *   ep           EP dispatch and combine in a loop (the victim dies inside
 *                gin_ep_dispatch)
 *   epn          EP normal mode in a loop: layout, notify, dispatch,
 *                combine (the victim dies inside gin_epn_dispatch)
 * --victim V: the rank that dies (default 1). --expect E: the rank the
 * errors must name (default V; another value makes the test fail, to show
 * that it can). The victim writes the kill time (CLOCK_MONOTONIC) to
 * DIR/killed just before it dies. Each survivor prints one line
 * "fault: rank R: OK ..." or "fault: rank R: FAIL ..."; exit 0 pass, 1 fail.
 * Any further argument (a marker for pgrep) is ignored. FAULT_POLL_ABORT=1
 * in the environment makes the kernels check gin_aborted() every round
 * (a diagnosis: see docs/RELIABILITY.md, Faults, on the cuda target).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fault_util.h"
#include "gin/gin_ep.h"
#include "gin/gin_ep_normal.h"
#include "test_common.h"

#define CHUNK 4096
#define KILL_AFTER_MS 150 /* into the scenario */
#define EP_T 8
#define EP_H 128
#define EP_K 2
#define EPN_C 2 /* normal mode: channels */

/* The normal-mode buffer's configuration: hidden EP_H, top-EP_K, two
 * experts a rank, EPN_C channels of 8-row rings. */
static gin_epn_config_t epn_config(int nranks) {
  gin_epn_config_t c = {EP_H, EP_K, 2 * nranks, EPN_C, 8};
  return c;
}

enum { MODE_PUTS, MODE_BARRIER, MODE_WAIT };

typedef struct kargs {
  gin_devcomm_t dc;
  gin_window_t win;
  int mode;
  int rounds;
  int poll_abort; /* FAULT_POLL_ABORT=1: the kernel checks gin_aborted */
  int *rc_out;    /* gin memory */
} kargs_t;

GIN_KERNEL(k_fault, kargs_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank, n = dc->nranks, rc = GIN_SUCCESS;
  for (int i = 1; i <= args.rounds && rc == GIN_SUCCESS; i++) {
    if (args.poll_abort && gin_aborted(dc)) rc = GIN_ERR_ABORTED;
    if (rc != GIN_SUCCESS) break;
    if (args.mode == MODE_PUTS) {
      for (int p = 0; p < n && rc == GIN_SUCCESS; p++)
        if (p != me)
          rc = gin_put(dc, 0, world, p, args.win, (size_t)me * CHUNK, args.win,
                       (size_t)n * CHUNK, CHUNK, gin_remote_signal_inc(me),
                       gin_local_none(), GIN_COOP_THREAD);
      for (int p = 0; p < n && rc == GIN_SUCCESS; p++)
        if (p != me) rc = gin_signal_wait(dc, p, (uint64_t)i, GIN_COOP_THREAD);
    } else if (args.mode == MODE_BARRIER) {
      rc = gin_barrier(dc, world, 0, GIN_COOP_THREAD);
    } else { /* a signal nobody sends */
      rc = gin_signal_wait(dc, n, 1, GIN_COOP_THREAD);
    }
  }
  *args.rc_out = rc;
}

/* ------------------------------------------------------------ victim */

static volatile int started, in_call;
static char stamp_path[4096];

/* p non-NULL: die inside the call that sets in_call (EP dispatch, host
 * barrier), waiting at most a second for it. */
static void *killer(void *p) {
  while (!__atomic_load_n(&started, __ATOMIC_ACQUIRE))
    usleep(1000);
  usleep(KILL_AFTER_MS * 1000);
  uint64_t until = now_ns() + 1000000000ull;
  while (p && !__atomic_load_n(&in_call, __ATOMIC_ACQUIRE) && now_ns() < until)
    sched_yield();
  stamp_write(stamp_path, now_ns());
  raise(SIGKILL);
  return NULL;
}

/* ---------------------------------------------------------- survivor */

typedef struct run {
  gin_comm_t comm;
  int rank, nranks, expect, fails;
  int64_t timeout_ms;
  uint64_t kill_ns;
  const char *scenario;
  double pending_ms, later_ms; /* since the kill */
  char first_msg[1024];
  char steps[1024]; /* each checked call and when it returned (ms) */
} run_t;

/* Appends "what@ms" to the survivor's steps (when each call returned). */
static void step_note(run_t *r, const char *what, double ms) {
  size_t used = strlen(r->steps);
  snprintf(r->steps + used, sizeof r->steps - used, " %s@%.1f", what, ms);
}

/* A call that must have failed naming the dead rank, in time. */
static void expect_death(run_t *r, const char *what, gin_result_t rc,
                         uint64_t done_ns, int pending) {
  char msg[600], want[48];
  snprintf(msg, sizeof msg, "%s", gin_last_error());
  snprintf(want, sizeof want, "rank %d (pid ", r->expect);
  if (!r->kill_ns) r->kill_ns = stamp_read(stamp_path);
  double ms = r->kill_ns ? (double)((int64_t)(done_ns - r->kill_ns)) / 1e6 : -1;
  step_note(r, what, ms);
  const char *bad = NULL;
  if (rc == GIN_SUCCESS)
    bad = "succeeded";
  else if (!strstr(msg, want) || !strstr(msg, "died"))
    bad = "does not name the dead rank";
  else if (!r->kill_ns)
    bad = "no kill time stamp";
  else if (ms < 0)
    bad = "failed before the kill";
  else if (ms > 2.0 * (double)r->timeout_ms)
    bad = "too late (more than 2 x GIN_TIMEOUT_MS after the kill)";
  if (bad) {
    printf("fault: rank %d: FAIL %s: %s: %s -> %s after %.1f ms: '%s' (want "
           "'%s... died')\n",
           r->rank, r->scenario, what, bad, gin_strerror(rc), ms, msg, want);
    r->fails++;
    return;
  }
  if (pending) {
    r->pending_ms = ms;
    snprintf(r->first_msg, sizeof r->first_msg, "%s -> %s: %s", what,
             gin_strerror(rc), msg);
  } else if (ms > r->later_ms) {
    r->later_ms = ms;
  }
}

#define MUST(r, call)                                                          \
  do {                                                                         \
    gin_result_t rc_ = (call);                                                 \
    if (rc_ != GIN_SUCCESS) {                                                  \
      printf("fault: rank %d: FAIL %s: %s -> %s: %s\n", (r)->rank,             \
             (r)->scenario, #call, gin_strerror(rc_), gin_last_error());       \
      (r)->fails++;                                                            \
    }                                                                          \
  } while (0)

/* Runs a kernel to its end: the kernel's result, else the launch's. */
static gin_result_t run_kernel(gin_comm_t comm, const kargs_t *a) {
  gin_result_t rc = gin_launch(k_fault, 1, 1, 0, a);
  if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
  int krc = GIN_SUCCESS;
  if (rc == GIN_SUCCESS) rc = gin_mem_copy(&krc, a->rc_out, sizeof krc);
  if (rc == GIN_SUCCESS && krc != GIN_SUCCESS)
    rc = gin_comm_get_async_error(comm);
  return rc == GIN_SUCCESS ? krc : rc;
}

typedef struct setup {
  void *mem, *mem2, *ep_mem; /* window memory; for the later register; EP */
  int *rc_dev;
  gin_window_t win;
  gin_devcomm_t dc;
  gin_ep_t ep;
  uint16_t *x, *out;
  int32_t *idx;
  float *w;
  /* normal mode: the buffer, the layout's outputs, a handle and receive
   * arrays for every row that can come (R x T) */
  gin_epn_t epn;
  int32_t *pr, *pe, *counts;
  uint8_t *in_rank;
  gin_epn_handle_t h;
  void *rx;
  float *rw;
  int64_t *ri;
} setup_t;

static void setup_make(run_t *r, setup_t *s) {
  size_t win_bytes = (size_t)(r->nranks + 1) * CHUNK;
  TCHECK(gin_mem_alloc(win_bytes, &s->mem));
  TCHECK(gin_mem_alloc(win_bytes, &s->mem2));
  TCHECK(gin_mem_alloc(sizeof(int), (void **)&s->rc_dev));
  TCHECK(gin_window_register(r->comm, s->mem, win_bytes, &s->win));
  gin_devcomm_reqs_t reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.signals = r->nranks + 1;
  reqs.contexts = 1;
  reqs.barriers = 1;
  TCHECK(gin_devcomm_create(r->comm, &reqs, &s->dc));
  int normal = !strcmp(r->scenario, "epn");
  if (strcmp(r->scenario, "ep") != 0 && !normal) return;
  if (normal) {
    int R = r->nranks, E = 2 * R;
    gin_epn_config_t cfg = epn_config(R);
    TCHECK(gin_epn_create(r->comm, &cfg, &s->epn));
    s->pr = (int32_t *)test_dev_alloc((size_t)R * 4);
    s->pe = (int32_t *)test_dev_alloc((size_t)E * 4);
    s->counts = (int32_t *)test_dev_alloc((size_t)(1 + E / R) * 4);
    s->in_rank = (uint8_t *)test_dev_alloc((size_t)EP_T * R);
    s->h.send_head = (int32_t *)test_dev_alloc((size_t)EP_T * R * 4);
    s->h.chan_prefix = (int32_t *)test_dev_alloc((size_t)R * EPN_C * 4);
    s->h.rank_prefix = (int32_t *)test_dev_alloc((size_t)R * 4);
    s->h.recv_chan_prefix = (int32_t *)test_dev_alloc((size_t)R * EPN_C * 4);
    s->h.capacity = R * EP_T;
    s->h.recv_src_idx = (int32_t *)test_dev_alloc((size_t)R * EP_T * 4);
    s->rx = test_dev_alloc((size_t)R * EP_T * EP_H * 2);
    s->rw = (float *)test_dev_alloc((size_t)R * EP_T * EP_K * 4);
    s->ri = (int64_t *)test_dev_alloc((size_t)R * EP_T * EP_K * 8);
  } else {
    gin_ep_config_t cfg = {EP_T, EP_H, EP_K, 2 * r->nranks, 0};
    TCHECK(gin_ep_create(r->comm, &cfg, &s->ep));
  }
  uint16_t x[EP_T * EP_H];
  int32_t idx[EP_T * EP_K];
  float w[EP_T * EP_K];
  for (int t = 0; t < EP_T; t++) {
    for (int c = 0; c < EP_H; c++)
      x[t * EP_H + c] = gin_float_to_bf16((float)(r->rank * 100 + t));
    for (int k = 0; k < EP_K; k++) {
      idx[t * EP_K + k] = (r->rank + t + k) % (2 * r->nranks);
      w[t * EP_K + k] = 1.0f / EP_K;
    }
  }
  TCHECK(gin_mem_alloc(sizeof x, (void **)&s->x));
  TCHECK(gin_mem_alloc(sizeof x, (void **)&s->out));
  TCHECK(gin_mem_alloc(sizeof idx, (void **)&s->idx));
  TCHECK(gin_mem_alloc(sizeof w, (void **)&s->w));
  TCHECK(gin_mem_copy(s->x, x, sizeof x));
  TCHECK(gin_mem_copy(s->idx, idx, sizeof idx));
  TCHECK(gin_mem_copy(s->w, w, sizeof w));
}

static kargs_t kargs(const setup_t *s, int mode, int rounds) {
  kargs_t a;
  memset(&a, 0, sizeof a);
  a.dc = s->dc;
  a.win = s->win;
  a.mode = mode;
  a.rounds = rounds;
  a.poll_abort = getenv("FAULT_POLL_ABORT") != NULL;
  a.rc_out = s->rc_dev;
  return a;
}

/* One EP step: dispatch (the victim dies in it), then combine. */
static gin_result_t ep_step(run_t *r, setup_t *s) {
  gin_ep_recv_t recv;
  __atomic_store_n(&in_call, 1, __ATOMIC_RELEASE);
  gin_result_t rc =
      gin_ep_dispatch(s->ep, s->x, s->idx, EP_T, &recv, NULL, GIN_EP_BOTH);
  if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
  __atomic_store_n(&in_call, 0, __ATOMIC_RELEASE);
  if (rc == GIN_SUCCESS) rc = gin_comm_get_async_error(r->comm);
  if (rc == GIN_SUCCESS)
    rc = gin_ep_combine(s->ep, (const uint16_t *)recv.x, s->idx, s->w, EP_T,
                        s->out, NULL, GIN_EP_BOTH);
  if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
  if (rc == GIN_SUCCESS) rc = gin_comm_get_async_error(r->comm);
  return rc;
}

/* One normal-mode step: layout, counts, dispatch (the victim dies in it),
 * then combine. */
static gin_result_t epn_step(run_t *r, setup_t *s) {
  gin_result_t rc = gin_epn_layout(s->epn, s->idx, 0, EP_T, EP_K, s->pr, s->pe,
                                   s->in_rank, NULL);
  if (rc == GIN_SUCCESS)
    rc = gin_epn_notify(s->epn, s->in_rank, s->pe, EP_T, EPN_C, &s->h,
                        s->counts, NULL);
  gin_epn_dispatch_args_t da;
  memset(&da, 0, sizeof da);
  da.x = s->x;
  da.topk_idx = s->idx;
  da.topk_weights = s->w;
  da.num_topk = EP_K;
  da.chunk = 2;
  da.recv_x = s->rx;
  da.recv_topk_idx = s->ri;
  da.recv_topk_weights = s->rw;
  __atomic_store_n(&in_call, 1, __ATOMIC_RELEASE);
  if (rc == GIN_SUCCESS) rc = gin_epn_dispatch(s->epn, &da, &s->h, NULL);
  if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
  __atomic_store_n(&in_call, 0, __ATOMIC_RELEASE);
  if (rc == GIN_SUCCESS) rc = gin_comm_get_async_error(r->comm);
  gin_epn_combine_args_t ca;
  memset(&ca, 0, sizeof ca);
  ca.x = (const uint16_t *)s->rx;
  ca.chunk = 2;
  ca.out = s->out;
  if (rc == GIN_SUCCESS) rc = gin_epn_combine(s->epn, &ca, &s->h, NULL);
  if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
  if (rc == GIN_SUCCESS) rc = gin_comm_get_async_error(r->comm);
  return rc;
}

/* The scenario, until it fails (the victim never returns from it). */
static gin_result_t scenario_run(run_t *r, setup_t *s, const char **what) {
  const char *sc = r->scenario;
  __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
  if (!strcmp(sc, "puts") || !strcmp(sc, "devbarrier")) {
    kargs_t a =
        kargs(s, !strcmp(sc, "puts") ? MODE_PUTS : MODE_BARRIER, 1 << 30);
    *what = !strcmp(sc, "puts") ? "kernel of puts with signals"
                                : "kernel of device barriers";
    return run_kernel(r->comm, &a);
  }
  gin_result_t rc = GIN_SUCCESS;
  *what = !strcmp(sc, "ep")    ? "EP dispatch/combine"
          : !strcmp(sc, "epn") ? "EP normal-mode dispatch/combine"
                               : "gin_comm_barrier";
  for (long i = 0; i < (1L << 30) && rc == GIN_SUCCESS; i++) {
    if (!strcmp(sc, "ep")) {
      rc = ep_step(r, s);
    } else if (!strcmp(sc, "epn")) {
      rc = epn_step(r, s);
    } else {
      __atomic_store_n(&in_call, 1, __ATOMIC_RELEASE);
      rc = gin_comm_barrier(r->comm);
      __atomic_store_n(&in_call, 0, __ATOMIC_RELEASE);
    }
  }
  return rc;
}

/* Every later call fails too, naming the dead rank. */
static void later_calls(run_t *r, setup_t *s) {
  size_t win_bytes = (size_t)(r->nranks + 1) * CHUNK;
  int all[64], mine = r->rank;
  gin_window_t w2;
  gin_devcomm_t dc2;
  gin_ep_t ep2;
  gin_ep_config_t cfg = {EP_T, EP_H, EP_K, 2 * r->nranks, 0};
  gin_result_t rc = gin_comm_barrier(r->comm);
  expect_death(r, "later gin_comm_barrier", rc, now_ns(), 0);
  rc = gin_comm_allgather(r->comm, &mine, all, sizeof mine);
  expect_death(r, "later gin_comm_allgather", rc, now_ns(), 0);
  rc = gin_window_register(r->comm, s->mem2, win_bytes, &w2);
  expect_death(r, "later gin_window_register", rc, now_ns(), 0);
  rc = gin_devcomm_create(r->comm, NULL, &dc2);
  expect_death(r, "later gin_devcomm_create", rc, now_ns(), 0);
  rc = gin_ep_create(r->comm, &cfg, &ep2);
  expect_death(r, "later gin_ep_create", rc, now_ns(), 0);
  gin_epn_t epn2;
  gin_epn_config_t ncfg = epn_config(r->nranks);
  rc = gin_epn_create(r->comm, &ncfg, &epn2);
  expect_death(r, "later gin_epn_create", rc, now_ns(), 0);
  kargs_t a = kargs(s, MODE_WAIT, 1);
  rc = run_kernel(r->comm, &a);
  expect_death(r, "later device wait", rc, now_ns(), 0);
  rc = gin_comm_get_async_error(r->comm);
  expect_death(r, "gin_comm_get_async_error", rc, now_ns(), 0);
}

/* Teardown on the aborted communicator: frees everything. */
static void teardown(run_t *r, setup_t *s, int tasks0) {
  gin_result_t rc;
  if (s->ep) { /* releases everything, and says why it was not collective */
    rc = gin_ep_destroy(s->ep);
    expect_death(r, "gin_ep_destroy", rc, now_ns(), 0);
  }
  if (s->epn) { /* the same */
    rc = gin_epn_destroy(s->epn);
    expect_death(r, "gin_epn_destroy", rc, now_ns(), 0);
    void *arrays[] = {s->pr,
                      s->pe,
                      s->counts,
                      s->in_rank,
                      s->h.send_head,
                      s->h.chan_prefix,
                      s->h.rank_prefix,
                      s->h.recv_chan_prefix,
                      s->h.recv_src_idx,
                      s->rx,
                      s->rw,
                      s->ri};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
      MUST(r, gin_mem_free(arrays[i]));
  }
  MUST(r, gin_devcomm_destroy(r->comm, &s->dc)); /* local, succeeds */
  rc = gin_window_deregister(r->comm, s->win);
  expect_death(r, "gin_window_deregister", rc, now_ns(), 0);
  MUST(r, gin_comm_destroy(r->comm));
  /* The windows were released: the memory can go. */
  MUST(r, gin_mem_free(s->mem));
  MUST(r, gin_mem_free(s->mem2));
  MUST(r, gin_mem_free(s->rc_dev));
  if (s->x) {
    MUST(r, gin_mem_free(s->x));
    MUST(r, gin_mem_free(s->out));
    MUST(r, gin_mem_free(s->idx));
    MUST(r, gin_mem_free(s->w));
  }
  char left[1024];
  int n = leftovers(left, sizeof left);
  if (n != 0) {
    printf("fault: rank %d: FAIL %s: %d descriptor(s) left:%s\n", r->rank,
           r->scenario, n, left);
    r->fails++;
  }
  /* The watcher and proxy threads are gone (the cuda runtime keeps its
   * own threads: host target only). */
#if GIN_ARCH_CUDA
  int tasks = tasks0;
#else
  int tasks = count_tasks();
#endif
  if (tasks > tasks0) {
    printf("fault: rank %d: FAIL %s: %d threads after teardown, %d before "
           "init\n",
           r->rank, r->scenario, tasks, tasks0);
    r->fails++;
  }
}

/* --late-call-ms N: N ms after the kill (the dead client's teardown
 * under MPS is over by ~200 ms), this rank's device must still work: an
 * allocation, a copy there and back, a free. On the GPU under MPS a
 * survivor's context can be lost at that teardown (docs/RELIABILITY.md);
 * calls made before it do not show it. */
static void late_call(run_t *r, int late_ms) {
  if (!r->kill_ns) r->kill_ns = stamp_read(stamp_path);
  if (!r->kill_ns) { /* no time to count from: the check would be early */
    printf("fault: rank %d: FAIL %s: no kill time stamp for the late call\n",
           r->rank, r->scenario);
    r->fails++;
    return;
  }
  uint64_t at = r->kill_ns + (uint64_t)late_ms * 1000000ull;
  while (now_ns() < at)
    usleep(1000);
  void *dev = NULL;
  uint64_t out = 0x5eed, back = 0;
  MUST(r, gin_mem_alloc(sizeof out, &dev));
  if (dev) {
    MUST(r, gin_mem_copy(dev, &out, sizeof out));
    MUST(r, gin_mem_copy(&back, dev, sizeof back));
    MUST(r, gin_mem_free(dev));
  }
  if (back != out) {
    printf("fault: rank %d: FAIL %s: a copy %d ms after the kill read %#llx "
           "back, not %#llx\n",
           r->rank, r->scenario, late_ms, (unsigned long long)back,
           (unsigned long long)out);
    r->fails++;
  }
  step_note(r, "late call", (double)(int64_t)(now_ns() - r->kill_ns) / 1e6);
}

int main(int argc, char **argv) {
  test_require_device();
  run_t r;
  memset(&r, 0, sizeof r);
  int victim = 1, expect = -1, late_ms = -1;
  const char *dir = NULL;
  r.scenario = argc > 1 ? argv[1] : "";
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--victim") && i + 1 < argc)
      victim = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--expect") && i + 1 < argc)
      expect = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--stamp") && i + 1 < argc)
      dir = argv[++i];
    else if (!strcmp(argv[i], "--late-call-ms") && i + 1 < argc)
      late_ms = atoi(argv[++i]);
  }
  if (strcmp(r.scenario, "puts") && strcmp(r.scenario, "devbarrier") &&
      strcmp(r.scenario, "hostbarrier") && strcmp(r.scenario, "ep") &&
      strcmp(r.scenario, "epn")) {
    fprintf(stderr, "usage: fault SCENARIO --stamp DIR [--victim V] "
                    "[--expect E] [--late-call-ms N] (puts, devbarrier, "
                    "hostbarrier, ep, epn)\n");
    return 2;
  }
  TASSERT(dir, "--stamp DIR is required");
  snprintf(stamp_path, sizeof stamp_path, "%s/killed", dir);
  r.timeout_ms = fault_timeout_ms();
  int tasks0 = fault_task_baseline();
  TASSERT(tasks0 > 0, "a first thread");

  TCHECK(gin_comm_init_from_env(&r.comm, NULL));
  TCHECK(gin_comm_rank(r.comm, &r.rank));
  TCHECK(gin_comm_size(r.comm, &r.nranks));
  TASSERT(r.nranks >= 2 && r.nranks <= 64 && victim >= 0 && victim < r.nranks,
          "2..64 ranks and a victim among them");
  r.expect = expect >= 0 ? expect : victim;
  setup_t s;
  memset(&s, 0, sizeof s);
  setup_make(&r, &s);
  TCHECK(gin_comm_barrier(r.comm));

  pthread_t th;
  if (r.rank == victim)
    TASSERT(!pthread_create(&th, NULL, killer,
                            strcmp(r.scenario, "ep") &&
                                    strcmp(r.scenario, "epn") &&
                                    strcmp(r.scenario, "hostbarrier")
                                ? NULL
                                : &r),
            "killer thread");
  const char *what = "";
  gin_result_t rc = scenario_run(&r, &s, &what);
  uint64_t done = now_ns();
  if (r.rank == victim) {
    printf("fault: rank %d: FAIL %s: the victim is still alive: %s -> %s\n",
           r.rank, r.scenario, gin_strerror(rc), gin_last_error());
    return 1;
  }
  expect_death(&r, what, rc, done, 1);
  later_calls(&r, &s);
  teardown(&r, &s, tasks0);
  if (late_ms >= 0) late_call(&r, late_ms);
  if (r.fails == 0)
    printf("fault: rank %d: OK %s: rank %d died; pending %s failed %.1f ms "
           "after the kill, later calls by %.1f ms (limit %lld ms): %s\n",
           r.rank, r.scenario, r.expect, what, r.pending_ms, r.later_ms,
           (long long)(2 * r.timeout_ms), r.first_msg);
  /* When each call returned: where a slow one was, after a failure. */
  printf("fault: rank %d: steps (ms after the kill):%s\n", r.rank, r.steps);
  fflush(stdout);
  return r.fails ? 1 : 0;
}
