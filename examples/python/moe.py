"""A small Mixture-of-Experts layer whose forward pass runs on gin's
DeepEP-compatible Buffer, checked against the same layer computed in one
process, then timed against torch.distributed's all_to_all_single in the
same run.

    torchrun --nproc-per-node 2 examples/python/moe.py [--fp8] [--tokens N]

Every rank builds the same router and experts (one seed); rank r owns
experts [r * L, (r + 1) * L). The forward pass: route (softmax, top-k,
weights renormalised), low_latency_dispatch, each local expert on the
rows it received, low_latency_combine. The check: every rank computes its
own tokens' output with all the experts locally; the relative L2 error
must stay within the bf16 (and with --fp8 the FP8) rounding of the
experts' inputs and outputs. The timing: dispatch and combine, and the
same exchange done with all_to_all_single (counts, then rows to the
experts' ranks; rows back), medians over --iters; ratios above 1 mean
gin is faster. On the host target (no GPU: CPU tensors, gloo) the
figures are CPU times of the host target, not GPU figures.
Prints one summary on rank 0 and ends with OK or FAILED.
"""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

import gin_comm
from gin_comm import deep_ep


class Router(torch.nn.Module):
    def __init__(self, hidden, experts, topk):
        super().__init__()
        self.gate = torch.nn.Linear(hidden, experts, bias=False)
        self.topk = topk

    def forward(self, x):
        p = torch.softmax(self.gate(x.float()), dim=-1)
        w, idx = torch.topk(p, self.topk, dim=-1)
        return (w / w.sum(dim=-1, keepdim=True)).float(), idx


class Expert(torch.nn.Module):
    """hidden -> ffn -> hidden with SiLU, fp32 math, bf16 in and out."""

    def __init__(self, hidden, ffn):
        super().__init__()
        self.up = torch.nn.Linear(hidden, ffn, bias=False)
        self.down = torch.nn.Linear(ffn, hidden, bias=False)

    def forward(self, x):
        return self.down(torch.nn.functional.silu(self.up(x.float()))).to(
            torch.bfloat16)


def moe_gin(x, router, experts, buf, rank, args, timing=None):
    """The layer's forward through gin: dispatch, local experts, combine."""
    E = len(experts)
    L = E // dist.get_world_size()
    w, idx = router(x)
    t0 = now()
    recv_x, count, handle, _, _ = buf.low_latency_dispatch(
        x, idx, args.tokens, E, use_fp8=args.fp8)
    t1 = now()
    if args.fp8:
        q, s = recv_x
        Lx, S, H = q.shape
        inp = (q.float().view(Lx, S, H // 128, 128) * s.unsqueeze(-1)).view(
            Lx, S, H)
    else:
        inp = recv_x
    y = torch.zeros(inp.shape, dtype=torch.bfloat16, device=x.device)
    for le, n in enumerate(count.tolist()):
        if n:
            y[le, :n] = experts[rank * L + le](inp[le, :n])
    t2 = now()
    out, _, _ = buf.low_latency_combine(y, idx, w, handle)
    t3 = now()
    if timing is not None:
        timing["dispatch"].append(t1 - t0)
        timing["combine"].append(t3 - t2)
    return out


def moe_reference(x, router, experts):
    """The same layer in this process, every expert local (fp32 sums)."""
    w, idx = router(x)
    out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    for t in range(x.shape[0]):
        for k in range(idx.shape[1]):
            e = int(idx[t, k])
            out[t] += w[t, k] * experts[e](x[t:t + 1])[0].float()
    return out.to(torch.bfloat16)


def moe_all_to_all(x, w, idx, E, timing):
    """dispatch and combine with all_to_all_single, for the timing: rows
    to their experts' ranks (counts first), rows back, summed with the
    weights. The experts are the identity here (only the exchange is
    timed)."""
    R = dist.get_world_size()
    L = E // R
    t0 = now()
    sel = (idx >= 0).nonzero()                      # (token, k) pairs
    dst = idx[sel[:, 0], sel[:, 1]] // L
    order = torch.argsort(dst, stable=True)
    sel, dst = sel[order], dst[order]
    send_counts = torch.bincount(dst, minlength=R)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)
    rows = x[sel[:, 0]]
    got = torch.empty((int(recv_counts.sum()), x.shape[1]), dtype=x.dtype,
                      device=x.device)
    dist.all_to_all_single(got, rows, recv_counts.tolist(),
                           send_counts.tolist())
    sync(x)
    t1 = now()
    back = torch.empty_like(rows)
    dist.all_to_all_single(back, got, send_counts.tolist(),
                           recv_counts.tolist())
    out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    out.index_add_(0, sel[:, 0], back.float() *
                   w[sel[:, 0], sel[:, 1]].unsqueeze(1))
    out = out.to(torch.bfloat16)
    sync(x)
    t2 = now()
    timing["dispatch"].append(t1 - t0)
    timing["combine"].append(t2 - t1)
    return out


def now():
    if torch.cuda.is_available() and gin_comm.TARGET == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


def sync(x):
    if x.is_cuda:
        torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=32,
                    help="tokens per rank (default 32)")
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--ffn", type=int, default=256)
    ap.add_argument("--experts-per-rank", type=int, default=4)
    ap.add_argument("--topk", type=int, default=2)
    ap.add_argument("--fp8", action="store_true",
                    help="FP8 dispatch (DeepEP's default), else bf16")
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()

    cuda = gin_comm.TARGET == "cuda"
    world = int(os.environ.get("WORLD_SIZE", "1"))
    # NCCL takes one GPU a rank; ranks sharing a GPU (under MPS) use gloo,
    # which has no all_to_all of CUDA tensors: no baseline then.
    nccl = cuda and torch.cuda.device_count() >= world
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) %
                              torch.cuda.device_count())
    dist.init_process_group("nccl" if nccl else "gloo")
    baseline = nccl or not cuda
    rank, R = dist.get_rank(), dist.get_world_size()
    dev = "cuda" if cuda else "cpu"
    E = args.experts_per_rank * R

    torch.manual_seed(0)  # the same layer on every rank
    router = Router(args.hidden, E, args.topk).to(dev)
    experts = torch.nn.ModuleList(
        Expert(args.hidden, args.ffn) for _ in range(E)).to(dev)
    torch.manual_seed(1 + rank)  # each rank its own tokens
    x = torch.randn((args.tokens, args.hidden), device=dev).to(torch.bfloat16)

    group = dist.new_group(list(range(R)), backend="gloo")
    buf = deep_ep.Buffer(group, low_latency_mode=True,
                         explicitly_destroy=True)
    with torch.no_grad():
        got = moe_gin(x, router, experts, buf, rank, args)
        want = moe_reference(x, router, experts)
        err = float((got.float() - want.float()).norm() /
                    want.float().norm().clamp_min(1e-12))
        tol = 0.08 if args.fp8 else 0.01
        ok = err <= tol

        tg = {"dispatch": [], "combine": []}
        ta = {"dispatch": [], "combine": []}
        w, idx = router(x)
        for _ in range(args.iters):
            dist.barrier(group)
            moe_gin(x, router, experts, buf, rank, args, tg)
            if baseline:
                dist.barrier(group)
                moe_all_to_all(x, w, idx, E, ta)

    # Rank 0 reports the job: the worst rank's error and medians.
    stats = torch.tensor([err, float(ok)] + [
        statistics.median(t[p]) if t[p] else 0.0 for t in (tg, ta)
        for p in ("dispatch", "combine")], dtype=torch.float64)
    every = [torch.zeros_like(stats) for _ in range(R)]
    dist.all_gather(every, stats, group=group)
    every = torch.stack(every)
    buf.destroy()
    if rank == 0:
        worst = float(every[:, 0].max())
        passed = bool(every[:, 1].min() == 1)
        med = every[:, 2:].max(dim=0).values.tolist()  # slowest rank
        print(f"moe: {R} ranks, {gin_comm.TARGET} target, {args.tokens} "
              f"tokens a rank, hidden {args.hidden}, {E} experts, "
              f"top-{args.topk}, {'fp8' if args.fp8 else 'bf16'} dispatch")
        print(f"check: |gin - one process| / |one process| = {worst:.4f} "
              f"(at most {tol}) {'OK' if passed else 'FAILED'}")
        unit = "GPU" if cuda else "host-target CPU"
        for i, p in enumerate(("dispatch", "combine")):
            g, a = med[i], med[2 + i]
            vs = (f"all_to_all_single {a * 1e6:.1f} us: {a / g:.2f} x"
                  if baseline else "all_to_all_single not run (ranks "
                  "share a GPU: no NCCL)")
            print(f"{p}: gin {g * 1e6:.1f} us, {vs} ({unit} time, median "
                  f"of {args.iters}, slowest rank)")
        print("OK" if passed else "FAILED")
    dist.destroy_process_group()
    return 0 if bool(every[:, 1].min() == 1) else 1


if __name__ == "__main__":
    sys.exit(main())
