/*
 * EP kernels, written once: built as C for the host target (a block is a
 * CPU thread) and as CUDA for the cuda target. Every block works on whole
 * experts (dispatch), whole (expert, source) lists (combine) or whole
 * tokens (reduce), so no block waits for another except through signals.
 */
#include "ep/ep.h"
#include "ep/ep_format.h"

#define EP_THREADS 256

/* Every thread of the block runs the same scan; results are uniform. */
#define EP_FOR_THREADS(i, n)                                                   \
  for (int i = gin_thread_idx(); i < (n); i += gin_block_dim())

/* Checks the routing table before anything is sent: every id in
 * [-1, E), no expert twice in a token. Returns 0 if fine, else records the
 * error (first block to find one) and returns nonzero in every block. */
GIN_DEVICE_FN int ep_routing_bad(const gin_ep_args_t *a) {
  const gin_ep_geom_t *g = &a->g;
  int bad = 0;
  EP_FOR_THREADS(t, a->T) {
    for (int k = 0; k < g->K && !bad; k++) {
      int32_t e = a->topk[(size_t)t * (size_t)g->K + (size_t)k];
      if (e < -1 || e >= g->E) {
        gin_dev_fail_(&a->dc, GIN_ERR_INVALID, GIN_DEVERR_EP_ROUTING, e, t,
                      (uint64_t)k, 0, (uint64_t)g->E, 0);
        bad = 1;
      }
      for (int j = 0; j < k && !bad; j++)
        if (e >= 0 && a->topk[(size_t)t * (size_t)g->K + (size_t)j] == e) {
          gin_dev_fail_(&a->dc, GIN_ERR_INVALID, GIN_DEVERR_EP_ROUTING, e, t,
                        (uint64_t)k, 0, (uint64_t)g->E, 1);
          bad = 1;
        }
    }
  }
  return gin_coop_rc(GIN_COOP_BLOCK, -bad) != 0;
}

/* Writes token t's message for top-k slot k into the send area. */
GIN_DEVICE_FN void ep_pack(const gin_ep_args_t *a, int t, int k) {
  const gin_ep_geom_t *g = &a->g;
  char *m = a->base + gin_ep_send_off(g, t, k);
  const uint16_t *row = a->x + (size_t)t * (size_t)g->H;
  if (gin_thread_idx() == 0) {
    int32_t h[4] = {t, k, g->me, 0};
    memcpy(m, h, sizeof h);
  }
  gin_ep_pack_payload(row, g->H, g->fp8, m + GIN_EP_HEADER, gin_thread_idx(),
                      gin_block_dim());
}

/* Send phase of dispatch: block b owns experts b, b + grid, ...; for each
 * it sends the routed tokens in (token, k) order to consecutive slots at
 * the expert's rank, then adds count + 1 to the (set, expert, me) signal
 * on the same context (so it lands after the tokens). */
GIN_KERNEL(k_ep_dispatch_send, gin_ep_args_t) {
  const gin_ep_geom_t *g = &args.g;
  const gin_devcomm_t *dc = &args.dc;
  if (ep_routing_bad(&args)) return;
  gin_team_t world = gin_team_world(dc);
  for (int e = gin_block_idx(); e < g->E; e += gin_grid_dim()) {
    int dst = e / g->L, le = e % g->L, ctx = dst % dc->nctx, count = 0;
    for (int t = 0; t < args.T; t++)
      for (int k = 0; k < g->K; k++) {
        if (args.topk[(size_t)t * (size_t)g->K + (size_t)k] != e) continue;
        ep_pack(&args, t, k);
        if (gin_put(dc, ctx, world, dst, args.win,
                    gin_ep_recv_off(g, args.set, le, g->me, count), args.win,
                    gin_ep_send_off(g, t, k), g->msg, gin_remote_none(),
                    gin_local_none(), GIN_COOP_BLOCK))
          return;
        count++;
      }
    if (gin_signal(dc, ctx, world, dst,
                   gin_remote_signal_add(gin_ep_dsig(g, args.set, le, g->me),
                                         (uint64_t)count + 1),
                   GIN_COOP_BLOCK))
      return;
  }
}

/* Receive phase: block b owns local experts b, b + grid, ...; waits for
 * every source's count, then packs the tokens into the outputs in source
 * order. */
GIN_KERNEL(k_ep_dispatch_recv, gin_ep_args_t) {
  const gin_ep_geom_t *g = &args.g;
  const gin_devcomm_t *dc = &args.dc;
  int slots = g->R * g->M, groups = g->H / GIN_EP_FP8_GROUP;
  for (int le = gin_block_idx(); le < g->L; le += gin_grid_dim()) {
    int off = 0;
    for (int r = 0; r < g->R; r++) {
      uint64_t delta = 0;
      if (gin_signal_wait_follow_shadow(dc, gin_ep_dsig(g, args.set, le, r), 1,
                                        NULL, &delta, GIN_COOP_BLOCK))
        return;
      int cnt = (int)delta - 1;
      for (int j = 0; j < cnt; j++) {
        const char *m = args.base + gin_ep_recv_off(g, args.set, le, r, j);
        size_t slot = (size_t)le * (size_t)slots + (size_t)(off + j);
        const char *p = m + GIN_EP_HEADER;
        if (g->fp8) {
          gin_copy_coop((char *)args.r.x + slot * (size_t)g->H, p, (size_t)g->H,
                        gin_thread_idx(), gin_block_dim());
          gin_copy_coop((char *)(args.r.scales + slot * (size_t)groups),
                        p + g->H, (size_t)groups * 4, gin_thread_idx(),
                        gin_block_dim());
        } else {
          gin_copy_coop((char *)args.r.x + slot * (size_t)g->H * 2, p,
                        (size_t)g->H * 2, gin_thread_idx(), gin_block_dim());
        }
        if (gin_thread_idx() == 0) {
          int32_t h[4];
          memcpy(h, m, sizeof h);
          args.r.src_token[slot] = h[0];
          args.src_k[slot] = h[1];
          args.r.src_rank[slot] = r;
        }
      }
      if (gin_thread_idx() == 0) {
        args.r.layout[((size_t)le * (size_t)g->R + (size_t)r) * 2] = off;
        args.r.layout[((size_t)le * (size_t)g->R + (size_t)r) * 2 + 1] = cnt;
      }
      off += cnt;
    }
    if (gin_thread_idx() == 0) args.r.count[le] = off;
  }
}

/* Send phase of combine: block b owns (local expert, source) lists b,
 * b + grid, ...; copies each expert output into the window and puts it to
 * its token's (set, t, k) slot at the source, with a signal increment. */
GIN_KERNEL(k_ep_combine_send, gin_ep_args_t) {
  const gin_ep_geom_t *g = &args.g;
  const gin_devcomm_t *dc = &args.dc;
  gin_team_t world = gin_team_world(dc);
  int slots = g->R * g->M;
  for (int p = gin_block_idx(); p < g->L * g->R; p += gin_grid_dim()) {
    int le = p / g->R, r = p % g->R, ctx = r % dc->nctx;
    int off = args.r.layout[(size_t)p * 2],
        cnt = args.r.layout[(size_t)p * 2 + 1];
    for (int j = 0; j < cnt; j++) {
      int slot = off + j;
      size_t s = (size_t)le * (size_t)slots + (size_t)slot;
      gin_copy_coop(args.base + gin_ep_csend_off(g, le, slot),
                    (const char *)(args.y + s * (size_t)g->H), (size_t)g->H * 2,
                    gin_thread_idx(), gin_block_dim());
      int t = args.r.src_token[s], k = args.src_k[s];
      if (gin_put(dc, ctx, world, r, args.win,
                  gin_ep_crecv_off(g, args.set, t, k), args.win,
                  gin_ep_csend_off(g, le, slot), (size_t)g->H * 2,
                  gin_remote_signal_inc(gin_ep_csig(g, args.set)),
                  gin_local_none(), GIN_COOP_BLOCK))
        return;
    }
  }
}

/* Combine, receive side, part 1 (one block): waits until every routed
 * (token, k) of this rank came back. */
GIN_KERNEL(k_ep_combine_wait, gin_ep_args_t) {
  const gin_ep_geom_t *g = &args.g;
  if (gin_thread_idx() != 0) return;
  int expected = 0;
  for (int i = 0; i < args.T * g->K; i++)
    expected += args.topk[i] >= 0;
  gin_signal_wait_follow_shadow(&args.dc, gin_ep_csig(g, args.set),
                                (uint64_t)expected, NULL, NULL,
                                GIN_COOP_THREAD);
}

/* Part 2: out[t] = sum over routed k of weight * expert output (fp32,
 * k in order), one token per block. */
GIN_KERNEL(k_ep_combine_reduce, gin_ep_args_t) {
  const gin_ep_geom_t *g = &args.g;
  for (int t = gin_block_idx(); t < args.T; t += gin_grid_dim()) {
    const int32_t *idx = args.topk + (size_t)t * (size_t)g->K;
    const float *w = args.weights + (size_t)t * (size_t)g->K;
    EP_FOR_THREADS(c, g->H) {
      float acc = 0.0f;
      for (int k = 0; k < g->K; k++) {
        if (idx[k] < 0) continue;
        const uint16_t *in =
            (const uint16_t *)(args.base + gin_ep_crecv_off(g, args.set, t, k));
        acc += w[k] * gin_ep_bf16_to_float(in[c]);
      }
      args.out[(size_t)t * (size_t)g->H + (size_t)c] =
          gin_ep_float_to_bf16(acc);
    }
  }
}

/* ------------------------------------------------------------ launch */

static int ep_grid(int want) {
#if GIN_ARCH_CUDA
  int dev = 0, sms = 132;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  int most = 2 * sms;
#else
  int most = 8; /* blocks are CPU threads on the host target */
#endif
  return want < 1 ? 1 : want < most ? want : most;
}

#if GIN_ARCH_CUDA
#define EP_STREAM(s) ((cudaStream_t)(s))
#else
#define EP_STREAM(s) (s)
#endif

#ifdef __cplusplus
extern "C" {
#endif

gin_result_t gin_ep_launch_dispatch_send(const gin_ep_args_t *a, void *stream) {
  return gin_launch(k_ep_dispatch_send, ep_grid(a->g.E), EP_THREADS,
                    EP_STREAM(stream), a);
}

gin_result_t gin_ep_launch_dispatch_recv(const gin_ep_args_t *a, void *stream) {
  return gin_launch(k_ep_dispatch_recv, ep_grid(a->g.L), EP_THREADS,
                    EP_STREAM(stream), a);
}

gin_result_t gin_ep_launch_combine_send(const gin_ep_args_t *a, void *stream) {
  return gin_launch(k_ep_combine_send, ep_grid(a->g.L * a->g.R), EP_THREADS,
                    EP_STREAM(stream), a);
}

gin_result_t gin_ep_launch_combine_recv(const gin_ep_args_t *a, void *stream) {
  gin_result_t res =
      gin_launch(k_ep_combine_wait, 1, EP_THREADS, EP_STREAM(stream), a);
  if (res != GIN_SUCCESS || a->T == 0) return res;
  return gin_launch(k_ep_combine_reduce, ep_grid(a->T), EP_THREADS,
                    EP_STREAM(stream), a);
}

#ifdef __cplusplus
}
#endif
