"""gin EP from Python: Mixture-of-Experts dispatch and combine on arrays.

    ep = gin_comm.Ep(comm, max_tokens=128, hidden=7168, topk=8,
                     num_experts=288)
    r = ep.dispatch(x, topk_idx, fp8=True)   # x [T, H] bf16, topk [T, K]
    y = experts(r.x, r.scales, r.count)      # [L, R * max_tokens, H] bf16
    out = ep.combine(y, topk_idx, weights)   # [T, H] bf16

Arrays are torch tensors (cuda target: on the communicator's GPU; host
target: CPU) or, on the host target, NumPy arrays (bf16 as uint16). What
dispatch returns is the buffer's own memory seen as arrays of the input's
kind (no copies), valid until the next dispatch's receive phase and
while the Ep lives (destroy() frees the memory under them). The
semantics are gin_ep.h's; the low-latency Buffer of gin_comm.deep_ep is
built on this.
"""

import ctypes

from . import _arrays, _lib

__all__ = ["Ep", "Recv"]


class Recv:
    """What a dispatch delivered (gin_ep_recv_t), as arrays over the
    buffer: x [L, S, H] (fp8 bytes or bf16; S = ranks x max_tokens slots
    per local expert), scales (fp8 only; [L, S, G] fp32, in columns with
    scale_layout "cols", or [L, S, ceil(G / 4)] int32 words of UE8M0
    bytes), src_rank and src_token [L, S] int32, count [L] int32, layout
    [L, R, 2] int32 (offset, count) or packed [L, R] int64
    (offset << 32 | count). Only the first count[le] slots of expert le
    hold tokens."""

    def __init__(self, **arrays):
        self.__dict__.update(arrays)


_SCALES = {"rows": _lib.EP_SCALES_ROWS, "cols": _lib.EP_SCALES_COLS,
           "ue8m0": _lib.EP_SCALES_UE8M0}
_PHASES = {"both": _lib.EP_BOTH, "send": _lib.EP_SEND, "recv": _lib.EP_RECV}


def _check_phases(what, phases):
    if phases not in _PHASES:
        raise _lib.error(_lib.ERR_INVALID,
                         f"{what}: phases {phases!r} is not 'both', 'send' "
                         f"or 'recv'")


def _kind(a):
    return "torch" if _arrays._is_torch(a) else "numpy"


class Ep:
    """A gin EP buffer (gin_ep_t) on a Comm. Creating it is collective:
    every rank passes the same sizes. fp8: False (bf16 rows), True (FP8
    rows) or None (each dispatch chooses; rows sized for bf16)."""

    def __init__(self, comm, max_tokens, hidden, topk, num_experts,
                 fp8=None, device=None):
        self.comm = comm
        self.max_tokens, self.hidden, self.topk = max_tokens, hidden, topk
        self.num_experts = num_experts
        self.ranks = comm.size
        self.local_experts = num_experts // self.ranks if self.ranks else 0
        self.fp8 = fp8
        self.device = device or _default_device()
        cfg = _lib.EpConfig(max_tokens, hidden, topk, num_experts,
                            _lib.EP_FP8_ANY if fp8 is None else int(fp8))
        h = ctypes.c_void_p()
        _lib.check(_lib.gin_ep_create(comm._handle(), ctypes.byref(cfg),
                                      ctypes.byref(h)))
        self._h = h
        self._views = {}
        self._dispatched = None  # the last dispatch's options

    # -------------------------------------------------------------- state

    def _handle(self):
        if self._h is None:
            raise _lib.error(_lib.ERR_STATE, "this Ep was destroyed")
        return self._h

    def destroy(self):
        """Collective; no dispatch or combine may be in flight. The
        arrays handed out must not be used after it. Before the
        communicator's destroy."""
        if self._h is not None:
            self.comm._handle()  # raises if the communicator is gone
            h, self._h = self._h, None
            self._views.clear()
            _lib.check(_lib.gin_ep_destroy(h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
        return False

    @staticmethod
    def size_hint(max_tokens, hidden, topk, num_experts, nranks, fp8=None):
        """Bytes of device memory a buffer of these sizes takes per rank."""
        cfg = _lib.EpConfig(max_tokens, hidden, topk, num_experts,
                            _lib.EP_FP8_ANY if fp8 is None else int(fp8))
        n = ctypes.c_size_t()
        _lib.check(_lib.gin_ep_size_hint(ctypes.byref(cfg), nranks,
                                         ctypes.byref(n)))
        return n.value

    # -------------------------------------------------------------- calls

    def _stream(self, kind):
        return _arrays.stream(self.device)

    def _after(self):
        _arrays.after_call(self.comm, self.device)

    def _idx(self, topk_idx, T, what):
        ptr = _arrays.pointer(topk_idx, what, ("int64", "int32"),
                              (T, self.topk), self.device)
        return ptr, int(_arrays.describe(topk_idx)[1] == "int64")

    def dispatch(self, x, topk_idx, fp8=None, round_scale=False,
                 scale_layout="rows", packed_layout=False, recv_stats=None,
                 phases="both"):
        """Sends each token of x [T, H] (bf16) to the experts topk_idx
        [T, K] (int64 or int32, -1: none) names; returns a Recv. fp8:
        cast to FP8 (None: the buffer's; a buffer made with fp8=None needs
        True or False). round_scale: power-of-two scales; scale_layout
        "rows", "cols" or "ue8m0" (needs round_scale); packed_layout:
        DeepEP's int64 layout; recv_stats: int32 [L] to which each local
        expert's count is added. phases "send" then "recv" split it (the
        receive with the same options)."""
        self.comm.check_async()
        kind = _kind(x)
        shape = _arrays.describe(x)[2]
        T = shape[0] if len(shape) == 2 else -1
        xp = _arrays.pointer(x, "dispatch: x", ("bfloat16", "uint16"),
                             (None, self.hidden), self.device)
        if T > self.max_tokens:
            raise _lib.error(_lib.ERR_INVALID,
                             f"dispatch: {T} tokens, the buffer holds at most "
                             f"{self.max_tokens}")
        ip, idx64 = self._idx(topk_idx, T, "dispatch: topk_idx")
        if scale_layout not in _SCALES:
            raise _lib.error(_lib.ERR_INVALID,
                             f"dispatch: scale_layout {scale_layout!r} is not "
                             f"'rows', 'cols' or 'ue8m0'")
        _check_phases("dispatch", phases)
        stats = 0
        if recv_stats is not None:
            stats = _arrays.pointer(recv_stats, "dispatch: recv_stats",
                                    ("int32",), (self.local_experts,),
                                    self.device)
        o = _lib.EpDispatchOpts(
            _lib.EP_PAYLOAD_BUFFER if fp8 is None else
            _lib.EP_PAYLOAD_FP8 if fp8 else _lib.EP_PAYLOAD_BF16,
            int(bool(round_scale)), _SCALES[scale_layout],
            int(bool(packed_layout)), idx64, stats)
        r = _lib.EpRecv()
        _lib.check(_lib.gin_ep_dispatch_ex(
            self._handle(), xp, ip, T, ctypes.byref(o), ctypes.byref(r),
            self._stream(kind), _PHASES[phases]))
        self._after()
        return self._recv(kind, r, scale_layout, bool(packed_layout))

    def _recv(self, kind, r, scale_layout, packed):
        key = (kind, r.fp8, scale_layout, packed)
        if key not in self._views:
            self._views[key] = self._make_recv(kind, r, scale_layout, packed)
        return self._views[key]

    def _export(self, kind, ptr, dtype, shape, strides=None):
        cuda = -1 if self.device == "cpu" else int(self.device.split(":")[1])
        e = _arrays.Exported(self, ptr, dtype, shape, strides, cuda)
        if kind == "torch":
            import torch
            return torch.from_dlpack(e)
        import numpy
        return numpy.asarray(e)

    def _make_recv(self, kind, r, scale_layout, packed):
        L, R, S, H = self.local_experts, self.ranks, r.slots_per_expert, \
            self.hidden
        G = H // 128
        bf16 = "bfloat16" if kind == "torch" else "uint16"
        x = self._export(kind, r.x, "uint8" if r.fp8 else bf16, (L, S, H))
        if r.fp8 and kind == "torch":
            import torch
            x = x.view(torch.float8_e4m3fn)
        scales = None
        if r.fp8 and scale_layout == "rows":
            scales = self._export(kind, r.scales, "float32", (L, S, G))
        elif r.fp8 and scale_layout == "cols":
            scales = self._export(kind, r.scales, "float32", (L, S, G),
                                  (G * S, 1, S))
        elif r.fp8:
            W = (G + 3) // 4
            scales = self._export(kind, r.scales, "int32", (L, S, W),
                                  (W * S, 1, S))
        layout = (self._export(kind, r.layout, "int64", (L, R)) if packed
                  else self._export(kind, r.layout, "int32", (L, R, 2)))
        return Recv(x=x, scales=scales,
                    src_rank=self._export(kind, r.src_rank, "int32", (L, S)),
                    src_token=self._export(kind, r.src_token, "int32",
                                           (L, S)),
                    count=self._export(kind, r.count, "int32", (L,)),
                    layout=layout)

    def combine_fence(self):
        """Collective, on the current stream: every rank's receive of the
        last combine is done before what follows, so the combine buffer
        may be rewritten for another combine of the same dispatch
        (gin_ep_combine_fence; nothing happens before the first)."""
        _lib.check(_lib.gin_ep_combine_fence(self._handle(),
                                             self._stream(None)))

    def combine_buffer(self, kind="torch"):
        """The buffer's combine input, [L, S, H] bf16 (kind "torch" or
        "numpy"): experts that write their outputs here and pass it to
        combine save its copy (gin_ep_combine_buffer)."""
        key = ("combine", kind)
        if key not in self._views:
            p = ctypes.c_void_p()
            _lib.check(_lib.gin_ep_combine_buffer(self._handle(),
                                                  ctypes.byref(p)))
            L, S = self.local_experts, self.ranks * self.max_tokens
            self._views[key] = self._export(
                kind, p.value, "bfloat16" if kind == "torch" else "uint16",
                (L, S, self.hidden))
        return self._views[key]

    def combine(self, y, topk_idx, topk_weights, out=None, phases="both"):
        """Returns to each token's rank its experts' outputs y [L, S, H]
        (bf16, in dispatch's slots), summed with topk_weights [T, K]
        (fp32) into out [T, H] (bf16; allocated when None, of y's kind).
        topk_idx and T as given to the dispatch. Returns out."""
        self.comm.check_async()
        kind = _kind(y)
        S = self.ranks * self.max_tokens
        yp = _arrays.pointer(y, "combine: y", ("bfloat16", "uint16"),
                             (self.local_experts, S, self.hidden),
                             self.device)
        shape = _arrays.describe(topk_idx)[2]
        T = shape[0] if shape else -1
        ip, idx64 = self._idx(topk_idx, T, "combine: topk_idx")
        wp = _arrays.pointer(topk_weights, "combine: topk_weights",
                             ("float32",), (T, self.topk), self.device)
        _check_phases("combine", phases)
        if out is None:
            out = _empty(kind, (T, self.hidden), self.device)
        op = _arrays.pointer(out, "combine: out", ("bfloat16", "uint16"),
                             (T, self.hidden), self.device)
        o = _lib.EpCombineOpts(idx64)
        _lib.check(_lib.gin_ep_combine_ex(
            self._handle(), yp, ip, wp, T, ctypes.byref(o), op,
            self._stream(kind), _PHASES[phases]))
        self._after()
        return out


def _default_device():
    if _lib.TARGET == "host":
        return "cpu"
    import torch
    return f"cuda:{torch.cuda.current_device()}"


def _empty(kind, shape, device):
    if kind == "torch":
        import torch
        return torch.empty(shape, dtype=torch.bfloat16, device=device)
    import numpy
    return numpy.empty(shape, dtype=numpy.uint16)

