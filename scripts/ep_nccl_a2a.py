#!/usr/bin/env python3
"""The EP exchange of gin-ep-bench done the way an NCCL user does it: two
torch.distributed all_to_all_single calls (scripts/multigpu-run.sh).

    ginrun -n R python3 scripts/ep_nccl_a2a.py [options]   (one rank per GPU)
    torchrun --nproc-per-node R scripts/ep_nccl_a2a.py [options]
    python3 scripts/ep_nccl_a2a.py [options]               (one rank: a check)

Sizes are DeepEP's low-latency test, gin-ep-bench's defaults: 128 tokens per
rank, hidden 7168, top-8 of 288 experts (288 / R per rank), random routing
(fixed seed, each token's 8 experts distinct). Every routed (token, expert)
pair is one message, as in DeepEP's low-latency mode and gin-ep-bench:

  dispatch  each rank sends to each rank the pairs routed to its experts,
            16 + H + H/128*4 bytes per pair (FP8 payload, scales, header;
            2H with --bf16): one all_to_all_single of bytes;
  combine   the reverse, 2H bytes (BF16) per pair.

Three timings, each the median and p99 over -n iterations after -w warm-up,
with CUDA events around the call on this rank's stream (the collective's
time on the GPU, waiting for late peers included), every iteration started
after a stream synchronisation and a barrier:

  nccl-a2a         dispatch and combine with split sizes known in advance
                   (the exchange alone: no packing, no FP8 cast, no layout;
                   NCCL's best case),
  nccl-a2a-counts  dispatch as a user with fresh routing must do it: the
                   per-rank counts exchanged first (all_to_all_single of R
                   integers), copied to the host for the split sizes, then
                   the data.

Before timing, one dispatch and one combine are checked: every byte from
rank s must carry s's pattern for this rank. Output: a table on rank 0 and,
with --csv, gin-ep-bench's CSV columns (target, ranks, tokens, hidden,
topk, experts, fp8, impl, op, median_us, p99_us, slowest_us, gbps,
copy_gbps): slowest_us is the largest median over the ranks, gbps rank 0's
bytes over its median (DeepEP's accounting), copy_gbps a device copy of
rank 0's dispatch bytes.

Ranks come from torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT) or from ginrun's (GIN_RANK, GIN_NRANKS,
GIN_LOCAL_RANK; the rendezvous is a file store named after GIN_UNIQUE_ID);
none: one rank. The GPU is the local rank modulo the GPU count. NCCL
refuses two ranks on one GPU; --backend gloo runs the same exchange on CPU
tensors with wall-clock times: a check of this script with several ranks on
a machine with one GPU, not a measurement. NVLink multicast stays off
(NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 unless set).
"""

import argparse
import datetime
import hashlib
import os
import sys
import tempfile
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import torch  # noqa: E402 (after the environment above)
import torch.distributed as dist  # noqa: E402


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-t", "--tokens", type=int, default=128)
    p.add_argument("-H", "--hidden", type=int, default=7168)
    p.add_argument("-k", "--topk", type=int, default=8)
    p.add_argument("-e", "--experts", type=int, default=288)
    p.add_argument("--bf16", action="store_true",
                   help="BF16 dispatch (2H bytes per pair)")
    p.add_argument("-n", "--iters", type=int, default=50)
    p.add_argument("-w", "--warmup", type=int, default=5)
    p.add_argument("--seed", type=int, default=20261202)
    p.add_argument("--backend", choices=("nccl", "gloo"), default="nccl")
    p.add_argument("--csv", help="gin-ep-bench's CSV columns")
    a = p.parse_args()
    if (a.tokens < 1 or a.hidden < 128 or a.hidden % 128 or a.topk < 1
            or a.topk > a.experts or a.iters < 1 or a.warmup < 0):
        p.error("need -t >= 1, -H a multiple of 128, 1 <= -k <= -e, "
                "-n >= 1, -w >= 0")
    return a


def init(backend):
    """Joins the job; returns (rank, world, local rank, store file or None)."""
    env = os.environ
    timeout = datetime.timedelta(seconds=300)
    if "RANK" in env and "MASTER_ADDR" in env:
        rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
        local, path, kw = int(env.get("LOCAL_RANK", rank)), None, {}
        kw["init_method"] = "env://"
    else:
        if "GIN_RANK" in env:
            rank, world = int(env["GIN_RANK"]), int(env["GIN_NRANKS"])
            local = int(env.get("GIN_LOCAL_RANK", rank))
            tag = hashlib.sha1(env.get("GIN_UNIQUE_ID", "").encode())
            tag = tag.hexdigest()[:16]
        else:
            rank, world, local = 0, 1, 0
            tag = "pid%d" % os.getpid()
        path = os.path.join(tempfile.gettempdir(), "ep_nccl_a2a-" + tag)
        kw = {"store": dist.FileStore(path, world)}
    dev = None
    if backend == "nccl":
        dev = torch.device("cuda", local % torch.cuda.device_count())
        torch.cuda.set_device(dev)
        kw["device_id"] = dev
    try:
        dist.init_process_group(backend, rank=rank, world_size=world,
                                timeout=timeout, **kw)
    except TypeError:  # a torch without device_id
        kw.pop("device_id", None)
        dist.init_process_group(backend, rank=rank, world_size=world,
                                timeout=timeout, **kw)
    return rank, world, dev, path


class Timer:
    """Per-call times in us: CUDA events on the current stream (nccl), or
    the wall clock (gloo, CPU tensors)."""

    def __init__(self, cuda):
        self.cuda = cuda

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def time(self, fn):
        if not self.cuda:
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e6
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) * 1e3


def stats(ts):
    """Median and p99 as gin-ep-bench takes them."""
    ts = sorted(ts)
    return ts[len(ts) // 2], ts[int(len(ts) * 0.99)]


def pattern(src, dst):
    """The byte every message from rank src to rank dst carries."""
    return (src * 31 + dst * 7 + 1) % 251


def filled(counts, msg, me, device):
    """A send buffer: the chunk for rank d is counts[d] * msg bytes of
    pattern(me, d)."""
    parts = [torch.full((c * msg,), pattern(me, d), dtype=torch.uint8,
                        device=device) for d, c in enumerate(counts)]
    return torch.cat(parts)


def bad_chunks(buf, counts, msg, me):
    """How many received chunks do not carry their sender's pattern."""
    bad = 0
    for s, chunk in enumerate(torch.split(buf, [c * msg for c in counts])):
        if chunk.numel() and not bool((chunk == pattern(s, me)).all()):
            bad += 1
    return bad


def main():
    a = parse()
    me, R, dev, store_path = init(a.backend)
    cuda = a.backend == "nccl"
    device = dev if cuda else torch.device("cpu")
    if a.experts % R:
        sys.exit("ep_nccl_a2a: -e %d is not a multiple of %d ranks"
                 % (a.experts, R))
    T, H, K, E = a.tokens, a.hidden, a.topk, a.experts
    L = E // R
    fp8 = not a.bf16
    msg_d = 16 + H + H // 128 * 4 if fp8 else 2 * H
    msg_c = 2 * H

    # Routing: each token's K experts, distinct, from a seeded generator.
    g = torch.Generator().manual_seed(a.seed + me)
    idx = torch.rand(T, E, generator=g).topk(K, dim=1).indices
    send = torch.bincount((idx // L).flatten(), minlength=R)
    send_dev = send.to(device)
    recv_dev = torch.empty_like(send_dev)
    dist.all_to_all_single(recv_dev, send_dev)
    send_n, recv_n = send.tolist(), recv_dev.cpu().tolist()

    d_in = filled(send_n, msg_d, me, device)
    d_out = torch.empty(sum(recv_n) * msg_d, dtype=torch.uint8, device=device)
    c_in = filled(recv_n, msg_c, me, device)
    c_out = torch.empty(sum(send_n) * msg_c, dtype=torch.uint8, device=device)
    d_split_in, d_split_out = [c * msg_d for c in send_n], [
        c * msg_d for c in recv_n]
    c_split_in, c_split_out = [c * msg_c for c in recv_n], [
        c * msg_c for c in send_n]

    def dispatch():
        dist.all_to_all_single(d_out, d_in, d_split_out, d_split_in)

    def combine():
        dist.all_to_all_single(c_out, c_in, c_split_out, c_split_in)

    def dispatch_counts():
        got = torch.empty_like(send_dev)
        dist.all_to_all_single(got, send_dev)
        n_out = [c * msg_d for c in got.tolist()]  # to the host: a sync
        dist.all_to_all_single(d_out, d_in, n_out, d_split_in)

    # The check: every chunk carries its sender's pattern.
    dispatch()
    combine()
    tm = Timer(cuda)
    tm.sync()
    bad = torch.tensor([bad_chunks(d_out, recv_n, msg_d, me)
                        + bad_chunks(c_out, send_n, msg_c, me)],
                       device=device)
    dist.all_reduce(bad)
    if bad.item():
        sys.exit("ep_nccl_a2a: rank %d: %d chunks with the wrong bytes "
                 "(all ranks)" % (me, bad.item()))

    def timed(fn):
        for _ in range(a.warmup):
            fn()
        out = []
        for _ in range(a.iters):
            tm.sync()
            dist.barrier()
            out.append(tm.time(fn))
        return stats(out)

    impl = "%s-a2a" % a.backend
    res = {(impl, "dispatch"): timed(dispatch),
           (impl, "combine"): timed(combine),
           (impl + "-counts", "dispatch"): timed(dispatch_counts)}
    keys = list(res)
    meds = torch.tensor([res[k][0] for k in keys], dtype=torch.float64,
                        device=device)
    dist.all_reduce(meds, op=dist.ReduceOp.MAX)
    slowest = dict(zip(keys, meds.tolist()))

    # A device copy of this rank's dispatch bytes, the floor gin-ep-bench
    # reports beside its own rows.
    src = torch.empty(max(len(d_in), 1), dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)
    tm.sync()
    copy_us = sorted(tm.time(lambda: dst.copy_(src)) for _ in range(10))[5]
    copy_gbps = src.numel() / (copy_us * 1e3)

    routed = sum(send_n)
    nbytes = {"dispatch": routed * msg_d, "combine": routed * msg_c}
    if me == 0:
        ver = ""
        if cuda:
            v = torch.cuda.nccl.version()
            ver = ", NCCL %s" % (".".join(map(str, v)) if isinstance(
                v, tuple) else v)
        print("# ep_nccl_a2a, torch %s%s, %d ranks, %d tokens x hidden %d, "
              "top-%d of %d experts, %s dispatch (%d B per pair), %d "
              "iterations (+%d warm-up)%s" % (
                  torch.__version__, ver, R, T, H, K, E,
                  "fp8" if fp8 else "bf16", msg_d, a.iters, a.warmup,
                  "" if cuda else ", gloo on CPU tensors: a check, not a "
                  "measurement"))
        print("# dispatch and combine carried every sender's bytes to the "
              "right rank (checked on all %d ranks)" % R)
        print("%-16s %-9s %11s %11s %11s %10s" % (
            "impl", "op", "median_us", "p99_us", "slowest_us", "GB/s"))
        rows = []
        for (name, op), (med, p99) in res.items():
            gbps = nbytes[op] / (med * 1e3)
            print("%-16s %-9s %11.1f %11.1f %11.1f %10.2f" % (
                name, op, med, p99, slowest[(name, op)], gbps))
            rows.append("%s,%d,%d,%d,%d,%d,%d,%s,%s,%.3f,%.3f,%.3f,%.3f,%.3f"
                        % ("cuda" if cuda else "cpu", R, T, H, K, E, int(fp8),
                           name, op, med, p99, slowest[(name, op)], gbps,
                           copy_gbps))
        print("# rank 0 sends %d routed pairs: %d dispatch bytes, %d combine "
              "bytes; device copy of the dispatch bytes: %.1f GB/s" % (
                  routed, nbytes["dispatch"], nbytes["combine"], copy_gbps))
        if a.csv:
            with open(a.csv, "w") as f:
                f.write("target,ranks,tokens,hidden,topk,experts,fp8,impl,op,"
                        "median_us,p99_us,slowest_us,gbps,copy_gbps\n")
                f.write("\n".join(rows) + "\n")
        sys.stdout.flush()
    dist.barrier()
    dist.destroy_process_group()
    if store_path and me == 0:
        try:
            os.remove(store_path)
        except OSError:
            pass


if __name__ == "__main__":
    main()
