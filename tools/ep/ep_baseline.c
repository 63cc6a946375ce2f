/*
 * The host-initiated baseline of gin EP (ep_baseline.h), written once for
 * both targets like the library's kernels: built as C for the host target
 * (a block is a CPU thread, "device" memory is host memory, copies are
 * memcpy) and as CUDA through gin_device_program's wrapper.
 *
 * It is the exchange a competent user writes without GPU-initiated
 * communication, so nothing is handicapped: one stream of its own; one
 * copy per peer and direction (never one per expert); no copy to itself
 * (its own tokens and outputs are read in place); the payload packed by a
 * kernel that runs while the host exchanges the counts (the layout kernel
 * before it computes them); kernels parallel over experts, entries,
 * (expert, source) lists and tokens. Its host synchronisation (count
 * exchange, "copies landed") goes through a board in shared host memory,
 * flags polled by the host, the cheapest there is on one host, as
 * gin-perf's baseline does. GIN_EP_BASELINE_SYNC=bootstrap uses
 * gin_comm_allgather over the bootstrap network instead (slower).
 *
 * Per call: dispatch = layout kernel, counts to the host, pack kernel,
 * exchange, copies, wait, exchange ("landed"), receive kernel, wait;
 * combine = pack kernel (more than one local expert), copies, wait,
 * exchange, reduce kernel, wait.
 *
 * Memory of rank r:
 *   shared (peers map it): dispatch arrivals [R][cap] messages (source s
 *     writes at s * cap, cap = max_tokens * min(K, L): no token goes to a
 *     rank more than min(K, L) times), then two combine sets of
 *     [max_tokens * K] bf16 rows (row p is the output for the message at
 *     staging index p; sets alternate so a fast peer's next combine never
 *     lands on rows still being reduced).
 *   staging [max_tokens * K] messages: this rank's messages by global
 *     expert (so by destination rank, then local expert), each expert's
 *     list in (t, k) order; a message is gin EP's (16-byte header t, k,
 *     rank; bf16 row or fp8 bytes + scales; padded to 16).
 *   cstage: outputs going back, by source rank then local expert.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ep_baseline.h"
#include "gin/ep_format.h"
#include "perf/perf_target.h"

#define BL_THREADS 256
#define BL_HEADER 16 /* bytes of a message's header, as gin EP's */
#define BL_ALIGN 256

/* ------------------------------------------------ target: host side */

/* Host memory another process on this host maps (memfd, opened through
 * /proc/<pid>/fd): blob holds the pid and fd. */
#if GIN_ARCH_CUDA
typedef cudaStream_t bl_stream_t;
static int bl_cuda(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 0;
  fprintf(stderr, "ep_baseline: %s: %s\n", what, cudaGetErrorString(e));
  return -1;
}
static void *bl_dev_alloc(size_t n) {
  void *p = NULL;
  if (bl_cuda(cudaMalloc(&p, n), "cudaMalloc")) return NULL;
  if (bl_cuda(cudaMemset(p, 0, n), "cudaMemset")) {
    cudaFree(p);
    return NULL;
  }
  return p;
}
static void bl_dev_free(void *p) {
  if (p) cudaFree(p);
}
static void *bl_pinned_alloc(size_t n) {
  void *p = NULL;
  if (bl_cuda(cudaMallocHost(&p, n), "cudaMallocHost")) return NULL;
  memset(p, 0, n);
  return p;
}
static void bl_pinned_free(void *p) {
  if (p) cudaFreeHost(p);
}
static int bl_copy(void *dst, const void *src, size_t n, bl_stream_t s) {
  return bl_cuda(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s),
                 "cudaMemcpyAsync");
}
static int bl_zero(void *dst, size_t n, bl_stream_t s) {
  return bl_cuda(cudaMemsetAsync(dst, 0, n, s), "cudaMemsetAsync");
}
static int bl_wait(bl_stream_t s) {
  return bl_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}
/* A blocking stream: ordered after the caller's work on the legacy stream
 * (the inputs), as the calls take no stream. */
static int bl_stream_make(bl_stream_t *s) {
  return bl_cuda(cudaStreamCreateWithFlags(s, cudaStreamDefault),
                 "cudaStreamCreateWithFlags");
}
static void bl_stream_free(bl_stream_t s) {
  if (s) cudaStreamDestroy(s);
}
typedef cudaEvent_t bl_event_t;
static int bl_event_make(bl_event_t *e) {
  return bl_cuda(cudaEventCreateWithFlags(e, cudaEventDisableTiming),
                 "cudaEventCreateWithFlags");
}
static void bl_event_free(bl_event_t e) {
  if (e) cudaEventDestroy(e);
}
static int bl_event_record(bl_event_t e, bl_stream_t s) {
  return bl_cuda(cudaEventRecord(e, s), "cudaEventRecord");
}
static int bl_event_wait(bl_event_t e) {
  return bl_cuda(cudaEventSynchronize(e), "cudaEventSynchronize");
}
static int bl_max_grid(void) {
  int dev = 0, sms = 132;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  return 2 * sms;
}
#else
typedef void *bl_stream_t;
static void *bl_dev_alloc(size_t n) { return calloc(1, n); }
static void bl_dev_free(void *p) { free(p); }
static void *bl_pinned_alloc(size_t n) { return calloc(1, n); }
static void bl_pinned_free(void *p) { free(p); }
static int bl_copy(void *dst, const void *src, size_t n, bl_stream_t s) {
  (void)s;
  memcpy(dst, src, n);
  return 0;
}
static int bl_zero(void *dst, size_t n, bl_stream_t s) {
  (void)s;
  memset(dst, 0, n);
  return 0;
}
static int bl_wait(bl_stream_t s) {
  (void)s; /* launches and copies are synchronous on the host target */
  return 0;
}
static int bl_stream_make(bl_stream_t *s) {
  *s = NULL;
  return 0;
}
static void bl_stream_free(bl_stream_t s) { (void)s; }
typedef void *bl_event_t;
static int bl_event_make(bl_event_t *e) {
  *e = NULL;
  return 0;
}
static void bl_event_free(bl_event_t e) { (void)e; }
static int bl_event_record(bl_event_t e, bl_stream_t s) {
  (void)e;
  (void)s;
  return 0;
}
static int bl_event_wait(bl_event_t e) {
  (void)e;
  return 0;
}
static int bl_max_grid(void) { return 8; /* blocks are CPU threads */ }
#endif

/* ------------------------------------------------------ kernel args */

typedef struct bl_args {
  int R, L, E, M, K, H, fp8, me, T, cap;
  size_t msg; /* bytes per message */
  const uint16_t *x;
  const int32_t *topk;
  char *staging;         /* [M * K] messages, by expert, lists in (t, k) */
  int32_t *cnt;          /* [E] messages per expert, then err [4] */
  int32_t *err;          /* first routing error: kind, t, k, expert */
  int32_t *eoff;         /* [E] first staging index of each expert */
  int32_t *pos;          /* [M][K] staging index of (t, k) */
  int32_t *ent;          /* [M][K] its expert, -1 if not routed */
  const char *dregion;   /* this rank's dispatch arrivals [R][cap] */
  const int32_t *inoff;  /* [L][R] first message of each list at its source */
  const int32_t *cstoff; /* [L][R] first row of each list in cstage */
  gin_ep_recv_t r;       /* outputs; count and layout filled by the host */
  const uint16_t *y;     /* combine: expert outputs */
  const float *w;        /* [T][K] */
  uint16_t *out;         /* [T][H] */
  const uint16_t *crecv; /* combine arrivals of this call's set */
  uint16_t *cstage;      /* outputs going back, by source */
} bl_args_t;

enum { BL_ERR_RANGE = 1, BL_ERR_TWICE = 2 };

/* ---------------------------------------------- target: device side */

#if GIN_ARCH_CUDA
#define BL_LANES 32
GIN_DEVICE_FN int bl_lane(void) { return (int)(threadIdx.x & 31); }
GIN_DEVICE_FN int bl_warp(void) { return (int)(threadIdx.x >> 5); }
GIN_DEVICE_FN int bl_nwarps(void) { return (int)(blockDim.x >> 5); }
/* Threads of the block with pred set (every thread calls; uniform). */
GIN_DEVICE_FN int bl_block_count(int pred) { return __syncthreads_count(pred); }
/* Exclusive prefix sum of flag over the block in thread order; *total is
 * the sum (every thread calls; uniform). */
GIN_DEVICE_FN int bl_block_scan(int flag, int *total) {
  __shared__ int warp_sum[32];
  unsigned bits = __ballot_sync(0xffffffffu, flag);
  int lane = bl_lane(), warp = bl_warp(), before = 0, all = 0;
  if (lane == 0) warp_sum[warp] = __popc(bits);
  __syncthreads();
  for (int w = 0; w < bl_nwarps(); w++) {
    int n = warp_sum[w];
    before += w < warp ? n : 0;
    all += n;
  }
  __syncthreads();
  *total = all;
  return before + __popc(bits & ((1u << lane) - 1u));
}
#else
#define BL_LANES 1
GIN_DEVICE_FN int bl_lane(void) { return 0; }
GIN_DEVICE_FN int bl_warp(void) { return 0; }
GIN_DEVICE_FN int bl_nwarps(void) { return 1; }
GIN_DEVICE_FN int bl_block_count(int pred) { return pred != 0; }
GIN_DEVICE_FN int bl_block_scan(int flag, int *total) {
  *total = flag != 0;
  return 0;
}
#endif

GIN_DEVICE_FN void bl_fail(const bl_args_t *a, int kind, int t, int k, int e) {
  if (gin_cas_u32((uint32_t *)a->err, 0u, (uint32_t)kind) == 0u) {
    a->err[1] = t;
    a->err[2] = k;
    a->err[3] = e;
  }
}

/* Writes the message of entry i = t * K + k at staging index p (one warp):
 * header, then the bf16 row or its fp8 cast, with gin EP's ep_pack rules
 * (same functions, so the bytes match bit for bit). */
GIN_DEVICE_FN void bl_pack(const bl_args_t *a, int i, int p) {
  int t = i / a->K, k = i % a->K, lane = bl_lane();
  char *m = a->staging + (size_t)p * a->msg;
  const uint16_t *row = a->x + (size_t)t * (size_t)a->H;
  if (lane == 0) {
    int32_t h[4] = {t, k, a->me, 0};
    memcpy(m, h, sizeof h);
  }
  gin_ep_pack_payload(row, a->H, a->fp8, 0, m + BL_HEADER, GIN_COOP_WARP, 0, 1);
}

/* Layout: checks the routing (tokens spread over the grid), then block b
 * takes experts b, b + grid, ...: counts the entries of smaller experts
 * (where its list starts in staging) and ranks its own entries in (t, k)
 * order with a block scan. */
GIN_KERNEL(k_bl_layout, bl_args_t) {
  const int K = args.K, E = args.E, n = args.T * args.K;
  const int tid = gin_thread_idx(), bd = gin_block_dim();
  for (int t = gin_block_idx() * bd + tid; t < args.T;
       t += gin_grid_dim() * bd) {
    const int32_t *idx = args.topk + (size_t)t * (size_t)K;
    for (int k = 0; k < K; k++) {
      int32_t e = idx[k];
      if (e < -1 || e >= E) bl_fail(&args, BL_ERR_RANGE, t, k, e);
      for (int j = 0; j < k && e >= 0; j++)
        if (idx[j] == e) bl_fail(&args, BL_ERR_TWICE, t, k, e);
      if (e < 0 || e >= E) {
        args.pos[(size_t)t * K + k] = -1;
        args.ent[(size_t)t * K + k] = -1;
      }
    }
  }
  for (int e = gin_block_idx(); e < E; e += gin_grid_dim()) {
    int below = 0, cnt = 0;
    for (int base = 0; base < n; base += bd) {
      int i = base + tid, v = i < n ? args.topk[i] : -1;
      below += bl_block_count(v >= 0 && v < e);
    }
    for (int base = 0; base < n; base += bd) {
      int i = base + tid, total = 0;
      int hit = i < n && args.topk[i] == e;
      int j = cnt + bl_block_scan(hit, &total);
      if (hit) {
        args.pos[i] = below + j;
        args.ent[i] = e;
      }
      cnt += total;
    }
    if (tid == 0) {
      args.cnt[e] = cnt;
      args.eoff[e] = below;
    }
  }
}

/* Pack: one warp per routed entry, spread over the grid, writes its
 * message at its staging index. Runs while the host exchanges counts. */
GIN_KERNEL(k_bl_pack, bl_args_t) {
  const int n = args.T * args.K, step = gin_grid_dim() * bl_nwarps();
  for (int i = gin_block_idx() * bl_nwarps() + bl_warp(); i < n; i += step)
    if (args.ent[i] >= 0) bl_pack(&args, i, args.pos[i]);
}

/* Receive: block b takes (local expert, source) lists b, b + grid, ...
 * and unpacks each message into its output slot (one warp per message);
 * this rank's own messages are read from its staging in place. */
GIN_KERNEL(k_bl_recv, bl_args_t) {
  const int R = args.R, slots = args.R * args.M;
  const int groups = args.H / GIN_EP_FP8_GROUP, lane = bl_lane();
  for (int p = gin_block_idx(); p < args.L * R; p += gin_grid_dim()) {
    int le = p / R, s = p % R;
    int off = args.r.layout[(size_t)p * 2],
        cnt = args.r.layout[(size_t)p * 2 + 1];
    const char *src =
        (s == args.me ? (const char *)args.staging : args.dregion) +
        (size_t)args.inoff[p] * args.msg;
    for (int j = bl_warp(); j < cnt; j += bl_nwarps()) {
      const char *m = src + (size_t)j * args.msg, *q = m + BL_HEADER;
      size_t slot = (size_t)le * (size_t)slots + (size_t)(off + j);
      if (args.fp8) {
        gin_copy_coop((char *)args.r.x + slot * (size_t)args.H, q,
                      (size_t)args.H, lane, BL_LANES);
        gin_copy_coop((char *)(args.r.scales + slot * (size_t)groups),
                      q + args.H, (size_t)groups * 4, lane, BL_LANES);
      } else {
        gin_copy_coop((char *)args.r.x + slot * (size_t)args.H * 2, q,
                      (size_t)args.H * 2, lane, BL_LANES);
      }
      if (lane == 0) {
        int32_t h[4];
        memcpy(h, m, sizeof h);
        args.r.src_token[slot] = h[0];
        args.r.src_rank[slot] = s;
      }
    }
  }
}

/* Combine pack (more than one local expert): each (local expert, source)
 * list of outputs, contiguous in y, goes to its place in cstage, so each
 * source's rows leave in one copy. */
GIN_KERNEL(k_bl_cpack, bl_args_t) {
  const int R = args.R, slots = args.R * args.M;
  for (int p = gin_block_idx(); p < args.L * R; p += gin_grid_dim()) {
    int le = p / R, s = p % R;
    int off = args.r.layout[(size_t)p * 2],
        cnt = args.r.layout[(size_t)p * 2 + 1];
    if (s == args.me || cnt == 0) continue;
    gin_copy_coop(
        (char *)(args.cstage + (size_t)args.cstoff[p] * (size_t)args.H),
        (const char *)(args.y +
                       ((size_t)le * (size_t)slots + (size_t)off) * args.H),
        (size_t)cnt * (size_t)args.H * 2, gin_thread_idx(), gin_block_dim());
  }
}

/* Reduce, one token per block: out[t][c] = bf16(sum over routed k in
 * order of w * y), fp32 from 0.0f as gin EP's k_ep_combine_recv. Rows
 * of other ranks' experts are in crecv at the message's staging index;
 * this rank's own are read from y in place. */
GIN_KERNEL(k_bl_reduce, bl_args_t) {
  const int K = args.K, H = args.H, L = args.L, R = args.R;
  const size_t slots = (size_t)args.R * (size_t)args.M;
  for (int t = gin_block_idx(); t < args.T; t += gin_grid_dim()) {
    const int32_t *ent = args.ent + (size_t)t * K,
                  *pos = args.pos + (size_t)t * K;
    const float *w = args.w + (size_t)t * K;
    for (int c = gin_thread_idx(); c < H; c += gin_block_dim()) {
      float acc = 0.0f;
      for (int k = 0; k < K; k++) {
        int e = ent[k];
        if (e < 0) continue;
        const uint16_t *row;
        if (e / L == args.me) {
          int le = e % L;
          size_t s = (size_t)le * slots +
                     (size_t)args.r.layout[((size_t)le * R + args.me) * 2] +
                     (size_t)(pos[k] - args.eoff[e]);
          row = args.y + s * (size_t)H;
        } else {
          row = args.crecv + (size_t)pos[k] * (size_t)H;
        }
        acc += w[k] * gin_ep_bf16_to_float(row[c]);
      }
      args.out[(size_t)t * H + c] = gin_ep_float_to_bf16(acc);
    }
  }
}

/* ---------------------------------------------------------- host side */

struct ep_baseline {
  gin_comm_t comm;
  int R, L, E, M, K, H, fp8, me, cap, max_grid, timeout_ms, bootstrap_sync;
  size_t msg;
  bl_stream_t stream;
  bl_event_t counted; /* the counts reached the host */
  int stream_made, event_made;
  /* Shared with the other ranks: dispatch arrivals, two combine sets. */
  char *shared;
  size_t shared_bytes, off_crecv[2];
  unsigned char shared_blob[64];
  char **peer; /* [R] each rank's shared memory as mapped here */
  /* Shared host memory for the count exchange and "copies landed". */
  char *board;
  size_t board_bytes, slot_bytes;
  unsigned char board_blob[64];
  char **peer_board; /* [R] */
  uint64_t op;       /* exchanges done */
  int broken;        /* an exchange timed out: the ranks are out of step */
  /* Local device memory (one allocation). */
  char *dev;
  char *staging;
  uint16_t *cstage;
  int32_t *cnt, *eoff, *pos, *ent, *meta;
  gin_ep_recv_t r;
  /* Pinned host memory. */
  int32_t *h_cnt;  /* [E + 4] counts, error words */
  int32_t *h_meta; /* count [L], layout [L][R][2], inoff, cstoff [L][R] */
  size_t meta_ints;
  /* Host memory. */
  int32_t *all;    /* [R][E + 1] every rank's counts, status */
  int32_t *vec;    /* [E + 1] */
  int32_t *status; /* [R] */
  int32_t *n_to, *off_to, *n_from, *off_at, *cbase, *run; /* [R] each */
  int last_T;                                             /* -1: none */
  int cset;
};

static size_t bl_align(size_t v) {
  return (v + BL_ALIGN - 1) / BL_ALIGN * BL_ALIGN;
}
/* Reserves n bytes at *off; returns where. */
static size_t bl_carve(size_t *off, size_t n) {
  size_t at = *off;
  *off = bl_align(at + n);
  return at;
}

static double bl_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Every rank's n ints (mine) into all [R][n]: through the board (bounded
 * wait) or gin_comm_allgather. A board slot is a header (sequence number,
 * then what is exchanged: tag and n, checked, so ranks making different
 * calls fail with a message instead of reading each other's values) and
 * the values. Slots alternate: a rank writes slot op % 2 again only after
 * every rank posted op + 1, so after all of them read op - 1's. */
static int bl_exchange(ep_baseline_t *b, int tag, const int32_t *mine, int n,
                       int32_t *all) {
  size_t bytes = (size_t)n * sizeof(int32_t);
  if (b->broken) {
    fprintf(stderr,
            "ep_baseline: rank %d: an earlier exchange failed; the ranks "
            "are out of step\n",
            b->me);
    return -1;
  }
  if (b->bootstrap_sync) {
    gin_result_t rc = gin_comm_allgather(b->comm, mine, all, bytes);
    if (rc == GIN_SUCCESS) return 0;
    fprintf(stderr, "ep_baseline: rank %d: exchange: %s: %s\n", b->me,
            gin_strerror(rc), gin_last_error());
    b->broken = 1;
    return -1;
  }
  uint64_t op = ++b->op;
  size_t slot = (size_t)(op & 1) * b->slot_bytes;
  char *my = b->board + slot;
  int32_t what[2] = {tag, n};
  memcpy(my + 8, what, sizeof what);
  memcpy(my + 64, mine, bytes);
  __atomic_store_n((uint64_t *)my, op, __ATOMIC_RELEASE);
  double t0 = bl_now_ms();
  for (int r = 0; r < b->R; r++) {
    const char *p = b->peer_board[r] + slot;
    for (uint32_t i = 0;
         __atomic_load_n((const uint64_t *)p, __ATOMIC_ACQUIRE) < op; i++) {
      if (i >= 64) sched_yield(); /* ranks may outnumber cores */
      if ((i & 1023) == 1023 && bl_now_ms() - t0 > b->timeout_ms) {
        fprintf(stderr,
                "ep_baseline: rank %d: rank %d did not reach exchange %llu "
                "within %d ms (GIN_TIMEOUT_MS)\n",
                b->me, r, (unsigned long long)op, b->timeout_ms);
        b->broken = 1;
        return -1;
      }
    }
    int32_t theirs[2];
    memcpy(theirs, p + 8, sizeof theirs);
    if (theirs[0] != tag || theirs[1] != n) {
      fprintf(stderr,
              "ep_baseline: rank %d: exchange %llu: rank %d is at '%c' (%d "
              "values), this rank at '%c' (%d): the ranks are not making the "
              "same calls\n",
              b->me, (unsigned long long)op, r, (char)theirs[0], theirs[1],
              (char)tag, n);
      b->broken = 1;
      return -1;
    }
    memcpy(all + (size_t)r * (size_t)n, p + 64, bytes);
  }
  return 0;
}

/* Everyone's status (0 ok); returns the first failing rank, or -1. */
static int bl_agree(ep_baseline_t *b, int tag, int32_t mine) {
  if (bl_exchange(b, tag, &mine, 1, b->status)) return b->me;
  for (int r = 0; r < b->R; r++)
    if (b->status[r]) return r;
  return -1;
}

static void bl_args(const ep_baseline_t *b, int T, bl_args_t *a) {
  memset(a, 0, sizeof *a);
  a->R = b->R;
  a->L = b->L;
  a->E = b->E;
  a->M = b->M;
  a->K = b->K;
  a->H = b->H;
  a->fp8 = b->fp8;
  a->me = b->me;
  a->T = T;
  a->cap = b->cap;
  a->msg = b->msg;
  a->staging = b->staging;
  a->cnt = b->cnt;
  a->err = b->cnt + b->E;
  a->eoff = b->eoff;
  a->pos = b->pos;
  a->ent = b->ent;
  a->dregion = b->shared;
  a->inoff = b->meta + b->L + 2 * b->L * b->R;
  a->cstoff = b->meta + b->L + 3 * b->L * b->R;
  a->r = b->r;
  a->cstage = b->cstage;
}

static int bl_grid(const ep_baseline_t *b, int want) {
  return want < 1 ? 1 : want < b->max_grid ? want : b->max_grid;
}

static int bl_launch_ok(gin_result_t rc, const char *kernel) {
  if (rc == GIN_SUCCESS) return 0;
  fprintf(stderr, "ep_baseline: launching %s: %s\n", kernel, gin_strerror(rc));
  return -1;
}

/* The configuration rules of gin_ep_create; 0 or -1 with a message. */
static int bl_config_check(const gin_ep_config_t *c, int nranks) {
  const char *why = NULL;
  if (!c)
    why = "configuration is NULL";
  else if (c->max_tokens < 1 || c->max_tokens > (1 << 20))
    why = "max_tokens outside [1, 2^20]";
  else if (c->hidden < 1 || c->hidden > (1 << 20))
    why = "hidden outside [1, 2^20]";
  else if (c->topk < 1 || c->topk > 32)
    why = "topk outside [1, 32]";
  else if (c->fp8 != 0 && c->fp8 != 1)
    why = "fp8 is neither 0 nor 1";
  else if (c->fp8 && c->hidden % GIN_EP_FP8_GROUP != 0)
    why = "hidden is not a multiple of 128, which fp8 needs";
  else if (c->num_experts < nranks || c->num_experts % nranks != 0)
    why = "num_experts is not a positive multiple of the number of ranks";
  if (!why) return 0;
  if (c)
    fprintf(stderr,
            "ep_baseline_create: %s (max_tokens %d, hidden %d, topk %d, "
            "num_experts %d, fp8 %d, %d ranks)\n",
            why, c->max_tokens, c->hidden, c->topk, c->num_experts, c->fp8,
            nranks);
  else
    fprintf(stderr, "ep_baseline_create: %s\n", why);
  return -1;
}

/* Local allocations of a baseline whose geometry is set; 0 or -1. */
static int bl_alloc(ep_baseline_t *b) {
  int R = b->R, L = b->L, E = b->E;
  size_t MK = (size_t)b->M * (size_t)b->K, slots = (size_t)L * R * b->M;
  size_t row = (size_t)b->H * 2;
  b->off_crecv[0] = bl_align((size_t)R * b->cap * b->msg);
  b->off_crecv[1] = b->off_crecv[0] + bl_align(MK * row);
  b->shared_bytes = b->off_crecv[1] + bl_align(MK * row);
  b->shared = (char *)perf_shared_alloc(b->shared_bytes, b->shared_blob);
  b->slot_bytes = 64 + (size_t)(E + 1) * 4;
  b->slot_bytes = (b->slot_bytes + 63) / 64 * 64;
  b->board_bytes = 2 * b->slot_bytes;
  b->board = (char *)perf_memfd_alloc(b->board_bytes, b->board_blob);

  size_t off = 0;
  size_t o_staging = bl_carve(&off, MK * b->msg);
  size_t o_cstage = bl_carve(&off, L > 1 ? (size_t)R * b->cap * row : 0);
  size_t o_x = bl_carve(&off, slots * (size_t)b->H * (b->fp8 ? 1 : 2));
  size_t o_scales = bl_carve(
      &off, b->fp8 ? slots * (size_t)(b->H / GIN_EP_FP8_GROUP) * 4 : 0);
  size_t o_src_rank = bl_carve(&off, slots * 4);
  size_t o_src_token = bl_carve(&off, slots * 4);
  b->meta_ints = (size_t)L + 4 * (size_t)L * R;
  size_t o_meta = bl_carve(&off, b->meta_ints * 4);
  size_t o_cnt = bl_carve(&off, ((size_t)E + 4) * 4);
  size_t o_eoff = bl_carve(&off, (size_t)E * 4);
  size_t o_pos = bl_carve(&off, MK * 4);
  size_t o_ent = bl_carve(&off, MK * 4);
  b->dev = (char *)bl_dev_alloc(off);
  b->h_cnt = (int32_t *)bl_pinned_alloc(((size_t)E + 4) * 4);
  b->h_meta = (int32_t *)bl_pinned_alloc(b->meta_ints * 4);
  b->all = (int32_t *)calloc((size_t)R * (E + 1), 4);
  b->vec = (int32_t *)calloc((size_t)E + 1, 4);
  b->status = (int32_t *)calloc((size_t)R, 4);
  b->n_to = (int32_t *)calloc((size_t)R * 6, 4);
  b->peer = (char **)calloc((size_t)R, sizeof(char *));
  b->peer_board = (char **)calloc((size_t)R, sizeof(char *));
  int stream_rc = bl_stream_make(&b->stream);
  b->stream_made = stream_rc == 0;
  if (!stream_rc) {
    stream_rc = bl_event_make(&b->counted);
    b->event_made = stream_rc == 0;
  }
  if (!b->shared || !b->board || !b->dev || !b->h_cnt || !b->h_meta ||
      !b->all || !b->vec || !b->status || !b->n_to || !b->peer ||
      !b->peer_board || stream_rc) {
    fprintf(stderr,
            "ep_baseline_create: rank %d: cannot allocate (%zu bytes shared, "
            "%zu local)\n",
            b->me, b->shared_bytes, off);
    return -1;
  }
  b->off_to = b->n_to + R;
  b->n_from = b->n_to + 2 * R;
  b->off_at = b->n_to + 3 * R;
  b->cbase = b->n_to + 4 * R;
  b->run = b->n_to + 5 * R;
  b->staging = b->dev + o_staging;
  b->cstage = L > 1 ? (uint16_t *)(b->dev + o_cstage) : NULL;
  b->meta = (int32_t *)(b->dev + o_meta);
  b->cnt = (int32_t *)(b->dev + o_cnt);
  b->eoff = (int32_t *)(b->dev + o_eoff);
  b->pos = (int32_t *)(b->dev + o_pos);
  b->ent = (int32_t *)(b->dev + o_ent);
  b->r.x = b->dev + o_x;
  b->r.scales = b->fp8 ? (float *)(b->dev + o_scales) : NULL;
  b->r.src_rank = (int32_t *)(b->dev + o_src_rank);
  b->r.src_token = (int32_t *)(b->dev + o_src_token);
  b->r.count = b->meta;
  b->r.layout = b->meta + L;
  b->r.local_experts = L;
  b->r.ranks = R;
  b->r.slots_per_expert = R * b->M;
  return 0;
}

/* Undoes bl_alloc and the peers' mappings. After the mappings were made
 * (mapped), waits for every rank to unmap before freeing its own. */
static void bl_release(ep_baseline_t *b, int mapped) {
  for (int r = 0; b->peer && r < b->R; r++)
    if (r != b->me) perf_shared_unmap(b->peer[r], b->shared_bytes);
  for (int r = 0; b->peer_board && r < b->R; r++)
    if (r != b->me && b->peer_board[r])
      munmap(b->peer_board[r], b->board_bytes);
  if (mapped) gin_comm_barrier(b->comm);
  if (b->event_made) bl_event_free(b->counted);
  if (b->stream_made) bl_stream_free(b->stream);
  perf_shared_free(b->shared, b->shared_bytes, b->shared_blob);
  perf_memfd_free(b->board, b->board_bytes, b->board_blob);
  bl_dev_free(b->dev);
  bl_pinned_free(b->h_cnt);
  bl_pinned_free(b->h_meta);
  free(b->all);
  free(b->vec);
  free(b->status);
  free(b->n_to);
  free(b->peer);
  free(b->peer_board);
  free(b);
}

/* What each rank tells the others at creation. */
typedef struct bl_info {
  int32_t cfg[6]; /* max_tokens, hidden, topk, num_experts, fp8, sync */
  int32_t ok;     /* 1 ready, 0 bad configuration, -1 no memory */
  char host[64];
  unsigned char shared_blob[64], board_blob[64];
} bl_info_t;

/* Every rank ready, with this rank's configuration, on this host? 0, or
 * 1 with a message. */
static int bl_info_check(const bl_info_t *info, const bl_info_t *mine, int R,
                         int me) {
  static const char *const names[6] = {"max_tokens", "hidden",
                                       "topk",       "num_experts",
                                       "fp8",        "GIN_EP_BASELINE_SYNC"};
  for (int r = 0; r < R; r++)
    if (info[r].ok != 1) {
      if (mine->ok == 1)
        fprintf(stderr, "ep_baseline_create: rank %d: rank %d %s\n", me, r,
                info[r].ok == 0 ? "has an invalid configuration"
                                : "could not allocate");
      return 1;
    }
  for (int r = 0; r < R; r++) {
    for (int i = 0; i < 6; i++)
      if (info[r].cfg[i] != mine->cfg[i]) {
        fprintf(stderr,
                "ep_baseline_create: %s is %d on rank %d but %d on rank %d "
                "(every rank must pass the same configuration)\n",
                names[i], info[r].cfg[i], r, mine->cfg[i], me);
        return 1;
      }
    if (strncmp(info[r].host, mine->host, sizeof mine->host) != 0) {
      fprintf(stderr,
              "ep_baseline_create: rank %d is on host %s, rank %d on %s: the "
              "baseline needs every rank on one host (CUDA IPC, shared "
              "memory)\n",
              r, info[r].host, me, mine->host);
      return 1;
    }
  }
  return 0;
}

int ep_baseline_create(gin_comm_t comm, const gin_ep_config_t *cfg,
                       ep_baseline_t **out) {
  int me = 0, R = 0;
  if (!out || gin_comm_rank(comm, &me) != GIN_SUCCESS ||
      gin_comm_size(comm, &R) != GIN_SUCCESS) {
    fprintf(stderr, "ep_baseline_create: %s\n",
            out ? "not a live communicator" : "out is NULL");
    return -1;
  }
  ep_baseline_t *b = (ep_baseline_t *)calloc(1, sizeof *b);
  bl_info_t mine;
  memset(&mine, 0, sizeof mine);
  const char *sync = getenv("GIN_EP_BASELINE_SYNC");
  const char *tmo = getenv("GIN_TIMEOUT_MS");
  mine.cfg[5] = sync && strcmp(sync, "bootstrap") == 0;
  if (cfg) {
    mine.cfg[0] = cfg->max_tokens;
    mine.cfg[1] = cfg->hidden;
    mine.cfg[2] = cfg->topk;
    mine.cfg[3] = cfg->num_experts;
    mine.cfg[4] = cfg->fp8;
  }
  mine.ok = bl_config_check(cfg, R) == 0 ? 1 : 0;
  if (mine.ok && !b) {
    fprintf(stderr, "ep_baseline_create: out of memory\n");
    mine.ok = -1;
  }
  if (mine.ok == 1) {
    b->comm = comm;
    b->me = me;
    b->R = R;
    b->E = cfg->num_experts;
    b->L = cfg->num_experts / R;
    b->M = cfg->max_tokens;
    b->K = cfg->topk;
    b->H = cfg->hidden;
    b->fp8 = cfg->fp8;
    b->cap = b->M * (b->K < b->L ? b->K : b->L);
    size_t payload =
        b->fp8 ? (size_t)b->H + (size_t)(b->H / 128) * 4 : (size_t)b->H * 2;
    b->msg = (BL_HEADER + payload + 15) / 16 * 16;
    b->max_grid = bl_max_grid();
    b->timeout_ms = tmo && atoi(tmo) > 0 ? atoi(tmo) : 30000;
    b->bootstrap_sync = mine.cfg[5];
    b->last_T = -1;
    if (bl_alloc(b)) mine.ok = -1;
    memcpy(mine.shared_blob, b->shared_blob, 64);
    memcpy(mine.board_blob, b->board_blob, 64);
  }
  gethostname(mine.host, sizeof mine.host - 1);

  bl_info_t *info = (bl_info_t *)calloc((size_t)R, sizeof *info);
  gin_result_t rc =
      info ? gin_comm_allgather(comm, &mine, info, sizeof mine) : GIN_ERR_NOMEM;
  int fail = rc != GIN_SUCCESS;
  if (fail)
    fprintf(stderr, "ep_baseline_create: rank %d: exchange: %s: %s\n", me,
            gin_strerror(rc), gin_last_error());
  if (!fail) fail = bl_info_check(info, &mine, R, me);
  if (fail) {
    free(info);
    if (b && b->comm)
      bl_release(b, 0);
    else
      free(b);
    return -1;
  }

  /* Map every rank's buffers; all fail if one rank could not. */
  int ok = 1;
  for (int r = 0; r < R; r++) {
    if (r == me) {
      b->peer[r] = b->shared;
      b->peer_board[r] = b->board;
      continue;
    }
    b->peer[r] = (char *)perf_shared_map(info[r].shared_blob, b->shared_bytes);
    b->peer_board[r] =
        (char *)perf_memfd_map(info[r].board_blob, b->board_bytes);
    if (!b->peer[r] || !b->peer_board[r]) {
      fprintf(stderr, "ep_baseline_create: rank %d: cannot map rank %d's %s\n",
              me, r, b->peer[r] ? "board" : "receive buffers");
      ok = 0;
      break;
    }
  }
  free(info);
  int32_t *oks = (int32_t *)calloc((size_t)R, 4);
  rc = oks ? gin_comm_allgather(comm, &ok, oks, sizeof ok) : GIN_ERR_NOMEM;
  for (int r = 0; r < R && rc == GIN_SUCCESS; r++)
    if (!oks[r]) rc = GIN_ERR_SYSTEM;
  free(oks);
  if (rc != GIN_SUCCESS) {
    if (ok)
      fprintf(stderr, "ep_baseline_create: rank %d: another rank failed\n", me);
    bl_release(b, 1);
    return -1;
  }
  *out = b;
  return 0;
}

void ep_baseline_destroy(ep_baseline_t *b) {
  if (b) bl_release(b, 1);
}

/* From every rank's counts (b->all): what this rank sends (n_to, off_to),
 * receives (n_from, off_at: where its rows go back at the source), and
 * the meta the kernels read (count, layout, inoff, cstoff). 0, or -1 if
 * a list does not fit (cannot happen with checked routing). */
static int bl_plan(ep_baseline_t *b) {
  const int R = b->R, L = b->L, E = b->E, me = b->me, W = E + 1;
  const int32_t *mine = b->all + (size_t)me * W;
  int32_t *count = b->h_meta, *layout = b->h_meta + L;
  int32_t *inoff = layout + 2 * L * R, *cstoff = inoff + L * R;
  int acc = 0, cb = 0, bad = 0;
  for (int d = 0; d < R; d++) {
    int n = 0;
    for (int le = 0; le < L; le++)
      n += mine[d * L + le];
    b->off_to[d] = acc;
    b->n_to[d] = n;
    acc += n;
    bad |= n > b->cap;
  }
  for (int s = 0; s < R; s++) {
    const int32_t *c = b->all + (size_t)s * W;
    int at = 0, n = 0;
    for (int e = 0; e < me * L; e++)
      at += c[e];
    for (int le = 0; le < L; le++)
      n += c[me * L + le];
    b->off_at[s] = at;
    b->n_from[s] = n;
    b->cbase[s] = cb;
    b->run[s] = 0;
    if (s != me) cb += n;
    bad |= n > b->cap;
  }
  for (int le = 0; le < L; le++) {
    int off = 0;
    for (int s = 0; s < R; s++) {
      int c = b->all[(size_t)s * W + me * L + le], within = b->run[s];
      layout[(le * R + s) * 2] = off;
      layout[(le * R + s) * 2 + 1] = c;
      inoff[le * R + s] =
          s == me ? b->off_to[me] + within : s * b->cap + within;
      cstoff[le * R + s] = b->cbase[s] + within;
      b->run[s] += c;
      off += c;
    }
    count[le] = off;
  }
  if (bad)
    fprintf(stderr, "ep_baseline: rank %d: a list exceeds %d messages\n", me,
            b->cap);
  return bad ? -1 : 0;
}

/* A failed call returns only when nothing it queued is still running. */
static int bl_failed(ep_baseline_t *b) {
  bl_wait(b->stream);
  return -1;
}

int ep_baseline_dispatch(ep_baseline_t *b, const uint16_t *x,
                         const int32_t *topk_idx, int num_tokens,
                         gin_ep_recv_t *recv) {
  if (!b) {
    fprintf(stderr, "ep_baseline_dispatch: b is NULL\n");
    return -1;
  }
  const int E = b->E, me = b->me, T = num_tokens;
  int32_t st = 0; /* 0 ok, 1 bad arguments, 2 bad routing, 3 failure */
  b->last_T = -1;
  if (T < 0 || T > b->M) {
    fprintf(stderr,
            "ep_baseline_dispatch: rank %d: %d tokens, the buffer holds at "
            "most %d\n",
            me, T, b->M);
    st = 1;
  } else if (T > 0 && (!x || !topk_idx)) {
    fprintf(stderr, "ep_baseline_dispatch: rank %d: %s is NULL\n", me,
            x ? "topk_idx" : "x");
    st = 1;
  }
  bl_args_t a;
  bl_args(b, st ? 0 : T, &a);
  a.x = x;
  a.topk = topk_idx;
  /* 1. Layout; 2. the counts (and routing errors) to the host, which
   * waits for them while the pack kernel runs on. */
  int n = T * b->K, per_block = BL_THREADS / BL_LANES;
  if (!st &&
      (bl_launch_ok(
           gin_launch(k_bl_layout, bl_grid(b, E), BL_THREADS, b->stream, &a),
           "the layout kernel") ||
       bl_copy(b->h_cnt, b->cnt, ((size_t)E + 4) * 4, b->stream) ||
       bl_event_record(b->counted, b->stream) ||
       (n > 0 &&
        bl_launch_ok(gin_launch(k_bl_pack,
                                bl_grid(b, (n + per_block - 1) / per_block),
                                BL_THREADS, b->stream, &a),
                     "the pack kernel")) ||
       bl_event_wait(b->counted)))
    st = 3;
  if (!st && b->h_cnt[E] != 0) {
    const int32_t *err = b->h_cnt + E;
    if (err[0] == BL_ERR_RANGE)
      fprintf(stderr,
              "ep_baseline_dispatch: rank %d: topk_idx[%d][%d] = %d is "
              "outside [-1, %d)\n",
              me, err[1], err[2], err[3], E);
    else
      fprintf(stderr,
              "ep_baseline_dispatch: rank %d: expert %d appears twice in "
              "token %d (topk_idx[%d][%d])\n",
              me, err[3], err[1], err[1], err[2]);
    bl_zero(b->cnt + E, 16, b->stream);
    st = 2;
  }
  /* 3. Counts exchanged. */
  if (st)
    memset(b->vec, 0, (size_t)E * 4);
  else
    memcpy(b->vec, b->h_cnt, (size_t)E * 4);
  b->vec[E] = st;
  if (bl_exchange(b, 'D', b->vec, E + 1, b->all)) return bl_failed(b);
  for (int r = 0; r < b->R; r++)
    if (b->all[(size_t)r * (E + 1) + E]) {
      if (r != me)
        fprintf(stderr,
                "ep_baseline_dispatch: rank %d: rank %d failed (its message "
                "says why); nothing delivered\n",
                me, r);
      return bl_failed(b);
    }
  /* 4. After the pack, one copy per destination rank into its receive
   * buffer (starting with the next rank, so the ranks do not all copy to
   * one first), the meta for the receive kernel, one wait. */
  st = bl_plan(b) ? 3 : 0;
  for (int i = 1; i < b->R && !st; i++) {
    int d = (me + i) % b->R;
    if (b->n_to[d] == 0) continue;
    if (bl_copy(b->peer[d] + (size_t)me * b->cap * b->msg,
                b->staging + (size_t)b->off_to[d] * b->msg,
                (size_t)b->n_to[d] * b->msg, b->stream))
      st = 3;
  }
  if (!st && (bl_copy(b->meta, b->h_meta, b->meta_ints * 4, b->stream) ||
              bl_wait(b->stream)))
    st = 3;
  /* 5. Every rank's copies have landed. */
  int bad = bl_agree(b, 'd', st);
  if (bad >= 0) {
    if (!st && bad != me)
      fprintf(stderr, "ep_baseline_dispatch: rank %d: rank %d failed\n", me,
              bad);
    return bl_failed(b);
  }
  /* 6. Unpack into the outputs. */
  if (bl_launch_ok(gin_launch(k_bl_recv, bl_grid(b, b->L * b->R), BL_THREADS,
                              b->stream, &a),
                   "the receive kernel") ||
      bl_wait(b->stream))
    return bl_failed(b);
  b->last_T = T;
  if (recv) *recv = b->r;
  return 0;
}

int ep_baseline_combine(ep_baseline_t *b, const uint16_t *y,
                        const int32_t *topk_idx, const float *topk_weights,
                        int num_tokens, uint16_t *out) {
  if (!b) {
    fprintf(stderr, "ep_baseline_combine: b is NULL\n");
    return -1;
  }
  const int R = b->R, me = b->me, T = num_tokens;
  const size_t row = (size_t)b->H * 2;
  int32_t st = 0;
  if (b->last_T < 0) {
    fprintf(stderr,
            "ep_baseline_combine: rank %d: no successful dispatch to "
            "combine\n",
            me);
    st = 1;
  } else if (T != b->last_T) {
    fprintf(stderr,
            "ep_baseline_combine: rank %d: %d tokens, but the dispatch had "
            "%d\n",
            me, T, b->last_T);
    st = 1;
  } else if (!y || (T > 0 && (!topk_idx || !topk_weights || !out))) {
    fprintf(stderr, "ep_baseline_combine: rank %d: %s is NULL\n", me,
            !y          ? "y"
            : !topk_idx ? "topk_idx"
            : !out      ? "out"
                        : "topk_weights");
    st = 1;
  }
  bl_args_t a;
  bl_args(b, st ? 0 : T, &a);
  a.y = y;
  a.w = topk_weights;
  a.out = out;
  a.crecv = (const uint16_t *)(b->shared + b->off_crecv[b->cset]);
  /* 1. Each source's rows leave in one copy: packed when this rank has
   * several local experts, else straight from y. */
  int others = 0;
  for (int s = 0; s < R; s++)
    others += s != me && b->n_from[s] > 0;
  if (!st && others && b->L > 1 &&
      bl_launch_ok(gin_launch(k_bl_cpack, bl_grid(b, b->L * R), BL_THREADS,
                              b->stream, &a),
                   "the combine pack kernel"))
    st = 3;
  for (int i = 1; i < R && !st; i++) {
    int s = (me + i) % R;
    if (b->n_from[s] == 0) continue;
    const uint16_t *src =
        b->L > 1 ? b->cstage + (size_t)b->cbase[s] * b->H
                 : y + (size_t)b->h_meta[1 + 2 * s] * b->H; /* layout[0][s] */
    if (bl_copy(b->peer[s] + b->off_crecv[b->cset] + (size_t)b->off_at[s] * row,
                src, (size_t)b->n_from[s] * row, b->stream))
      st = 3;
  }
  if (!st && bl_wait(b->stream)) st = 3;
  /* 2. Every rank's rows have landed. */
  int bad = bl_agree(b, 'c', st);
  if (bad >= 0) {
    if (!st && bad != me)
      fprintf(stderr, "ep_baseline_combine: rank %d: rank %d failed\n", me,
              bad);
    return bl_failed(b);
  }
  /* 3. Weighted sums. */
  b->cset ^= 1;
  if (T > 0 && (bl_launch_ok(gin_launch(k_bl_reduce, bl_grid(b, T), BL_THREADS,
                                        b->stream, &a),
                             "the reduce kernel") ||
                bl_wait(b->stream)))
    return bl_failed(b);
  return 0;
}
