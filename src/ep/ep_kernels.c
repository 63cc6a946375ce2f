/*
 * EP kernels, written once: built as C for the host target (a block is a
 * CPU thread) and as CUDA for the cuda target. Blocks work on whole tokens
 * (dispatch send, combine receive), units of an expert (dispatch receive)
 * or warps' shares of the received tokens (combine send); no block waits
 * for another except through signals (the last-block counters never
 * spin).
 */
/* The EP kernels' gin calls are the library's own: every window offset,
 * signal id, peer and context they pass comes from the geometry
 * gin_ep_create checked, and what peers write is checked where it is read
 * (ep_msg.h, ep_recv_count). gin's device argument checks, made for a
 * user kernel's arguments, are therefore left out of these kernels (with
 * them, the signals' mode marks and the window lookups cost the dispatch
 * send 1.5-3.4 us at 2-8 ranks on an H200: docs/PERFORMANCE.md, "Design
 * figures"), unless the build asks for them (-DGIN_EP_DEVICE_CHECKS=ON). Must
 * come before the device headers. */
#ifndef GIN_EP_DEVICE_CHECKS
#undef GIN_DEVICE_CHECKS
#define GIN_DEVICE_CHECKS 0
#endif

#include "ep/ep_kernels.h"
#include "ep/ep_budget.h"
#include "gin/ep_format.h"

#define EP_THREADS 256

/* Tests only: a copy of these kernels built with EP_TEST_LIAR = 1 to 4
 * (tests/ep: test_ep_liar_*) makes world rank 1 lie to every other rank,
 * as a corrupt or hostile process could: 1 a dispatch count past
 * max_tokens, 2 dispatch headers naming a token past max_tokens, 3
 * combine `where` words naming rows of another expert, 4 each combine
 * return signalled twice; the receivers' checks are then driven end to
 * end. What it sends itself stays true:
 * through the proxy that arrives first, and it would find its own lie and
 * abort everyone before a peer could. The library is never built with it. */
#ifndef EP_TEST_LIAR
#define EP_TEST_LIAR 0
#endif
#define EP_LIES(a, mode, dst)                                                  \
  (EP_TEST_LIAR == (mode) && (a)->g.me == 1 && (dst) != 1)

/* Every thread of the block runs the same scan; results are uniform. */
#define EP_FOR_THREADS(i, n)                                                   \
  for (int i = gin_thread_idx(); i < (n); i += gin_block_dim())

/* Top-k widths whose token rows a thread checks in registers. */
#define EP_ROUTE_REGS 8

/* Records a routing error (unless this thread did already): the id, the
 * token, the slot, why (0 out of range, 1 twice). Returns 1. */
GIN_DEVICE_FN int ep_row_fail(const gin_ep_args_t *a, int32_t e, int t, int k,
                              int why, int bad) {
  if (!bad)
    gin_record_error(&a->dc, GIN_ERR_INVALID, GIN_DEVERR_EP_ROUTING, e, t,
                     (uint64_t)k, 0, (uint64_t)a->g.E, (uint64_t)why);
  return 1;
}
/* Token t's routing row: 0 if every id is in [-1, E) and no expert comes
 * twice, else records the error (ep_row_fail; the first thread to record
 * one wins) and returns 1. One thread. Up to EP_ROUTE_REGS ids are loaded at
 * once into registers and compared there (loop bounds fixed, so the compiler
 * unrolls them); a wider row compares through memory. */
GIN_DEVICE_FN int ep_row_bad(const gin_ep_args_t *a, int t, int bad) {
  const gin_ep_geom_t *g = &a->g;
  int K = g->K;
  size_t row = (size_t)t * (size_t)K;
  int32_t r[EP_ROUTE_REGS];
  for (int k = 0; k < EP_ROUTE_REGS; k++) /* past K: -1, never wrong */
    r[k] = k < K ? gin_ep_topk(a, row + (size_t)k) : -1;
  for (int k = 0; k < EP_ROUTE_REGS; k++) {
    int32_t e = r[k];
    int why = e < -1 || e >= g->E ? 0 : -1;
    for (int j = 0; j < k; j++)
      if (why < 0 && e >= 0 && r[j] == e) why = 1;
    if (why >= 0) return ep_row_fail(a, e, t, k, why, bad);
  }
  for (int k = EP_ROUTE_REGS; k < K; k++) {
    int32_t e = gin_ep_topk(a, row + (size_t)k);
    int why = e < -1 || e >= g->E ? 0 : -1;
    for (int j = 0; j < k && why < 0 && e >= 0; j++)
      if (gin_ep_topk(a, row + (size_t)j) == e) why = 1;
    if (why >= 0) return ep_row_fail(a, e, t, k, why, bad);
  }
  return 0;
}

/* Checks the routing table before anything is sent: every id in
 * [-1, E), no expert twice in a token. Every block checks all of it (so
 * that no block sends anything on bad input), token t by thread
 * t % threads (ep_row_bad). Returns 0 if fine, else nonzero in every
 * block (the first block to find an error records it). */
GIN_DEVICE_FN int ep_routing_bad(const gin_ep_args_t *a) {
  int bad = 0;
  EP_FOR_THREADS(t, a->T) { bad |= ep_row_bad(a, t, bad); }
  return gin_coop_rc(GIN_COOP_BLOCK, -bad) != 0;
}

/* Warps of the grid: this thread's warp, their number, its lane. On the
 * host target a warp is one thread (every coop has size 1). */
#define EP_WARP GIN_COOP_WARP
GIN_DEVICE_FN int ep_lane(void) { return gin_coop_rank(EP_WARP); }
GIN_DEVICE_FN int ep_warps_per_block(void) {
  return gin_block_dim() / gin_coop_size(EP_WARP);
}
GIN_DEVICE_FN int ep_warp_in_block(void) {
  return gin_thread_idx() / gin_coop_size(EP_WARP);
}
GIN_DEVICE_FN int ep_warp(void) {
  return gin_block_idx() * ep_warps_per_block() + ep_warp_in_block();
}
GIN_DEVICE_FN int ep_nwarps(void) {
  return gin_grid_dim() * ep_warps_per_block();
}

/* Token t's slot at expert e (one of its experts): how many tokens before
 * t are routed there, so arrivals sit in token order. One warp. */
GIN_DEVICE_FN int ep_slot(const gin_ep_args_t *a, int t, int e) {
  uint32_t c = 0;
  for (int i = ep_lane(); i < t * a->g.K; i += gin_coop_size(EP_WARP))
    c += gin_ep_topk(a, (size_t)i) == e;
  return (int)gin_coop_sum_u32(EP_WARP, c);
}

/* Sends token t (one block): its warps cast the row once into its send
 * slot (the row's groups split over the warps), then warp w puts the
 * (token, k) header for top-k slots w, w + warps, ... to the token's slot
 * at the expert's rank, with the payload unless that rank copies it from
 * here (args.pull and a direct path: GIN_EP_PULLED in the header), and
 * counts the token there. */
GIN_DEVICE_FN int ep_send_token(const gin_ep_args_t *a, int t) {
  const gin_ep_geom_t *g = &a->g;
  const gin_devcomm_t *dc = &a->dc;
  gin_team_t world = gin_team_world(dc);
  size_t soff = gin_ep_send_off(g, a->set, t);
  int w = ep_warp_in_block(), nw = ep_warps_per_block();
  gin_ep_pack_payload(a->x + (size_t)t * (size_t)g->H, g->H, a->fp8, a->pow2,
                      a->base + soff + GIN_EP_HEADER, EP_WARP, w, nw);
  gin_coop_sync(GIN_COOP_BLOCK); /* every warp's part written */
  int rc = GIN_SUCCESS;
  for (int k = w; k < g->K && rc == GIN_SUCCESS; k += nw) {
    int e = gin_ep_topk(a, (size_t)t * (size_t)g->K + (size_t)k);
    if (e < 0) continue;
    int dst = e / g->L, ctx = dst % dc->nctx,
        path = gin_peer_path(dc, world, dst);
    uint32_t flags =
        (a->pull && (path == GIN_PATH_DIRECT || path == GIN_PATH_SELF)
             ? GIN_EP_PULLED
             : 0) |
        gin_ep_format(a->fp8, a->pow2);
    int slot = ep_slot(a, t, e);
    size_t roff = gin_ep_recv_off(g, a->set, e % g->L, g->me, slot);
    rc = gin_put_value(dc, ctx, world, dst, a->win,
                       gin_ep_hdr_off(g, a->set, e % g->L, g->me, slot),
                       (uint64_t)(uint32_t)(EP_LIES(a, 2, dst) ? g->M : t) |
                           (uint64_t)(k | flags) << 32,
                       8, gin_remote_none(), EP_WARP);
    if (rc == GIN_SUCCESS && !(flags & GIN_EP_PULLED))
      rc = gin_put(dc, ctx, world, dst, a->win, roff + GIN_EP_HEADER, a->win,
                   soff + GIN_EP_HEADER, g->msg - GIN_EP_HEADER,
                   gin_remote_none(), gin_local_none(), EP_WARP);
    if (rc == GIN_SUCCESS && ep_lane() == 0)
      gin_add_relaxed_gpu_u64(&a->scratch[e], 1);
  }
  return gin_coop_rc(GIN_COOP_BLOCK, rc);
}

/* Send phase of dispatch: block b sends tokens b, b + grid, ... The last
 * block to finish (counted in scratch[E]) adds, with all its threads
 * (thread i for experts i, i + block, ...), count + 1 to every expert's
 * (set, expert, me) signal, on the context of the expert's rank (after
 * the tokens there), and zeroes the counters for the next launch. */
GIN_KERNEL(k_ep_dispatch_send, gin_ep_args_t) {
  const gin_ep_geom_t *g = &args.g;
  const gin_devcomm_t *dc = &args.dc;
  if (ep_routing_bad(&args)) return;
  for (int t = gin_block_idx(); t < args.T; t += gin_grid_dim())
    if (ep_send_token(&args, t)) return;
  /* ep_send_token's last act synchronised the block: its puts and counts
   * are all issued. */
  uint64_t *done = &args.scratch[g->E];
  int last = 0;
  /* Releases the block's puts and counts; the last acquires every other
   * block's. GPU scope is enough: the blocks share this GPU, and the
   * signals below release at the scope their peers need (cumulative over
   * what this acquire saw); proxied puts are ordered by their rings. */
  if (gin_thread_idx() == 0)
    last =
        gin_fetch_add_acq_rel_gpu_u64(done, 1) + 1 == (uint64_t)gin_grid_dim();
  /* The barrier carries thread 0's view to the others (cumulativity). */
  if (!gin_coop_any(GIN_COOP_BLOCK, last)) return;
  gin_team_t world = gin_team_world(dc);
  EP_FOR_THREADS(e, g->E) {
    uint64_t count = gin_load_relaxed_u64(&args.scratch[e]);
    int dst = e / g->L;
    if (gin_signal(
            dc, dst % dc->nctx, world, dst,
            gin_remote_signal_add(
                gin_ep_dsig(g, args.set, e % g->L, g->me),
                count + 1 + (EP_LIES(&args, 1, dst) ? (uint64_t)g->M + 1 : 0)),
            GIN_COOP_THREAD))
      return;
    gin_store_relaxed_u64(&args.scratch[e], 0); /* read by the next launch */
  }
  if (gin_thread_idx() == 0) gin_store_relaxed_u64(done, 0);
}

/* Sources whose counts a dispatch-receive block holds at once (a test
 * builds the kernels with 1: tests/ep/CMakeLists.txt). */
#ifndef EP_RECV_SOURCES
#define EP_RECV_SOURCES 256
#endif

/* Waits (this thread alone) until source r's count for local expert le
 * has come, and returns it in *cnt: the source added count + 1 past the
 * shadow. move: this thread is the shadow's only reader (one unit per
 * expert), so it moves the shadow past this dispatch at once. */
GIN_DEVICE_FN int ep_recv_count(const gin_ep_args_t *a, int le, int r, int move,
                                int *cnt) {
  const gin_devcomm_t *dc = &a->dc;
  int sig = gin_ep_dsig(&a->g, a->set, le, r);
  uint64_t shadow = gin_signal_shadow(dc, sig);
  int rc = gin_signal_wait(dc, sig, shadow + 1, GIN_COOP_THREAD);
  if (rc) return rc;
  /* Ordered by the wait's acquire. */
  int64_t got = (int64_t)(gin_signal_peek(dc, sig) - shadow - 1);
  if (got < 0 || got > a->g.M) /* never from a correct peer: no copy */
    return gin_record_error(dc, GIN_ERR_REMOTE, GIN_DEVERR_EP_ROUTING, r, got,
                            (uint64_t)le, 0, (uint64_t)a->g.M, 2);
  if (move) gin_signal_shadow_add(dc, sig, (uint64_t)got + 1, GIN_COOP_THREAD);
  *cnt = (int)got;
  return GIN_SUCCESS;
}

/* Where the payload of row j of source r for local expert le is: in
 * the row's message after its header's room, or, when the sender set
 * GIN_EP_PULLED, in the sender's send slot of the token, read through rb
 * (source r's window as mapped here, NULL if not). One thread; shut is
 * the gate's value, loaded with the header (its warp then copies a batch
 * of up to 32 rows in turn, so a pull may start a few rows' copies after
 * the gate was read: best effort, as every gate read is). NULL after
 * recording the error (a header no correct sender writes: a token or
 * top-k slot out of range, a pull from a window not mapped here; or,
 * before a pull, an aborted communicator: its peers may be gone). *h gets
 * the header. */
GIN_DEVICE_FN const char *ep_payload(const gin_ep_args_t *a, int le, int r,
                                     int j, const char *rb, int shut,
                                     uint32_t *h) {
  const gin_devcomm_t *dc = &a->dc;
  memcpy(h, a->base + gin_ep_hdr_off(&a->g, a->set, le, r, j), 8);
  uint32_t mine = gin_ep_format(a->fp8, a->pow2);
  int what = gin_ep_header_check(h[0], h[1], a->g.M, a->g.K, rb != NULL, mine);
  if (what == GIN_EP_MSG_BAD || what == GIN_EP_MSG_FORMAT) {
    /* One report for both (a second call site costs the copy loop a
     * spilled register): a word no correct peer writes (why 3), or ranks
     * whose dispatches ask for other formats (why 5). */
    int fmt = what == GIN_EP_MSG_FORMAT;
    gin_record_error(dc, fmt ? GIN_ERR_INVALID : GIN_ERR_REMOTE,
                     GIN_DEVERR_EP_ROUTING, r, (int32_t)h[0], (uint64_t)le,
                     fmt ? gin_ep_format_code(h[1]) : h[1] & ~GIN_EP_HDR_FLAGS,
                     fmt ? gin_ep_format_code(mine) : (uint64_t)a->g.M,
                     fmt ? 5 : 3);
    return NULL;
  }
  if (what == GIN_EP_MSG_HERE)
    return a->base + gin_ep_recv_off(&a->g, a->set, le, r, j) + GIN_EP_HEADER;
  if (shut) {
    gin_peer_write_refused(dc, r);
    return NULL;
  }
  return rb + gin_ep_send_off(&a->g, a->set, (int)h[0]) + GIN_EP_HEADER;
}

/* A received row's place and source, found by one lane of its warp
 * for the warp's copy (in shared memory, not registers: the copy needs
 * those). */
typedef struct ep_row {
  const char *p;      /* the payload */
  uint32_t tok, k, r; /* header words (token, top-k slot), source rank */
} ep_row_t;

/* An fp8 row p received into slot `slot` (counted over every local
 * expert's slots) whose scales go to columns (GIN_EP_SCALES_COLS, or
 * _UE8M0: exponent bytes, four groups a word): the warp copies the row,
 * then lane l moves scales l, l + nl, ... */
GIN_DEVICE_FN void ep_recv_scattered(const gin_ep_args_t *a, size_t slot,
                                     const char *p, int lane, int nl) {
  const gin_ep_geom_t *g = &a->g;
  size_t S = (size_t)g->R * (size_t)g->M, le = slot / S, s = slot % S;
  size_t G = (size_t)(g->H / GIN_EP_FP8_GROUP), W = (G + 3) / 4;
  gin_copy_coop((char *)a->r.x + slot * (size_t)g->H, p, (size_t)g->H, lane,
                nl);
  const float *src = (const float *)(p + g->H); /* H: a multiple of 128 */
  for (size_t i = (size_t)lane; i < G; i += (size_t)nl) {
    float v = src[i];
    if (a->scale_layout == GIN_EP_SCALES_COLS)
      a->r.scales[(le * G + i) * S + s] = v;
    else
      ((uint8_t *)a->r.scales)[((le * W + i / 4) * S + s) * 4 + i % 4] =
          gin_ep_scale_ue8m0(v);
  }
}

/* One warp's share of a part of local expert le's rows: sources r0,
 * r0 + 1, ... with counts cnt (tot rows in all, numbered across them in
 * rank order after the off rows of earlier parts); the warp's rows are
 * off + j with j = mine - off mod wstride. A lane per row, up to a warp's
 * lanes of rows at a time: lane k finds its row's source, loads its header
 * (with the gate) and works out where the payload is (ep_payload), so the
 * headers' round trips overlap; then the warp copies those rows into the
 * outputs one after another. GIN_SUCCESS, or GIN_ERR_REMOTE (recorded). */
GIN_DEVICE_FN int ep_recv_rows(const gin_ep_args_t *a, int le, int r0,
                               const int *cnt, int off, int tot, int mine,
                               int wstride, ep_row_t *rows, int scattered) {
  const gin_ep_geom_t *g = &a->g;
  const gin_devcomm_t *dc = &a->dc;
  gin_team_t world = gin_team_world(dc);
  int lane = ep_lane(), nl = gin_coop_size(EP_WARP);
  size_t slots = (size_t)g->R * (size_t)g->M;
  size_t groups = (size_t)(g->H / GIN_EP_FP8_GROUP);
  /* This lane's source and the rows before it: its rows only grow, so
   * each batch's search goes on from the last one's. */
  int i = 0, below = 0;
  for (int j0 = ((mine - off) % wstride + wstride) % wstride; j0 < tot;
       j0 += nl * wstride) {
    int j = j0 + lane * wstride, bad = 0;
    if (j < tot) {
      int shut = gin_peer_writes_stopped(dc);
      while (j >= below + cnt[i])
        below += cnt[i++];
      const char *rb =
          (const char *)gin_window_peer_ptr(dc, a->win, world, r0 + i, 0);
      uint32_t h[2];
      const char *p = ep_payload(a, le, r0 + i, j - below, rb, shut, h);
      ep_row_t row = {p, h[0], h[1] & ~GIN_EP_HDR_FLAGS, (uint32_t)(r0 + i)};
      rows[lane] = row;
      bad = p == NULL;
    }
    /* Also the warp's memory barrier for rows[]. */
    if (gin_coop_any(EP_WARP, bad)) return GIN_ERR_REMOTE;
    int n = (tot - j0 + wstride - 1) / wstride;
    for (int k = 0; k < n && k < nl; k++) {
      ep_row_t row = rows[k];
      size_t slot = (size_t)le * slots + (size_t)(off + j0 + k * wstride);
      /* An fp8 row and its scales: the scales' round trip overlaps the
       * row's (a stream of both with the destination chosen per vector
       * took 20 more registers). The row alone is a plain coop copy: the
       * batched one's registers cost the waiting blocks here (its receive
       * measured 18-19 -> 23-24 us at 2 ranks on an H200). */
      if (a->fp8 && !scattered)
        gin_copy_coop_split((char *)a->r.x + slot * (size_t)g->H, (size_t)g->H,
                            (char *)(a->r.scales + slot * groups), row.p,
                            (size_t)g->H + groups * 4, lane, nl);
      else if (scattered) /* the row, then each scale to its column */
        ep_recv_scattered(a, slot, row.p, lane, nl);
      else
        gin_copy_coop((char *)a->r.x + slot * (size_t)g->H * 2, row.p,
                      (size_t)g->H * 2, lane, nl);
      if (lane == 0) {
        a->r.src_token[slot] = (int32_t)row.tok;
        a->src_k[slot] = (int32_t)row.k;
        a->r.src_rank[slot] = (int32_t)row.r;
      }
    }
    /* Every lane's reads of rows[] before the next batch writes it. */
    gin_coop_sync(EP_WARP);
  }
  return GIN_SUCCESS;
}

/* Receive phase: the work of local expert le is split into args.split
 * units (le, u), unit i = le * split + u; block b takes units b, b + grid,
 * ... A unit takes the sources EP_RECV_SOURCES at a time: thread i waits
 * for source i's count and puts it in the block's array, then the warps
 * copy the expert's rows (numbered across sources in rank order) into
 * the outputs, row n by warp n mod (warps x split) of unit
 * (n / warps) mod split (from the arrived message, or from the source's
 * window: ep_recv_rows); unit 0 writes the layout and the
 * count. With one unit per expert the waiting thread moves its shadow;
 * with several, the last unit of the expert to finish (counted in
 * scratch[E + 1 + le]) moves them all, once nobody reads them any more. A
 * warp that fails stops copying; its block returns at the next barrier
 * (errors are recorded on the communicator, which is then aborted). */
/* scattered: the scales go to columns (ep_recv_scattered). A constant in
 * each kernel below, so that each has only its own copy loop: with both
 * in one kernel, nvcc (sm_90, at the bound of 80 registers) spilled 28
 * bytes in it instead of 8. */
GIN_DEVICE_FN void ep_dispatch_recv(const gin_ep_args_t *a, int scattered) {
  const gin_ep_geom_t *g = &a->g;
  const gin_devcomm_t *dc = &a->dc;
  /* Two halves in turn: threads still copying from one part's counts
   * while others fill the next part's are on the other half; the part
   * after that waits at the next part's barrier, which they reach only
   * when done. */
  GIN_BLOCK_ARRAY(int, counts, 2 * EP_RECV_SOURCES);
  GIN_BLOCK_ARRAY(ep_row_t, rowbuf, EP_THREADS);
  int turn = 0, lane = ep_lane(), nl = gin_coop_size(EP_WARP);
  int split = a->split, wstride = ep_warps_per_block() * split, bad = 0;
  for (int unit = gin_block_idx(); unit < g->L * split;
       unit += gin_grid_dim()) {
    int le = unit / split, u = unit % split, off = 0;
    /* This warp's rows, mod wstride. */
    int mine = u * ep_warps_per_block() + ep_warp_in_block();
    int32_t *lay = a->r.layout + (size_t)le * (size_t)g->R * 2;
    for (int r0 = 0; r0 < g->R; r0 += EP_RECV_SOURCES, turn ^= 1) {
      int n = g->R - r0 < EP_RECV_SOURCES ? g->R - r0 : EP_RECV_SOURCES;
      int *cnt = counts + turn * EP_RECV_SOURCES, rc = bad;
      for (int i = gin_thread_idx(); i < n && rc == GIN_SUCCESS;
           i += gin_block_dim())
        rc = ep_recv_count(a, le, r0 + i, split == 1, &cnt[i]);
      if (gin_coop_rc(GIN_COOP_BLOCK, rc)) return;
      if (u == 0 && gin_thread_idx() == 0)
        for (int i = 0, o = off; i < n; o += cnt[i++]) {
          /* (offset, count) as two int32 (little endian: count in the
           * high word) or packed offset << 32 | count: one 8-byte store */
          uint64_t lo = (uint32_t)o, hi = (uint32_t)cnt[i];
          ((uint64_t *)lay)[r0 + i] = a->packed ? lo << 32 | hi : hi << 32 | lo;
        }
      uint32_t part = 0;
      for (int i = lane; i < n; i += nl)
        part += (uint32_t)cnt[i];
      int tot = (int)gin_coop_sum_u32(EP_WARP, part);
      /* The expert's rows go round its units' warps across sources (not
       * from warp 0 again at each source: a few rows per source would
       * leave most warps idle). */
      if (!bad)
        bad = ep_recv_rows(a, le, r0, cnt, off, tot, mine, wstride,
                           rowbuf + ep_warp_in_block() * nl, scattered);
      off += tot;
    }
    if (u == 0 && gin_thread_idx() == 0) {
      a->r.count[le] = off;
      /* One writer an expert, launches in stream order: no atomics. */
      if (a->stats) a->stats[le] += off;
    }
    if (split > 1 && gin_thread_idx() == 0) {
      /* Releases this unit's reads of the shadows (every thread's, before
       * the last part's barrier); the last unit acquires every other
       * unit's before it moves them. After the copies: a round trip here
       * held up thread 0's warp (on the H200, 16 experts at 2 ranks,
       * isolated receive 20.1-20.7 us -> 21.5-22.0). */
      uint64_t *done = &a->scratch[g->E + 1 + le];
      if (gin_fetch_add_acq_rel_gpu_u64(done, 1) + 1 == (uint64_t)split) {
        for (int r = 0; r < g->R; r++) {
          int sig = gin_ep_dsig(g, a->set, le, r);
          gin_signal_shadow_add(
              dc, sig, gin_signal_read(dc, sig) - gin_signal_shadow(dc, sig),
              GIN_COOP_THREAD);
        }
        gin_store_release_u64(done, 0);
      }
    }
  }
}

/* At least three blocks an SM: unbounded, nvcc takes 96 registers for it
 * (two blocks), bounded 80 with 8 bytes spilled (sm_90). */
GIN_KERNEL_BOUNDED(k_ep_dispatch_recv, gin_ep_args_t, EP_THREADS, 3) {
  ep_dispatch_recv(&args, 0);
}
GIN_KERNEL_BOUNDED(k_ep_dispatch_recv_cols, gin_ep_args_t, EP_THREADS, 3) {
  ep_dispatch_recv(&args, 1);
}

/* Send phase of combine: the received tokens of all local experts,
 * numbered in expert order; warp w takes numbers w, w + warps, ... and
 * returns each token's expert output to the token's (set, t, k) slot at
 * the source, with a signal increment: stored there directly where the
 * source is mapped, else staged in the window (unless y is there
 * already: args.zc) and put. With y in the window, args.pull and a direct
 * path, only the row's place goes (the source's `where` word), and the
 * source reads the row from here. A warp reads the counts of 32 experts
 * at once (lane i expert base + i), finds by a prefix sum which of them
 * hold numbers of its own, and serves those. */
GIN_DEVICE_FN int ep_combine_expert(const gin_ep_args_t *a, int le, int first,
                                    int cnt, int step) {
  const gin_ep_geom_t *g = &a->g;
  const gin_devcomm_t *dc = &a->dc;
  gin_team_t world = gin_team_world(dc);
  int slots = g->R * g->M, lane = ep_lane(), nl = gin_coop_size(EP_WARP);
  for (int slot = first; slot < cnt; slot += step) {
    size_t s = (size_t)le * (size_t)slots + (size_t)slot;
    int r = a->r.src_rank[s], t = a->r.src_token[s], k = a->src_k[s];
    int ctx = r % dc->nctx, path = gin_peer_path(dc, world, r);
    const char *row = (const char *)(a->y + s * (size_t)g->H);
    size_t coff = gin_ep_crecv_off(g, a->set, t, k);
    gin_remote_t inc = gin_remote_signal_inc(gin_ep_csig(g, a->set, t));
    int rc, direct = path == GIN_PATH_DIRECT || path == GIN_PATH_SELF;
    if (direct && a->zc && a->pull) {
      rc = gin_put_value(dc, ctx, world, r, a->win,
                         gin_ep_where_off(g, a->set, t, k),
                         (uint64_t)GIN_EP_PULLED << 32 |
                             (s + (EP_LIES(a, 3, r) ? (size_t)slots : 0)),
                         8, inc, EP_WARP);
    } else if (direct) {
      /* The abort gate, as gin_put's: no store into a peer that may be
       * gone (its memory unmapped) once the communicator aborted. */
      if (gin_coop_any(EP_WARP, gin_peer_writes_stopped(dc)))
        return gin_peer_write_refused(dc, r);
      char *p = (char *)gin_window_peer_ptr(dc, a->win, world, r, coff);
      /* A 14 KiB bf16 row in four memory round trips (seven with
       * gin_copy_coop's four loads in flight). */
      gin_copy_coop_batched(p, row, (size_t)g->H * 2, lane, nl);
      rc = gin_signal(dc, ctx, world, r, inc, EP_WARP);
    } else {
      if (!a->zc) /* else the row is there */
        gin_copy_coop_batched(a->base + gin_ep_csend_off(g, le, slot), row,
                              (size_t)g->H * 2, lane, nl);
      rc = gin_put(dc, ctx, world, r, a->win, coff, a->win,
                   gin_ep_csend_off(g, le, slot), (size_t)g->H * 2, inc,
                   gin_local_none(), EP_WARP);
    }
    if (rc == GIN_SUCCESS && EP_LIES(a, 4, r)) /* the same return twice */
      rc = gin_signal(dc, ctx, world, r, inc, EP_WARP);
    if (rc) return rc;
  }
  return GIN_SUCCESS;
}

GIN_KERNEL(k_ep_combine_send, gin_ep_args_t) {
  const gin_ep_geom_t *g = &args.g;
  int lane = ep_lane(), nl = gin_coop_size(EP_WARP);
  int gw = ep_warp(), nw = ep_nwarps();
  for (int base = 0, pre = 0; base < g->L; base += nl) {
    int le = base + lane;
    uint32_t cnt = le < g->L ? (uint32_t)args.r.count[le] : 0;
    uint32_t incl = gin_coop_scan_u32(EP_WARP, cnt);
    int mine = pre + (int)(incl - cnt);       /* expert le's first number */
    int first = ((gw - mine) % nw + nw) % nw; /* this warp's first slot */
    int has = first < (int)cnt;
    pre += (int)gin_coop_shfl_u32(EP_WARP, incl, nl - 1);
    for (int src; (src = gin_coop_first(EP_WARP, has)) >= 0;) {
      int f = (int)gin_coop_shfl_u32(EP_WARP, (uint32_t)first, src);
      int c = (int)gin_coop_shfl_u32(EP_WARP, cnt, src);
      if (lane == src) has = 0;
      if (ep_combine_expert(&args, base + src, f, c, nw)) return;
    }
  }
}

/* Where top-k slot k of token t came back (one thread, after the
 * token's wait): into this window's crecv, or left in the expert's
 * window, whose rank then wrote the row's slot there into `where` (read
 * and zeroed here). NULL after recording the error (a slot no correct
 * expert writes: outside expert e's rows, or in a window not mapped here;
 * or an aborted communicator: its peers may be gone). */
GIN_DEVICE_FN const char *ep_combine_row(const gin_ep_args_t *a, int t, int k,
                                         int e) {
  const gin_ep_geom_t *g = &a->g;
  const gin_devcomm_t *dc = &a->dc;
  uint64_t *wp = (uint64_t *)(a->base + gin_ep_where_off(g, a->set, t, k));
  uint64_t w = *wp, s = 0;
  if (w == 0) return a->base + gin_ep_crecv_off(g, a->set, t, k);
  *wp = 0;
  int d = e / g->L;
  const char *rb =
      (const char *)gin_window_peer_ptr(dc, a->win, gin_team_world(dc), d, 0);
  if (gin_ep_where_check(w, e % g->L, (size_t)g->R * (size_t)g->M, rb != NULL,
                         &s) != GIN_EP_MSG_PULL) {
    gin_record_error(dc, GIN_ERR_REMOTE, GIN_DEVERR_EP_ROUTING, d, t,
                     (uint64_t)k, w & ~((uint64_t)GIN_EP_PULLED << 32),
                     (uint64_t)e, 4);
    return NULL;
  }
  const char *p = rb + g->off_csend + (size_t)s * (size_t)g->H * 2;
  if (gin_peer_writes_stopped(dc)) {
    gin_peer_write_refused(dc, d);
    return NULL;
  }
  return p;
}

/* Waits (one thread) until token t's routed returns have all come: its
 * signal at exactly shadow + routed, and moves the shadow past them. A
 * value past that is a return no correct peer sends here (one for another
 * token, or of another combine of this set: every return of the last one
 * came before this rank's next dispatch went out, so none can still be on
 * its way): recorded. It is never absorbed into the shadow, so one that
 * lands after this check raises a later check of the signal past its
 * count, where it is found, unless that wait is met by it before a real
 * return: a counter cannot tell a surplus from a return still missing. */
GIN_DEVICE_FN int ep_combine_wait(const gin_ep_args_t *a, int t,
                                  uint64_t routed) {
  const gin_devcomm_t *dc = &a->dc;
  int sig = gin_ep_csig(&a->g, a->set, t);
  uint64_t base = gin_signal_shadow(dc, sig);
  int rc = gin_signal_wait(dc, sig, base + routed, GIN_COOP_THREAD);
  if (rc) return rc;
  /* Ordered by the wait's acquire; at least what the wait saw. */
  uint64_t got = gin_signal_peek(dc, sig) - base;
  if (got != routed)
    return gin_record_error(dc, GIN_ERR_REMOTE, GIN_DEVERR_EP_ROUTING, -1, t,
                            routed, got, (uint64_t)a->set, 6);
  return gin_signal_shadow_add(dc, sig, routed, GIN_COOP_THREAD);
}

/* Receive phase of combine: block b takes tokens b, b + grid, ...; for
 * each, one thread waits until every routed top-k slot of the token came
 * back (the token's own signal), thread k finds slot k's row
 * (ep_combine_row), then out[t] = sum over routed k of weight * expert
 * output (fp32, k in order). */
GIN_KERNEL(k_ep_combine_recv, gin_ep_args_t) {
  const gin_ep_geom_t *g = &args.g;
  GIN_BLOCK_ARRAY(const char *, rows, 32); /* K <= 32 */
  for (int t = gin_block_idx(); t < args.T; t += gin_grid_dim()) {
    size_t row0 = (size_t)t * (size_t)g->K;
    const float *w = args.weights + row0;
    uint16_t *out = args.out + (size_t)t * (size_t)g->H;
    int rc = GIN_SUCCESS, routed = 0;
    /* Bit k: top-k slot k is routed (K <= 32). Each thread reads the row
     * once; the loops below test bits, not memory. */
    uint32_t mask = 0;
    for (int k = 0; k < g->K; k++) {
      int on = gin_ep_topk(&args, row0 + (size_t)k) >= 0;
      mask |= (uint32_t)on << k;
      routed += on;
    }
    if (gin_thread_idx() == 0 && routed)
      rc = ep_combine_wait(&args, t, (uint64_t)routed);
    /* (Also orders the last token's reads of rows[] before the writes.) */
    if (gin_coop_rc(GIN_COOP_BLOCK, rc)) return;
    EP_FOR_THREADS(k, g->K) {
      rows[k] = NULL;
      if ((mask >> k & 1u) &&
          !(rows[k] = ep_combine_row(&args, t, k,
                                     gin_ep_topk(&args, row0 + (size_t)k))))
        rc = GIN_ERR_REMOTE;
    }
    if (gin_coop_rc(GIN_COOP_BLOCK, rc)) return;
    /* Eight channels a thread at a time (16-byte loads and stores) where
     * the rows allow; the sums are the same, channel by channel. */
    int nv = g->H % 8 == 0 && ((uintptr_t)out & 15) == 0 ? g->H / 8 : 0;
    /* Up to EP_ROUTE_REGS slots: all their loads issued before the first
     * is used (fixed bounds: registers), one memory round trip instead of
     * one per slot; the same sums in the same order. */
    int kr = g->K <= EP_ROUTE_REGS ? g->K : 0;
    EP_FOR_THREADS(v, nv) {
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      GIN_ALIGNAS(16) uint16_t in[EP_ROUTE_REGS][8];
      for (int k = 0; k < EP_ROUTE_REGS; k++)
        if (k < kr && (mask >> k & 1u))
          gin_store16(in[k], rows[k] + (size_t)v * 16);
      for (int k = 0; k < EP_ROUTE_REGS; k++)
        if (k < kr && (mask >> k & 1u))
          for (int j = 0; j < 8; j++)
            acc[j] += w[k] * gin_ep_bf16_to_float(in[k][j]);
      for (int k = kr; k < g->K; k++) { /* wider: one slot at a time */
        if (!(mask >> k & 1u)) continue;
        GIN_ALIGNAS(16) uint16_t one[8];
        gin_store16(one, rows[k] + (size_t)v * 16);
        for (int j = 0; j < 8; j++)
          acc[j] += w[k] * gin_ep_bf16_to_float(one[j]);
      }
      GIN_ALIGNAS(16) uint16_t o[8];
      for (int j = 0; j < 8; j++)
        o[j] = gin_ep_float_to_bf16(acc[j]);
      gin_store16(out + (size_t)v * 8, o);
    }
    EP_FOR_THREADS(c, g->H - 8 * nv) {
      int ch = 8 * nv + c;
      float acc = 0.0f;
      for (int k = 0; k < g->K; k++) {
        if (!(mask >> k & 1u)) continue;
        acc += w[k] * gin_ep_bf16_to_float(((const uint16_t *)rows[k])[ch]);
      }
      out[ch] = gin_ep_float_to_bf16(acc);
    }
  }
}

/* Every rank's barrier, one block: ahead of a dispatch's second combine,
 * whose rows and signals must not reach a rank still receiving the
 * first (nothing else orders them: a dispatch between would). */
GIN_KERNEL(k_ep_barrier, gin_ep_args_t) {
  gin_barrier(&args.dc, gin_team_world(&args.dc), 0, GIN_COOP_BLOCK);
}

/* ------------------------------------------------------------ launch */

/* The most blocks an EP kernel launches. */
static int ep_grid_most(void) { return 2 * gin_device_sms(); }

static int ep_grid(int want) {
  int most = ep_grid_most();
  return want < 1 ? 1 : want < most ? want : most;
}

/* Per waiting kernel (dispatch receive, combine receive), set when the
 * kernels are loaded: blocks per SM and registers per block; the largest
 * block of the kernels they wait for; the SM's registers (0: no register
 * file, the host target). */
enum { EP_WAIT_DISPATCH = 0, EP_WAIT_COMBINE = 1 };
static int ep_wait_occupancy[2] = {1, 1};
static long ep_wait_regs[2], ep_send_regs, ep_sm_regs;

/* The most blocks waiting kernel k may launch when `near` ranks share the
 * device (ep_budget.h: 3/4 of the device's room for k, and few enough
 * that some SM can still start a block of the EP send kernels). Other
 * applications' kernels and MPS thread limits are not accounted for. */
static int ep_wait_budget(int k, int near) {
  if (ep_sm_regs == 0) /* blocks are CPU threads: the OS runs every one */
    return ep_grid_most();
  return gin_ep_wait_budget(ep_wait_occupancy[k], ep_wait_regs[k], ep_send_regs,
                            ep_sm_regs, ep_grid_most() / 2, near);
}

/* Blocks of EP_THREADS for n warps (host target: n blocks). */
static int ep_blocks_for_warps(int n) {
  int per = GIN_WARPS_PER_BLOCK(EP_THREADS);
  return (n + per - 1) / per;
}

#define EP_STREAM(s) ((gin_stream_t)(s))

#ifdef __cplusplus
extern "C" {
#endif

gin_result_t gin_ep_kernels_load(const char **why) {
  /* With CUDA's lazy loading a kernel's first launch loads its module,
   * which waits until the device is idle: a dispatch kernel spinning on
   * the proxy while the host launches the next kernel for the first time
   * then hangs both (seen on the H200 over the proxy). Queried here, at
   * create time, the kernels are loaded and the launches load nothing. */
  ep_sm_regs = gin_device_sm_regs();
  /* Sends at even places, the waiting kernel i / 2 (EP_WAIT_*) at odd
   * ones: their registers and occupancy size the wait budget. */
  int regs[4] = {0}, blocks[4] = {0};
  gin_result_t res = GIN_SUCCESS;
  *why = "";
  if (res == GIN_SUCCESS)
    res = gin_kernel_occupancy(k_ep_dispatch_send, EP_THREADS, &regs[0],
                               &blocks[0], why);
  if (res == GIN_SUCCESS)
    res = gin_kernel_occupancy(k_ep_dispatch_recv, EP_THREADS, &regs[1],
                               &blocks[1], why);
  if (res == GIN_SUCCESS)
    res = gin_kernel_occupancy(k_ep_combine_send, EP_THREADS, &regs[2],
                               &blocks[2], why);
  if (res == GIN_SUCCESS)
    res = gin_kernel_occupancy(k_ep_combine_recv, EP_THREADS, &regs[3],
                               &blocks[3], why);
  int lregs = 0, lblocks = 0; /* loaded only */
  if (res == GIN_SUCCESS)
    res = gin_kernel_occupancy(k_ep_barrier, EP_THREADS, &lregs, &lblocks, why);
  if (res == GIN_SUCCESS)
    res = gin_kernel_occupancy(k_ep_dispatch_recv_cols, EP_THREADS, &lregs,
                               &lblocks, why);
  if (res != GIN_SUCCESS) return res;
  for (int i = 0; i < 4; i++) {
    long r = gin_ep_block_regs(regs[i], EP_THREADS);
    if (i % 2) {
      ep_wait_occupancy[i / 2] = blocks[i] > 0 ? blocks[i] : 1;
      ep_wait_regs[i / 2] = r;
    } else if (r > ep_send_regs) {
      ep_send_regs = r;
    }
  }
  return GIN_SUCCESS;
}

gin_result_t gin_ep_launch_dispatch_send(const gin_ep_args_t *a, void *stream) {
  /* A block per token (the signals go out once every block is done). */
  return gin_launch(k_ep_dispatch_send, ep_grid(a->T), EP_THREADS,
                    EP_STREAM(stream), a);
}

gin_result_t gin_ep_launch_dispatch_recv(const gin_ep_args_t *a, void *stream) {
  /* Every block waits. Within the budget few local experts get several
   * blocks each; past it a block takes whole experts one after another
   * (cutting each in four measured 2.3 x slower on the H200 with 192
   * local experts on 148 blocks: every unit waits for and reads all the
   * counts, and its warps have fewer tokens to share). */
  gin_ep_args_t b = *a;
  int budget = ep_wait_budget(EP_WAIT_DISPATCH, a->near), L = a->g.L;
  b.split = L <= budget ? budget / (L > 0 ? L : 1) : 1;
  int units = L * b.split, grid = ep_grid(units < budget ? units : budget);
  if (a->fp8 && a->scale_layout != GIN_EP_SCALES_ROWS)
    return gin_launch(k_ep_dispatch_recv_cols, grid, EP_THREADS,
                      EP_STREAM(stream), &b);
  return gin_launch(k_ep_dispatch_recv, grid, EP_THREADS, EP_STREAM(stream),
                    &b);
}

gin_result_t gin_ep_launch_combine_send(const gin_ep_args_t *a, void *stream) {
  /* A warp per returning token: the rank receives T * K of them on
   * average (the launch cannot read the counts without a sync). */
  return gin_launch(k_ep_combine_send,
                    ep_grid(ep_blocks_for_warps(a->g.M * a->g.K)), EP_THREADS,
                    EP_STREAM(stream), a);
}

gin_result_t gin_ep_launch_barrier(const gin_ep_args_t *a, void *stream) {
  return gin_launch(k_ep_barrier, 1, EP_THREADS, EP_STREAM(stream), a);
}

gin_result_t gin_ep_launch_combine_recv(const gin_ep_args_t *a, void *stream) {
  if (a->T == 0) return GIN_SUCCESS; /* nothing was routed, nothing comes */
  int budget = ep_wait_budget(EP_WAIT_COMBINE, a->near);
  return gin_launch(k_ep_combine_recv, ep_grid(a->T < budget ? a->T : budget),
                    EP_THREADS, EP_STREAM(stream), a);
}

#ifdef __cplusplus
}
#endif
