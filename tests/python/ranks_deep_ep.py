"""One rank of test_deep_ep.py (started by ginrun): DeepEP's low-latency
API through `from gin_comm import deep_ep`, on a torch.distributed (gloo)
group of the ranks, with DeepEP's argument conventions: int64 topk_idx
from torch.topk with some -1, every combination of use_fp8, round_scale,
use_ue8m0 and return_recv_hook, async_finish events, zero_copy through
get_next_low_latency_combine_buffer, an `out` tensor, and two dispatches
held at once (DeepEP's two buffers). Every output is checked against
ep_ref.py computed in this process from every rank's inputs (dispatch
exactly: recv_count, the cumulative statistics, layout_range, src_info,
values and scales in DeepEP's layouts; combine within the fp8
tolerance); what gin does not implement must raise naming it.
argv: PORT (the gloo rendezvous). Prints "rank R/N: OK"."""

import sys

import numpy as np
import torch
import torch.distributed as dist

import ep_ref
import gin_comm
from report import gloo_group, report
from gin_comm import deep_ep

M, H, K, PER_RANK = 16, 512, 4, 3
DEV = "cuda" if gin_comm.TARGET == "cuda" else "cpu"


def u16(t):
    """bf16 tensor -> NumPy uint16 bits."""
    return t.detach().cpu().contiguous().view(torch.int16).numpy().view(
        np.uint16)


def inputs(seed, rank, R):
    """Rank `rank`'s tokens (T = M - rank % 3), its int64 routing from
    torch.topk over random scores with some entries -1, its weights."""
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    T = M - rank % 3
    E = PER_RANK * R
    x = (torch.randn((T, H), generator=g) *
         torch.tensor([1.0, 20.0, 1e-6])[torch.arange(T) % 3, None]).to(
             torch.bfloat16)
    scores = torch.rand((T, E), generator=g) + 1
    idx = torch.topk(scores, K, dim=-1).indices  # int64, distinct
    drop = torch.rand((T, K), generator=g) < 0.15
    idx[drop] = -1
    w = torch.rand((T, K), generator=g)
    return x, idx, w


def check_dispatch(recv_x, count, handle, stats, want_stats, ins, me, R,
                   fp8, rs, ue8m0, fails):
    L = PER_RANK
    src_info, layout_range, m, hidden, E = handle
    if (m, hidden, E) != (M, H, PER_RANK * R):
        fails.append(f"handle sizes {(m, hidden, E)}")
    want = ep_ref.arrivals([a[1].numpy() for a in ins], me, L)
    if fp8:
        x, s = recv_x
        if x.dtype != torch.float8_e4m3fn or x.shape != (L, R * M, H):
            fails.append(f"fp8 recv_x {x.dtype} {tuple(x.shape)}")
            return
        ns = H // 512 if ue8m0 else H // 128
        sd = torch.int32 if ue8m0 else torch.float32
        if s.dtype != sd or s.shape != (L, R * M, ns) or s.stride(1) != 1:
            fails.append(f"scales {s.dtype} {tuple(s.shape)} strides "
                         f"{s.stride()} (want {sd}, [{L}, {R * M}, {ns}], "
                         f"column-major)")
            return
    elif recv_x.dtype != torch.bfloat16 or recv_x.shape != (L, R * M, H):
        fails.append(f"bf16 recv_x {recv_x.dtype} {tuple(recv_x.shape)}")
        return
    cnt = count.cpu().numpy()
    for le in range(L):
        arr, n = want[le], len(want[le])
        if cnt[le] != n:
            fails.append(f"expert {le}: recv_count {cnt[le]}, want {n}")
            continue
        lr = layout_range[le].cpu().numpy()
        if int((lr & 0xffffffff).sum()) != n:
            fails.append(f"expert {le}: layout_range counts {lr & 0xffffffff}")
        for src in range(R):
            begin, c = int(lr[src]) >> 32, int(lr[src]) & 0xffffffff
            rows = [a for a in arr if a[0] == src]
            toks = src_info[le, begin:begin + c].cpu().numpy()
            if c != len(rows) or list(toks) != [a[1] for a in rows]:
                fails.append(f"expert {le} source {src}: range ({begin}, "
                             f"{c}) tokens {list(toks)}, want "
                             f"{[a[1] for a in rows]}")
        if n == 0:
            continue
        rows = np.stack([u16(ins[a[0]][0][a[1]]) for a in arr])
        if not fp8:
            if not (u16(recv_x[le, :n]) == rows).all():
                fails.append(f"expert {le}: bf16 rows differ")
            continue
        q, sc = ep_ref.quantize(rows, rs)
        gq = recv_x[0][le, :n].float().cpu().numpy()
        if ue8m0:
            b = recv_x[1][le, :n].cpu().flatten().view(torch.uint8).view(
                n, -1).numpy()
            gs = np.ldexp(np.float32(1), b[:, :H // 128].astype(np.int32) - 127)
        else:
            gs = recv_x[1][le, :n].cpu().numpy()
        if not (gq == q).all() or not (gs == sc).all():
            fails.append(f"expert {le}: fp8 values or scales differ "
                         f"(round_scale {rs}, ue8m0 {ue8m0})")
    if stats is None:
        return
    want_stats += cnt
    if not (stats.cpu().numpy() == want_stats).all():
        fails.append(f"cumulative stats {stats.cpu().numpy()}, want "
                     f"{want_stats}")


def expert_outputs(recv_x, count, me, fp8, ue8m0):
    """y [L, R*M, H] bf16: ep_ref's stand-in experts on what arrived."""
    x = recv_x[0] if fp8 else recv_x
    y = torch.zeros(x.shape, dtype=torch.bfloat16)
    for le in range(PER_RANK):
        n = int(count[le])
        if not n:
            continue
        if fp8:
            s = recv_x[1][le, :n]
            if ue8m0:
                b = s.cpu().flatten().view(torch.uint8).view(
                    n, -1)[:, :H // 128]
                s = torch.ldexp(torch.ones(b.shape), (b.to(torch.int32) - 127)
                                .float())
            d = (x[le, :n].float().cpu().view(n, -1, 128) *
                 s.cpu()[:, :, None]).view(n, H).numpy()
        else:
            d = ep_ref.bf16_to_f32(u16(x[le, :n]))
        y[le, :n] = torch.from_numpy(
            ep_ref.expert(d, me * PER_RANK + le).view(np.int16)).view(
                torch.bfloat16)
    return y.to(DEV)


def check_combine(out, ins, me, fp8, rs, what, fails, negated=False):
    x, idx, w = ins[me]
    want = ep_ref.combine(u16(x), idx.numpy(), w.numpy(), fp8, rs)
    if negated:
        want ^= 0x8000
    bad = ep_ref.close(want, u16(out))
    if out.shape != (x.shape[0], H) or out.dtype != torch.bfloat16:
        fails.append(f"{what}: combined {out.dtype} {tuple(out.shape)}")
    elif len(bad):
        fails.append(f"{what}: token {bad[0][0]} channel {bad[0][1]} off")


def main():
    n, me, group = gloo_group()
    E = PER_RANK * n
    fails = []
    hint = deep_ep.Buffer.get_low_latency_rdma_size_hint(M, H, n, E)
    if hint <= 0:
        fails.append(f"size hint {hint}")
    buf = deep_ep.Buffer(group, num_rdma_bytes=hint, low_latency_mode=True,
                         num_qps_per_rank=PER_RANK, explicitly_destroy=True)
    if (buf.rank, buf.group_size) != (me, n):
        fails.append(f"Buffer rank/size {buf.rank}/{buf.group_size}")
    stats = torch.zeros(PER_RANK, dtype=torch.int32, device=DEV)
    want_stats = np.zeros(PER_RANK, np.int64)
    seed = 0
    for hook in (False, True):
        for fp8 in (False, True):
            for rs in ((False, True) if fp8 else (False,)):
                for ue8m0 in ((False, True) if rs else (False,)):
                    seed += 1
                    ins = [inputs(seed, r, n) for r in range(n)]
                    x, idx, w = (t.to(DEV) for t in ins[me])
                    recv_x, count, handle, ev, hk = buf.low_latency_dispatch(
                        x, idx, M, E, cumulative_local_expert_recv_stats=stats,
                        use_fp8=fp8, round_scale=rs, use_ue8m0=ue8m0,
                        async_finish=not hook, return_recv_hook=hook)
                    if hook:
                        hk()
                    else:
                        ev.current_stream_wait()
                    what = f"hook {hook} fp8 {fp8} round {rs} ue8m0 {ue8m0}"
                    before = len(fails)
                    check_dispatch(recv_x, count, handle, stats, want_stats,
                                   ins, me, n, fp8, rs, ue8m0, fails)
                    y = expert_outputs(recv_x, count, me, fp8, ue8m0)
                    # The third combine's outputs negated, where the
                    # second's were read from: written after the fence
                    # get_next_low_latency_combine_buffer waits at.
                    for i, zero_copy in enumerate((False, True, True)):
                        if zero_copy:
                            buf.get_next_low_latency_combine_buffer(
                                handle)[:, :, :] = -y if i == 2 else y
                        out = torch.empty((x.shape[0], H),
                                          dtype=torch.bfloat16, device=DEV)
                        got, ev, hk = buf.low_latency_combine(
                            y, idx, w, handle, zero_copy=zero_copy,
                            async_finish=not hook, return_recv_hook=hook,
                            out=out)
                        hk() if hook else ev.current_stream_wait()
                        if got.data_ptr() != out.data_ptr():
                            fails.append(f"{what}: combine did not fill out")
                        check_combine(got, ins, me, fp8, rs,
                                      f"{what} combine {i}", fails, i == 2)
                    if len(fails) > before:
                        fails.insert(before, what)

    # Two dispatches held at once (DeepEP's two buffers): A, B sent, both
    # received, then both combined, each against its own reference.
    insA = [inputs(50, r, n) for r in range(n)]
    insB = [inputs(51, r, n) for r in range(n)]
    held = []
    for ins in (insA, insB):
        x, idx, w = (t.to(DEV) for t in ins[me])
        recv_x, count, handle, _, hk = buf.low_latency_dispatch(
            x, idx, M, E, use_fp8=False, return_recv_hook=True)
        held.append((ins, idx, w, recv_x, count, handle, hk))
    for h in held:
        h[-1]()  # both receives, after both sends
    for i, (ins, idx, w, recv_x, count, handle, _) in enumerate(held):
        before = len(fails)
        check_dispatch(recv_x, count, handle, None, None, ins, me, n, False,
                       False, False, fails)
        y = expert_outputs(recv_x, count, me, False, False)
        got = buf.low_latency_combine(y, idx, w, handle)[0]
        check_combine(got, ins, me, False, False, "held", fails)
        if len(fails) > before:
            fails.insert(before, f"dispatch {'AB'[i]} of two held at once")

    # What gin does not implement raises, naming it.
    x, idx, w = (t.to(DEV) for t in insA[me])
    recv_x, count, handle, _, _ = buf.low_latency_dispatch(
        x, idx, M, E, use_fp8=False)
    for call, words in [
            (lambda: buf.low_latency_combine(recv_x, idx, w, handle,
                                             use_logfmt=True), "use_logfmt"),
            (lambda: buf.get_local_buffer_tensor(torch.bfloat16),
             "get_local_buffer_tensor"),
            (lambda: buf.low_latency_dispatch(
                x, idx, M, E, dispatch_wait_recv_cost_stats=torch.zeros(
                    (n, n), dtype=torch.int64)),
             "dispatch_wait_recv_cost_stats")]:
        try:
            call()
            fails.append(f"{words}: no error")
        except NotImplementedError as e:
            if words not in str(e):
                fails.append(f"{words}: error '{e}' does not name it")
    buf.low_latency_combine(recv_x, idx, w, handle)  # still usable

    buf.destroy()
    dist.destroy_process_group()
    return report(me, n, fails, f"deep_ep, {gin_comm.TARGET} target")


if __name__ == "__main__":
    sys.exit(main())
