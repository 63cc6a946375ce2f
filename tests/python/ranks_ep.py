"""One rank of test_ep.py (started by ginrun): gin_comm.Ep's dispatch and
combine on NumPy arrays or torch CPU tensors (argv[1]: numpy or torch),
every output against ep_ref.py computed in this process from every rank's
inputs (dispatch exactly: counts, layout, sources, values and scales;
combine within the fp8 tolerance), over bf16, fp8 with scales in rows, in
columns and as UE8M0 bytes with power-of-two scales, int32 and int64
routing, split phases, the packed layout, the received-count statistics
and the buffer's own combine input; then bad arguments, each refused
with GinError naming it, after which a step still checks out.
Prints "rank R/N: OK"."""

import os
import sys

import numpy as np

import ep_ref
import gin_comm
from report import report

M, H, K, PER_RANK = 16, 256, 4, 4


class Tensors:
    """The array kind under test: NumPy (host target), or torch tensors on
    the target's device (bf16 as torch.bfloat16, fp8 as float8_e4m3fn);
    results come back as NumPy."""

    def __init__(self, kind):
        self.kind = kind
        if kind == "torch":
            import torch
            self.torch = torch
            self.dev = "cuda" if gin_comm.TARGET == "cuda" else "cpu"

    def bf16(self, u16):
        if self.kind == "numpy":
            return np.ascontiguousarray(u16)
        return self.torch.from_numpy(np.ascontiguousarray(u16)).view(
            self.torch.bfloat16).to(self.dev)

    def arr(self, a):
        a = np.ascontiguousarray(a)
        return a if self.kind == "numpy" else \
            self.torch.from_numpy(a).to(self.dev)

    def np(self, a):
        if self.kind == "numpy":
            return np.asarray(a)
        t = a.cpu()
        if t.dtype == self.torch.bfloat16:
            t = t.view(self.torch.uint16) if hasattr(self.torch, "uint16") \
                else t.view(self.torch.int16)
        elif t.dtype == self.torch.float8_e4m3fn:
            t = t.view(self.torch.uint8)
        return t.numpy().view(np.uint16) if t.dtype == self.torch.int16 \
            else t.numpy()

    def zeros_stats(self, n):
        return self.arr(np.zeros(n, np.int32))


# Steps: (fp8, round_scale, scale_layout, packed, int64 ids, phases,
# y in the buffer's combine input)
STEPS = [
    (False, False, "rows", False, False, "both", False),
    (True, False, "rows", False, True, "split", False),
    (True, False, "cols", True, True, "both", True),
    (True, True, "ue8m0", True, False, "split", True),
    (True, True, "rows", False, True, "both", False),
    (False, False, "rows", True, True, "split", True),
]


def check_dispatch(r, A, all_x, me, R, L, fp8, rs, layout, packed, fails):
    S = R * M
    G = all_x[0][0].shape[1] // 128
    count, src_rank, src_tok = A.np(r.count), A.np(r.src_rank), \
        A.np(r.src_token)
    lay = A.np(r.layout)
    want = ep_ref.arrivals(all_x[1], me, L)
    x = A.np(r.x)
    for le in range(L):
        arr = want[le]
        n = len(arr)
        if count[le] != n:
            fails.append(f"expert {le}: count {count[le]}, want {n}")
            continue
        off = 0
        for src in range(R):
            c = sum(1 for a in arr if a[0] == src)
            got = (int(lay[le, src]) >> 32, int(lay[le, src]) & 0xffffffff) \
                if packed else (int(lay[le, src, 0]), int(lay[le, src, 1]))
            if got[1] != c or (c and got[0] != off):
                fails.append(f"expert {le} source {src}: layout {got}, "
                             f"want ({off}, {c})")
            off += c
        if n == 0:
            continue
        srcs = np.array([a[0] for a in arr])
        toks = np.array([a[1] for a in arr])
        if not (src_rank[le, :n] == srcs).all() or \
                not (src_tok[le, :n] == toks).all():
            fails.append(f"expert {le}: sources {src_rank[le, :n]} tokens "
                         f"{src_tok[le, :n]}, want {srcs} {toks}")
            continue
        rows = np.stack([all_x[0][s][t] for s, t, _ in arr])
        if not fp8:
            if not (x[le, :n] == rows).all():
                fails.append(f"expert {le}: bf16 rows differ")
            continue
        q, s = ep_ref.quantize(rows, rs)
        gq = ep_ref.fp8_bytes_to_f32(x[le, :n])
        if layout == "ue8m0":
            words = np.ascontiguousarray(A.np(r.scales))  # [L, S, W] int32
            b = words.view(np.uint8).reshape(L, S, -1)[le, :n, :G]
            gs = np.ldexp(np.float32(1), b.astype(np.int32) - 127)
        else:
            gs = A.np(r.scales)[le, :n]
        if not (gq == q).all():
            i = np.argwhere(gq != q)[0]
            fails.append(f"expert {le} slot {i[0]} channel {i[1]}: fp8 "
                         f"{gq[tuple(i)]}, want {q[tuple(i)]}")
        if not (gs == s).all():
            i = np.argwhere(gs != s)[0]
            fails.append(f"expert {le} slot {i[0]} group {i[1]}: scale "
                         f"{gs[tuple(i)]}, want {s[tuple(i)]} ({layout})")


def experts_out(r, A, me, L, fp8):
    """The stand-in experts on what arrived: y [L, S, H] bf16 bits."""
    count = A.np(r.count)
    x = A.np(r.x)
    H = x.shape[2]
    y = np.zeros(x.shape, np.uint16)
    for le in range(L):
        n = int(count[le])
        if not n:
            continue
        if fp8:
            s = A.np(r.scales)
            if s.dtype == np.int32:  # UE8M0 words
                b = np.ascontiguousarray(s).view(np.uint8).reshape(
                    s.shape[0], s.shape[1], -1)[le, :n, :H // 128]
                sc = np.ldexp(np.float32(1), b.astype(np.int32) - 127)
            else:
                sc = s[le, :n]
            d = ep_ref.fp8_bytes_to_f32(x[le, :n]).reshape(n, -1, 128) * \
                sc[:, :, None]
            d = d.reshape(n, H).astype(np.float32)
        else:
            d = ep_ref.bf16_to_f32(x[le, :n])
        y[le, :n] = ep_ref.expert(d, me * L + le)
    return y


def run_step(comm, ep, A, seed, step, stats, want_stats, fails):
    fp8, rs, layout, packed, i64, phases, zc = step
    R, me = comm.size, comm.rank
    L, H = PER_RANK, ep.hidden
    T = [(M * (r + 1) + seed) % (M + 1) for r in range(R)]
    ins = [ep_ref.inputs(seed, r, T[r], H, K, PER_RANK * R) for r in range(R)]
    x, idx, w = ins[me]
    xi = A.bf16(x)
    ii = A.arr(idx if i64 else idx.astype(np.int32))
    kw = dict(fp8=fp8, round_scale=rs, scale_layout=layout,
              packed_layout=packed, recv_stats=stats)
    if phases == "split":
        ep.dispatch(xi, ii, phases="send", **kw)
        r = ep.dispatch(xi, ii, phases="recv", **kw)
    else:
        r = ep.dispatch(xi, ii, **kw)
    all_x = ([a[0] for a in ins], [a[1] for a in ins])
    before = len(fails)
    check_dispatch(r, A, all_x, me, R, L, fp8, rs, layout, packed, fails)
    want_stats += A.np(r.count)
    if not (A.np(stats) == want_stats).all():
        fails.append(f"recv_stats {A.np(stats)}, want {want_stats}")
    y = experts_out(r, A, me, L, fp8)
    if zc:
        yb = ep.combine_buffer(A.kind)
        yb[:] = A.bf16(y)
    else:
        yb = A.bf16(y)
    wi = A.arr(w)
    if phases == "split":
        out = ep.combine(yb, ii, wi, phases="send")
        ep.combine(yb, ii, wi, out=out, phases="recv")
    else:
        out = ep.combine(yb, ii, wi)
    want = ep_ref.combine(x, idx, w, fp8, rs)
    bad = ep_ref.close(want, A.np(out))
    if len(bad):
        t, c = bad[0]
        fails.append(f"combine token {t} channel {c}: "
                     f"{ep_ref.bf16_to_f32(A.np(out)[t, c])}, want "
                     f"{ep_ref.bf16_to_f32(want[t, c])}")
    if len(fails) > before:
        fails.insert(before, f"step {step} seed {seed}:")


def bad_arguments(ep, A, fails):
    """Each refused with GinError naming what was wrong; nothing runs."""
    x = A.bf16(np.zeros((2, H), np.uint16))
    idx = A.arr(np.zeros((2, K), np.int64) - 1)
    cases = [
        (lambda: ep.dispatch(A.arr(np.zeros((2, H), np.float32)), idx,
                             fp8=True), "x: dtype float32"),
        (lambda: ep.dispatch(A.bf16(np.zeros((M + 1, H), np.uint16)),
                             A.arr(np.zeros((M + 1, K), np.int64)), fp8=True),
         "tokens"),
        (lambda: ep.dispatch(x, A.arr(np.zeros((2, K + 1), np.int64)),
                             fp8=True), "topk_idx: shape"),
        (lambda: ep.dispatch(x, idx, fp8=True, scale_layout="diag"),
         "scale_layout"),
        (lambda: ep.dispatch(x, idx, fp8=True, scale_layout="ue8m0"),
         "needs round_scale"),
        (lambda: ep.dispatch(x, idx), "GIN_EP_FP8_ANY"),
        (lambda: ep.dispatch(x, idx, fp8=False, round_scale=True),
         "round_scale needs an fp8 payload"),
        (lambda: ep.dispatch(x, idx, fp8=True, phases="later"), "phases"),
        (lambda: ep.dispatch(A.bf16(np.zeros((2, 2 * H), np.uint16))[:, ::2],
                             idx, fp8=True), "x: not contiguous"),
        (lambda: ep.dispatch(x, idx, fp8=True,
                             recv_stats=A.arr(np.zeros(PER_RANK + 1,
                                                       np.int32))),
         "recv_stats: shape"),
        (lambda: ep.combine(ep.combine_buffer(A.kind), idx,
                            A.arr(np.zeros((2, K), np.float64))),
         "topk_weights: dtype float64"),
        (lambda: ep.combine(ep.combine_buffer(A.kind), idx,
                            A.arr(np.zeros((2, K), np.float32)),
                            out=A.bf16(np.zeros((3, H), np.uint16))),
         "out: shape"),
    ]
    for call, words in cases:
        try:
            call()
            fails.append(f"bad call accepted (wanted an error naming "
                         f"'{words}')")
        except gin_comm.GinError as e:
            if words not in str(e):
                fails.append(f"error '{e}' does not name '{words}'")


def main():
    kind = sys.argv[1]
    A = Tensors(kind)
    n = int(os.environ["GIN_NRANKS"])
    me = int(os.environ["GIN_RANK"])
    fails = []
    with gin_comm.Comm.from_env() as comm:
        with gin_comm.Ep(comm, M, H, K, PER_RANK * n) as ep:
            stats = A.zeros_stats(PER_RANK)
            want_stats = np.zeros(PER_RANK, np.int64)
            for i, step in enumerate(STEPS):
                run_step(comm, ep, A, 100 + i, step, stats, want_stats,
                         fails)
            bad_arguments(ep, A, fails)
            run_step(comm, ep, A, 200, STEPS[2], stats, want_stats, fails)
        # Five scale groups a row: two UE8M0 words, the second partial.
        with gin_comm.Ep(comm, M, 640, K, PER_RANK * n) as ep:
            want_stats[:] = A.np(stats)
            run_step(comm, ep, A, 300, STEPS[3], stats, want_stats, fails)
    return report(me, n, fails, f"{kind}, {gin_comm.TARGET} target")


if __name__ == "__main__":
    sys.exit(main())
