/*
 * Conformance suite: the semantics of the device API, written once and run
 * on every (target x path) the machine has. Launch with N ranks:
 *   ginrun -n N conformance_host        (host target)
 *   ginrun -n N conformance_cuda        (cuda target, MPS for N > 1 per GPU)
 * Every rank runs every case; results are agreed through the bootstrap
 * network so all ranks pass or fail together. Exit 0 pass, 1 fail.
 * Built a second time with device checks compiled out
 * (CONFORMANCE_NOCHECKS), as the benchmarks build it, so that the code
 * they measure (e.g. a rank's own base read from the handle) is the code
 * the suite checks.
 */
#ifdef CONFORMANCE_NOCHECKS
#undef GIN_DEVICE_CHECKS
#define GIN_DEVICE_CHECKS 0
#endif
#include "test_common.h"

/* Window layout (bytes): [0, REG) source, [REG, 2 REG) destination,
 * [2 REG, 2 REG + SLOTS) small slots for put_value and barrier tests. */
#define REG (128 * 1024)
#define SLOTS (8 * 1024)
#define WIN_BYTES (2 * REG + SLOTS)

/* Signals used by the cases. */
enum {
  SIG_DATA = 0,
  SIG_ACK = 1,
  SIG_ADD = 2,
  SIG_INC = 3,
  SIG_WRAP = 4,
  SIG_SELF = 5,
  SIG_VAL = 6,
  SIG_A2A = 16 /* + sender */
};

typedef struct args {
  gin_devcomm_t dc;
  gin_window_t win;
  gin_coop_t coop;
  int rounds;
  int nputs;
  int tag;
  uint64_t *errors; /* gin memory: error count */
  uint64_t *out;    /* gin memory: case-specific outputs */
} args_t;

GIN_DEVICE_FN void note_errors(const args_t *a, uint64_t n) {
  if (n) gin_fetch_add_relaxed_u64(a->errors, n);
}
GIN_DEVICE_FN void note_rc(const args_t *a, int rc) {
  if (rc != GIN_SUCCESS) gin_fetch_add_relaxed_u64(a->errors, 1000000);
}

GIN_DEVICE_FN char *my_base(const args_t *a) {
  const gin_devcomm_t *dc = &a->dc;
  return (char *)gin_window_peer_ptr(dc, a->win, gin_team_world(dc), dc->rank,
                                     0);
}

/* Ordering: many puts of random sizes to the next rank, the last carrying
 * the signal; the receiver checks every byte when the signal arrives. */
GIN_KERNEL(k_order, args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank, n = dc->nranks;
  int to = (me + 1) % n, from = (me + n - 1) % n;
  int cr = gin_coop_rank(args.coop), cs = gin_coop_size(args.coop);
  char *base = my_base(&args);
  uint64_t errors = 0;
  for (int k = 0; k < args.rounds; k++) {
    if (k > 0)
      note_rc(&args, gin_signal_wait(dc, SIG_ACK, (uint64_t)k, args.coop));
    for (size_t i = (size_t)cr; i < REG; i += (size_t)cs)
      base[i] = (char)test_byte(args.tag, me, k, i);
    gin_coop_sync(args.coop);
    size_t off = 0;
    for (int p = 0; p < args.nputs; p++) {
      size_t left = REG - off, len = left;
      if (p < args.nputs - 1)
        len = (size_t)(test_mix((uint64_t)(me * 1000003 + k * 101 + p)) %
                       (2 * left / (size_t)(args.nputs - p) + 1));
      if (len > left) len = left;
      gin_remote_t rem = p == args.nputs - 1 ? gin_remote_signal_inc(SIG_DATA)
                                             : gin_remote_none();
      note_rc(&args,
              gin_put(dc, k % dc->nctx, world, to, args.win, REG + off,
                      args.win, off, len, rem, gin_local_none(), args.coop));
      off += len;
    }
    note_rc(&args, gin_signal_wait(dc, SIG_DATA, (uint64_t)k + 1, args.coop));
    for (size_t i = (size_t)cr; i < REG; i += (size_t)cs)
      if ((unsigned char)base[REG + i] != test_byte(args.tag, from, k, i))
        errors++;
    note_rc(&args, gin_flush(dc, k % dc->nctx, args.coop));
    note_rc(&args, gin_signal(dc, k % dc->nctx, world, from,
                              gin_remote_signal_inc(SIG_ACK), args.coop));
  }
  /* The ring is quiet only once the last ack from `to` arrived. */
  note_rc(&args,
          gin_signal_wait(dc, SIG_ACK, (uint64_t)args.rounds, args.coop));
  note_errors(&args, errors);
}

/* Same destination: each round, OW_PUTS puts of random lengths (the first
 * one whole) overwrite the same bytes of the next rank, each from a source
 * of its own and with a signal; OW_PUTS put_values of mixed widths
 * overwrite one slot; a chain of self puts copies a block on, each link
 * reading what the previous one wrote. All on one context: a transport
 * that reorders same-destination or dependent operations (copies of one
 * unordered batch) shows up as a wrong winner. */
#define OW_PUTS 16
#define OW_CHUNK (REG / OW_PUTS)
#define OW_LINK 512
#define OW_LINKS 8
#define OW_VALUE (2 * REG + (OW_LINKS + 1) * OW_LINK)

GIN_DEVICE_FN size_t ow_len(int s, int k, int p) {
  return p == 0 ? (size_t)OW_CHUNK
                : 1 + (size_t)(test_mix((uint64_t)(s * 7717 + k * 131 + p)) %
                               OW_CHUNK);
}
GIN_DEVICE_FN uint64_t ow_value(int s, int k, int p) {
  return test_mix(((uint64_t)s << 32) ^ ((uint64_t)k << 8) ^ (uint64_t)p ^
                  0x5a5a0000ull);
}
GIN_DEVICE_FN int ow_width(int p) { return p % 8 + 1; } /* the last: 8 */

GIN_KERNEL(k_overwrite, args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank, n = dc->nranks;
  int to = (me + 1) % n, from = (me + n - 1) % n;
  int cr = gin_coop_rank(args.coop), cs = gin_coop_size(args.coop);
  char *base = my_base(&args);
  uint64_t errors = 0;
  for (int k = 0; k < args.rounds; k++) {
    int ctx = k % dc->nctx;
    if (k > 0)
      note_rc(&args, gin_signal_wait(dc, SIG_ACK, (uint64_t)k, args.coop));
    for (int p = 0; p < OW_PUTS; p++)
      for (size_t i = (size_t)cr; i < OW_CHUNK; i += (size_t)cs)
        base[(size_t)p * OW_CHUNK + i] =
            (char)test_byte(args.tag, me, k * OW_PUTS + p, i);
    for (size_t i = (size_t)cr; i < OW_LINK; i += (size_t)cs)
      base[2 * REG + i] = (char)test_byte(args.tag + 1, me, k, i);
    gin_coop_sync(args.coop);
    for (int p = 0; p < OW_PUTS; p++)
      note_rc(&args, gin_put(dc, ctx, world, to, args.win, REG, args.win,
                             (size_t)p * OW_CHUNK, ow_len(me, k, p),
                             gin_remote_signal_inc(SIG_DATA), gin_local_none(),
                             args.coop));
    for (int p = 0; p < OW_PUTS; p++)
      note_rc(&args,
              gin_put_value(dc, ctx, world, to, args.win, OW_VALUE,
                            ow_value(me, k, p), ow_width(p),
                            p == OW_PUTS - 1 ? gin_remote_signal_inc(SIG_VAL)
                                             : gin_remote_none(),
                            args.coop));
    for (int j = 0; j < OW_LINKS; j++)
      note_rc(&args, gin_put(dc, ctx, world, me, args.win,
                             2 * REG + (size_t)(j + 1) * OW_LINK, args.win,
                             2 * REG + (size_t)j * OW_LINK, OW_LINK,
                             j == OW_LINKS - 1 ? gin_remote_signal_inc(SIG_SELF)
                                               : gin_remote_none(),
                             gin_local_none(), args.coop));
    note_rc(&args, gin_signal_wait(dc, SIG_DATA, (uint64_t)(k + 1) * OW_PUTS,
                                   args.coop));
    note_rc(&args, gin_signal_wait(dc, SIG_VAL, (uint64_t)k + 1, args.coop));
    note_rc(&args, gin_signal_wait(dc, SIG_SELF, (uint64_t)k + 1, args.coop));
    for (size_t i = (size_t)cr; i < OW_CHUNK; i += (size_t)cs) {
      int p = OW_PUTS - 1;
      while (ow_len(from, k, p) <= i)
        p--;
      if ((unsigned char)base[REG + i] !=
          test_byte(args.tag, from, k * OW_PUTS + p, i))
        errors++;
    }
    if (cr == 0)
      for (int b = 0; b < 8; b++) {
        int p = OW_PUTS - 1;
        while (ow_width(p) <= b)
          p--;
        if ((unsigned char)base[OW_VALUE + b] !=
            (unsigned char)(ow_value(from, k, p) >> (8 * b)))
          errors++;
      }
    for (size_t i = (size_t)cr; i < OW_LINK; i += (size_t)cs)
      if ((unsigned char)base[2 * REG + OW_LINKS * OW_LINK + i] !=
          test_byte(args.tag + 1, me, k, i))
        errors++;
    note_rc(&args, gin_flush(dc, ctx, args.coop));
    note_rc(&args, gin_signal(dc, ctx, world, from,
                              gin_remote_signal_inc(SIG_ACK), args.coop));
  }
  note_rc(&args,
          gin_signal_wait(dc, SIG_ACK, (uint64_t)args.rounds, args.coop));
  note_errors(&args, errors);
}

/* Small puts (gin_put reads up to GIN_SMALL_BYTES, 64, for a lone thread
 * and GIN_SMALL_COOP_BYTES, 16, per thread of a warp or block into
 * registers before it looks up the destination; larger puts take the
 * general copy): every size from 0 to 49
 * bytes at 16 source and destination alignments, each into its own 64-byte slot
 * of the next rank, checked byte by byte with the slot's other bytes still
 * zero; a second round reuses the source after a flush. Then sizes 2^e and
 * one either side for e in 5, 6, 7, 9, 10, 11 (with the edges of the
 * register path, a lone thread's 64 bytes, a warp's 512, a 128-thread
 * block's 2048) at three alignments, once the next rank has checked the
 * first part. */
#define SM_MAXLEN 50
#define SM_ALIGNS 16
#define SM_SLOT 64
#define SM_SLOTS (SM_MAXLEN * SM_ALIGNS)
#define SM_ROUND (SM_SLOTS * SM_SLOT)
#define MD_SIZES 18 /* 3 per exponent */
#define MD_ALIGNS 3
#define MD_SLOT 2080 /* 2^11 + 1 bytes at up to 15 past the slot's start */
#define MD_SLOTS (MD_SIZES * MD_ALIGNS)
GIN_HD_FN unsigned char sm_byte(int tag, int s, int k, int j, size_t t) {
  return (unsigned char)(test_byte(tag, s, k * SM_SLOTS + j, t) | 1);
}
/* Slot j of part md (0: small sizes, 1: the medium ones): its length,
 * source and destination offsets within the slot. */
GIN_HD_FN void sm_geom(int md, int j, size_t *len, size_t *sa, size_t *da) {
  if (!md) {
    *len = (size_t)(j / SM_ALIGNS);
    *sa = (size_t)(j % SM_ALIGNS);
    *da = (*sa * 7 + *len) % SM_ALIGNS;
  } else {
    int i = j / MD_ALIGNS, e = 5 + i / 3 + (i / 3 >= 3); /* skips 8 */
    *len = ((size_t)1 << e) + (size_t)(i % 3) - 1;
    *sa = (size_t)(j % MD_ALIGNS) * 3;
    *da = (*sa * 5 + *len) % 16;
  }
}
/* One round of part md: the source written, every slot put to the next
 * rank at dst + slot, SIG_DATA awaited up to `want`, the slots the
 * previous rank put here checked byte by byte. */
GIN_DEVICE_FN void sm_round(const args_t *a, int md, int k, int tag, size_t dst,
                            uint64_t want, uint64_t *errors) {
  const gin_devcomm_t *dc = &a->dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank, n = dc->nranks;
  int to = (me + 1) % n, from = (me + n - 1) % n;
  int cr = gin_coop_rank(a->coop), cs = gin_coop_size(a->coop);
  int slots = md ? MD_SLOTS : SM_SLOTS;
  size_t slot = md ? MD_SLOT : SM_SLOT, len, sa, da;
  char *base = my_base(a);
  for (size_t i = (size_t)cr; i < (size_t)slots * slot; i += (size_t)cs)
    base[i] = (char)sm_byte(tag, me, k, (int)(i / slot), i % slot);
  gin_coop_sync(a->coop);
  for (int j = 0; j < slots; j++) {
    sm_geom(md, j, &len, &sa, &da);
    note_rc(
        a, gin_put(dc, 0, world, to, a->win, REG + dst + (size_t)j * slot + da,
                   a->win, (size_t)j * slot + sa, len,
                   gin_remote_signal_inc(SIG_DATA), gin_local_none(), a->coop));
  }
  note_rc(a, gin_signal_wait(dc, SIG_DATA, want, a->coop));
  for (size_t i = (size_t)cr; i < (size_t)slots * slot; i += (size_t)cs) {
    int j = (int)(i / slot);
    size_t t = i % slot;
    sm_geom(md, j, &len, &sa, &da);
    unsigned char w =
        t >= da && t < da + len ? sm_byte(tag, from, k, j, sa + t - da) : 0;
    if ((unsigned char)base[REG + dst + i] != w) (*errors)++;
  }
}
GIN_KERNEL(k_small, args_t) {
  const gin_devcomm_t *dc = &args.dc;
  int from = (dc->rank + dc->nranks - 1) % dc->nranks;
  int cr = gin_coop_rank(args.coop), cs = gin_coop_size(args.coop);
  char *base = my_base(&args);
  uint64_t errors = 0;
  for (int k = 0; k < args.rounds; k++) {
    if (k > 0) note_rc(&args, gin_flush(dc, 0, args.coop));
    sm_round(&args, 0, k, args.tag, (size_t)k * SM_ROUND,
             (uint64_t)(k + 1) * SM_SLOTS, &errors);
  }
  /* Second part: the next rank's destination is free once it checked it
   * and zeroed it again (after every thread's check). */
  gin_coop_sync(args.coop);
  for (size_t i = (size_t)cr; i < MD_SLOTS * MD_SLOT; i += (size_t)cs)
    base[REG + i] = 0;
  gin_coop_sync(args.coop);
  note_rc(&args, gin_signal(dc, 0, gin_team_world(dc), from,
                            gin_remote_signal_inc(SIG_ACK), args.coop));
  note_rc(&args, gin_signal_wait(dc, SIG_ACK, 1, args.coop));
  note_rc(&args, gin_flush(dc, 0, args.coop));
  sm_round(&args, 1, 0, args.tag + 1, 0,
           (uint64_t)args.rounds * SM_SLOTS + MD_SLOTS, &errors);
  note_errors(&args, errors);
}

/* Signal add and inc from every issuing thread of every rank at once. */
GIN_KERNEL(k_signals, args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank, n = dc->nranks;
  for (int r = 0; r < args.rounds; r++)
    for (int p = 0; p < n; p++) {
      int peer = (me + p) % n;
      note_rc(&args,
              gin_signal(dc, 0, world, peer,
                         gin_remote_signal_add(SIG_ADD, (uint64_t)me + 1),
                         GIN_COOP_THREAD));
      note_rc(&args,
              gin_signal(dc, 1, world, peer, gin_remote_signal_inc(SIG_INC),
                         GIN_COOP_THREAD));
    }
  if (gin_block_idx() == 0 && gin_thread_idx() == 0) {
    uint64_t issuers = (uint64_t)gin_grid_dim() * (uint64_t)gin_block_dim();
    uint64_t want_add =
        issuers * (uint64_t)args.rounds * ((uint64_t)n * (uint64_t)(n + 1) / 2);
    uint64_t want_inc = issuers * (uint64_t)args.rounds * (uint64_t)n;
    note_rc(&args, gin_signal_wait(dc, SIG_ADD, want_add, GIN_COOP_THREAD));
    note_rc(&args, gin_signal_wait(dc, SIG_INC, want_inc, GIN_COOP_THREAD));
    note_rc(&args, gin_barrier(dc, world, 0, GIN_COOP_THREAD));
    args.out[0] = gin_signal_read(dc, SIG_ADD);
    args.out[1] = gin_signal_read(dc, SIG_INC);
    args.out[2] = want_add;
    args.out[3] = want_inc;
    if (args.out[0] != want_add || args.out[1] != want_inc ||
        gin_signal_peek(dc, SIG_ADD) != want_add ||
        gin_signal_peek(dc, SIG_INC) != want_inc)
      note_errors(&args, 1);
    /* Each rank's path: itself SELF (or PROXY where the backend sends
     * every rank through the proxy), no rank outside the team, the others
     * DIRECT (their window then mapped here) or PROXY. */
    int self = gin_peer_path(dc, world, me);
    int bad = (self != GIN_PATH_SELF && self != GIN_PATH_PROXY) ||
              gin_peer_path(dc, world, n) != GIN_PATH_NONE ||
              gin_peer_path(dc, world, -1) != GIN_PATH_NONE;
    for (int p = 0; p < n; p++) {
      int path = gin_peer_path(dc, world, p);
      int mapped = gin_window_peer_ptr(dc, args.win, world, p, 0) != NULL;
      if (p != me && path != GIN_PATH_DIRECT && path != GIN_PATH_PROXY) bad = 1;
      if (path == GIN_PATH_DIRECT && !mapped) bad = 1;
    }
    if (bad) note_errors(&args, 1);
  }
}

/* Counters and flush: each round's source is overwritten right after the
 * counter (odd rounds) or a flush (even rounds) says it was consumed; the
 * receiver must see each round's original bytes. Also self puts. */
GIN_KERNEL(k_counters, args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank, n = dc->nranks;
  int to = (me + 1) % n, from = (me + n - 1) % n;
  int cr = gin_coop_rank(args.coop), cs = gin_coop_size(args.coop);
  char *base = my_base(&args);
  size_t chunk = REG / (size_t)args.rounds;
  uint64_t errors = 0;
  note_rc(&args, gin_counter_reset(dc, 0, args.coop));
  for (int k = 0; k < args.rounds; k++) {
    for (size_t i = (size_t)cr; i < chunk; i += (size_t)cs)
      base[i] = (char)test_byte(args.tag, me, k, i);
    gin_coop_sync(args.coop);
    note_rc(&args, gin_put(dc, 0, world, to, args.win, REG + (size_t)k * chunk,
                           args.win, 0, chunk, gin_remote_signal_inc(SIG_DATA),
                           gin_local_counter_inc(0), args.coop));
    if (k & 1)
      note_rc(&args, gin_counter_wait(dc, 0, (uint64_t)k + 1, args.coop));
    else
      note_rc(&args, gin_flush(dc, 0, args.coop));
    for (size_t i = (size_t)cr; i < chunk; i += (size_t)cs)
      base[i] = (char)0xee;
    gin_coop_sync(args.coop);
  }
  note_rc(&args,
          gin_signal_wait(dc, SIG_DATA, (uint64_t)args.rounds, args.coop));
  for (int k = 0; k < args.rounds; k++)
    for (size_t i = (size_t)cr; i < chunk; i += (size_t)cs)
      if ((unsigned char)base[REG + (size_t)k * chunk + i] !=
          test_byte(args.tag, from, k, i))
        errors++;
  if (gin_counter_read(dc, 0) != (uint64_t)args.rounds) errors++;
  /* Self puts: to this rank's own slots, with a signal. */
  gin_coop_sync(args.coop);
  for (size_t i = (size_t)cr; i < 256; i += (size_t)cs)
    base[i] = (char)test_byte(args.tag + 1, me, 0, i);
  gin_coop_sync(args.coop);
  note_rc(&args, gin_put(dc, 0, world, me, args.win, 2 * REG, args.win, 0, 256,
                         gin_remote_signal_inc(SIG_SELF), gin_local_none(),
                         args.coop));
  note_rc(&args, gin_signal_wait(dc, SIG_SELF, 1, args.coop));
  for (size_t i = (size_t)cr; i < 256; i += (size_t)cs)
    if ((unsigned char)base[2 * REG + i] != test_byte(args.tag + 1, me, 0, i))
      errors++;
  note_errors(&args, errors);
}

/* Wrap-around: signals started near 2^64 (ADD only), counters near 2^56;
 * shadows meet and follow. put_value of every width 1..8. */
GIN_KERNEL(k_wrap, args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank, n = dc->nranks;
  int to = (me + 1) % n, from = (me + n - 1) % n;
  char *base = my_base(&args);
  uint64_t errors = 0;
  gin_coop_t c = GIN_COOP_THREAD;
  note_rc(&args, gin_signal(dc, 0, world, to,
                            gin_remote_signal_add(SIG_WRAP, ~0ull - 2), c));
  for (int i = 0; i < 6; i++)
    note_rc(&args, gin_signal(dc, 0, world, to,
                              gin_remote_signal_add(SIG_WRAP, 1), c));
  /* ~0-2 + 6 wraps to 3; a plain >= would have passed at ~0-2 already. */
  note_rc(&args, gin_signal_wait(dc, SIG_WRAP, 3, c));
  if (gin_signal_read(dc, SIG_WRAP) != 3) errors++;
  note_rc(&args, gin_signal_shadow_add(dc, SIG_WRAP, 3, c));
  note_rc(&args, gin_signal_wait_meet_shadow(dc, SIG_WRAP, c));
  uint64_t before = 0, delta = 0;
  /* Nobody adds more until everyone has checked the exact value. */
  note_rc(&args, gin_barrier(dc, world, 0, c));
  note_rc(&args,
          gin_signal(dc, 0, world, to, gin_remote_signal_add(SIG_WRAP, 5), c));
  note_rc(&args,
          gin_signal_wait_follow_shadow(dc, SIG_WRAP, 5, &before, &delta, c));
  if (before != 3 || delta != 5 || gin_signal_shadow(dc, SIG_WRAP) != 8)
    errors++;
  /* Counters: 56 bits. */
  note_rc(&args, gin_counter_set(dc, 1, (1ull << 56) - 2, c));
  for (int i = 0; i < 5; i++)
    note_rc(&args,
            gin_put(dc, 0, world, to, args.win, 2 * REG + 512, args.win, 0, 8,
                    gin_remote_none(), gin_local_counter_inc(1), c));
  note_rc(&args, gin_counter_wait(dc, 1, 3, c));
  if (gin_counter_read(dc, 1) != 3) errors++;
  /* put_value of widths 1..8 into slot area, then one signal. */
  for (int w = 1; w <= 8; w++)
    note_rc(&args, gin_put_value(dc, 0, world, to, args.win,
                                 2 * REG + 1024 + (size_t)w * 16,
                                 test_mix((uint64_t)(me * 8 + w)), w,
                                 w == 8 ? gin_remote_signal_inc(SIG_VAL)
                                        : gin_remote_none(),
                                 c));
  note_rc(&args, gin_signal_wait(dc, SIG_VAL, 1, c));
  for (int w = 1; w <= 8; w++) {
    uint64_t v = test_mix((uint64_t)(from * 8 + w));
    for (int b = 0; b < 16; b++) {
      unsigned char got =
          (unsigned char)base[2 * REG + 1024 + (size_t)w * 16 + b];
      unsigned char want = b < w ? (unsigned char)(v >> (8 * b)) : 0;
      if (got != want) errors++;
    }
  }
  note_rc(&args, gin_barrier(dc, world, 1, c));
  note_errors(&args, errors);
}

/* Barrier under skewed arrival: each rank writes its round into every
 * peer's slot, arrives late by rank x 200 us, and after the barrier must
 * see every peer's value for this round. World and lsa teams. */
GIN_KERNEL(k_barrier, args_t) {
  const gin_devcomm_t *dc = &args.dc;
  uint64_t errors = 0;
  char *base = my_base(&args);
  for (int k = 0; k < args.rounds; k++) {
    gin_team_t team = (k & 1) ? gin_team_lsa(dc) : gin_team_world(dc);
    for (int p = 0; p < team.size; p++)
      note_rc(&args, gin_put_value(dc, 0, team, p, args.win,
                                   2 * REG + 4096 + (size_t)dc->rank * 8,
                                   (uint64_t)(k + 1), 8, gin_remote_none(),
                                   GIN_COOP_THREAD));
    uint64_t t0 = gin_time_ns();
    while (gin_time_ns() - t0 < (uint64_t)dc->rank * 200000ull)
      gin_spin_pause(UINT32_MAX); /* yields on the host target */
    note_rc(&args, gin_barrier(dc, team, 2, GIN_COOP_THREAD));
    for (int p = 0; p < team.size; p++) {
      int w = gin_team_world_rank(team, p);
      uint64_t v = gin_load_acquire_u64(
          (const uint64_t *)(base + 2 * REG + 4096 + (size_t)w * 8));
      if (v != (uint64_t)(k + 1)) errors++;
    }
    note_rc(&args, gin_barrier(dc, team, 3, GIN_COOP_THREAD));
  }
  note_errors(&args, errors);
}

/* All-to-all of random sizes: block b sends to peer (me + b) % n a chunk of
 * random size into the slot for `me`; receivers check every byte. */
GIN_KERNEL(k_alltoall, args_t) {
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int me = dc->rank, n = dc->nranks, b = gin_block_idx();
  int cr = gin_coop_rank(args.coop), cs = gin_coop_size(args.coop);
  char *base = my_base(&args);
  size_t slot = REG / (size_t)n;
  int k = args.tag;
  uint64_t errors = 0;
  for (int peer = b; peer < n; peer += gin_grid_dim()) {
    int to = (me + peer) % n;
    size_t len =
        (size_t)(test_mix((uint64_t)(me * 7919 + to * 131 + k)) % (slot + 1));
    char *src = base + (size_t)to * slot;
    for (size_t i = (size_t)cr; i < len; i += (size_t)cs)
      src[i] = (char)test_byte(k, me, to, i);
    gin_coop_sync(args.coop);
    note_rc(&args, gin_put(dc, peer % dc->nctx, world, to, args.win,
                           REG + (size_t)me * slot, args.win, (size_t)to * slot,
                           len, gin_remote_signal_inc(SIG_A2A + me),
                           gin_local_none(), args.coop));
  }
  for (int peer = b; peer < n; peer += gin_grid_dim()) {
    int from = (me + n - peer) % n;
    size_t len =
        (size_t)(test_mix((uint64_t)(from * 7919 + me * 131 + k)) % (slot + 1));
    note_rc(&args, gin_signal_wait(dc, SIG_A2A + from, (uint64_t)args.rounds,
                                   args.coop));
    for (size_t i = (size_t)cr; i < len; i += (size_t)cs)
      if ((unsigned char)base[REG + (size_t)from * slot + i] !=
          test_byte(k, from, me, i))
        errors++;
  }
  note_errors(&args, errors);
}

/* ---------------------------------------------------------------- host */

typedef struct ctx {
  gin_comm_t comm;
  gin_devcomm_t dc;
  gin_window_t win;
  void *mem;
  uint64_t *dres; /* errors, out[0..7] */
  int rank, nranks;
  int failed;
} ctx_t;

static args_t make_args(ctx_t *t, gin_coop_t coop, int rounds, int nputs,
                        int tag) {
  args_t a;
  memset(&a, 0, sizeof a);
  a.dc = t->dc;
  a.win = t->win;
  a.coop = coop;
  a.rounds = rounds;
  a.nputs = nputs;
  a.tag = tag;
  a.errors = t->dres;
  a.out = t->dres + 1;
  return a;
}

/* Runs after each case: collects errors and async errors, agrees on the
 * verdict with every rank, resets the window and the devcomm. */
static void finish_case(ctx_t *t, const char *name, gin_result_t launch_rc) {
  uint64_t h[9];
  TCHECK(gin_mem_copy(h, t->dres, sizeof h));
  gin_result_t async = gin_comm_get_async_error(t->comm);
  int bad = launch_rc != GIN_SUCCESS || async != GIN_SUCCESS || h[0] != 0;
  if (bad)
    fprintf(stderr, "rank %d: case %s: %llu errors, launch %s, async %s: %s\n",
            t->rank, name, (unsigned long long)h[0], gin_strerror(launch_rc),
            gin_strerror(async), gin_last_error());
  int *all = (int *)calloc((size_t)t->nranks, sizeof(int));
  TCHECK(gin_comm_allgather(t->comm, &bad, all, sizeof(int)));
  int nbad = 0;
  for (int r = 0; r < t->nranks; r++)
    nbad += all[r];
  free(all);
  if (t->rank == 0)
    printf("%-28s %s (%d ranks)\n", name, nbad ? "FAIL" : "ok", t->nranks);
  if (nbad) t->failed = 1;
  if (async != GIN_SUCCESS) exit(1); /* communicator aborted: stop */
  /* Fresh state for the next case. */
  TCHECK(gin_devcomm_destroy(t->comm, &t->dc));
  gin_devcomm_reqs_t reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.signals = 64;
  TCHECK(gin_devcomm_create(t->comm, &reqs, &t->dc));
  TCHECK(gin_mem_set(t->mem, 0, WIN_BYTES));
  TCHECK(gin_mem_set(t->dres, 0, 9 * sizeof(uint64_t)));
  TCHECK(gin_comm_barrier(t->comm));
}

#define RUN(t, name, kernel, grid, block, a)                                   \
  do {                                                                         \
    args_t a_ = (a);                                                           \
    gin_result_t rc_ = gin_launch(kernel, (grid), (block), 0, &a_);            \
    if (rc_ == GIN_SUCCESS) rc_ = gin_stream_synchronize(0);                   \
    finish_case((t), (name), rc_);                                             \
  } while (0)

static void host_rolling_unit(ctx_t *t) {
  int bad = 0;
  bad |= !gin_rolling_ge(3, ~0ull - 2, 64);
  bad |= gin_rolling_ge(~0ull - 2, 3, 64);
  bad |= !gin_rolling_ge(5, 5, 64);
  bad |= gin_rolling_ge(4, 5, 64);
  bad |= !gin_rolling_ge(2, (1ull << 56) - 3, 56);
  bad |= gin_rolling_ge((1ull << 56) - 3, 2, 56);
  bad |= !gin_rolling_ge(1ull << 62, 0, 64);
  if (t->rank == 0)
    printf("%-28s %s\n", "rolling compare (host)", bad ? "FAIL" : "ok");
  if (bad) t->failed = 1;
}

int main(int argc, char **argv) {
  test_require_device();
  ctx_t t;
  memset(&t, 0, sizeof t);
  TCHECK(gin_comm_init_from_env(&t.comm, NULL));
  TCHECK(gin_comm_rank(t.comm, &t.rank));
  TCHECK(gin_comm_size(t.comm, &t.nranks));
  TCHECK(gin_mem_alloc(WIN_BYTES, &t.mem));
  TCHECK(gin_window_register(t.comm, t.mem, WIN_BYTES, &t.win));
  TCHECK(gin_mem_alloc(9 * sizeof(uint64_t), (void **)&t.dres));
  gin_devcomm_reqs_t reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.signals = 64;
  TCHECK(gin_devcomm_create(t.comm, &reqs, &t.dc));
  TASSERT(t.nranks <= 64 - SIG_A2A, "at most %d ranks", 64 - SIG_A2A);

  host_rolling_unit(&t);
  gin_coop_t coops[3] = {GIN_COOP_THREAD, GIN_COOP_WARP, GIN_COOP_BLOCK};
  char name[64];
  for (int c = 0; c < 3; c++) {
    gin_coop_t co = coops[c];
    snprintf(name, sizeof name, "ordering/%s", test_coop_name(co));
    RUN(&t, name, k_order, 1, test_block_threads(co),
        make_args(&t, co, 6, 9, 10 + c));
    snprintf(name, sizeof name, "counters+flush+self/%s", test_coop_name(co));
    RUN(&t, name, k_counters, 1, test_block_threads(co),
        make_args(&t, co, 8, 0, 20 + c));
    snprintf(name, sizeof name, "overwrite same dst/%s", test_coop_name(co));
    RUN(&t, name, k_overwrite, 1, test_block_threads(co),
        make_args(&t, co, 4, 0, 50 + 2 * c));
    snprintf(name, sizeof name, "small puts 0-2049 B/%s", test_coop_name(co));
    RUN(&t, name, k_small, 1, test_block_threads(co),
        make_args(&t, co, 2, 0, 60 + c));
    snprintf(name, sizeof name, "alltoall/%s", test_coop_name(co));
    for (int k = 0; k < 3; k++)
      RUN(&t, name, k_alltoall, t.nranks, test_block_threads(co),
          make_args(&t, co, 1, 0, 30 + 3 * c + k));
  }
  RUN(&t, "signals add+inc all ranks", k_signals, 4,
      test_block_threads(GIN_COOP_WARP),
      make_args(&t, GIN_COOP_THREAD, 20, 0, 0));
  RUN(&t, "wrap+shadows+put_value", k_wrap, 1, 1,
      make_args(&t, GIN_COOP_THREAD, 0, 0, 0));
  RUN(&t, "barrier skewed world+lsa", k_barrier, 1, 1,
      make_args(&t, GIN_COOP_THREAD, 4, 0, 0));

  TCHECK(gin_devcomm_destroy(t.comm, &t.dc));
  TCHECK(gin_window_deregister(t.comm, t.win));
  TCHECK(gin_mem_free(t.dres));
  TCHECK(gin_mem_free(t.mem));
  TCHECK(gin_comm_destroy(t.comm));
  if (t.rank == 0) printf("conformance: %s\n", t.failed ? "FAILED" : "passed");
  return t.failed ? 1 : 0;
}
