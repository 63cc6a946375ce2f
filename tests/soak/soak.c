/*
 * Soak test: every round, every rank sends every rank (itself included) a
 * random mix of puts (1 B .. 64 KiB, some without a signal), put_values
 * and signal-only adds, planned by a PRNG that sender and receiver share
 * (seed = f(seed, round, src, dst)). Each put carries an 8-byte header
 * naming (round, src, dst, index) and a pattern derived from the same;
 * the receiver waits for exactly the expected signal counts per source,
 * then checks every byte. After each round a device barrier lands all
 * traffic and the signals must equal the expected totals exactly (a lost
 * operation hangs or leaves a stale header, a duplicate shows as an extra
 * count, a corruption as a bad byte). Between rounds the process's fd
 * count and RSS are sampled: the fd count must not change after the first
 * round and RSS must grow by less than SOAK_RSS_BOUND after the first
 * quarter of the run (its first messages touch the transports' buffer
 * pools for the first time: tcp;ofi_rxm's shared receive buffers, 4096 of
 * 16 KiB, grew RSS by 26 MB in the first second of a 4-rank run).
 *
 *   ginrun -n N soak_host [--rounds R] [--seconds S] [--sample K]
 *                         [--seed X] [--verbose] [--inject] [--hosts G]
 * --inject corrupts one received byte on rank 0 in round 1: the run must
 * then fail (a self-test of the checks). --hosts G: ranks in groups of G
 * each take a host identity of their own (GIN_HOSTID), so peers in the
 * same group are on the direct path and the others, on other "hosts",
 * through the proxy and the tcp transport: one job mixing both paths.
 * Exit 0 pass, 1 fail, 77 skip (cuda target without a GPU).
 */
#include "test_common.h"

#include <time.h>

#define MAX_RANKS 64
#define MAX_OPS 24                  /* random operations per (src, dst) */
#define MAX_PUT (64 * 1024)         /* largest put */
#define DATA (256 * 1024)           /* put bytes per (src, dst) */
#define REGION (DATA + MAX_OPS * 8) /* + one put_value slot per op */
#define SOAK_RSS_BOUND (16ll << 20) /* allowed RSS growth, bytes */
/* ThreadSanitizer's own bookkeeping grows with the traffic (tens of MiB
 * in seconds): memory is checked without it, descriptors always. */
#if defined(__SANITIZE_THREAD__)
#define SOAK_CHECK_MEMORY 0
#else
#define SOAK_CHECK_MEMORY 1
#endif
#define SIG_PUT 0         /* + source: puts, put_values, fences */
#define SIG_ADD MAX_RANKS /* + source: signal-only adds */

enum { OP_PUT, OP_PUT_NOSIG, OP_VALUE, OP_ADD, OP_FENCE };

/* State in gin memory (uint64 words). */
enum {
  ST_HDR_BAD,  /* puts whose header is wrong: lost, stale or misplaced */
  ST_BODY_BAD, /* payload bytes after the header that are wrong */
  ST_VAL_BAD,  /* put_values that are wrong */
  ST_SIG_BAD,  /* signals that are not exactly the expected total */
  ST_RC_BAD,   /* calls that did not return GIN_SUCCESS */
  ST_FIRST,    /* first mismatch: count, then round, src, op, byte, got,
                  want */
  ST_CUM_PUT = 16,
  ST_CUM_ADD = ST_CUM_PUT + MAX_RANKS,
  ST_WORDS = ST_CUM_ADD + MAX_RANKS
};

/* ------------------------------------------------------------ the plan */

typedef struct plan {
  uint64_t s;   /* PRNG state */
  uint64_t key; /* f(seed, round, src, dst) */
  int n, i, nctx;
  size_t off;
} plan_t;

typedef struct op {
  int kind, idx, ctx, width;
  size_t off, len; /* puts: offset in the data area; put_value: slot */
  uint64_t value;  /* put_value: value; add: amount */
} op_t;

GIN_HD_FN uint64_t plan_rand(plan_t *p) {
  p->s += 0x9e3779b97f4a7c15ull;
  return test_mix(p->s);
}

GIN_HD_FN void plan_begin(plan_t *p, uint64_t seed, int round, int src, int dst,
                          int nctx) {
  p->key = test_mix(seed ^ ((uint64_t)round << 16) ^ ((uint64_t)src << 48) ^
                    ((uint64_t)dst << 56));
  p->s = p->key;
  p->n = 1 + (int)(plan_rand(p) % MAX_OPS);
  p->i = 0;
  p->nctx = nctx;
  p->off = 0;
}

/* The next operation of the plan; 0 once done. The random operations come
 * first, then one signal per context (fences: they cover the puts that
 * carry no signal of their own). */
GIN_HD_FN int plan_next(plan_t *p, op_t *op) {
  if (p->i >= p->n + p->nctx) return 0;
  int i = p->i++;
  op->idx = i;
  op->ctx = i % p->nctx;
  op->off = op->len = 0;
  op->width = 0;
  op->value = 0;
  if (i >= p->n) {
    op->kind = OP_FENCE;
    return 1;
  }
  uint64_t r = plan_rand(p), kind = r % 100;
  if (kind < 70) {
    int bits = (int)((r >> 8) % 17); /* log-uniform lengths */
    size_t len = 1 + (size_t)((r >> 16) % ((1ull << bits)));
    if (len > MAX_PUT) len = MAX_PUT;
    if (p->off + len <= DATA) {
      op->kind = kind < 60 ? OP_PUT : OP_PUT_NOSIG;
      op->off = p->off;
      op->len = len;
      p->off = (p->off + len + 7) & ~(size_t)7;
      return 1;
    }
    kind = 70; /* no room left: a put_value instead */
  }
  if (kind < 85) {
    op->kind = OP_VALUE;
    op->off = DATA + (size_t)i * 8;
    op->width = 1 + (int)((r >> 8) % 8);
    op->value = test_mix(p->key ^ (uint64_t)i ^ 0x7a1ull);
  } else {
    op->kind = OP_ADD;
    op->value = 1 + (r >> 8) % 1000;
  }
  return 1;
}

/* Byte j of put `idx` of the plan with this key; bytes 0..7 are the
 * header (when the put has them), the rest the pattern. */
GIN_HD_FN unsigned char op_byte(uint64_t key, int idx, size_t j) {
  uint64_t w = test_mix(key + ((uint64_t)idx << 40) + (j >> 3));
  return (unsigned char)(w >> ((j & 7) * 8));
}

/* ------------------------------------------------------------- kernels */

typedef struct args {
  gin_devcomm_t dc;
  gin_window_t win;
  gin_coop_t coop;
  int round;
  int inject; /* self-test: corrupt one received byte */
  uint64_t seed;
  uint64_t *st; /* gin memory, ST_WORDS */
} args_t;

GIN_DEVICE_FN void note(const args_t *a, int what, uint64_t n) {
  if (n) gin_fetch_add_relaxed_u64(a->st + what, n);
}
GIN_DEVICE_FN void note_rc(const args_t *a, int rc) {
  if (rc != GIN_SUCCESS) note(a, ST_RC_BAD, 1);
}
GIN_DEVICE_FN void note_first(const args_t *a, int src, int idx, size_t j,
                              unsigned got, unsigned want) {
  if (gin_fetch_add_relaxed_u64(a->st + ST_FIRST, 1) != 0) return;
  a->st[ST_FIRST + 1] = (uint64_t)a->round;
  a->st[ST_FIRST + 2] = (uint64_t)src;
  a->st[ST_FIRST + 3] = (uint64_t)idx;
  a->st[ST_FIRST + 4] = (uint64_t)j;
  a->st[ST_FIRST + 5] = got;
  a->st[ST_FIRST + 6] = want;
}

/* Send area for destination d, receive area for source s. */
GIN_HD_FN size_t send_off(int nranks, int d) {
  return (size_t)(nranks + d) * REGION;
}
GIN_HD_FN size_t recv_off(int s) { return (size_t)s * REGION; }

/* One round. Block b sends to the peers (me + k) % n with k % grid == b and
 * receives from (me - k) % n likewise; contexts rotate with the index. */
GIN_KERNEL(k_round, args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank, n = dc->nranks;
  int cr = gin_coop_rank(args.coop), cs = gin_coop_size(args.coop);
  int b = gin_block_idx(), g = gin_grid_dim();
  char *base = (char *)gin_window_peer_ptr(dc, args.win, world, me, 0);
  plan_t p;
  op_t op;
  for (int k = b; k < n; k += g) {
    int to = (me + k) % n;
    plan_begin(&p, args.seed, args.round, me, to, dc->nctx);
    char *src = base + send_off(n, to);
    while (plan_next(&p, &op))
      if (op.kind == OP_PUT || op.kind == OP_PUT_NOSIG)
        for (size_t j = (size_t)cr; j < op.len; j += (size_t)cs)
          src[op.off + j] = (char)op_byte(p.key, op.idx, j);
  }
  gin_coop_sync(args.coop);
  for (int k = b; k < n; k += g) {
    int to = (me + k) % n;
    plan_begin(&p, args.seed, args.round, me, to, dc->nctx);
    while (plan_next(&p, &op)) {
      int ctx = (op.ctx + b) % dc->nctx;
      gin_remote_t inc = gin_remote_signal_inc(SIG_PUT + me);
      switch (op.kind) {
      case OP_PUT:
      case OP_PUT_NOSIG:
        note_rc(&args,
                gin_put(dc, ctx, world, to, args.win, recv_off(me) + op.off,
                        args.win, send_off(n, to) + op.off, op.len,
                        op.kind == OP_PUT ? inc : gin_remote_none(),
                        gin_local_none(), args.coop));
        break;
      case OP_VALUE:
        note_rc(&args, gin_put_value(dc, ctx, world, to, args.win,
                                     recv_off(me) + op.off, op.value, op.width,
                                     inc, args.coop));
        break;
      case OP_ADD:
        note_rc(&args, gin_signal(dc, ctx, world, to,
                                  gin_remote_signal_add(SIG_ADD + me, op.value),
                                  args.coop));
        break;
      default: /* OP_FENCE: every context this block used */
        note_rc(&args, gin_signal(dc, op.ctx, world, to, inc, args.coop));
      }
    }
  }
  for (int k = b; k < n; k += g) {
    int from = (me + n - k) % n;
    note_rc(&args, gin_signal_wait(dc, SIG_PUT + from,
                                   args.st[ST_CUM_PUT + from], args.coop));
    note_rc(&args, gin_signal_wait(dc, SIG_ADD + from,
                                   args.st[ST_CUM_ADD + from], args.coop));
    plan_begin(&p, args.seed, args.round, from, me, dc->nctx);
    char *rcv = base + recv_off(from);
    if (args.inject && k == b && cr == 0) rcv[3] ^= 0x10;
    uint64_t hdr = 0, body = 0, val = 0;
    while (plan_next(&p, &op)) {
      if (op.kind == OP_PUT || op.kind == OP_PUT_NOSIG) {
        int bad_hdr = 0;
        for (size_t j = (size_t)cr; j < op.len; j += (size_t)cs) {
          unsigned char got = (unsigned char)rcv[op.off + j];
          unsigned char want = op_byte(p.key, op.idx, j);
          if (got == want) continue;
          if (j < 8)
            bad_hdr = 1;
          else
            body++;
          note_first(&args, from, op.idx, j, got, want);
        }
        hdr += (uint64_t)bad_hdr;
      } else if (op.kind == OP_VALUE && cr == 0) {
        for (int j = 0; j < op.width; j++) {
          unsigned char got = (unsigned char)rcv[op.off + (size_t)j];
          unsigned char want = (unsigned char)(op.value >> (8 * j));
          if (got != want) {
            val++;
            note_first(&args, from, op.idx, (size_t)j, got, want);
            break;
          }
        }
      }
    }
    note(&args, ST_HDR_BAD, hdr);
    note(&args, ST_BODY_BAD, body);
    note(&args, ST_VAL_BAD, val);
  }
  for (int c = 0; c < dc->nctx; c++)
    note_rc(&args, gin_flush(dc, c, args.coop));
}

/* After every rank's round: land everything, then every signal must be
 * exactly the expected total (a duplicate would exceed it). */
GIN_KERNEL(k_check, args_t) {
  const gin_devcomm_t *dc = &args.dc;
  note_rc(&args, gin_barrier(dc, gin_team_world(dc), 0, GIN_COOP_THREAD));
  for (int s = 0; s < dc->nranks; s++) {
    uint64_t put = gin_signal_read(dc, SIG_PUT + s);
    uint64_t add = gin_signal_read(dc, SIG_ADD + s);
    if (put != args.st[ST_CUM_PUT + s]) {
      note(&args, ST_SIG_BAD, 1);
      note_first(&args, s, -1, 0, (unsigned)put,
                 (unsigned)args.st[ST_CUM_PUT + s]);
    }
    if (add != args.st[ST_CUM_ADD + s]) {
      note(&args, ST_SIG_BAD, 1);
      note_first(&args, s, -2, 0, (unsigned)add,
                 (unsigned)args.st[ST_CUM_ADD + s]);
    }
  }
}

/* ---------------------------------------------------------------- host */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct result {
  uint64_t bad[5]; /* ST_HDR_BAD .. ST_RC_BAD */
  uint64_t ops, bytes, first[7];
  int64_t rss0, rss1, anon0, anon1; /* VmRSS, RssAnon */
  int fd0, fd1, async_bad, pad;
} result_t;

/* Records fds and memory as the latest sample, and as the base: fds at
 * round 0 (fd_base), memory once warmed up (mem_base). */
static void sample_now(result_t *res, int fd_base, int mem_base) {
  int64_t rss = test_status_bytes("VmRSS"), anon = test_status_bytes("RssAnon");
  int fds = test_fd_count();
  if (fd_base) res->fd0 = fds;
  if (mem_base) {
    res->rss0 = rss;
    res->anon0 = anon;
  }
  res->rss1 = rss;
  res->anon1 = anon;
  res->fd1 = fds;
}

static void usage(void) {
  fprintf(stderr, "usage: soak [--rounds R] [--seconds S] [--sample K] "
                  "[--seed X] [--verbose] [--inject] [--hosts G]\n");
  exit(1);
}

int main(int argc, char **argv) {
  int rounds = 0, sample = 10, verbose = 0, inject = 0, hosts = 0;
  double seconds = 0;
  uint64_t seed = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--sample") && i + 1 < argc)
      sample = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
      seed = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--verbose"))
      verbose = 1;
    else if (!strcmp(argv[i], "--inject"))
      inject = 1;
    else if (!strcmp(argv[i], "--hosts") && i + 1 < argc)
      hosts = atoi(argv[++i]);
    else
      usage();
  }
  if (hosts > 0) { /* this rank's group is its host (ginrun sets GIN_RANK) */
    const char *r = getenv("GIN_RANK");
    TASSERT(r != NULL, "--hosts needs GIN_RANK (run it under ginrun)");
    char id[64];
    snprintf(id, sizeof id, "soak-host-%d", atoi(r) / hosts);
    setenv("GIN_HOSTID", id, 1);
  }
  if (rounds <= 0 && seconds <= 0) rounds = 50;
  if (sample < 1) sample = 1;
  test_require_device();

  gin_comm_t comm;
  int rank, nranks;
  TCHECK(gin_comm_init_from_env(&comm, NULL));
  TCHECK(gin_comm_rank(comm, &rank));
  TCHECK(gin_comm_size(comm, &nranks));
  TASSERT(nranks <= MAX_RANKS, "at most %d ranks", MAX_RANKS);
  size_t win_bytes = 2 * (size_t)nranks * REGION;
  void *mem;
  uint64_t *st;
  gin_window_t win;
  gin_devcomm_t dc;
  TCHECK(gin_mem_alloc(win_bytes, &mem));
  TCHECK(gin_window_register(comm, mem, win_bytes, &win));
  TCHECK(gin_mem_alloc(ST_WORDS * sizeof(uint64_t), (void **)&st));
  gin_devcomm_reqs_t reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.signals = 2 * MAX_RANKS;
  TCHECK(gin_devcomm_create(comm, &reqs, &dc));

  result_t res;
  memset(&res, 0, sizeof res);
  uint64_t cum[2 * MAX_RANKS];
  memset(cum, 0, sizeof cum);
  int *flags = (int *)calloc((size_t)nranks, sizeof(int));
  gin_coop_t coops[3] = {GIN_COOP_BLOCK, GIN_COOP_WARP, GIN_COOP_THREAD};
  double t0 = now_s();
  int round = 0, mem_based = 0;
  for (;; round++) {
    /* Rank 0 decides whether there is another round. */
    int more = rounds > 0 ? round < rounds : now_s() - t0 < seconds;
    TCHECK(gin_comm_allgather(comm, &more, flags, sizeof(int)));
    if (!flags[0]) break;
    /* What this rank expects from each source, and what it sends. */
    for (int s = 0; s < nranks; s++) {
      plan_t p;
      op_t op;
      plan_begin(&p, seed, round, s, rank, dc.nctx);
      while (plan_next(&p, &op))
        if (op.kind == OP_ADD)
          cum[MAX_RANKS + s] += op.value;
        else if (op.kind != OP_PUT_NOSIG)
          cum[s]++;
      plan_begin(&p, seed, round, rank, s, dc.nctx);
      while (plan_next(&p, &op)) {
        res.ops++;
        res.bytes += op.kind == OP_VALUE ? (uint64_t)op.width : op.len;
      }
    }
    TCHECK(gin_mem_copy(st + ST_CUM_PUT, cum, sizeof cum));
    args_t a;
    memset(&a, 0, sizeof a);
    a.dc = dc;
    a.win = win;
    a.coop = coops[round % 3];
    a.round = round;
    a.seed = seed;
    a.inject = inject && round == 1 && rank == 0;
    a.st = st;
    int grid = 1 + (round / 3) % 2;
    gin_result_t rc =
        gin_launch(k_round, grid, test_block_threads(a.coop), 0, &a);
    if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
    TCHECK(rc);
    TCHECK(gin_comm_barrier(comm));
    a.coop = GIN_COOP_THREAD;
    rc = gin_launch(k_check, 1, 1, 0, &a);
    if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
    TCHECK(rc);
    if (gin_comm_get_async_error(comm) != GIN_SUCCESS) {
      fprintf(stderr, "rank %d: round %d: async error: %s\n", rank, round,
              gin_last_error());
      res.async_bad = 1;
      break;
    }
    TCHECK(gin_comm_barrier(comm));
    int warm = rounds > 0 ? round + 1 >= (rounds + 3) / 4
                          : now_s() - t0 >= seconds / 4;
    int mem_base = (warm || round == 0) && !mem_based;
    if (round == 0 || (round + 1) % sample == 0 || mem_base) {
      sample_now(&res, round == 0, mem_base);
      mem_based |= warm;
      if (verbose)
        printf("rank %d round %d: fds %d rss %lld KiB anon %lld KiB\n", rank,
               round + 1, res.fd1, (long long)res.rss1 >> 10,
               (long long)res.anon1 >> 10);
    }
  }
  double secs = now_s() - t0;
  sample_now(&res, round == 0, round == 0); /* after the last round */
  uint64_t h[ST_FIRST + 7];
  TCHECK(gin_mem_copy(h, st, sizeof h));
  memcpy(res.bad, h, sizeof res.bad);
  memcpy(res.first, h + ST_FIRST, sizeof res.first);

  result_t *all = (result_t *)calloc((size_t)nranks, sizeof(result_t));
  TCHECK(gin_comm_allgather(comm, &res, all, sizeof res));
  int failed = 0;
  int64_t win_all = (int64_t)win_bytes * nranks;
  if (rank == 0) {
    uint64_t ops = 0, bytes = 0, bad[5] = {0};
    for (int r = 0; r < nranks; r++) {
      const result_t *x = &all[r];
      ops += x->ops;
      bytes += x->bytes;
      for (int i = 0; i < 5; i++)
        bad[i] += x->bad[i];
      /* Anonymous memory must stay flat; VmRSS may also grow by the
       * window pages (this rank's and its load/store peers') touched
       * late. */
      int leak =
          x->fd1 != x->fd0 || (SOAK_CHECK_MEMORY &&
                               (x->anon1 - x->anon0 >= SOAK_RSS_BOUND ||
                                x->rss1 - x->rss0 >= SOAK_RSS_BOUND + win_all));
      if (x->first[0])
        fprintf(
            stderr,
            "rank %d: %llu mismatches, first: round %llu src %llu op "
            "%lld byte %llu got %llu want %llu\n",
            r, (unsigned long long)x->first[0], (unsigned long long)x->first[1],
            (unsigned long long)x->first[2], (long long)x->first[3],
            (unsigned long long)x->first[4], (unsigned long long)x->first[5],
            (unsigned long long)x->first[6]);
      if (leak || verbose)
        printf("rank %d: fds %d -> %d, rss %lld -> %lld KiB, anon %lld -> "
               "%lld KiB%s\n",
               r, x->fd0, x->fd1, (long long)x->rss0 >> 10,
               (long long)x->rss1 >> 10, (long long)x->anon0 >> 10,
               (long long)x->anon1 >> 10, leak ? " LEAK" : "");
      failed |= leak || x->async_bad;
    }
    uint64_t mism = bad[0] + bad[1] + bad[2] + bad[3] + bad[4];
    failed |= mism != 0;
    printf("soak: %d ranks, %d rounds, %.1f s, %llu ops, %.1f MiB, "
           "mismatches %llu (hdr %llu body-bytes %llu value %llu signal %llu "
           "rc %llu), rank 0 fds %d -> %d, rss %lld -> %lld KiB, anon %lld -> "
           "%lld KiB: %s\n",
           nranks, round, secs, (unsigned long long)ops,
           (double)bytes / (1 << 20), (unsigned long long)mism,
           (unsigned long long)bad[0], (unsigned long long)bad[1],
           (unsigned long long)bad[2], (unsigned long long)bad[3],
           (unsigned long long)bad[4], all[0].fd0, all[0].fd1,
           (long long)all[0].rss0 >> 10, (long long)all[0].rss1 >> 10,
           (long long)all[0].anon0 >> 10, (long long)all[0].anon1 >> 10,
           failed ? "FAILED" : "passed");
    fflush(stdout);
  }
  TCHECK(gin_comm_allgather(comm, &failed, flags, sizeof(int)));
  failed = flags[0];
  free(all);
  free(flags);
  TCHECK(gin_devcomm_destroy(comm, &dc));
  TCHECK(gin_window_deregister(comm, win));
  TCHECK(gin_mem_free(st));
  TCHECK(gin_mem_free(mem));
  TCHECK(gin_comm_destroy(comm));
  return failed ? 1 : 0;
}
