"""One rank of test_deep_ep_graph (started by ginrun; cuda target only):
DeepEP's low_latency_dispatch and low_latency_combine captured in a CUDA
graph, as serving engines capture them (a dispatch and its combine), then
replayed, each replay's outputs equal to the eager calls' (the same
kernels on the same inputs: bit for bit): what dispatch delivered (rows,
and fp8's column-major scales) and what combine returned. The experts
are the identity (bf16) or the dequantization of the fp8 rows, torch ops
captured with the calls. The eager calls first create the buffers and
load the kernels, as DeepEP asks before a capture. (A replay repeats one
buffer set: safe for a dispatch and its combine, whose receive every
rank finishes before its next dispatch goes out.) argv: PORT (the gloo
rendezvous). Prints "rank R/N: OK"."""

import sys

import torch
import torch.distributed as dist

import gin_comm
from gin_comm import deep_ep
from ranks_deep_ep import H, M, PER_RANK, inputs
from report import gloo_group, report

REPLAYS = 3


def rows(recv, count, fp8):
    """What dispatch delivered: per local expert, its first count rows
    (and scales), copied."""
    out = []
    for le in range(PER_RANK):
        n = int(count[le])
        if fp8:
            out.append((recv[0][le, :n].view(torch.uint8).clone(),
                        recv[1][le, :n].clone()))
        else:
            out.append(recv[le, :n].clone())
    return out


def same(a, b):
    if isinstance(a, tuple):
        return all(torch.equal(p, q) for p, q in zip(a, b))
    return torch.equal(a, b)


def experts(recv, fp8):
    """y [L, R*M, H] bf16: the received rows (bf16), or the fp8 rows
    times their scales (one per 128 channels)."""
    if not fp8:
        return recv
    return (recv[0].float() *
            recv[1].repeat_interleave(128, dim=-1)).to(torch.bfloat16)


def check(buf, x, idx, w, E, fp8, fails):
    what = "fp8" if fp8 else "bf16"
    recv, count, handle, _, _ = buf.low_latency_dispatch(
        x, idx, M, E, use_fp8=fp8)
    want_count = count.clone()
    want_rows = rows(recv, count, fp8)
    want_out = buf.low_latency_combine(experts(recv, fp8), idx, w,
                                       handle)[0].clone()
    torch.cuda.synchronize()

    out = torch.empty((x.shape[0], H), dtype=torch.bfloat16, device="cuda")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        grecv, gcount, ghandle, _, _ = buf.low_latency_dispatch(
            x, idx, M, E, use_fp8=fp8)
        buf.low_latency_combine(experts(grecv, fp8), idx, w, ghandle,
                                out=out)
    for r in range(REPLAYS):
        out.fill_(0)
        graph.replay()
        torch.cuda.synchronize()
        if not torch.equal(gcount, want_count):
            fails.append(f"{what}: replay {r}: counts {gcount.tolist()}, "
                         f"eager {want_count.tolist()}")
            continue
        got = rows(grecv, gcount, fp8)
        for le in range(PER_RANK):
            if not same(got[le], want_rows[le]):
                fails.append(f"{what}: replay {r}: local expert {le}'s rows "
                             f"differ from the eager call's")
        if not torch.equal(out, want_out):
            bad = (out != want_out).nonzero()[0].tolist()
            fails.append(f"{what}: replay {r}: combined token {bad[0]} "
                         f"channel {bad[1]} differs from the eager call's")


def main():
    n, me, group = gloo_group()
    E = PER_RANK * n
    fails = []
    buf = deep_ep.Buffer(group, low_latency_mode=True,
                         num_qps_per_rank=PER_RANK, explicitly_destroy=True)
    x, idx, w = (t.to("cuda") for t in inputs(7, me, n))
    for fp8 in (False, True):
        check(buf, x, idx, w, E, fp8, fails)
    # Eager calls after the replays still work.
    recv, count, handle, _, _ = buf.low_latency_dispatch(
        x, idx, M, E, use_fp8=False)
    buf.low_latency_combine(recv, idx, w, handle)
    torch.cuda.synchronize()
    buf.destroy()
    dist.destroy_process_group()
    return report(me, n, fails, f"CUDA graphs, {gin_comm.TARGET} target")


if __name__ == "__main__":
    sys.exit(main())
