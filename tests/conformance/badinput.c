/*
 * Bad input: every public call with bad arguments gets a clear error that
 * names what was wrong, and nothing is written. Device-side misuse (bad
 * peer, range, window, signal, counter, context, inc/add mixing), bounded
 * waits (timeout) and gin_comm_abort from another thread are each run on a
 * fresh sub-communicator, since they abort it.
 * Run with ginrun -n N (N >= 2). Exit 0 pass, 1 fail.
 */
#ifdef BADINPUT_NOCHECKS
#undef GIN_DEVICE_CHECKS
#define GIN_DEVICE_CHECKS 0
#endif
#include <pthread.h>
#include <unistd.h>

#include "test_common.h"

#ifdef BADINPUT_NOCHECKS
#define NOCHECKS 1
#else
#define NOCHECKS 0
#endif

#define WIN 4096
#define CANARY 4096 /* bytes on each side of the window, never to change */
#define CANARY_BYTE 0xa5

/* Built a second time with device checks compiled out (BADINPUT_NOCHECKS)
 * and run with GIN_BACKEND=proxy, so bad descriptors reach the proxy and
 * its own validation must reject them. Cases that would make device code
 * index out of bounds without checks (bad peer, bad context) and the
 * checks-only INC/ADD detection are skipped there. */

enum {
  C_PEER,
  C_RANGE,
  C_WINDOW,
  C_DEREG,
  C_DEREG_SRC,
  C_SIGNAL,
  C_COUNTER,
  C_CONTEXT,
  C_MIX,
  C_TIMEOUT,
  C_ABORT,
  C_USER,
  C_NCASES
};
static const char *case_names[C_NCASES] = {"bad peer",
                                           "offset+size past window",
                                           "stale window handle",
                                           "deregistered window",
                                           "deregistered source window",
                                           "signal id out of range",
                                           "counter id out of range",
                                           "context out of range",
                                           "signal inc/add mixing",
                                           "wait timeout",
                                           "abort from another thread",
                                           "a kernel's own error"};
/* What the failing rank's message must contain. */
static const char *case_words[C_NCASES] = {"outside team",
                                           "outside window",
                                           "not a registered window",
                                           "not a registered window",
                                           "not a registered window",
                                           "signal 64 outside",
                                           "counter 9999 outside",
                                           "context 99 outside",
                                           "both SIGNAL_INC and SIGNAL_ADD",
                                           "timed out",
                                           "aborted by rank",
                                           "a kernel reported error 7 (peer 1; "
                                           "values 4, 0, 9)"};
/* What the proxy says when device checks are compiled out. */
static const char *proxy_words[C_NCASES] = {
    "is not a proxied rank",
    "destination offset 4088 + 16 bytes is outside window",
    "destination window",
    "destination window",
    "source window",
    "signal 64 (action 1) outside [0, 64)",
    "counter 9999 (action 1) outside",
    NULL,
    NULL,
    "timed out",
    "aborted by rank",
    "a kernel reported error 7 (peer 1; values 4, 0, 9)"};
/* The rank whose call fails; the others see the abort it causes. INC/ADD
 * mixing fails at the sender (rank 0) where it reaches the target by
 * load/store, at the target's wait (rank 1) where the update is proxied
 * (device_case). */
static const int case_rank[C_NCASES] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0};
static const gin_result_t case_codes[C_NCASES] = {
    GIN_ERR_INVALID, GIN_ERR_INVALID, GIN_ERR_INVALID, GIN_ERR_INVALID,
    GIN_ERR_INVALID, GIN_ERR_INVALID, GIN_ERR_INVALID, GIN_ERR_INVALID,
    GIN_ERR_INVALID, GIN_ERR_TIMEOUT, GIN_ERR_ABORTED, GIN_ERR_PROTOCOL};

typedef struct args {
  gin_devcomm_t dc;
  gin_window_t win, stale;
  int which;
  int flush;   /* proxied puts: the kernel flushes (else it just ends) */
  int *rc_out; /* gin memory */
} args_t;

GIN_KERNEL(k_bad, args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  gin_coop_t c = GIN_COOP_THREAD;
  int rc = GIN_SUCCESS, peer = 1;
  if (dc->rank == 0) {
    switch (args.which) {
    case C_PEER:
      if (NOCHECKS) /* straight onto the ring: the proxy must refuse it */
        rc = gin_dev_post_(dc, 0, GIN_OP_PUT, dc->nranks + 3, args.win, 0,
                           args.win, 0, 8, gin_remote_none(), gin_local_none(),
                           c);
      else
        rc = gin_put(dc, 0, world, dc->nranks, args.win, 0, args.win, 0, 8,
                     gin_remote_none(), gin_local_none(), c);
      break;
    case C_RANGE:
      rc = gin_put(dc, 0, world, peer, args.win, WIN - 8, args.win, 0, 16,
                   gin_remote_signal_inc(0), gin_local_none(), c);
      break;
    case C_WINDOW:
    case C_DEREG:
      rc = gin_put(dc, 0, world, peer, args.stale, 0, args.win, 0, 8,
                   gin_remote_none(), gin_local_none(), c);
      break;
    case C_DEREG_SRC: /* its memory still allocated (device_case) */
      rc = gin_put(dc, 0, world, peer, args.win, 0, args.stale, 0, 8,
                   gin_remote_signal_inc(0), gin_local_none(), c);
      break;
    case C_SIGNAL:
      rc = gin_put(dc, 0, world, peer, args.win, 0, args.win, 0, 8,
                   gin_remote_signal_inc(64), gin_local_none(), c);
      break;
    case C_COUNTER:
      rc = gin_put(dc, 0, world, peer, args.win, 0, args.win, 0, 8,
                   gin_remote_none(), gin_local_counter_inc(9999), c);
      break;
    case C_CONTEXT:
      rc = gin_put(dc, 99, world, peer, args.win, 0, args.win, 0, 8,
                   gin_remote_none(), gin_local_none(), c);
      break;
    case C_MIX: /* the second update or the target's wait finds both */
      rc = gin_signal(dc, 0, world, peer, gin_remote_signal_inc(3), c);
      if (rc == GIN_SUCCESS)
        rc = gin_signal(dc, 0, world, peer, gin_remote_signal_add(3, 5), c);
      break;
    case C_TIMEOUT:
    case C_ABORT: rc = gin_signal_wait(dc, 7, 1, c); break;
    case C_USER: /* its error is kept; then direct writes are refused */
      rc = gin_record_error(dc, GIN_ERR_PROTOCOL, GIN_DEVERR_USER, peer, 7, 123,
                            4, 0, 9);
      if (!gin_peer_writes_stopped(dc) ||
          gin_peer_write_refused(dc, peer) != GIN_ERR_ABORTED)
        rc = GIN_ERR_INTERNAL;
      break;
    }
  }
  /* Proxied puts fail later, in the proxy: wait until it consumed them
   * (or, without the flush, gin_comm_get_async_error must still see it). */
  if (dc->rank == 0 && rc == GIN_SUCCESS && args.which < C_TIMEOUT &&
      args.flush) {
    rc = gin_flush(dc, 0, c);
    /* A wait that then runs into the proxy's abort must not hide the
     * proxy's reason from gin_comm_get_async_error. */
    if (NOCHECKS && rc == GIN_SUCCESS) (void)gin_signal_wait(dc, 9, 1, c);
  }
  if (dc->rank == 1 && args.which == C_MIX) rc = gin_signal_wait(dc, 3, 6, c);
  *args.rc_out = rc;
}

typedef struct sub {
  gin_comm_t comm;
  gin_devcomm_t dc;
  void *mem;
  gin_window_t win;
} sub_t;

/* A fresh communicator over the same ranks, its uid made by rank 0 and
 * handed over through the world communicator. */
static void sub_init(gin_comm_t world, int rank, int nranks, int timeout_ms,
                     sub_t *s) {
  gin_unique_id_t *ids = (gin_unique_id_t *)calloc((size_t)nranks, sizeof *ids);
  gin_unique_id_t mine;
  memset(&mine, 0, sizeof mine);
  if (rank == 0) TCHECK(gin_get_unique_id(nranks, &mine));
  TCHECK(gin_comm_allgather(world, &mine, ids, sizeof mine));
  gin_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.size = sizeof cfg;
  cfg.timeout_ms = timeout_ms;
  TCHECK(gin_comm_init(&s->comm, nranks, rank, &ids[0], &cfg));
  free(ids);
  TCHECK(gin_mem_alloc(WIN + 2 * CANARY, &s->mem));
  TCHECK(gin_mem_set(s->mem, CANARY_BYTE, WIN + 2 * CANARY));
  TCHECK(gin_mem_set((char *)s->mem + CANARY, 0, WIN));
  TCHECK(gin_window_register(s->comm, (char *)s->mem + CANARY, WIN, &s->win));
  gin_devcomm_reqs_t reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.signals = 64;
  reqs.counters = 16;
  reqs.contexts = 4;
  TCHECK(gin_devcomm_create(s->comm, &reqs, &s->dc));
}

static void sub_fini(sub_t *s) {
  /* The sub-communicator is aborted: tear down locally. */
  TCHECK(gin_comm_destroy(s->comm));
  TCHECK(gin_mem_free(s->mem));
}

typedef struct aborter {
  gin_comm_t comm;
  int delay_ms;
} aborter_t;

static void *abort_later(void *p) {
  aborter_t *a = (aborter_t *)p;
  usleep((useconds_t)a->delay_ms * 1000);
  gin_comm_abort(a->comm);
  return NULL;
}

/* --no-flush: the kernels end without a gin_flush (the failing rank asks
 * gin_comm_get_async_error at once, before any other call). */
static int no_flush;

static int device_case(gin_comm_t world, int rank, int nranks, int which) {
  sub_t s;
  memset(&s, 0, sizeof s);
  int timeout = which == C_TIMEOUT ? 300 : 60000;
  sub_init(world, rank, nranks, timeout, &s);
  int *rc_dev = NULL;
  TCHECK(gin_mem_alloc(sizeof(int), (void **)&rc_dev));
  args_t a;
  memset(&a, 0, sizeof a);
  a.dc = s.dc;
  a.win = s.win;
  a.stale = s.win;
  a.stale.gen += 7;
  a.which = which;
  a.flush = !no_flush;
  a.rc_out = rc_dev;
  void *m2 = NULL;
  if (which == C_DEREG || which == C_DEREG_SRC) {
    TCHECK(gin_mem_alloc(WIN, &m2));
    gin_window_t w2;
    TCHECK(gin_window_register(s.comm, m2, WIN, &w2));
    TCHECK(gin_window_deregister(s.comm, w2));
    if (which == C_DEREG) { /* a destination: its memory may go */
      TCHECK(gin_mem_free(m2));
      m2 = NULL;
    }
    a.stale = w2;
  }
  pthread_t th;
  aborter_t ab = {s.comm, 200};
  if (which == C_ABORT && rank == 0)
    pthread_create(&th, NULL, abort_later, &ab);
  uint64_t t0 = (uint64_t)time(NULL);
  gin_result_t lrc = gin_launch(k_bad, 1, 1, 0, &a);
  if (lrc == GIN_SUCCESS) lrc = gin_stream_synchronize(0);
  uint64_t secs = (uint64_t)time(NULL) - t0;
  if (which == C_ABORT && rank == 0) pthread_join(th, NULL);
  TCHECK(lrc);
  int fr = case_rank[which];
  if (which == C_MIX) { /* by rank 0's path to rank 1 */
    int path = -1, *paths = (int *)calloc((size_t)nranks, sizeof(int));
    if (rank == 0) TCHECK(gin_comm_peer_path(s.comm, 1, &path));
    TCHECK(gin_comm_allgather(world, &path, paths, sizeof(int)));
    fr = (paths[0] & ~GIN_PATH_NEAR) == GIN_PATH_PROXY ? 1 : 0;
    free(paths);
  }
  /* The failing rank asks first, right after its kernel ended; the others
   * after the barrier. Its abort travels on the sub-communicator and the
   * barrier on the world's, so the others may get past the barrier
   * first (seen once in CI over ofi's tcp provider): they ask again for
   * up to 10 s. */
  gin_result_t async = GIN_SUCCESS;
  char msg[512];
  if (rank == fr) {
    async = gin_comm_get_async_error(s.comm);
    snprintf(msg, sizeof msg, "%s", gin_last_error());
  }
  TCHECK(gin_comm_barrier(world));
  if (rank != fr) {
    for (int i = 0; i < 1000; i++) {
      async = gin_comm_get_async_error(s.comm);
      if (async != GIN_SUCCESS) break;
      usleep(10000);
    }
    snprintf(msg, sizeof msg, "%s", gin_last_error());
  }
  int fails = 0;
  int rc = 0;
  TCHECK(gin_mem_copy(&rc, rc_dev, sizeof rc));
  const char *words = NOCHECKS ? proxy_words[which] : case_words[which];
  char by[32];
  snprintf(by, sizeof by, "aborted by rank %d", fr);
  if (rank == fr) {
    /* Without device checks the put itself succeeds: the proxy rejects it. */
    gin_result_t want_rc =
        NOCHECKS && which < C_TIMEOUT ? GIN_SUCCESS : case_codes[which];
    if (rc != want_rc || async != case_codes[which] || !strstr(msg, words)) {
      fprintf(stderr,
              "rank %d: case '%s': device rc %s, async %s, message '%s' "
              "(wanted %s and '%s')\n",
              rank, case_names[which], gin_strerror(rc), gin_strerror(async),
              msg, gin_strerror(case_codes[which]), words);
      fails++;
    }
    if (secs > 20) {
      fprintf(stderr, "case '%s' took %llu s\n", case_names[which],
              (unsigned long long)secs);
      fails++;
    }
  } else if (async != GIN_ERR_ABORTED || !strstr(msg, by)) {
    /* Load/store peers learn of the failure through their abort word. */
    fprintf(stderr, "rank %d: case '%s': async %s '%s' (wanted %s)\n", rank,
            case_names[which], gin_strerror(async), msg, by);
    fails++;
  }
  /* Nothing was written into the window by a rejected put, nor into the
   * canaries around it. */
  static unsigned char buf[WIN + 2 * CANARY];
  TCHECK(gin_mem_copy(buf, s.mem, sizeof buf));
  for (int i = 0; i < (int)sizeof buf; i++) {
    int in_win = i >= CANARY && i < CANARY + WIN;
    if (buf[i] != (in_win ? 0 : CANARY_BYTE)) {
      fprintf(stderr, "rank %d: case '%s': %s byte %d written (%#x)\n", rank,
              case_names[which], in_win ? "window" : "canary",
              in_win ? i - CANARY : i, buf[i]);
      fails++;
      break;
    }
  }
  /* Later host calls on the aborted communicator fail, naming why. */
  gin_window_t w;
  if (gin_window_register(s.comm, s.mem, WIN, &w) == GIN_SUCCESS) fails++;
  TCHECK(gin_mem_free(rc_dev));
  if (m2) TCHECK(gin_mem_free(m2));
  sub_fini(&s);
  TCHECK(gin_comm_barrier(world));
  return fails;
}

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

static int host_cases(gin_comm_t world, int rank, int nranks) {
  int fails = 0;
  gin_comm_t c = NULL;
  gin_unique_id_t uid;
  memset(&uid, 0, sizeof uid);
  EXPECT(gin_comm_init(&c, 0, 0, &uid, NULL), GIN_ERR_INVALID, "nranks 0");
  EXPECT(gin_comm_init(&c, 2, 2, &uid, NULL), GIN_ERR_INVALID,
         "rank 2 outside");
  EXPECT(gin_comm_init(&c, 2, 0, NULL, NULL), GIN_ERR_INVALID, "uid is NULL");
  EXPECT(gin_unique_id_from_string("zz", &uid), GIN_ERR_INVALID, "");
  int x = 0;
  EXPECT(gin_mem_free(&x), GIN_ERR_INVALID, "not an allocation");
  void *m = NULL;
  TCHECK(gin_mem_alloc(WIN, &m));
  gin_window_t w;
  /* Collective errors: every rank fails, also those whose part was fine. */
  EXPECT(gin_window_register(world, &x, 8, &w), GIN_ERR_INVALID,
         "not allocated by gin_mem_alloc");
  EXPECT(gin_window_register(world, m, WIN + 1, &w), GIN_ERR_INVALID,
         "runs past its allocation");
  EXPECT(gin_window_register(world, m, rank == 0 ? 1024 : 2048, &w),
         GIN_ERR_INVALID, "sizes differ");
  TCHECK(gin_window_register(world, m, WIN, &w));
  EXPECT(gin_mem_free(m), GIN_ERR_STATE, "still backs");
  TCHECK(gin_window_deregister(world, w));
  EXPECT(gin_window_deregister(world, w), GIN_ERR_INVALID, "not a live window");
  TCHECK(gin_mem_free(m));
  EXPECT(gin_mem_free(m), GIN_ERR_INVALID, "freed twice");
  gin_devcomm_reqs_t reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.signals = -1;
  gin_devcomm_t dc;
  EXPECT(gin_devcomm_create(world, &reqs, &dc), GIN_ERR_INVALID,
         rank == 0 ? "signals -1" : "");
  reqs.signals = 0;
  TCHECK(gin_devcomm_create(world, &reqs, &dc));
  gin_devcomm_t copy = dc;
  TCHECK(gin_devcomm_destroy(world, &dc));
  EXPECT(gin_devcomm_destroy(world, &copy), GIN_ERR_INVALID, "not live");
  sub_t s;
  memset(&s, 0, sizeof s);
  sub_init(world, rank, nranks, 5000, &s);
  TCHECK(gin_comm_destroy(s.comm));
  EXPECT(gin_comm_destroy(s.comm), GIN_ERR_STATE, "not live");
  EXPECT(gin_comm_rank(s.comm, &x), GIN_ERR_STATE, "not live");
  TCHECK(gin_mem_free(s.mem));
  EXPECT(gin_comm_rank(NULL, &x), GIN_ERR_INVALID, "comm is NULL");
  return fails;
}

int main(int argc, char **argv) {
  no_flush = argc > 1 && !strcmp(argv[1], "--no-flush");
  test_require_device();
  int rank, nranks;
  gin_comm_t world = test_world_init(&rank, &nranks, 2);
  int total = 0;
  int f = host_cases(world, rank, nranks);
  if (rank == 0)
    printf("%-32s %s\n", "host API bad arguments", f ? "FAIL" : "ok");
  total += f;
  for (int which = 0; which < C_NCASES; which++) {
    if (NOCHECKS && !proxy_words[which]) continue;
    f = device_case(world, rank, nranks, which);
    if (rank == 0 || f)
      printf("%-32s %s\n", case_names[which], f ? "FAIL" : "ok");
    total += f;
  }
  int *all = (int *)calloc((size_t)nranks, sizeof(int));
  TCHECK(gin_comm_allgather(world, &total, all, sizeof(int)));
  int sum = 0;
  for (int r = 0; r < nranks; r++)
    sum += all[r];
  free(all);
  TCHECK(gin_comm_destroy(world));
  if (rank == 0) printf("badinput: %s\n", sum ? "FAILED" : "passed");
  return sum ? 1 : 0;
}
