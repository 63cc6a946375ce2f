/*
 * Network faults that kill nobody: a link cut between two hosts, and a
 * peer that stops reading. A script (tests/fault/linkcut.sh,
 * slowreader.sh) starts the job, does the damage and stamps its time
 * (CLOCK_REALTIME ns, `date +%s%N`) in a file of DIR; every rank checks
 * what its calls report and that it tears down to nothing.
 *
 *   netfault SCENARIO --stamp DIR [--target T] [--own-host] [marker...]
 *
 * linkcut   every rank puts CHUNK bytes with a signal to every other rank,
 *           round after round, each round waited for (GIN_BACKEND=proxy:
 *           tcp between the hosts). The job spans two hosts, ranks
 *           [0, N/2) on one and [N/2, N) on the other; the script cuts
 *           the link between them and stamps DIR/cut. Every rank's pending
 *           call must fail (GIN_ERR_TIMEOUT, _REMOTE or _ABORTED), and its
 *           error (gin_comm_get_async_error) must then name a rank on the
 *           other side as unreachable, never as dead ("died"): nobody died.
 * flap      the same job, every round's bytes a pattern of (round, rank)
 *           checked where they land (two parities of buffers, so that no
 *           round overwrites one still being read), in launches of
 *           FLAP_ROUNDS rounds; between launches the ranks agree
 *           (gin_comm_allgather) whether the script's DIR/stop stamp
 *           exists, and all stop after the same launch. Each rank stamps
 *           DIR/flowing.R once its first launch is through (every
 *           transport connection made: libfabric's are made at a peer's
 *           first message), and DIR/resumed.R once a launch begun after
 *           DIR/flapped is through. The script takes the link down and up
 *           again, each time for less than the timeout, stamps
 *           DIR/flapped, waits for every DIR/resumed.R, then stamps
 *           DIR/stop. Nothing may fail: every round's bytes arrive whole,
 *           rounds go on after the last flap, and teardown is clean.
 * stream    rank 0 puts CHUNK bytes with a signal to every other rank in
 *           turn, as fast as it can, without waiting; the others wait for
 *           its signals. The script SIGSTOPs the target T (default 1; not
 *           0) and stamps DIR/stop: T's proxy stops reading, its socket
 *           buffers and rank 0's fill up. Rank 0's pending call must fail
 *           with GIN_ERR_TIMEOUT naming T ("peer T"; T is alive, so not
 *           GIN_ERR_REMOTE), not another receiver (its
 *           poller stamps DIR/failed.0 when the error is known); the other
 *           receivers' waits must end too (rank 0 no longer sends them
 *           anything: one ring, in order). The script then SIGCONTs T
 *           (stamp DIR/cont), whose pending call must end with an error.
 * Bounds, from the script's stamp: the error is known (a second thread
 * polls gin_comm_get_async_error while the kernel runs) within
 * 2 x GIN_TIMEOUT_MS + MARGIN_MS, and the pending call returns within
 * HOST_SLACK_MS more. --own-host: each rank is a host of its own
 * (GIN_HOSTID), as across machines: no shared memory, tcp to every peer,
 * no abort shared through control pages. Every rank stamps DIR/running.R
 * (and DIR/pid.R) as it launches its kernel. Later calls must fail too,
 * and teardown must succeed and leave no TCP socket, gin memfd or extra
 * thread. Each rank prints "netfault: rank R: OK ..." or "... FAIL ...";
 * exit 0 pass, 1 fail.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault_util.h"
#include "test_common.h"

#define CHUNK (64 * 1024)
#define MARGIN_MS 2000
/* How much later than gin's verdict the pending call may return: a wait
 * in a host-target kernel yields the CPU between polls, and a yield on a
 * loaded machine can take long. Once it yields, the wait reads the abort
 * word on every poll and so notices an abort within milliseconds
 * (docs/RELIABILITY.md); read every 256 polls only, it would notice one
 * seconds late on a loaded machine. The bound stays generous. */
#define HOST_SLACK_MS 8000

enum { MODE_ROUNDS, MODE_SEND, MODE_RECV, MODE_FLAP };

/* The window: [2][nranks] CHUNK places the peers put into (flap: one set
 * per round parity; the other modes use the first), then [2] CHUNK
 * sources. */
#define DST_OFF(n, par, p) (((size_t)(par) * (size_t)(n) + (size_t)(p)) * CHUNK)
#define SRC_OFF(n, par) ((2 * (size_t)(n) + (size_t)(par)) * CHUNK)
#define FLAP_ROUNDS 20
#define FLAP_BAD 1 /* a kernel's result: a wrong word (no gin code) */

typedef struct kargs {
  gin_devcomm_t dc;
  gin_window_t win;
  int mode;
  char *base;        /* the window, this rank's view (flap) */
  uint64_t first;    /* flap: rounds first + 1 .. first + FLAP_ROUNDS */
  int *rc_out;       /* gin memory */
  uint64_t *bad_out; /* flap, gin memory: a wrong word's round, rank, word,
                        value */
} kargs_t;

/* Word j of rank p's bytes in round i (flap). */
GIN_HD_FN uint64_t flap_word(uint64_t i, int p, size_t j) {
  return i << 32 ^ (uint64_t)p << 24 ^ (uint64_t)j;
}

/* One flap round: the pattern into this parity's source, a put with a
 * signal to every peer, a flush (the source is free again two rounds on),
 * every peer's signal, then every peer's bytes checked. */
GIN_DEVICE_FN int flap_round(const kargs_t *a, uint64_t i) {
  const gin_devcomm_t *dc = &a->dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank, n = dc->nranks, par = (int)(i % 2), rc = GIN_SUCCESS;
  uint64_t *src = (uint64_t *)(a->base + SRC_OFF(n, par));
  for (size_t j = 0; j < CHUNK / 8; j++)
    src[j] = flap_word(i, me, j);
  for (int p = 0; p < n && rc == GIN_SUCCESS; p++)
    if (p != me)
      rc = gin_put(dc, 0, world, p, a->win, DST_OFF(n, par, me), a->win,
                   SRC_OFF(n, par), CHUNK, gin_remote_signal_inc(me),
                   gin_local_none(), GIN_COOP_THREAD);
  if (rc == GIN_SUCCESS) rc = gin_flush(dc, 0, GIN_COOP_THREAD);
  for (int p = 0; p < n && rc == GIN_SUCCESS; p++)
    if (p != me) rc = gin_signal_wait(dc, p, i, GIN_COOP_THREAD);
  for (int p = 0; p < n && rc == GIN_SUCCESS; p++) {
    const uint64_t *got = (const uint64_t *)(a->base + DST_OFF(n, par, p));
    for (size_t j = 0; p != me && j < CHUNK / 8 && rc == GIN_SUCCESS; j++)
      if (got[j] != flap_word(i, p, j)) {
        a->bad_out[0] = i;
        a->bad_out[1] = (uint64_t)p;
        a->bad_out[2] = j;
        a->bad_out[3] = got[j];
        rc = FLAP_BAD;
      }
  }
  return rc;
}

GIN_KERNEL(k_netfault, kargs_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank, n = dc->nranks, rc = GIN_SUCCESS;
  size_t src = SRC_OFF(n, 0), dst = DST_OFF(n, 0, me);
  for (uint64_t i = 1; rc == GIN_SUCCESS; i++) {
    if (args.mode == MODE_FLAP) {
      if (i > FLAP_ROUNDS) break;
      rc = flap_round(&args, args.first + i);
    } else if (args.mode == MODE_ROUNDS) {
      for (int p = 0; p < n && rc == GIN_SUCCESS; p++)
        if (p != me)
          rc = gin_put(dc, 0, world, p, args.win, dst, args.win, src, CHUNK,
                       gin_remote_signal_inc(me), gin_local_none(),
                       GIN_COOP_THREAD);
      for (int p = 0; p < n && rc == GIN_SUCCESS; p++)
        if (p != me) rc = gin_signal_wait(dc, p, i, GIN_COOP_THREAD);
    } else if (args.mode == MODE_SEND) {
      for (int p = 0; p < n && rc == GIN_SUCCESS; p++)
        if (p != me)
          rc = gin_put(dc, 0, world, p, args.win, dst, args.win, src, CHUNK,
                       gin_remote_signal_inc(me), gin_local_none(),
                       GIN_COOP_THREAD);
    } else {
      rc = gin_signal_wait(dc, 0, i, GIN_COOP_THREAD);
    }
  }
  *args.rc_out = rc;
}

typedef struct run {
  gin_comm_t comm;
  int rank, nranks, target, fails;
  int64_t timeout_ms;
  const char *scenario, *dir;
  char first[700], last[700];
} run_t;

#define FAIL(r, ...)                                                           \
  do {                                                                         \
    printf("netfault: rank %d: FAIL %s: ", (r)->rank, (r)->scenario);          \
    printf(__VA_ARGS__);                                                       \
    printf("\n");                                                              \
    (r)->fails++;                                                              \
  } while (0)

static void path_of(const run_t *r, const char *name, int rank, char *out,
                    size_t len) {
  if (rank >= 0)
    snprintf(out, len, "%s/%s.%d", r->dir, name, rank);
  else
    snprintf(out, len, "%s/%s", r->dir, name);
}

/* Milliseconds from the script's stamp `name` to wall time t; fails the
 * rank if the stamp is missing. */
static double ms_since(run_t *r, const char *name, uint64_t t) {
  char path[4200];
  path_of(r, name, -1, path, sizeof path);
  uint64_t s = stamp_wait(path, 5000);
  if (!s) {
    FAIL(r, "no %s stamp", name);
    return -1e9;
  }
  return (double)(int64_t)(t - s) / 1e6;
}

static int side(const run_t *r, int rank) { return rank >= r->nranks / 2; }

/* Whether msg names a rank of the other side ("rank X (pid"). */
static int names_other_side(const run_t *r, const char *msg) {
  for (int p = 0; p < r->nranks; p++) {
    char want[40];
    snprintf(want, sizeof want, "rank %d (pid", p);
    if (side(r, p) != side(r, r->rank) && strstr(msg, want)) return 1;
  }
  return 0;
}

/* While the kernel runs (launches are synchronous on the host target), a
 * second thread asks gin_comm_get_async_error every 5 ms: when gin knew
 * of the fault, apart from when the kernel's wait noticed it. */
typedef struct poller {
  run_t *r;
  int stop;          /* atomic */
  uint64_t known_ns; /* wall time of the first error, 0 if none */
  gin_result_t rc;
  char msg[700];
  pthread_t tid;
} poller_t;

static void *poll_main(void *p) {
  poller_t *pl = (poller_t *)p;
  while (!__atomic_load_n(&pl->stop, __ATOMIC_ACQUIRE)) {
    gin_result_t rc = gin_comm_get_async_error(pl->r->comm);
    if (rc != GIN_SUCCESS) {
      pl->known_ns = wall_ns();
      pl->rc = rc;
      snprintf(pl->msg, sizeof pl->msg, "%s", gin_last_error());
      if (pl->r->rank == 0 && !strcmp(pl->r->scenario, "stream")) {
        char path[4200];
        path_of(pl->r, "failed", 0, path, sizeof path);
        stamp_write(path, pl->known_ns);
      }
      break;
    }
    usleep(5000);
  }
  return NULL;
}

/* The limits, from the event `name` (a script's stamp): gin knows within
 * 2 x GIN_TIMEOUT_MS + MARGIN_MS, the pending call returns within
 * HOST_SLACK_MS more (see its definition). */
static void check_times(run_t *r, const char *name, const poller_t *pl,
                        uint64_t done, double *known_ms, double *done_ms) {
  double limit = 2.0 * (double)r->timeout_ms + MARGIN_MS;
  *done_ms = ms_since(r, name, done);
  *known_ms = pl && pl->known_ns ? ms_since(r, name, pl->known_ns) : *done_ms;
  if (*known_ms < 0 || *known_ms > limit)
    FAIL(r, "the error was known %.0f ms after the %s (limit %.0f)", *known_ms,
         name, limit);
  if (*done_ms < 0 || *done_ms > limit + HOST_SLACK_MS)
    FAIL(r, "the pending call returned %.0f ms after the %s (limit %.0f)",
         *done_ms, name, limit + HOST_SLACK_MS);
}

/* Keeps the pending call's result and gin's message in r->first. */
static void note_first(run_t *r, gin_result_t rc) {
  snprintf(r->first, sizeof r->first, "%s: %s", gin_strerror(rc),
           gin_last_error());
}

/* linkcut: the pending call, then the error the rank ends with. */
static void check_linkcut(run_t *r, gin_result_t rc, uint64_t done,
                          const poller_t *pl) {
  double known, ms;
  note_first(r, rc);
  if (rc != GIN_ERR_TIMEOUT && rc != GIN_ERR_REMOTE && rc != GIN_ERR_ABORTED)
    FAIL(r, "pending call: %s", r->first);
  check_times(r, "cut", pl, done, &known, &ms);
  /* Its first error may be a timed-out wait or an abort by a rank of its
   * side; the watcher names the unreachable rank once its link to it
   * fails (TCP keepalive scaled to the timeout). */
  double limit = 2.0 * (double)r->timeout_ms + MARGIN_MS + HOST_SLACK_MS;
  uint64_t until = done + (uint64_t)((limit - ms) * 1e6);
  for (;;) {
    rc = gin_comm_get_async_error(r->comm);
    snprintf(r->last, sizeof r->last, "%s", gin_last_error());
    if (names_other_side(r, r->last) || wall_ns() >= until) break;
    usleep(20000);
  }
  double last = ms_since(r, "cut", wall_ns());
  if (rc != GIN_ERR_REMOTE || !names_other_side(r, r->last) ||
      !strstr(r->last, "unreachable"))
    FAIL(r,
         "%.0f ms after the cut the error does not name a rank across "
         "the cut as unreachable: %s: %s",
         last, gin_strerror(rc), r->last);
  if (strstr(r->last, "died"))
    FAIL(r, "nobody died, but the error says so: %s", r->last);
  printf("netfault: rank %d: linkcut: error known %.0f ms after the cut, "
         "pending call returned after %.0f ms: %s; %.0f ms after the cut: "
         "%s\n",
         r->rank, known, ms, r->first, last, r->last);
}

/* stream: the sender's pending call, a timeout naming the stopped target. */
static void check_sender(run_t *r, gin_result_t rc, uint64_t done,
                         const poller_t *pl) {
  char want[24];
  double known, ms;
  note_first(r, rc);
  if (!pl->known_ns) { /* the kernel returned before the poller looked */
    char path[4200];
    path_of(r, "failed", 0, path, sizeof path);
    stamp_write(path, done);
  }
  check_times(r, "stop", pl, done, &known, &ms);
  snprintf(want, sizeof want, "peer %d", r->target);
  /* The proxy's "no room" (it waited for the transport) or the kernel's
   * "no free slot" (it waited for the proxy): a timeout either way, not a
   * failed peer (the target is alive, only stopped). */
  if (rc != GIN_ERR_TIMEOUT || !strstr(r->first, want) ||
      (!strstr(r->first, "no room") && !strstr(r->first, "no free slot")))
    FAIL(r, "pending call: want GIN_ERR_TIMEOUT naming %s, got %s", want,
         r->first);
  printf("netfault: rank %d: stream: error known %.0f ms after rank %d "
         "stopped, pending puts returned after %.0f ms: %s\n",
         r->rank, known, r->target, ms, r->first);
}

/* stream: a receiver that was not stopped: rank 0 stopped sending. */
static void check_bystander(run_t *r, gin_result_t rc, uint64_t done,
                            const poller_t *pl) {
  double known, ms;
  note_first(r, rc);
  if (rc == GIN_SUCCESS) FAIL(r, "pending call succeeded");
  check_times(r, "stop", pl, done, &known, &ms);
  printf("netfault: rank %d: stream: error known %.0f ms after rank %d "
         "stopped, its wait for rank 0 returned after %.0f ms: %s\n",
         r->rank, known, r->target, ms, r->first);
}

/* stream: the stopped target, once continued (its poller stopped too). */
static void check_target(run_t *r, gin_result_t rc, uint64_t done) {
  double known, ms;
  note_first(r, rc);
  if (rc == GIN_SUCCESS) FAIL(r, "pending call succeeded");
  check_times(r, "cont", NULL, done, &known, &ms);
  printf("netfault: rank %d: stream: stopped, continued; its pending wait "
         "returned %.0f ms after SIGCONT: %s\n",
         r->rank, ms, r->first);
}

/* The memory freed; no descriptor or thread left. */
static void finish(run_t *r, void *mem, int *rc_dev, uint64_t *bad_dev,
                   int tasks0) {
  gin_result_t rc;
  if ((rc = gin_mem_free(mem)) != GIN_SUCCESS ||
      (rc = gin_mem_free(rc_dev)) != GIN_SUCCESS ||
      (rc = gin_mem_free(bad_dev)) != GIN_SUCCESS)
    FAIL(r, "gin_mem_free: %s: %s", gin_strerror(rc), gin_last_error());
  char left[1024];
  int n = leftovers(left, sizeof left);
  if (n != 0) FAIL(r, "%d descriptor(s) left:%s", n, left);
#if !GIN_ARCH_CUDA
  int tasks = count_tasks();
  if (tasks > tasks0)
    FAIL(r, "%d threads after teardown, %d before init", tasks, tasks0);
#else
  (void)tasks0;
#endif
}

/* flap: launches of FLAP_ROUNDS rounds until every rank agrees to stop
 * (one of them saw DIR/stop); nothing may fail. Then a clean teardown. */
static int run_flap(run_t *r, kargs_t *a, gin_devcomm_t *dc, gin_window_t win,
                    void *mem, int *rc_dev, uint64_t *bad_dev, int tasks0) {
  char stop_path[4200], flapped_path[4200];
  path_of(r, "stop", -1, stop_path, sizeof stop_path);
  path_of(r, "flapped", -1, flapped_path, sizeof flapped_path);
  uint64_t after = 0;   /* rounds begun after the last flap */
  uint64_t longest = 0; /* the longest launch, ns (one held up by a flap) */
  int stop = 0, *all = (int *)calloc((size_t)r->nranks, sizeof(int));
  TASSERT(all, "out of memory");
  gin_result_t rc = GIN_SUCCESS;
  while (!stop && rc == GIN_SUCCESS) {
    int flapped = stamp_read(flapped_path) != 0, krc = GIN_SUCCESS;
    uint64_t t0 = now_ns();
    rc = gin_launch(k_netfault, 1, 1, 0, a);
    if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
    if (now_ns() - t0 > longest) longest = now_ns() - t0;
    if (rc == GIN_SUCCESS) rc = gin_mem_copy(&krc, rc_dev, sizeof krc);
    if (rc == GIN_SUCCESS && krc == FLAP_BAD) {
      uint64_t bad[4];
      TCHECK(gin_mem_copy(bad, bad_dev, sizeof bad));
      FAIL(r, "round %llu: rank %llu's word %llu is %#llx, want %#llx",
           (unsigned long long)bad[0], (unsigned long long)bad[1],
           (unsigned long long)bad[2], (unsigned long long)bad[3],
           (unsigned long long)flap_word(bad[0], (int)bad[1], bad[2]));
      rc = GIN_ERR_INTERNAL;
      break;
    }
    if (rc == GIN_SUCCESS && krc != GIN_SUCCESS)
      rc = gin_comm_get_async_error(r->comm);
    if (rc == GIN_SUCCESS) rc = krc;
    if (rc != GIN_SUCCESS) {
      FAIL(r, "rounds %llu..%llu: %s: %s", (unsigned long long)a->first + 1,
           (unsigned long long)a->first + FLAP_ROUNDS, gin_strerror(rc),
           gin_last_error());
      break;
    }
    if (a->first == 0) { /* traffic flows: every peer's connection is up */
      char path[4200];
      path_of(r, "flowing", r->rank, path, sizeof path);
      stamp_write(path, wall_ns());
    }
    if (flapped && after == 0) { /* traffic goes on after the last flap */
      char path[4200];
      path_of(r, "resumed", r->rank, path, sizeof path);
      stamp_write(path, wall_ns());
    }
    a->first += FLAP_ROUNDS;
    if (flapped) after += FLAP_ROUNDS;
    int mine = stamp_read(stop_path) != 0;
    rc = gin_comm_allgather(r->comm, &mine, all, sizeof mine);
    if (rc != GIN_SUCCESS)
      FAIL(r, "gin_comm_allgather: %s: %s", gin_strerror(rc), gin_last_error());
    for (int p = 0; p < r->nranks; p++)
      stop |= all[p];
  }
  free(all);
  if (rc == GIN_SUCCESS && after == 0)
    FAIL(r, "no round began after the last flap (%llu rounds in all)",
         (unsigned long long)a->first);
  if (rc == GIN_SUCCESS && (rc = gin_comm_barrier(r->comm)) != GIN_SUCCESS)
    FAIL(r, "gin_comm_barrier: %s: %s", gin_strerror(rc), gin_last_error());
  if ((rc = gin_devcomm_destroy(r->comm, dc)) != GIN_SUCCESS ||
      (rc = gin_window_deregister(r->comm, win)) != GIN_SUCCESS)
    FAIL(r, "teardown: %s: %s", gin_strerror(rc), gin_last_error());
  if ((rc = gin_comm_destroy(r->comm)) != GIN_SUCCESS)
    FAIL(r, "gin_comm_destroy: %s: %s", gin_strerror(rc), gin_last_error());
  finish(r, mem, rc_dev, bad_dev, tasks0);
  if (!r->fails)
    printf("netfault: rank %d: OK flap (%llu rounds, %llu after the last "
           "flap, every byte checked; longest launch %.0f ms)\n",
           r->rank, (unsigned long long)a->first, (unsigned long long)after,
           (double)longest / 1e6);
  fflush(stdout);
  return r->fails ? 1 : 0;
}

int main(int argc, char **argv) {
  test_require_device();
  run_t r;
  memset(&r, 0, sizeof r);
  r.target = 1;
  r.scenario = argc > 1 ? argv[1] : "";
  int own_host = 0;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--stamp") && i + 1 < argc)
      r.dir = argv[++i];
    else if (!strcmp(argv[i], "--target") && i + 1 < argc)
      r.target = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--own-host"))
      own_host = 1;
  }
  int linkcut = !strcmp(r.scenario, "linkcut");
  int flap = !strcmp(r.scenario, "flap");
  if ((!linkcut && !flap && strcmp(r.scenario, "stream")) || !r.dir) {
    fprintf(stderr, "usage: netfault linkcut|flap|stream --stamp DIR "
                    "[--target T] [--own-host]\n");
    return 2;
  }
  const char *rk = fault_env_rank();
  if (own_host) { /* before gin reads it */
    char id[64];
    snprintf(id, sizeof id, "netfault-host-%s", rk ? rk : "?");
    setenv("GIN_HOSTID", id, 1);
  }
  r.timeout_ms = fault_timeout_ms();
  /* stream: a bystander (neither the sender nor the target) waits twice
   * the job's timeout, so that the sender's verdict on the target, which
   * this scenario tests, comes first. With the same timeout both clocks
   * start within milliseconds of each other (the sender's proxy stalls
   * right after its last put to the bystander), and a bystander that
   * times out first (it can, under ThreadSanitizer) aborts the job before
   * the sender names the target. It still ends within the job's limits:
   * the sender's abort reaches it. */
  if (!linkcut && !flap && rk && atoi(rk) != 0 && atoi(rk) != r.target) {
    char t[32];
    snprintf(t, sizeof t, "%lld", 2 * (long long)r.timeout_ms);
    setenv("GIN_TIMEOUT_MS", t, 1);
  }
  int tasks0 = fault_task_baseline();
  TASSERT(tasks0 > 0, "a first thread");

  TCHECK(gin_comm_init_from_env(&r.comm, NULL));
  TCHECK(gin_comm_rank(r.comm, &r.rank));
  TCHECK(gin_comm_size(r.comm, &r.nranks));
  TASSERT(r.nranks >= 2 && r.nranks <= 64 && r.target > 0 &&
              r.target < r.nranks,
          "2..64 ranks and a target among them, not 0");
  size_t bytes = SRC_OFF(r.nranks, 2);
  void *mem;
  int *rc_dev;
  uint64_t *bad_dev;
  gin_window_t win;
  gin_devcomm_t dc;
  TCHECK(gin_mem_alloc(bytes, &mem));
  TCHECK(gin_mem_alloc(sizeof(int), (void **)&rc_dev));
  TCHECK(gin_mem_alloc(4 * sizeof(uint64_t), (void **)&bad_dev));
  TCHECK(gin_window_register(r.comm, mem, bytes, &win));
  gin_devcomm_reqs_t reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.signals = r.nranks;
  reqs.contexts = 1;
  TCHECK(gin_devcomm_create(r.comm, &reqs, &dc));
  TCHECK(gin_comm_barrier(r.comm));

  kargs_t a = {dc,
               win,
               flap      ? MODE_FLAP
               : linkcut ? MODE_ROUNDS
               : r.rank  ? MODE_RECV
                         : MODE_SEND,
               (char *)mem,
               0,
               rc_dev,
               bad_dev};
  char path[4200]; /* just before: launches are synchronous on host */
  path_of(&r, "pid", r.rank, path, sizeof path);
  stamp_write(path, (uint64_t)getpid());
  path_of(&r, "running", r.rank, path, sizeof path);
  stamp_write(path, wall_ns());
  if (flap) return run_flap(&r, &a, &dc, win, mem, rc_dev, bad_dev, tasks0);
  poller_t pl;
  memset(&pl, 0, sizeof pl);
  pl.r = &r;
  TASSERT(!pthread_create(&pl.tid, NULL, poll_main, &pl), "poller thread");
  gin_result_t rc = gin_launch(k_netfault, 1, 1, 0, &a);
  if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
  int krc = GIN_SUCCESS;
  if (rc == GIN_SUCCESS) rc = gin_mem_copy(&krc, rc_dev, sizeof krc);
  if (rc == GIN_SUCCESS && krc != GIN_SUCCESS)
    rc = gin_comm_get_async_error(r.comm);
  if (rc == GIN_SUCCESS) rc = krc;
  uint64_t done = wall_ns();
  __atomic_store_n(&pl.stop, 1, __ATOMIC_RELEASE);
  pthread_join(pl.tid, NULL);
  if (linkcut)
    check_linkcut(&r, rc, done, &pl);
  else if (r.rank == 0)
    check_sender(&r, rc, done, &pl);
  else if (r.rank == r.target)
    check_target(&r, rc, done);
  else
    check_bystander(&r, rc, done, &pl);

  /* Later calls fail too; teardown works and leaves nothing. */
  int all[64], mine = r.rank;
  if ((rc = gin_comm_barrier(r.comm)) == GIN_SUCCESS)
    FAIL(&r, "a later gin_comm_barrier succeeded");
  if ((rc = gin_comm_allgather(r.comm, &mine, all, sizeof mine)) == GIN_SUCCESS)
    FAIL(&r, "a later gin_comm_allgather succeeded");
  if (linkcut && !names_other_side(&r, gin_last_error()))
    FAIL(&r, "a later gin_comm_allgather does not name the rank: %s",
         gin_last_error());
  gin_devcomm_destroy(r.comm, &dc);   /* local after an abort */
  gin_window_deregister(r.comm, win); /* releases it, returns the error */
  uint64_t t0 = now_ns();
  if ((rc = gin_comm_destroy(r.comm)) != GIN_SUCCESS)
    FAIL(&r, "gin_comm_destroy: %s: %s", gin_strerror(rc), gin_last_error());
  double destroy_ms = (double)(now_ns() - t0) / 1e6;
  finish(&r, mem, rc_dev, bad_dev, tasks0);
  if (!r.fails)
    printf("netfault: rank %d: OK %s (gin_comm_destroy %.0f ms)\n", r.rank,
           r.scenario, destroy_ms);
  fflush(stdout);
  return r.fails ? 1 : 0;
}
