/*
 * A proxy ring full for a long time: GIN_PROXY_RING_SIZE=8 and a proxy
 * slowed down by GIN_PROXY_DELAY_US (it pauses after every batch), while
 * every rank's kernel runs BLOCKS producer blocks, each posting PUTS puts
 * with a signal to every other rank on context 0: many more descriptors
 * than the ring holds, so producers spend most of their time waiting for
 * a free slot. Every put goes to a slot of its own (sender, block, index)
 * and carries a pattern of the same; its signal is the sender's block's.
 *
 *   ginrun -n N ringfull_host MODE --stamp DIR
 *
 * MODE deliver (the delay is below GIN_TIMEOUT_MS): every put arrives
 *   exactly once with the right bytes: each signal is exactly PUTS, every
 *   slot holds its pattern, the slots nobody sends to are still zero.
 * MODE timeout (the delay is above GIN_TIMEOUT_MS): the producers' waits
 *   end after about the timeout: a rank's first error is its own
 *   GIN_ERR_TIMEOUT "no free slot in the proxy ring of context 0", or
 *   GIN_ERR_ABORTED by a rank whose error is that; no producer waited
 *   longer than 2 x GIN_TIMEOUT_MS + 1 s; nothing is corrupted: for each
 *   (sender, block) with signal value v, slots [0, v) hold their pattern
 *   (so no signal came twice or before its payload) and later slots their
 *   pattern or zero, once every rank has torn down (DIR/done.R stamps).
 * MODE stall (GIN_TRANSPORT=tcp, a delay far above GIN_TIMEOUT_MS, a ring
 *   of more than STALL_PUTS slots): not the ring but the transport stays
 *   full. Rank 1's proxy (the only one GIN_PROXY_DELAY_US pauses in this
 *   mode) stops reading:
 *   it puts once to rank 0 and flushes, so its proxy pauses. Rank 0 then
 *   puts STALL_PUTS x STALL_BYTES to rank 1, far more than the sockets and
 *   tcp's send buffer hold and fewer than its ring's slots (no producer
 *   waits; its proxy waits for room). Rank 0's error must be
 *   GIN_ERR_TIMEOUT naming peer 1 ("no room", "peer 1"): rank 1 is alive,
 *   so not GIN_ERR_REMOTE, which says a peer failed; known (asked every
 *   5 ms) no sooner than GIN_TIMEOUT_MS and within 2 x GIN_TIMEOUT_MS + 1 s
 *   of the launch. Then later calls fail the same way and teardown works.
 * --inject flips a received byte on rank 0 before the check (the run must
 * fail). Each rank prints "ringfull: rank R: OK ..." or "... FAIL ..."; exit 0
 * pass, 1 fail, 77 skip (cuda target without a GPU).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault_util.h"
#include "test_common.h"

#define BLOCKS 8
#define PUTS 24
#define SLOT 512
#define MAX_RANKS 8
#define TAG 0x52 /* test_byte's tag for this test */
/* 256 MiB in all (socket buffers on loopback grow to tens of MiB); run
 * with a ring of more slots than puts; each put within the window. */
#define STALL_PUTS 1024
#define STALL_BYTES (256 * 1024)

typedef struct kargs {
  gin_devcomm_t dc;
  gin_window_t win;
  int mode;       /* MODE_PUT, MODE_WAIT, MODE_READ, MODE_STALL */
  int *rc_out;    /* [BLOCKS] gin memory */
  uint64_t *sigs; /* [nranks * BLOCKS] gin memory (MODE_READ) */
} kargs_t;

enum { MODE_PUT, MODE_WAIT, MODE_READ, MODE_STALL };

/* Receive area: [sender][block][put] slots; then the source area:
 * [block][put] slots of this rank's payloads. */
GIN_HD_FN size_t recv_off(int s, int b, int k) {
  return (((size_t)s * BLOCKS + (size_t)b) * PUTS + (size_t)k) * SLOT;
}
GIN_HD_FN size_t src_off(int nranks, int b, int k) {
  return recv_off(nranks, 0, 0) + ((size_t)b * PUTS + (size_t)k) * SLOT;
}

GIN_KERNEL(k_ringfull, kargs_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank, n = dc->nranks, b = gin_block_idx(), rc = GIN_SUCCESS;
  if (args.mode == MODE_PUT) {
    for (int k = 0; k < PUTS && rc == GIN_SUCCESS; k++)
      for (int d = 1; d < n && rc == GIN_SUCCESS; d++) {
        int p = (me + d) % n;
        rc = gin_put(dc, 0, world, p, args.win, recv_off(me, b, k), args.win,
                     src_off(n, b, k), SLOT,
                     gin_remote_signal_inc(me * BLOCKS + b), gin_local_none(),
                     GIN_COOP_THREAD);
      }
  } else if (args.mode == MODE_WAIT) {
    for (int s = 0; s < n && rc == GIN_SUCCESS; s++)
      if (s != me)
        rc = gin_signal_wait(dc, s * BLOCKS + b, PUTS, GIN_COOP_THREAD);
  } else if (args.mode == MODE_READ) {
    if (b == 0)
      for (int i = 0; i < n * BLOCKS; i++)
        args.sigs[i] = gin_signal_read(dc, i);
  } else if (b == 0 && me == 1) { /* MODE_STALL: one put; its proxy pauses */
    rc = gin_put(dc, 0, world, 0, args.win, 0, args.win, 0, SLOT,
                 gin_remote_none(), gin_local_none(), GIN_COOP_THREAD);
    if (rc == GIN_SUCCESS) rc = gin_flush(dc, 0, GIN_COOP_THREAD);
  } else if (b == 0 && me == 0) { /* MODE_STALL: more than tcp holds */
    for (int k = 0; k < STALL_PUTS && rc == GIN_SUCCESS; k++)
      rc = gin_put(dc, 0, world, 1, args.win, 0, args.win, 0, STALL_BYTES,
                   gin_remote_none(), gin_local_none(), GIN_COOP_THREAD);
  }
  args.rc_out[b] = rc;
}

typedef struct run {
  gin_comm_t comm;
  int rank, nranks, timeout_mode, stall_mode, inject, fails;
  int64_t timeout_ms;
  const char *dir;
  void *mem;
  size_t bytes;
  int *rc_dev;
  uint64_t *sigs_dev;
  gin_window_t win;
  gin_devcomm_t dc;
} run_t;

#define FAIL(r, ...) FAULT_FAIL("ringfull", r, __VA_ARGS__)

static gin_result_t run_kernel(run_t *r, int mode, int rcs[BLOCKS]) {
  kargs_t a = {r->dc, r->win, mode, r->rc_dev, r->sigs_dev};
  gin_result_t rc = gin_launch(k_ringfull, BLOCKS, 1, 0, &a);
  if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
  if (rc == GIN_SUCCESS)
    rc = gin_mem_copy(rcs, r->rc_dev, sizeof(int) * BLOCKS);
  return rc;
}

/* Compares slot (s, b, k) of buf with its pattern: 1 if equal, 0 if all
 * zero, -1 otherwise. */
static int slot_state(const unsigned char *buf, int s, int b, int k) {
  const unsigned char *p = buf + recv_off(s, b, k);
  int same = 1, zero = 1;
  for (size_t i = 0; i < SLOT; i++) {
    same &= p[i] == test_byte(TAG, s, b * PUTS + k, i);
    zero &= p[i] == 0;
  }
  return same ? 1 : zero ? 0 : -1;
}

/* Checks the receive area against the signal values (see the header). */
static void check_memory(run_t *r, const uint64_t *sigs, int exact) {
  size_t len = recv_off(r->nranks, 0, 0);
  unsigned char *buf = (unsigned char *)malloc(len);
  TASSERT(buf, "out of memory");
  TCHECK(gin_mem_copy(buf, r->mem, len));
  if (r->inject && r->rank == 0) /* --inject: the check must catch it */
    buf[recv_off(1, BLOCKS / 2, PUTS / 2) + SLOT / 2] ^= 0x20;
  long delivered = 0;
  for (int s = 0; s < r->nranks; s++)
    for (int b = 0; b < BLOCKS; b++) {
      uint64_t v = s == r->rank ? 0 : sigs[s * BLOCKS + b];
      if (v > PUTS || (exact && s != r->rank && v != PUTS)) {
        FAIL(r, "signal of rank %d block %d is %llu, expected %s%d", s, b,
             (unsigned long long)v, exact ? "" : "at most ", PUTS);
        continue;
      }
      for (int k = 0; k < PUTS; k++) {
        int st = slot_state(buf, s, b, k);
        delivered += st == 1;
        if (st == 1 && s == r->rank)
          FAIL(r, "slot (%d, %d, %d) written, nobody sends there", s, b, k);
        else if (st != 1 && (uint64_t)k < v)
          FAIL(r, "slot (%d, %d, %d) is %s but the signal says %llu arrived", s,
               b, k, st == 0 ? "empty" : "corrupted", (unsigned long long)v);
        else if (st < 0)
          FAIL(r, "slot (%d, %d, %d) is corrupted (signal %llu)", s, b, k,
               (unsigned long long)v);
      }
    }
  free(buf);
  printf("ringfull: rank %d: %ld of %d puts arrived intact\n", r->rank,
         delivered, (r->nranks - 1) * BLOCKS * PUTS);
}

/* Waits (bounded) until every rank stamped DIR/NAME.R. */
static void wait_all(run_t *r, const char *name) {
  char path[4200];
  for (int q = 0; q < r->nranks; q++) {
    snprintf(path, sizeof path, "%s/%s.%d", r->dir, name, q);
    if (!stamp_wait(path, 20000)) FAIL(r, "rank %d never wrote %s", q, name);
  }
}

/* MODE timeout: the rank's first error and how long the producers ran. */
static void check_timeout(run_t *r, gin_result_t krc, const int rcs[BLOCKS],
                          double ms) {
  char msg[600], path[4200];
  gin_result_t rc = gin_comm_get_async_error(r->comm);
  snprintf(msg, sizeof msg, "%s", gin_last_error());
  int own = rc == GIN_ERR_TIMEOUT &&
            strstr(msg, "no free slot in the proxy ring of context 0");
  int by = -1;
  const char *at = strstr(msg, "aborted by rank ");
  if (rc == GIN_ERR_ABORTED && at) by = atoi(at + strlen("aborted by rank "));
  int timeouts = 0;
  for (int b = 0; b < BLOCKS; b++)
    timeouts += rcs[b] == GIN_ERR_TIMEOUT;
  printf("ringfull: rank %d: producers ended after %.0f ms (%d of %d timed "
         "out, the others aborted; kernel launch %s); first error %s: %s\n",
         r->rank, ms, timeouts, BLOCKS, gin_strerror(krc), gin_strerror(rc),
         msg);
  if (!own && by < 0)
    FAIL(r,
         "expected a ring timeout naming context 0, or an abort by a rank "
         "that had one; got %s: %s",
         gin_strerror(rc), msg);
  for (int b = 0; b < BLOCKS; b++)
    if (rcs[b] != GIN_ERR_TIMEOUT && rcs[b] != GIN_ERR_ABORTED)
      FAIL(r, "producer block %d ended with %s", b, gin_strerror(rcs[b]));
  if (ms > 2.0 * (double)r->timeout_ms + 1000)
    FAIL(r, "producers waited %.0f ms (limit 2 x %lld + 1000)", ms,
         (long long)r->timeout_ms);
  if (own && ms < (double)r->timeout_ms)
    FAIL(r, "timed out after %.0f ms, before GIN_TIMEOUT_MS", ms);
  snprintf(path, sizeof path, "%s/result.%d", r->dir, r->rank);
  stamp_write(path, own ? 1000u : 2000u + (unsigned)by);
}

/* MODE stall: rank 1's proxy pauses after one put; rank 0's proxy then
 * times out on a transport that takes nothing, and must say so (a timeout
 * naming peer 1, not a failed peer); rank 1 waits (bounded) until rank 0
 * is done with it. Then both tear down. */
static void run_stall(run_t *r) {
  char path[4200];
  int rcs[BLOCKS];
  snprintf(path, sizeof path, "%s/stalled.0", r->dir);
  if (r->rank == 1 &&
      (run_kernel(r, MODE_STALL, rcs) != GIN_SUCCESS || rcs[0] != GIN_SUCCESS))
    FAIL(r, "the put that pauses the proxy: %s", gin_last_error());
  TCHECK(gin_comm_barrier(r->comm));
  if (r->rank != 0) {
    if (!stamp_wait(path, 20000)) FAIL(r, "rank 0 never wrote stalled.0");
  } else {
    uint64_t t0 = now_ns();
    uint64_t until = t0 + (uint64_t)(2 * r->timeout_ms + 1000) * 1000000ull;
    gin_result_t krc = run_kernel(r, MODE_STALL, rcs), rc;
    while ((rc = gin_comm_get_async_error(r->comm)) == GIN_SUCCESS &&
           now_ns() < until)
      usleep(5000);
    double ms = (double)(now_ns() - t0) / 1e6;
    char msg[600];
    snprintf(msg, sizeof msg, "%s", gin_last_error());
    printf("ringfull: rank 0: stall: %d puts of %d KiB to rank 1 posted (%s); "
           "error known after %.0f ms: %s: %s\n",
           STALL_PUTS, STALL_BYTES / 1024, gin_strerror(krc), ms,
           gin_strerror(rc), msg);
    if (krc != GIN_SUCCESS || rcs[0] != GIN_SUCCESS)
      FAIL(r, "posting the puts: launch %s, kernel %s", gin_strerror(krc),
           gin_strerror(rcs[0]));
    if (rc != GIN_ERR_TIMEOUT || !strstr(msg, "no room") ||
        !strstr(msg, "peer 1"))
      FAIL(r,
           "want GIN_ERR_TIMEOUT naming peer 1 ('no room', 'peer 1'), "
           "got %s: %s",
           gin_strerror(rc), msg);
    if (ms < (double)r->timeout_ms)
      FAIL(r, "timed out after %.0f ms, before GIN_TIMEOUT_MS", ms);
    /* A later call says the same. */
    rc = gin_comm_barrier(r->comm);
    if (rc != GIN_ERR_TIMEOUT || !strstr(gin_last_error(), "no room"))
      FAIL(r, "later gin_comm_barrier: %s: %s", gin_strerror(rc),
           gin_last_error());
    stamp_write(path, now_ns());
  }
  gin_devcomm_destroy(r->comm, &r->dc);   /* local after an abort */
  gin_window_deregister(r->comm, r->win); /* releases, returns the error */
  TCHECK(gin_comm_destroy(r->comm));
}

/* After every rank wrote its result: an abort must come from a rank that
 * timed out itself. */
static void check_aborters(run_t *r) {
  char path[4200];
  snprintf(path, sizeof path, "%s/result.%d", r->dir, r->rank);
  uint64_t mine = stamp_read(path);
  if (mine < 2000) return;
  int by = (int)(mine - 2000);
  snprintf(path, sizeof path, "%s/result.%d", r->dir, by);
  if (by < 0 || by >= r->nranks || stamp_read(path) != 1000)
    FAIL(r, "aborted by rank %d, which did not time out on its ring", by);
}

int main(int argc, char **argv) {
  test_require_device();
  run_t r;
  memset(&r, 0, sizeof r);
  const char *mode = argc > 1 ? argv[1] : "";
  for (int i = 2; i < argc; i++)
    if (!strcmp(argv[i], "--stamp") && i + 1 < argc)
      r.dir = argv[++i];
    else if (!strcmp(argv[i], "--inject"))
      r.inject = 1;
  if ((strcmp(mode, "deliver") && strcmp(mode, "timeout") &&
       strcmp(mode, "stall")) ||
      !r.dir) {
    fprintf(stderr,
            "usage: ringfull deliver|timeout|stall --stamp DIR [--inject]\n");
    return 2;
  }
  r.timeout_mode = !strcmp(mode, "timeout");
  r.stall_mode = !strcmp(mode, "stall");
  r.timeout_ms = fault_timeout_ms();
  /* MODE stall: only rank 1's proxy pauses. The pause comes from the
   * environment, the same for every rank; a rank 0 proxy woken by its
   * first put (host-target doorbell) would pause after a batch that still
   * fit, and never meet the full transport. */
  const char *grank = fault_env_rank();
  if (r.stall_mode && (!grank || atoi(grank) != 1))
    unsetenv("GIN_PROXY_DELAY_US");
  TCHECK(gin_comm_init_from_env(&r.comm, NULL));
  TCHECK(gin_comm_rank(r.comm, &r.rank));
  TCHECK(gin_comm_size(r.comm, &r.nranks));
  TASSERT(r.nranks >= 2 && r.nranks <= MAX_RANKS, "2..%d ranks", MAX_RANKS);
  r.bytes = src_off(r.nranks, BLOCKS, 0);
  TASSERT(r.bytes >= STALL_BYTES, "the stall puts fit the window");
  TCHECK(gin_mem_alloc(r.bytes, &r.mem));
  TCHECK(gin_mem_alloc(sizeof(int) * BLOCKS, (void **)&r.rc_dev));
  TCHECK(gin_mem_alloc(sizeof(uint64_t) * MAX_RANKS * BLOCKS,
                       (void **)&r.sigs_dev));
  /* This rank's payloads, in the source area. */
  size_t slen = r.bytes - src_off(r.nranks, 0, 0);
  unsigned char *src = (unsigned char *)malloc(slen);
  TASSERT(src, "out of memory");
  for (int b = 0; b < BLOCKS; b++)
    for (int k = 0; k < PUTS; k++)
      for (size_t i = 0; i < SLOT; i++)
        src[((size_t)b * PUTS + (size_t)k) * SLOT + i] =
            test_byte(TAG, r.rank, b * PUTS + k, i);
  TCHECK(gin_mem_copy((char *)r.mem + src_off(r.nranks, 0, 0), src, slen));
  free(src);
  TCHECK(gin_window_register(r.comm, r.mem, r.bytes, &r.win));
  gin_devcomm_reqs_t reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.signals = r.nranks * BLOCKS;
  reqs.contexts = 1;
  TCHECK(gin_devcomm_create(r.comm, &reqs, &r.dc));
  TCHECK(gin_comm_barrier(r.comm));

  int rcs[BLOCKS];
  uint64_t sigs[MAX_RANKS * BLOCKS];
  uint64_t t0 = now_ns();
  gin_result_t krc = r.stall_mode ? GIN_SUCCESS : run_kernel(&r, MODE_PUT, rcs);
  double ms = (double)(now_ns() - t0) / 1e6;
  char path[4200];
  if (r.stall_mode) {
    run_stall(&r);
  } else if (!r.timeout_mode) {
    if (krc != GIN_SUCCESS)
      FAIL(&r, "launch: %s: %s", gin_strerror(krc), gin_last_error());
    for (int b = 0; b < BLOCKS; b++)
      if (rcs[b] != GIN_SUCCESS)
        FAIL(&r, "producer block %d: %s", b, gin_strerror(rcs[b]));
    gin_result_t rc = run_kernel(&r, MODE_WAIT, rcs);
    if (rc == GIN_SUCCESS) rc = gin_comm_get_async_error(r.comm);
    if (rc != GIN_SUCCESS)
      FAIL(&r, "puts or their signals: %s: %s", gin_strerror(rc),
           gin_last_error());
    TCHECK(gin_comm_barrier(r.comm));
    TCHECK(run_kernel(&r, MODE_READ, rcs));
    TCHECK(gin_mem_copy(sigs, r.sigs_dev, sizeof sigs));
    check_memory(&r, sigs, 1);
    TCHECK(gin_comm_barrier(r.comm));
    TCHECK(gin_devcomm_destroy(r.comm, &r.dc));
    TCHECK(gin_window_deregister(r.comm, r.win));
    TCHECK(gin_comm_destroy(r.comm));
  } else {
    check_timeout(&r, krc, rcs, ms);
    /* What arrived so far; read before teardown (the signals go with the
     * device communicator). */
    if (run_kernel(&r, MODE_READ, rcs) != GIN_SUCCESS ||
        gin_mem_copy(sigs, r.sigs_dev, sizeof sigs) != GIN_SUCCESS)
      FAIL(&r, "reading the signals: %s", gin_last_error());
    gin_devcomm_destroy(r.comm, &r.dc);   /* local after an abort */
    gin_window_deregister(r.comm, r.win); /* releases, returns the error */
    TCHECK(gin_comm_destroy(r.comm));     /* this rank's proxy is gone */
    snprintf(path, sizeof path, "%s/done.%d", r.dir, r.rank);
    stamp_write(path, now_ns());
    wait_all(&r, "done"); /* nobody writes into this rank's memory now */
    check_memory(&r, sigs, 0);
    check_aborters(&r);
  }
  TCHECK(gin_mem_free(r.mem));
  TCHECK(gin_mem_free(r.rc_dev));
  TCHECK(gin_mem_free(r.sigs_dev));
  if (!r.fails && r.stall_mode)
    printf("ringfull: rank %d: OK stall\n", r.rank);
  else if (!r.fails)
    printf("ringfull: rank %d: OK %s: %d producers x %d puts to %d peers "
           "through an 8-slot ring, kernel %.0f ms\n",
           r.rank, mode, BLOCKS, PUTS, r.nranks - 1, ms);
  fflush(stdout);
  return r.fails ? 1 : 0;
}
