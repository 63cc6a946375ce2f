"""One rank of test_deep_ep_normal (started by ginrun): DeepEP's normal
(high-throughput) mode through `from gin_comm import deep_ep` on a
torch.distributed (gloo) group, as DeepEP's test_intranode.py drives it:
get_dispatch_layout, dispatch with and without top-k, bf16 and FP8 input
(column-major scales), expert_alignment, num_worst_tokens, a cached
dispatch with the handle, combine with weights and biases, async events
and previous events. Every output is checked against a reference
computed in this process from every rank's inputs: layout and dispatch
exactly (row order, values, scales, local top-k ids and weights, counts,
the handle's rank_prefix_matrix column; above 8 ranks DeepEP's internode
shapes: num_tokens_per_rdma_rank and the handle's recv_gbl_rank_prefix_sum),
combine within bf16 rounding.
argv: PORT (the gloo rendezvous). Prints "rank R/N: OK"."""

import sys

import torch
import torch.distributed as dist

import gin_comm
from report import gloo_group, report
from gin_comm import deep_ep

T0, H, K, PER_RANK = 40, 256, 4, 3
DEV = "cuda" if gin_comm.TARGET == "cuda" else "cpu"


def inputs(seed, rank, R):
    """Rank `rank`'s tokens (T0 - 7 * (rank % 3); rank 1 none when seed
    is odd), int64 routing by torch.topk with some -1, weights."""
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    T = 0 if seed % 2 and rank == 1 else T0 - 7 * (rank % 3)
    E = PER_RANK * R
    x = torch.randn((T, H), generator=g).to(torch.bfloat16)
    idx = torch.topk(torch.rand((T, E), generator=g) + 1, K, dim=-1).indices
    idx[torch.rand((T, K), generator=g) < 0.2] = -1
    w = torch.rand((T, K), generator=g)
    return x, idx, w


def goes(idx, r):
    """[T] bool: the token has an expert on rank r."""
    return ((idx >= 0) & (idx // PER_RANK == r)).any(dim=1)


def to_fp8(x):
    """x's stand-in fp8 bytes and column-major scales (any values do:
    dispatch moves them as they are)."""
    T = x.shape[0]
    q = x.float().clamp(-400, 400).to(torch.float8_e4m3fn)
    s = (torch.arange(T * (H // 128), dtype=torch.float32).view(
        H // 128, T).t() + 0.5)  # column-major: strides (1, T)
    return q, s


def run(buf, me, R, seed, fp8, with_topk, worst, cached, fails):
    ins = [inputs(seed, r, R) for r in range(R)]
    x, idx, w = (t.to(DEV) for t in ins[me])
    T, E = x.shape[0], PER_RANK * R
    what = f"seed {seed} fp8 {fp8} topk {with_topk} worst {worst} " \
        f"cached {cached}"
    before = len(fails)
    # Layout.
    per_rank, per_rdma, per_expert, in_rank, ev = buf.get_dispatch_layout(
        idx, E, async_finish=True)
    ev.current_stream_wait()
    want_in = torch.stack([goes(ins[me][1], r) for r in range(R)], 1)
    if not torch.equal(in_rank.cpu(), want_in):
        fails.append("is_token_in_rank")
    if R > 8:  # DeepEP's internode shape: tokens with an expert on a node
        want_node = torch.stack([want_in[:, n:n + 8].any(1)
                                 for n in range(0, R, 8)], 1).sum(
                                     0, dtype=torch.int32)
        if per_rdma is None or not torch.equal(per_rdma.cpu(), want_node):
            fails.append("num_tokens_per_rdma_rank")
    elif per_rdma is not None:
        fails.append("num_tokens_per_rdma_rank for one node")
    if not torch.equal(per_rank.cpu(), want_in.sum(0, dtype=torch.int32)):
        fails.append("num_tokens_per_rank")
    want_pe = torch.tensor([int((ins[me][1] == e).sum()) for e in range(E)],
                           dtype=torch.int32)
    if per_rank.dtype != torch.int32 or \
            not torch.equal(per_expert.cpu(), want_pe):
        fails.append("num_tokens_per_expert")
    # Dispatch.
    xin = tuple(t.to(DEV) for t in to_fp8(x.cpu())) if fp8 else x
    kw = dict(topk_idx=idx, topk_weights=w) if with_topk else {}
    prev = deep_ep.Buffer.capture()
    got = buf.dispatch(xin, num_tokens_per_rank=per_rank,
                       is_token_in_rank=in_rank,
                       num_tokens_per_expert=per_expert, expert_alignment=2,
                       num_worst_tokens=(T0 * R if worst else 0),
                       config=deep_ep.Config(6, 3, 256),
                       previous_event=prev, async_finish=True, **kw)
    recv_x, recv_idx, recv_w, counts, handle, ev = got
    ev.current_stream_wait()
    rows = [(s, t) for s in range(R) for t in range(ins[s][0].shape[0])
            if goes(ins[s][1][t:t + 1], me)[0]]
    N = len(rows)
    rx = recv_x[0] if fp8 else recv_x
    if rx.shape[0] != (T0 * R if worst else N):
        fails.append(f"recv_x rows {rx.shape[0]}, want "
                     f"{T0 * R if worst else N}")
    want_x = [ins[s][0][t] for s, t in rows]
    for i, (s, t) in enumerate(rows):
        if fp8:
            q, sc = to_fp8(ins[s][0])
            if not torch.equal(rx[i].cpu().view(torch.uint8),
                               q[t].view(torch.uint8)) or \
                    not torch.equal(recv_x[1][i].cpu(), sc[t]):
                fails.append(f"fp8 row {i} (rank {s} token {t})")
                break
        elif not torch.equal(rx[i].cpu(), want_x[i]):
            fails.append(f"row {i} (rank {s} token {t})")
            break
    # The handle: intranode (6) or internode (10 entries, more than 8
    # ranks), each row's source index and the rows from ranks 0..r.
    src_idx = handle[7 if R > 8 else 3].cpu()
    if len(handle) != (10 if R > 8 else 6) or \
            [int(v) for v in src_idx[:N]] != [t for _, t in rows]:
        fails.append("recv_src_idx (recv_src_meta)")
    rpm = handle[-4].cpu() if R > 8 else handle[0].cpu()[:, me]
    want_rpm = torch.tensor([sum(1 for s, _ in rows if s <= r)
                             for r in range(R)], dtype=torch.int32)
    if not torch.equal(rpm, want_rpm):
        fails.append(f"{'recv_gbl_rank_prefix_sum' if R > 8 else 'rank_prefix_matrix'}"
                     f" {rpm.tolist()}")
    want_counts = [int(sum(int((ins[s][1] == me * PER_RANK + l).sum())
                           for s in range(R))) for l in range(PER_RANK)]
    want_counts = [] if worst else [(n + 1) // 2 * 2 for n in want_counts]
    if counts != want_counts:
        fails.append(f"num_recv_tokens_per_expert_list {counts}, want "
                     f"{want_counts}")
    if with_topk:
        for i, (s, t) in enumerate(rows):
            ids = ins[s][1][t]
            mine = (ids >= 0) & (ids // PER_RANK == me)
            li = torch.where(mine, ids - me * PER_RANK, torch.full_like(
                ids, -1))
            lw = torch.where(mine, ins[s][2][t], torch.zeros_like(
                ins[s][2][t]))
            if not torch.equal(recv_idx[i].cpu(), li) or \
                    not torch.equal(recv_w[i].cpu(), lw):
                fails.append(f"recv top-k of row {i}")
                break
        if worst and not bool((recv_idx[N:] == -1).all()):
            fails.append("worst rows' recv_topk_idx not -1")
    elif recv_idx is not None or recv_w is not None:
        fails.append("top-k outputs without top-k")
    # A cached dispatch: new rows, the same routing.
    if cached:
        x2 = (-x.float()).to(torch.bfloat16)
        again = buf.dispatch(x2, handle=handle)
        if any(v is not None for v in again[1:5]):
            fails.append("cached dispatch returns more than x and event")
        for i, (s, t) in enumerate(rows):
            if not torch.equal(again[0][i].cpu(),
                               (-ins[s][0][t].float()).to(torch.bfloat16)):
                fails.append(f"cached row {i}")
                break
    # Combine: this rank's stand-in output for each row, weights back,
    # one bias.
    y = torch.zeros((rx.shape[0], H), dtype=torch.bfloat16)
    for i in range(N):
        y[i] = (want_x[i].float() * (me + 1)).to(torch.bfloat16)
    bias = (torch.arange(T * H, dtype=torch.float32).view(T, H) % 5 -
            2).to(torch.bfloat16)
    out, out_w, ev = buf.combine(
        y.to(DEV), handle, topk_weights=recv_w if with_topk else None,
        bias=bias.to(DEV), config=deep_ep.Config(6, 2, 256),
        previous_event=deep_ep.Buffer.capture(), async_finish=True)
    ev.current_stream_wait()
    want = bias.float().clone()
    for r in range(R):
        on = goes(ins[me][1], r)
        want[on] += (ins[me][0][on].float() * (r + 1)).to(
            torch.bfloat16).float()
    want = want.to(torch.bfloat16).float()
    diff = (out.cpu().float() - want).abs()
    if T and not bool((diff <= want.abs() / 128 + 1e-3).all()):
        fails.append(f"combine: max error {float(diff.max())}")
    if with_topk:
        ww = torch.where(ins[me][1] >= 0, ins[me][2],
                         torch.zeros_like(ins[me][2]))
        if not torch.allclose(out_w.cpu(), ww, atol=1e-6):
            fails.append("combined top-k weights")
    elif out_w is not None:
        fails.append("combined weights without top-k")
    if len(fails) > before:
        fails.insert(before, what)


def main():
    n, me, group = gloo_group()
    fails = []
    buf = deep_ep.Buffer(group, int(1e8), 0, low_latency_mode=False,
                         num_qps_per_rank=1, explicitly_destroy=True)
    if deep_ep.Buffer.get_dispatch_config(n).num_sms != \
            deep_ep.Buffer.num_sms:
        fails.append("get_dispatch_config's num_sms")
    seed = 0
    for fp8 in (False, True):
        for with_topk in (False, True):
            for worst in ((False, True) if with_topk else (False,)):
                seed += 1
                run(buf, me, n, seed, fp8, with_topk, worst,
                    cached=not with_topk and not fp8, fails=fails)
    for call, words in [
            (lambda: deep_ep.Config(20, 8, 8), "num_max_nvl_chunked"),
            (lambda: buf.combine(None, (1, 2)), "handle")]:
        try:
            call()
            fails.append(f"{words}: no error")
        except (ValueError, gin_comm.GinError) as e:
            if words not in str(e):
                fails.append(f"{words}: error '{e}' does not name it")
    buf.destroy()
    dist.destroy_process_group()
    return report(me, n, fails, f"deep_ep normal mode, {gin_comm.TARGET} "
                  "target")


if __name__ == "__main__":
    sys.exit(main())
