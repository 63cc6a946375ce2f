/*
 * gin_comm_abort from another thread unblocks every wait, device and host,
 * on the aborting rank and on the others, promptly; teardown after the
 * abort still works. The others are its load/store peers (one machine,
 * one shared abort word), or with --hosts ranks that each take another
 * host identity (GIN_HOSTID), so nothing is shared and the abort must
 * travel over the peer-watch links.
 *
 *   ginrun -n N abort_host --stamp DIR [--hosts]
 *
 * Run with GIN_BACKEND=proxy, GIN_PROXY_RING_SIZE=8, a proxy that pauses
 * far longer than the test after its first batch (GIN_PROXY_DELAY_US) and
 * a GIN_TIMEOUT_MS longer than the test: nothing ends a wait but the
 * abort. For each case a fresh communicator (gin_comm_init with a unique
 * id that rank 0 all-gathers over the world communicator); one rank, the
 * aborter (the case's number modulo N), starts a thread that calls
 * gin_comm_abort ABORT_AFTER_MS after its main thread entered the wait,
 * stamping the time in DIR/abort.CASE first:
 *   devwait  every rank's kernel waits on a signal nobody sends
 *   barrier  gin_comm_barrier on every rank but the last (the latecomer),
 *            which calls it only after the abort
 *   allgather  the same with gin_comm_allgather
 *   ringwait  every rank's kernel has 8 producer blocks putting to every
 *            peer through the 8-slot ring the stalled proxy never frees
 * Every blocked call must return GIN_ERR_ABORTED naming the aborter
 * ("aborted by rank A") within ABORT_BOUND_MS of the abort and not
 * before it; then gin_comm_barrier and gin_comm_get_async_error fail the
 * same way at once, gin_devcomm_destroy and gin_window_deregister release
 * their objects, gin_comm_destroy succeeds and the memory can be freed.
 * At the end no TCP socket, gin memfd or extra thread is left. Each rank
 * prints "abort: rank R: OK ..." or "... FAIL ..."; exit 0 pass, 1 fail.
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

#define ABORT_AFTER_MS 200
#define ABORT_BOUND_MS 1000
#define BLOCKS 8
#define PUTS 64
#define SLOT 256

enum { CASE_DEVWAIT, CASE_BARRIER, CASE_ALLGATHER, CASE_RINGWAIT, NCASES };
static const char *case_names[NCASES] = {"devwait", "barrier", "allgather",
                                         "ringwait"};

typedef struct kargs {
  gin_devcomm_t dc;
  gin_window_t win;
  int ring;    /* producers (ringwait), else one signal wait */
  int *rc_out; /* [BLOCKS] gin memory */
} kargs_t;

GIN_KERNEL(k_abort, kargs_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank, n = dc->nranks, b = gin_block_idx(), rc = GIN_SUCCESS;
  if (args.ring) {
    for (int k = 0; k < PUTS && rc == GIN_SUCCESS; k++)
      for (int d = 1; d < n && rc == GIN_SUCCESS; d++)
        rc = gin_put(dc, 0, world, (me + d) % n, args.win, (size_t)b * SLOT,
                     args.win, (size_t)b * SLOT, SLOT, gin_remote_signal_inc(0),
                     gin_local_none(), GIN_COOP_THREAD);
  } else {
    rc = gin_signal_wait(dc, 1, 1, GIN_COOP_THREAD); /* nobody sends it */
  }
  args.rc_out[b] = rc;
}

typedef struct run {
  gin_comm_t world;
  int rank, nranks, fails;
  const char *dir;
  double worst_ms; /* slowest return after an abort, all cases */
} run_t;

#define FAIL(r, cs, ...)                                                       \
  do {                                                                         \
    printf("abort: rank %d: FAIL %s: ", (r)->rank, case_names[cs]);            \
    printf(__VA_ARGS__);                                                       \
    printf("\n");                                                              \
    (r)->fails++;                                                              \
  } while (0)

typedef struct aborter {
  gin_comm_t comm;
  char stamp[4200];
  volatile int entered; /* the main thread is about to block */
} aborter_t;

static void *abort_main(void *p) {
  aborter_t *a = (aborter_t *)p;
  while (!__atomic_load_n(&a->entered, __ATOMIC_ACQUIRE))
    usleep(1000);
  usleep(ABORT_AFTER_MS * 1000);
  stamp_write(a->stamp, now_ns());
  gin_result_t rc = gin_comm_abort(a->comm);
  return (void *)(intptr_t)rc;
}

/* A call that must have returned GIN_ERR_ABORTED naming the aborter, at
 * most ABORT_BOUND_MS after the abort (and not before). */
static void expect_aborted(run_t *r, int cs, int aborter, const char *what,
                           gin_result_t rc, uint64_t done_ns) {
  char msg[600], want[40], path[4200];
  snprintf(msg, sizeof msg, "%s", gin_last_error());
  snprintf(want, sizeof want, "aborted by rank %d", aborter);
  snprintf(path, sizeof path, "%s/abort.%d", r->dir, cs);
  uint64_t t = stamp_wait(path, 5000);
  double ms = t ? (double)(int64_t)(done_ns - t) / 1e6 : -1e9;
  if (rc != GIN_ERR_ABORTED || !strstr(msg, want))
    FAIL(r, cs, "%s: %s: '%s' (want GIN_ERR_ABORTED and '%s')", what,
         gin_strerror(rc), msg, want);
  else if (!t)
    FAIL(r, cs, "%s: no abort stamp", what);
  else if (ms < 0)
    FAIL(r, cs, "%s returned %.1f ms before the abort", what, -ms);
  else if (ms > ABORT_BOUND_MS)
    FAIL(r, cs, "%s returned %.1f ms after the abort (limit %d ms)", what, ms,
         ABORT_BOUND_MS);
  else if (ms > r->worst_ms)
    r->worst_ms = ms;
  if (rc == GIN_ERR_ABORTED && t && ms >= 0)
    printf("abort: rank %d: %s: %s returned %.2f ms after the abort: %s\n",
           r->rank, case_names[cs], what, ms, msg);
}

static void run_case(run_t *r, int cs) {
  gin_comm_t c = test_comm_fresh(r->world, r->rank, r->nranks);
  int aborter = cs % r->nranks, late = r->nranks - 1;
  int kernel = cs == CASE_DEVWAIT || cs == CASE_RINGWAIT;
  void *mem = NULL;
  int *rc_dev = NULL;
  gin_window_t win;
  gin_devcomm_t dc;
  if (kernel) {
    TCHECK(gin_mem_alloc(BLOCKS * SLOT, &mem));
    TCHECK(gin_mem_alloc(sizeof(int) * BLOCKS, (void **)&rc_dev));
    TCHECK(gin_window_register(c, mem, BLOCKS * SLOT, &win));
    gin_devcomm_reqs_t reqs;
    memset(&reqs, 0, sizeof reqs);
    reqs.signals = 2;
    reqs.contexts = 1;
    TCHECK(gin_devcomm_create(c, &reqs, &dc));
  }
  TCHECK(gin_comm_barrier(c));

  aborter_t ab;
  memset(&ab, 0, sizeof ab);
  ab.comm = c;
  snprintf(ab.stamp, sizeof ab.stamp, "%s/abort.%d", r->dir, cs);
  pthread_t th;
  if (r->rank == aborter)
    TASSERT(!pthread_create(&th, NULL, abort_main, &ab), "aborter thread");
  __atomic_store_n(&ab.entered, 1, __ATOMIC_RELEASE);

  gin_result_t rc;
  uint64_t done;
  if (kernel) {
    kargs_t a = {dc, win, cs == CASE_RINGWAIT, rc_dev};
    int blocks = cs == CASE_RINGWAIT ? BLOCKS : 1, rcs[BLOCKS];
    rc = gin_launch(k_abort, blocks, 1, 0, &a);
    if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
    done = now_ns();
    if (rc == GIN_SUCCESS)
      rc = gin_mem_copy(rcs, rc_dev, sizeof(int) * (size_t)blocks);
    for (int b = 0; rc == GIN_SUCCESS && b < blocks; b++)
      if (rcs[b] != GIN_ERR_ABORTED)
        FAIL(r, cs, "kernel block %d returned %s", b, gin_strerror(rcs[b]));
    if (rc == GIN_SUCCESS) rc = gin_comm_get_async_error(c);
    expect_aborted(r, cs, aborter, "the kernel's wait", rc, done);
  } else if (r->rank != late) {
    int v[64], mine = r->rank;
    rc = cs == CASE_BARRIER ? gin_comm_barrier(c)
                            : gin_comm_allgather(c, &mine, v, sizeof mine);
    done = now_ns();
    expect_aborted(r, cs, aborter, case_names[cs], rc, done);
  } else { /* the latecomer comes once the abort is done */
    char path[4200];
    snprintf(path, sizeof path, "%s/abort.%d", r->dir, cs);
    TASSERT(stamp_wait(path, 10000), "no abort stamp");
    usleep(50000);
    int v[64], mine = r->rank;
    rc = cs == CASE_BARRIER ? gin_comm_barrier(c)
                            : gin_comm_allgather(c, &mine, v, sizeof mine);
    if (rc != GIN_ERR_ABORTED)
      FAIL(r, cs, "late %s: %s: %s", case_names[cs], gin_strerror(rc),
           gin_last_error());
  }
  if (r->rank == aborter) {
    void *ret = NULL;
    pthread_join(th, &ret);
    if ((gin_result_t)(intptr_t)ret != GIN_SUCCESS)
      FAIL(r, cs, "gin_comm_abort: %s", gin_strerror((int)(intptr_t)ret));
  }
  /* Later calls fail at once, the same way. */
  uint64_t t0 = now_ns();
  rc = gin_comm_barrier(c);
  double ms = (double)(now_ns() - t0) / 1e6;
  if (rc != GIN_ERR_ABORTED || ms > 100)
    FAIL(r, cs, "later gin_comm_barrier: %s after %.1f ms: %s",
         gin_strerror(rc), ms, gin_last_error());
  rc = gin_comm_get_async_error(c);
  char want[40];
  snprintf(want, sizeof want, "aborted by rank %d", aborter);
  if (rc != GIN_ERR_ABORTED || !strstr(gin_last_error(), want))
    FAIL(r, cs, "gin_comm_get_async_error: %s: %s", gin_strerror(rc),
         gin_last_error());
  /* Teardown on the aborted communicator. */
  if (kernel) {
    rc = gin_devcomm_destroy(c, &dc);
    if (rc != GIN_SUCCESS)
      FAIL(r, cs, "gin_devcomm_destroy: %s: %s", gin_strerror(rc),
           gin_last_error());
    rc = gin_window_deregister(c, win); /* releases it, says why */
    if (rc != GIN_SUCCESS && rc != GIN_ERR_ABORTED)
      FAIL(r, cs, "gin_window_deregister: %s: %s", gin_strerror(rc),
           gin_last_error());
  }
  rc = gin_comm_destroy(c);
  if (rc != GIN_SUCCESS)
    FAIL(r, cs, "gin_comm_destroy: %s: %s", gin_strerror(rc), gin_last_error());
  if (kernel) {
    if ((rc = gin_mem_free(mem)) != GIN_SUCCESS ||
        (rc = gin_mem_free(rc_dev)) != GIN_SUCCESS)
      FAIL(r, cs, "gin_mem_free: %s: %s", gin_strerror(rc), gin_last_error());
  }
  TCHECK(gin_comm_barrier(r->world)); /* the next case starts together */
}

int main(int argc, char **argv) {
  test_require_device();
  run_t r;
  memset(&r, 0, sizeof r);
  int hosts = 0;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--stamp") && i + 1 < argc)
      r.dir = argv[++i];
    else if (!strcmp(argv[i], "--hosts"))
      hosts = 1;
  if (!r.dir) {
    fprintf(stderr, "usage: abort --stamp DIR [--hosts]\n");
    return 2;
  }
  if (hosts) { /* a host of its own: no mapping, no shared abort word */
    char id[64];
    const char *rank = getenv("GIN_RANK");
    snprintf(id, sizeof id, "abort-host-%s", rank ? rank : "x");
    setenv("GIN_HOSTID", id, 1);
  }
  int tasks0 = fault_task_baseline();
  TASSERT(tasks0 > 0, "a first thread");
  TCHECK(gin_comm_init_from_env(&r.world, NULL));
  TCHECK(gin_comm_rank(r.world, &r.rank));
  TCHECK(gin_comm_size(r.world, &r.nranks));
  TASSERT(r.nranks >= 2 && r.nranks <= 64, "2..64 ranks");
  for (int cs = 0; cs < NCASES; cs++)
    run_case(&r, cs);
  TCHECK(gin_comm_destroy(r.world));
  char left[1024];
  int n = leftovers(left, sizeof left);
  if (n != 0) {
    printf("abort: rank %d: FAIL %d descriptor(s) left:%s\n", r.rank, n, left);
    r.fails++;
  }
#if !GIN_ARCH_CUDA
  int tasks = count_tasks();
  if (tasks > tasks0) {
    printf("abort: rank %d: FAIL %d threads at the end, %d before init\n",
           r.rank, tasks, tasks0);
    r.fails++;
  }
#else
  (void)tasks0;
#endif
  if (!r.fails)
    printf("abort: rank %d: OK: device wait, gin_comm_barrier, "
           "gin_comm_allgather and ring-full waits returned GIN_ERR_ABORTED "
           "at most %.2f ms after gin_comm_abort (limit %d ms)\n",
           r.rank, r.worst_ms, ABORT_BOUND_MS);
  fflush(stdout);
  return r.fails ? 1 : 0;
}
