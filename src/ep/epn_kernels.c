/*
 * EP normal-mode kernels, written once: built as C for the host target (a
 * block is a CPU thread, a warp one thread) and as CUDA for the cuda
 * target. Layout and notify run in one block; dispatch and combine in 2 x
 * channels blocks, the first half sending channel b's rows, the second
 * receiving channel b's. A warp owns some peers' rings of its channel and
 * serves them in turn without blocking on any one (a ring without credits
 * or rows is passed over), so no ring waits on another's; a warp that
 * makes no progress for GIN_TIMEOUT_MS records a timeout naming the peer
 * and channel. Rings stay live as long as a ring's credits and tail are
 * returned whenever a chunk is done, the ring is out of room (sender) or
 * its rows are (receiver): with chunk <= ring rows no side can hold back
 * what the other waits for.
 */
/* The kernels' gin calls are the library's own, their offsets and ids from
 * the geometry gin_epn_create checked (as in ep_kernels.c). */
#ifndef GIN_EP_DEVICE_CHECKS
#undef GIN_DEVICE_CHECKS
#define GIN_DEVICE_CHECKS 0
#endif

#include "ep/epn_kernels.h"
#include "gin/ep_format.h"

/* Tests only: a copy of these kernels built with EPN_TEST_LIAR = 1
 * (tests/ep: epn_*_liar_3) makes world rank 1 lie in its notes to every
 * other rank (a channel count past its tokens), as a corrupt or hostile
 * process could; the receivers' checks are then driven end to end. The
 * library is never built with it. */
#ifndef EPN_TEST_LIAR
#define EPN_TEST_LIAR 0
#endif

#define EPN_THREADS 256
#define EPN_WARP GIN_COOP_WARP

/* Reasons in GIN_DEVERR_EP_ROUTING reports (src/comm/state.c words them). */
enum {
  EPN_WHY_EXPERT = 0,   /* a top-k id outside [-1, E) */
  EPN_WHY_CHANNELS = 7, /* a peer's note: another channel count */
  EPN_WHY_ROOM = 8,     /* more rows come than the outputs hold */
  EPN_WHY_STUCK = 9,    /* no progress on a ring for the timeout */
  EPN_WHY_ROW = 10,     /* a ring row naming no token or no expert */
  EPN_WHY_FORMAT = 11,  /* a ring row of another format or top-k width */
  EPN_WHY_NOTE = 12,    /* a note's counts outside its sender's tokens */
  EPN_WHY_HANDLE = 13   /* a handle's in_rank no longer its counts' */
};

/* A dispatch row's format word (in its slot's head): fp8 or bf16, and
 * the top-k slots that travel; the receiver's must be the sender's. */
GIN_DEVICE_FN int32_t epn_format(const gin_epn_args_t *a) {
  return a->fp8 | a->K << 1;
}

GIN_DEVICE_FN int epn_lane(void) { return gin_coop_rank(EPN_WARP); }
GIN_DEVICE_FN int epn_nl(void) { return gin_coop_size(EPN_WARP); }
GIN_DEVICE_FN int epn_warps(void) { return gin_block_dim() / epn_nl(); }
GIN_DEVICE_FN int epn_warp(void) { return gin_thread_idx() / epn_nl(); }

/* Token t's top-k id k (int32 or int64 table). */
GIN_DEVICE_FN int64_t epn_id(const gin_epn_args_t *a, size_t i) {
  return a->idx64 ? ((const int64_t *)a->topk)[i]
                  : (int64_t)((const int32_t *)a->topk)[i];
}

/* A watch over a loop's progress: nothing for the timeout (or an aborted
 * communicator) ends it. epn_idle_one: one thread's; epn_idle: a warp's
 * (every lane calls with the same arguments and gets the same result). */
typedef struct epn_idle {
  uint64_t t0;
  uint32_t iter;
} epn_idle_t;
GIN_DEVICE_FN int epn_idle_one(const gin_devcomm_t *dc, epn_idle_t *s, int peer,
                               int c, uint64_t want, uint64_t seen) {
  gin_spin_pause(s->iter++);
  if (!gin_spin_check_due(s->iter)) return GIN_SUCCESS;
  uint64_t now = gin_time_ns();
  if (s->t0 == 0) s->t0 = now;
  if (gin_aborted(dc)) return GIN_ERR_ABORTED;
  if (now - s->t0 <= dc->timeout_ns) return GIN_SUCCESS;
  return gin_record_error(dc, GIN_ERR_TIMEOUT, GIN_DEVERR_EP_ROUTING, peer, c,
                          want, seen, now - s->t0, EPN_WHY_STUCK);
}
GIN_DEVICE_FN int epn_idle(const gin_devcomm_t *dc, epn_idle_t *s,
                           int progressed, int peer, int c, uint64_t want,
                           uint64_t seen) {
  if (progressed) {
    s->t0 = 0;
    s->iter = 0;
    return GIN_SUCCESS;
  }
  int rc =
      epn_lane() == 0 ? epn_idle_one(dc, s, peer, c, want, seen) : GIN_SUCCESS;
  if (epn_lane() != 0) s->iter++;
  return (int)gin_coop_shfl_u32(EPN_WARP, (uint32_t)rc, 0);
}

/* ------------------------------------------------------------ layout */

/* One block: per_rank, per_expert and in_rank of the routing table;
 * counts through the scratch (zero between launches). */
GIN_KERNEL(k_epn_layout, gin_epn_args_t) {
  const gin_epn_geom_t *g = &args.g;
  uint64_t *cnt = args.scratch + gin_epn_scratch_layout(g); /* [R + E] */
  int bad = 0;
  for (int t = gin_thread_idx(); t < args.T; t += gin_block_dim()) {
    uint8_t *row = args.in_rank_out + (size_t)t * (size_t)g->R;
    for (int r = 0; r < g->R; r++)
      row[r] = 0;
    for (int k = 0; k < args.K && !bad; k++) {
      int64_t e = epn_id(&args, (size_t)t * (size_t)args.K + (size_t)k);
      if (e == -1) continue;
      if (e < -1 || e >= g->E) {
        gin_record_error(&args.dc, GIN_ERR_INVALID, GIN_DEVERR_EP_ROUTING,
                         (int64_t)e, t, (uint64_t)k, 0, (uint64_t)g->E,
                         EPN_WHY_EXPERT);
        bad = 1;
        break;
      }
      gin_add_relaxed_gpu_u64(&cnt[g->R + e], 1);
      int r = (int)(e / g->L);
      if (!row[r]) {
        row[r] = 1;
        gin_add_relaxed_gpu_u64(&cnt[r], 1);
      }
    }
  }
  gin_coop_sync(GIN_COOP_BLOCK);
  for (int i = gin_thread_idx(); i < g->R + g->E; i += gin_block_dim()) {
    int32_t v = (int32_t)gin_load_relaxed_u64(&cnt[i]);
    if (i < g->R)
      args.per_rank[i] = v;
    else
      args.per_expert_out[i - g->R] = v;
    gin_store_relaxed_u64(&cnt[i], 0);
  }
}

/* ------------------------------------------------------------ notify */

/* One block. Counts this rank's tokens to each rank by channel (the
 * handle's send side), sends each rank its counts in a note, reads every
 * rank's note to this one (the receive side and recv_counts), then
 * acknowledges them. */
GIN_KERNEL(k_epn_notify, gin_epn_args_t) {
  const gin_epn_geom_t *g = &args.g;
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  const gin_epn_handle_t *h = &args.h;
  int C = args.C, R = g->R, L = g->L, rc = GIN_SUCCESS;
  uint64_t seq = gin_load_relaxed_u64(args.scratch + gin_epn_scratch_seq(g));
  /* 1. Tokens to rank r in channel c, and each one's place there. */
  for (int i = gin_thread_idx(); i < R * C; i += gin_block_dim()) {
    int r = i / C, c = i % C, t0, t1, n = 0;
    gin_epn_channel(args.T, C, c, &t0, &t1);
    for (int t = t0; t < t1; t++) {
      size_t at = (size_t)t * (size_t)R + (size_t)r;
      h->send_head[at] = h->in_rank[at] ? n++ : -1;
    }
    h->chan_prefix[i] = n;
  }
  gin_coop_sync(GIN_COOP_BLOCK);
  /* 2. Prefixes over channels; each rank's note, once its last but one
   * (the note slot's last user) was read there. */
  for (int r = gin_thread_idx(); r < R && rc == GIN_SUCCESS;
       r += gin_block_dim()) {
    int32_t *cp = h->chan_prefix + (size_t)r * (size_t)C;
    size_t soff = gin_epn_note_off(g, g->off_nstage, seq, r);
    int32_t *note = (int32_t *)(args.base + soff);
    if (seq >= 1)
      rc = gin_signal_wait(dc, gin_epn_sig_ack(g, r), seq - 1, GIN_COOP_THREAD);
    if (rc) break;
    note[0] = C;
    note[1] = args.T;
    for (int c = 0; c < C; c++) {
      note[2 + c] = cp[c];
      if (c) cp[c] += cp[c - 1];
    }
    if (EPN_TEST_LIAR == 1 && g->me == 1 && r != 1) note[2] = args.T + 1;
    for (int l = 0; l < L; l++)
      note[2 + g->C + l] = args.per_expert[(size_t)r * (size_t)L + (size_t)l];
    rc = gin_put(dc, r % dc->nctx, world, r, args.win,
                 gin_epn_note_off(g, g->off_note, seq, g->me), args.win, soff,
                 g->note, gin_remote_signal_inc(gin_epn_sig_note(g, g->me)),
                 gin_local_none(), GIN_COOP_THREAD);
  }
  /* 3. Every rank's note to this one: where its rows go. */
  for (int s = gin_thread_idx(); s < R && rc == GIN_SUCCESS;
       s += gin_block_dim()) {
    rc = gin_signal_wait(dc, gin_epn_sig_note(g, s), seq + 1, GIN_COOP_THREAD);
    if (rc) break;
    const int32_t *note =
        (const int32_t *)(args.base + gin_epn_note_off(g, g->off_note, seq, s));
    if (note[0] != C) {
      rc = gin_record_error(dc, GIN_ERR_INVALID, GIN_DEVERR_EP_ROUTING, s, 0,
                            (uint64_t)C, (uint64_t)(uint32_t)note[0], 0,
                            EPN_WHY_CHANNELS);
      break;
    }
    /* Counts no correct peer sends: outside its tokens (or its token
     * count outside gin_epn_notify's bound), refused before any is used. */
    int32_t at = 0, Ts = note[1], bad = Ts < 0 || Ts > GIN_EPN_MAX_TOKENS;
    for (int c = 0; c < C && !bad; c++) {
      bad = note[2 + c] < 0 || note[2 + c] > Ts - at;
      h->recv_chan_prefix[(size_t)s * (size_t)C + (size_t)c] = at;
      at += bad ? 0 : note[2 + c];
    }
    for (int l = 0; l < L && !bad; l++)
      bad = note[2 + g->C + l] < 0 || note[2 + g->C + l] > Ts * 32;
    if (bad) {
      rc = gin_record_error(dc, GIN_ERR_REMOTE, GIN_DEVERR_EP_ROUTING, s, Ts, 0,
                            0, 0, EPN_WHY_NOTE);
      break;
    }
    h->rank_prefix[s] = at;
  }
  if (gin_coop_rc(GIN_COOP_BLOCK, rc)) return;
  if (gin_thread_idx() == 0) {
    int32_t at = 0;
    for (int s = 0; s < R; s++)
      h->rank_prefix[s] = at += h->rank_prefix[s];
    args.recv_counts[0] = at;
  }
  for (int l = gin_thread_idx(); l < L; l += gin_block_dim()) {
    int64_t n = 0; /* checked per note; their sum held within an int32 */
    for (int s = 0; s < R; s++)
      n += ((const int32_t *)(args.base + gin_epn_note_off(g, g->off_note, seq,
                                                           s)))[2 + g->C + l];
    args.recv_counts[1 + l] = n > INT32_MAX ? INT32_MAX : (int32_t)n;
  }
  /* 4. Every note read: its slot may be written again. */
  gin_coop_sync(GIN_COOP_BLOCK);
  for (int s = gin_thread_idx(); s < R && rc == GIN_SUCCESS;
       s += gin_block_dim())
    rc = gin_signal(dc, s % dc->nctx, world, s,
                    gin_remote_signal_inc(gin_epn_sig_ack(g, g->me)),
                    GIN_COOP_THREAD);
  if (gin_thread_idx() == 0)
    gin_store_relaxed_u64(args.scratch + gin_epn_scratch_seq(g), seq + 1);
}

/* ------------------------------------------------------------ rings */

/* Rows of source s in channel c, and the first one's place in the
 * receive order (the handle's receive side). */
GIN_DEVICE_FN int epn_recv_rows(const gin_epn_args_t *a, int s, int c,
                                int *row0) {
  const gin_epn_handle_t *h = &a->h;
  int C = h->channels;
  const int32_t *cp = h->recv_chan_prefix + (size_t)s * (size_t)C;
  int before = s ? h->rank_prefix[s - 1] : 0;
  int total = h->rank_prefix[s] - before;
  *row0 = before + cp[c];
  return (c + 1 < C ? cp[c + 1] : total) - cp[c];
}
/* Rows to rank r in channel c (the handle's send side). */
GIN_DEVICE_FN int epn_send_rows(const gin_epn_args_t *a, int r, int c) {
  const int32_t *cp = a->h.chan_prefix + (size_t)r * (size_t)a->h.channels;
  return cp[c] - (c ? cp[c - 1] : 0);
}

/* Rows a warp may move on a ring this round: the peer's count `sig`
 * (credits or tail) past `base`, held within [0, most] whatever the peer
 * wrote. Lane 0 reads it (an ordered read) and every lane gets the same
 * answer, so the warp's loops and collectives stay uniform; the warp's
 * barrier after the broadcast orders the other lanes' accesses to the
 * slots after lane 0's read. *seen: the count read (lane 0). */
GIN_DEVICE_FN int epn_ring_room(const gin_devcomm_t *dc, int sig, uint64_t base,
                                int most, uint64_t *seen) {
  uint32_t v = 0;
  *seen = 0;
  if (epn_lane() == 0) {
    *seen = gin_signal_read(dc, sig);
    int64_t d = (int64_t)(*seen - base);
    v = d <= 0 ? 0u : d >= most ? (uint32_t)most : (uint32_t)d;
  }
  v = gin_coop_shfl_u32(EPN_WARP, v, 0);
  gin_coop_sync(EPN_WARP);
  return (int)v;
}

/* One ring's sending side: `left` rows still to write, `sent` written
 * this call, `unsig` written but not yet signalled; the row at hand is
 * the sender's choice (fill). */
typedef struct epn_tx {
  int kind; /* EPN_DCRED or EPN_CCRED: the credit signal (rings: +1 tail) */
  size_t off_ring, off_stage, slot, bytes;
} epn_tx_t;

/* Where row `pos` of ring (me -> dst, c) is written: the peer's slot
 * itself (direct path), or this rank's staging slot (*stage set; the warp
 * puts it after filling it). NULL once writes to peers are refused. */
GIN_DEVICE_FN char *epn_slot_out(const gin_epn_args_t *a, const epn_tx_t *x,
                                 int dst, int c, uint64_t pos, int *stage) {
  const gin_devcomm_t *dc = &a->dc;
  gin_team_t world = gin_team_world(dc);
  int path = gin_peer_path(dc, world, dst);
  *stage = !(path == GIN_PATH_DIRECT || path == GIN_PATH_SELF);
  if (*stage)
    return a->base + gin_epn_ring(&a->g, x->off_stage, x->slot, dst, c, pos);
  if (gin_coop_any(EPN_WARP, gin_peer_writes_stopped(dc))) {
    gin_peer_write_refused(dc, dst);
    return NULL;
  }
  return (char *)gin_window_peer_ptr(
      dc, a->win, world, dst,
      gin_epn_ring(&a->g, x->off_ring, x->slot, a->g.me, c, pos));
}

/* After filling a staged slot: its put (no signal; the tail signal after
 * the chunk is ordered after it). */
GIN_DEVICE_FN int epn_slot_put(const gin_epn_args_t *a, const epn_tx_t *x,
                               int dst, int c, uint64_t pos) {
  const gin_devcomm_t *dc = &a->dc;
  return gin_put(dc, dst % dc->nctx, gin_team_world(dc), dst, a->win,
                 gin_epn_ring(&a->g, x->off_ring, x->slot, a->g.me, c, pos),
                 a->win,
                 gin_epn_ring(&a->g, x->off_stage, x->slot, dst, c, pos),
                 x->bytes, gin_remote_none(), gin_local_none(), EPN_WARP);
}

/* Fills a dispatch slot with token t's row. The warp. */
GIN_DEVICE_FN void epn_fill_dispatch(const gin_epn_args_t *a, char *slot,
                                     int t) {
  const gin_epn_geom_t *g = &a->g;
  int lane = epn_lane(), nl = epn_nl(), H = g->H, G = H / GIN_EP_FP8_GROUP;
  if (lane == 0) {
    ((int32_t *)slot)[0] = t;
    ((int32_t *)slot)[1] = epn_format(a);
  }
  char *p = slot + GIN_EPN_SLOT_HEAD;
  if (a->fp8) {
    gin_copy_coop(p, (const char *)a->x + (size_t)t * (size_t)H, (size_t)H,
                  lane, nl);
    const uint32_t *sc = (const uint32_t *)a->scales;
    for (int i = lane; i < G; i += nl)
      ((uint32_t *)(p + H))[i] = sc[(int64_t)t * a->sst + (int64_t)i * a->ssg];
  } else {
    gin_copy_coop(p, (const char *)a->x + (size_t)t * (size_t)H * 2,
                  (size_t)H * 2, lane, nl);
  }
  if (a->K) {
    int32_t *ids = (int32_t *)(p + (size_t)H * 2);
    float *w = (float *)(ids + a->K);
    for (int k = lane; k < a->K; k += nl) {
      size_t i = (size_t)t * (size_t)a->K + (size_t)k;
      ids[k] = (int32_t)epn_id(a, i);
      w[k] = a->weights[i];
    }
  }
}

/* Fills a combine slot with received row i. The warp. */
GIN_DEVICE_FN void epn_fill_combine(const gin_epn_args_t *a, char *slot,
                                    int i) {
  int lane = epn_lane(), nl = epn_nl(), H = a->g.H;
  gin_copy_coop(slot, (const char *)a->x + (size_t)i * (size_t)H * 2,
                (size_t)H * 2, lane, nl);
  float *w = (float *)(slot + (size_t)H * 2);
  for (int k = lane; k < a->K; k += nl)
    w[k] = a->weights[(size_t)i * (size_t)a->K + (size_t)k];
}

/* After a warp's batch of k rows on its ring with `peer` (a sender's
 * rows written, or a receiver's rows read): what it owes the peer (tail
 * rows not yet signalled, or credits not yet returned) goes out as signal
 * `sig` there once a chunk is due, the call's n rows of the ring are
 * done, or the batch stopped short (no room, or no rows come yet), so the
 * peer never waits for what this side holds back; then the ring's counts
 * move on (its position in the scratch once done). Returns the signal's
 * result. */
GIN_DEVICE_FN int epn_ring_advance(const gin_epn_args_t *a, int peer, int sig,
                                   int k, int stopped, int n, int *done,
                                   int *owed, uint64_t *posp, uint64_t pos,
                                   int *left) {
  const gin_devcomm_t *dc = &a->dc;
  int d = done[peer] + k, pend = owed[peer] + k, rc = GIN_SUCCESS;
  /* Every lane's reads of the slots (a receiver's) before the credit
   * frees them, and of done and owed before lane 0 writes them. */
  gin_coop_sync(EPN_WARP);
  if (pend > 0 && (pend >= a->chunk || d == n || stopped)) {
    rc = gin_signal(dc, peer % dc->nctx, gin_team_world(dc), peer,
                    gin_remote_signal_add(sig, (uint64_t)pend), EPN_WARP);
    pend = 0;
  }
  if (epn_lane() == 0) {
    done[peer] = d;
    owed[peer] = pend;
    if (d == n) gin_store_relaxed_u64(posp, pos + (uint64_t)k);
  }
  gin_coop_sync(EPN_WARP);
  if (d == n) (*left)--;
  return rc;
}

/* The sending half of dispatch (comb 0) or combine (comb 1), channel c:
 * warp w serves ranks w, w + warps, ... in turn, each a chunk at a time
 * as far as its credits reach. Dispatch sends each token of the channel
 * that goes to the rank (in token order); combine sends back the rows
 * received from the rank in channel c (in receive order, which is the
 * same). */
GIN_DEVICE_FN int epn_send(const gin_epn_args_t *a, int c, int comb) {
  const gin_epn_geom_t *g = &a->g;
  const gin_devcomm_t *dc = &a->dc;
  GIN_BLOCK_ARRAY(int, cursor, GIN_EPN_MAX_RANKS); /* next token or row */
  GIN_BLOCK_ARRAY(int, sent, GIN_EPN_MAX_RANKS);
  GIN_BLOCK_ARRAY(int, unsig, GIN_EPN_MAX_RANKS);
  int lane = epn_lane(), nl = epn_nl(), R = g->R;
  epn_tx_t x;
  x.kind = comb ? EPN_CCRED : EPN_DCRED;
  x.off_ring = comb ? g->off_cring : g->off_dring;
  x.off_stage = comb ? g->off_cstage : g->off_dstage;
  x.slot = comb ? g->cslot : g->dslot;
  x.bytes = comb ? (size_t)g->H * 2 + (size_t)a->K * 4
                 : GIN_EPN_SLOT_HEAD + (size_t)g->H * 2 + (size_t)a->K * 8;
  int t0, t1;
  gin_epn_channel(a->T, a->h.channels, c, &t0, &t1);
  int left = 0;
  for (int r = epn_warp(); r < R; r += epn_warps()) {
    int row0 = 0, n = comb ? epn_recv_rows(a, r, c, &row0) : 0;
    if (lane == 0) {
      cursor[r] = comb ? row0 : t0;
      sent[r] = 0;
      unsig[r] = 0;
    }
    left += (comb ? n : epn_send_rows(a, r, c)) > 0;
  }
  gin_coop_sync(EPN_WARP);
  epn_idle_t idle = {0, 0};
  int rc = GIN_SUCCESS, stuck = -1;
  uint64_t want = 0, seen = 0;
  while (left > 0 && rc == GIN_SUCCESS) {
    int progressed = 0;
    for (int r = epn_warp(); r < R && rc == GIN_SUCCESS; r += epn_warps()) {
      int row0,
          n = comb ? epn_recv_rows(a, r, c, &row0) : epn_send_rows(a, r, c);
      int done = sent[r];
      if (done == n) continue;
      uint64_t *posp = a->scratch + gin_epn_scratch_pos(g, x.kind, r, c);
      uint64_t pos = gin_load_relaxed_u64(posp) + (uint64_t)done;
      uint64_t cred;
      int room = epn_ring_room(dc, gin_epn_sig(g, x.kind, r, c),
                               pos - (uint64_t)g->S, n - done, &cred);
      int k = 0;
      for (; k < room && k < a->chunk && rc == GIN_SUCCESS; k++) {
        int item = cursor[r];
        if (!comb) { /* the channel's next token to r */
          for (;;) {
            if (item >= t1) { /* in_rank no longer matches the counts */
              if (lane == 0)
                gin_record_error(dc, GIN_ERR_INVALID, GIN_DEVERR_EP_ROUTING, r,
                                 c, 0, 0, 0, EPN_WHY_HANDLE);
              rc = GIN_ERR_INVALID;
              break;
            }
            int t = item + lane;
            int on = t < t1 && a->h.in_rank[(size_t)t * (size_t)R + (size_t)r];
            int f = gin_coop_first(EPN_WARP, on);
            if (f >= 0) {
              item += f;
              break;
            }
            item += nl;
          }
          if (rc) break;
        }
        int stage;
        char *slot = epn_slot_out(a, &x, r, c, pos + (uint64_t)k, &stage);
        if (!slot) {
          rc = GIN_ERR_ABORTED;
          break;
        }
        if (comb)
          epn_fill_combine(a, slot, item);
        else
          epn_fill_dispatch(a, slot, item);
        gin_coop_sync(EPN_WARP);
        if (stage) rc = epn_slot_put(a, &x, r, c, pos + (uint64_t)k);
        if (lane == 0) cursor[r] = item + 1;
        gin_coop_sync(EPN_WARP);
      }
      if (rc) break;
      /* The tail signal is ordered after this warp's slots (stored, or
       * put on the same context). */
      rc = epn_ring_advance(a, r, gin_epn_sig(g, x.kind - 1, g->me, c), k,
                            k == room, n, sent, unsig, posp, pos, &left);
      if (k > 0) {
        progressed = 1;
      } else if (done != n) {
        stuck = r;
        want = pos - (uint64_t)g->S + 1;
        seen = cred;
      }
    }
    if (rc == GIN_SUCCESS)
      rc = epn_idle(dc, &idle, progressed, stuck, c, want, seen);
  }
  return rc;
}

/* Copies dispatch slot `slot` into receive row `row`. The warp. Returns
 * GIN_ERR_REMOTE (recorded) for a row no correct sender writes. */
GIN_DEVICE_FN int epn_take_dispatch(const gin_epn_args_t *a, const char *slot,
                                    int row, int src) {
  const gin_epn_geom_t *g = &a->g;
  int lane = epn_lane(), nl = epn_nl(), H = g->H, G = H / GIN_EP_FP8_GROUP;
  const char *p = slot + GIN_EPN_SLOT_HEAD;
  int32_t t = ((const int32_t *)slot)[0], f = ((const int32_t *)slot)[1];
  if (f != epn_format(a)) { /* before anything is read by its size */
    if (lane == 0)
      gin_record_error(&a->dc, GIN_ERR_INVALID, GIN_DEVERR_EP_ROUTING, src, 0,
                       (uint64_t)(uint32_t)epn_format(a), (uint64_t)(uint32_t)f,
                       0, EPN_WHY_FORMAT);
    return GIN_ERR_INVALID;
  }
  int bad = t < 0;
  const int32_t *ids = (const int32_t *)(p + (size_t)H * 2);
  const float *w = (const float *)(ids + a->K);
  for (int k = lane; k < a->K; k += nl)
    bad |= ids[k] < -1 || ids[k] >= g->E;
  if (gin_coop_any(EPN_WARP, bad)) {
    if (lane == 0)
      gin_record_error(&a->dc, GIN_ERR_REMOTE, GIN_DEVERR_EP_ROUTING, src, t,
                       (uint64_t)row, 0, (uint64_t)g->E, EPN_WHY_ROW);
    return GIN_ERR_REMOTE;
  }
  if (a->fp8) {
    gin_copy_coop((char *)a->recv_x + (size_t)row * (size_t)H, p, (size_t)H,
                  lane, nl);
    for (int i = lane; i < G; i += nl)
      ((uint32_t *)a->recv_scales)[(size_t)row * (size_t)G + (size_t)i] =
          ((const uint32_t *)(p + H))[i];
  } else {
    gin_copy_coop((char *)a->recv_x + (size_t)row * (size_t)H * 2, p,
                  (size_t)H * 2, lane, nl);
  }
  if (lane == 0) a->h.recv_src_idx[row] = t;
  if (a->recv_idx) {
    int lo = g->me * g->L;
    for (int k = lane; k < a->K; k += nl) {
      int32_t e = ids[k];
      int mine = e >= lo && e < lo + g->L;
      a->recv_idx[(size_t)row * (size_t)a->K + (size_t)k] = mine ? e - lo : -1;
      a->recv_w[(size_t)row * (size_t)a->K + (size_t)k] = mine ? w[k] : 0.0f;
    }
  }
  return GIN_SUCCESS;
}

/* The receiving half of dispatch, channel c: warp w serves sources w,
 * w + warps, ... in turn, copying what has come of each and returning
 * the credits. */
GIN_DEVICE_FN int epn_dispatch_recv(const gin_epn_args_t *a, int c) {
  const gin_epn_geom_t *g = &a->g;
  const gin_devcomm_t *dc = &a->dc;
  GIN_BLOCK_ARRAY(int, got, GIN_EPN_MAX_RANKS);
  GIN_BLOCK_ARRAY(int, uncred, GIN_EPN_MAX_RANKS);
  int lane = epn_lane(), R = g->R, left = 0;
  for (int s = epn_warp(); s < R; s += epn_warps()) {
    int row0;
    if (lane == 0) got[s] = uncred[s] = 0;
    left += epn_recv_rows(a, s, c, &row0) > 0;
  }
  gin_coop_sync(EPN_WARP);
  epn_idle_t idle = {0, 0};
  int rc = GIN_SUCCESS, stuck = -1;
  uint64_t want = 0, seen = 0;
  while (left > 0 && rc == GIN_SUCCESS) {
    int progressed = 0;
    for (int s = epn_warp(); s < R && rc == GIN_SUCCESS; s += epn_warps()) {
      int row0, n = epn_recv_rows(a, s, c, &row0), done = got[s];
      if (done == n) continue;
      uint64_t *posp = a->scratch + gin_epn_scratch_pos(g, EPN_DTAIL, s, c);
      uint64_t pos = gin_load_relaxed_u64(posp) + (uint64_t)done;
      uint64_t tail;
      int k = 0, avail = epn_ring_room(dc, gin_epn_sig(g, EPN_DTAIL, s, c), pos,
                                       n - done, &tail);
      for (; k < avail && k < a->chunk && rc == GIN_SUCCESS; k++)
        rc = epn_take_dispatch(a,
                               a->base + gin_epn_ring(g, g->off_dring, g->dslot,
                                                      s, c, pos + (uint64_t)k),
                               row0 + done + k, s);
      if (rc) break;
      rc = epn_ring_advance(a, s, gin_epn_sig(g, EPN_DCRED, g->me, c), k,
                            k == avail, n, got, uncred, posp, pos, &left);
      if (k > 0) {
        progressed = 1;
      } else if (done != n) {
        stuck = s;
        want = pos + 1;
        seen = tail;
      }
    }
    if (rc == GIN_SUCCESS)
      rc = epn_idle(dc, &idle, progressed, stuck, c, want, seen);
  }
  return rc;
}

/* Dispatch: blocks [0, C) send channel b, [C, 2C) receive channel b - C.
 * The receiving blocks first check that the rows fit the outputs (each
 * finds the same); block C also marks the rows past the count (worst). */
GIN_KERNEL(k_epn_dispatch, gin_epn_args_t) {
  int C = args.h.channels, b = gin_block_idx();
  if (b < C) {
    epn_send(&args, b, 0);
    return;
  }
  const gin_epn_geom_t *g = &args.g;
  int n = args.h.rank_prefix[g->R - 1];
  if (n > args.cap) {
    if (gin_thread_idx() == 0)
      gin_record_error(&args.dc, GIN_ERR_INVALID, GIN_DEVERR_EP_ROUTING, -1, n,
                       (uint64_t)args.cap, 0, 0, EPN_WHY_ROOM);
    return;
  }
  if (b == C && args.worst && args.recv_idx)
    for (size_t i = (size_t)n * (size_t)args.K + (size_t)gin_thread_idx();
         i < (size_t)args.cap * (size_t)args.K; i += (size_t)gin_block_dim())
      args.recv_idx[i] = -1;
  epn_dispatch_recv(&args, b - C);
}

/* The receiving half of combine, channel c: the block takes the channel's
 * tokens in order; for each, thread 0 waits until the row of every rank
 * it went to has come (its place in that ring: the ring's position at the
 * call's start plus send_head), then the threads sum them, and thread 0
 * returns the credits of every ring a chunk behind. */
GIN_DEVICE_FN int epn_combine_recv(const gin_epn_args_t *a, int c) {
  const gin_epn_geom_t *g = &a->g;
  const gin_devcomm_t *dc = &a->dc;
  gin_team_t world = gin_team_world(dc);
  const gin_epn_handle_t *h = &a->h;
  GIN_BLOCK_ARRAY(uint64_t, start, GIN_EPN_MAX_RANKS);
  GIN_BLOCK_ARRAY(int, freed, GIN_EPN_MAX_RANKS); /* credited this call */
  GIN_BLOCK_ARRAY(int, used, GIN_EPN_MAX_RANKS);  /* read this call */
  GIN_BLOCK_ARRAY(const char *, rows, GIN_EPN_MAX_RANKS);
  int R = g->R, H = g->H, K = a->K, t0, t1, rc = GIN_SUCCESS;
  gin_epn_channel(h->num_tokens, h->channels, c, &t0, &t1);
  for (int r = gin_thread_idx(); r < R; r += gin_block_dim()) {
    start[r] = gin_load_relaxed_u64(a->scratch +
                                    gin_epn_scratch_pos(g, EPN_CTAIL, r, c));
    freed[r] = used[r] = 0;
  }
  gin_coop_sync(GIN_COOP_BLOCK);
  for (int t = t0; t < t1; t++) {
    const int32_t *head = h->send_head + (size_t)t * (size_t)R;
    if (gin_thread_idx() == 0) {
      epn_idle_t idle = {0, 0};
      for (int r = 0; r < R && rc == GIN_SUCCESS; r++) {
        rows[r] = NULL;
        if (head[r] < 0) continue;
        uint64_t pos = start[r] + (uint64_t)head[r];
        int sig = gin_epn_sig(g, EPN_CTAIL, r, c);
        uint64_t tail;
        /* Polls look (an ordered read invalidates the SM's L1 for every
         * block there); the one that sees the row is followed by an
         * ordered read, as gin's own waits do (the count only grows). */
        while ((tail = gin_signal_peek(dc, sig)) <= pos && rc == GIN_SUCCESS)
          rc = epn_idle_one(dc, &idle, r, c, pos + 1, tail);
        if (rc == GIN_SUCCESS) (void)gin_signal_read(dc, sig);
        idle.t0 = 0;
        idle.iter = 0;
        rows[r] = a->base + gin_epn_ring(g, g->off_cring, g->cslot, r, c, pos);
        used[r] = head[r] + 1;
      }
    }
    /* Hands thread 0's acquire on to the others. */
    if (gin_coop_rc(GIN_COOP_BLOCK, rc)) return rc;
    uint16_t *out = a->out + (size_t)t * (size_t)H;
    for (int i = gin_thread_idx(); i < H; i += gin_block_dim()) {
      float acc = 0.0f;
      if (a->bias0) acc += gin_ep_bf16_to_float(a->bias0[(size_t)t * H + i]);
      if (a->bias1) acc += gin_ep_bf16_to_float(a->bias1[(size_t)t * H + i]);
      for (int r = 0; r < R; r++)
        if (rows[r])
          acc += gin_ep_bf16_to_float(((const uint16_t *)rows[r])[i]);
      out[i] = gin_ep_float_to_bf16(acc);
    }
    if (a->out_w)
      for (int k = gin_thread_idx(); k < K; k += gin_block_dim()) {
        float acc = 0.0f;
        for (int r = 0; r < R; r++)
          if (rows[r]) acc += ((const float *)(rows[r] + (size_t)H * 2))[k];
        a->out_w[(size_t)t * (size_t)K + (size_t)k] = acc;
      }
    /* Every thread's reads of the rows before their slots are freed. */
    gin_coop_sync(GIN_COOP_BLOCK);
    if (gin_thread_idx() == 0)
      for (int r = 0; r < R && rc == GIN_SUCCESS; r++) {
        int pend = used[r] - freed[r];
        int last = epn_send_rows(a, r, c);
        if (pend > 0 && (pend >= a->chunk || used[r] == last)) {
          rc = gin_signal(
              dc, r % dc->nctx, world, r,
              gin_remote_signal_add(gin_epn_sig(g, EPN_CCRED, g->me, c),
                                    (uint64_t)pend),
              GIN_COOP_THREAD);
          freed[r] = used[r];
        }
      }
    if (gin_coop_rc(GIN_COOP_BLOCK, rc)) return rc;
  }
  for (int r = gin_thread_idx(); r < R; r += gin_block_dim())
    gin_store_relaxed_u64(a->scratch + gin_epn_scratch_pos(g, EPN_CTAIL, r, c),
                          start[r] + (uint64_t)epn_send_rows(a, r, c));
  return GIN_SUCCESS;
}

GIN_KERNEL(k_epn_combine, gin_epn_args_t) {
  int C = args.h.channels, b = gin_block_idx();
  if (b < C)
    epn_send(&args, b, 1);
  else
    epn_combine_recv(&args, b - C);
}

/* Every rank's barrier, one block: before a buffer's window goes, the
 * signals no wait consumes (a call's last credits, the notes' acks) have
 * landed (gin_barrier: every put a member issued to this rank before its
 * arrival has). */
GIN_KERNEL(k_epn_barrier, gin_epn_args_t) {
  gin_barrier(&args.dc, gin_team_world(&args.dc), 0, GIN_COOP_BLOCK);
}

/* ------------------------------------------------------------ launch */

#define EPN_STREAM(s) ((gin_stream_t)(s))

#ifdef __cplusplus
extern "C" {
#endif

gin_result_t gin_epn_kernels_load(int *blocks_per_sm, const char **why) {
  int regs = 0, blocks = 0, r2 = 0, b2 = 0;
  *why = "";
  gin_result_t res =
      gin_kernel_occupancy(k_epn_dispatch, EPN_THREADS, &regs, &blocks, why);
  if (res == GIN_SUCCESS)
    res = gin_kernel_occupancy(k_epn_combine, EPN_THREADS, &r2, &b2, why);
  int most = b2 < blocks ? b2 : blocks, r3 = 0, b3 = 0; /* loaded only */
  if (res == GIN_SUCCESS)
    res = gin_kernel_occupancy(k_epn_layout, EPN_THREADS, &r3, &b3, why);
  if (res == GIN_SUCCESS)
    res = gin_kernel_occupancy(k_epn_notify, EPN_THREADS, &r3, &b3, why);
  if (res == GIN_SUCCESS)
    res = gin_kernel_occupancy(k_epn_barrier, EPN_THREADS, &r3, &b3, why);
  *blocks_per_sm = regs == 0 ? 0 : most; /* host target: threads */
  return res;
}

gin_result_t gin_epn_launch_layout(const gin_epn_args_t *a, void *stream) {
  return gin_launch(k_epn_layout, 1, EPN_THREADS, EPN_STREAM(stream), a);
}
gin_result_t gin_epn_launch_notify(const gin_epn_args_t *a, void *stream) {
  return gin_launch(k_epn_notify, 1, EPN_THREADS, EPN_STREAM(stream), a);
}
gin_result_t gin_epn_launch_dispatch(const gin_epn_args_t *a, void *stream) {
  return gin_launch(k_epn_dispatch, 2 * a->h.channels, EPN_THREADS,
                    EPN_STREAM(stream), a);
}
gin_result_t gin_epn_barrier_sync(const gin_epn_args_t *a) {
  gin_result_t res = gin_launch(k_epn_barrier, 1, EPN_THREADS, 0, a);
  return res == GIN_SUCCESS ? gin_stream_synchronize(0) : res;
}
gin_result_t gin_epn_launch_combine(const gin_epn_args_t *a, void *stream) {
  return gin_launch(k_epn_combine, 2 * a->h.channels, EPN_THREADS,
                    EPN_STREAM(stream), a);
}

#ifdef __cplusplus
}
#endif
