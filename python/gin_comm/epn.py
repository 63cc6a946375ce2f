"""gin EP normal mode from Python: DeepEP's normal-mode dispatch and
combine (gin_ep_normal.h) on torch tensors (cuda target: on the
communicator's GPU; host target: CPU). gin_comm.deep_ep's Buffer builds
its normal mode on this; the semantics are the C API's.

    ep = EpNormal(comm, hidden=7168, topk=8, num_experts=256,
                  channels=12, ring_tokens=128)
    h, counts = ep.notify(in_rank, per_expert, channels=12)  # collective
    n = int(counts[0])                                  # host sync
    out = ep.dispatch(x, h, n, topk_idx=idx, topk_weights=w)
    y = ep.combine(expert_out, h)
"""

import ctypes

import torch

from . import _arrays, _lib

__all__ = ["EpNormal", "NormalHandle"]


def _err(msg):
    return _lib.error(_lib.ERR_INVALID, msg)


def _ptr(t, what, dtypes, shape, device, contiguous=True):
    """t's data pointer after checking its dtype, shape (None: any size
    there), device and, unless told otherwise, contiguity."""
    if not isinstance(t, torch.Tensor):
        raise _err(f"{what}: a torch tensor is needed, not {type(t).__name__}")
    if t.dtype not in dtypes:
        raise _err(f"{what}: dtype {t.dtype}, expected one of "
                   f"{', '.join(str(d) for d in dtypes)}")
    if t.dim() != len(shape) or any(
            n is not None and n != m for n, m in zip(shape, t.shape)):
        want = ", ".join("*" if n is None else str(n) for n in shape)
        raise _err(f"{what}: shape {tuple(t.shape)}, expected [{want}]")
    if torch.device(device) != t.device:
        raise _err(f"{what}: on {t.device}, expected {device}")
    if contiguous and not t.is_contiguous():
        raise _err(f"{what}: must be contiguous")
    return ctypes.c_void_p(t.data_ptr())


class NormalHandle:
    """What a normal-mode dispatch leaves for a cached dispatch and for
    combine (gin_epn_handle_t), as tensors this object keeps alive:
    in_rank [T, R] bool, send_head [T, R], chan_prefix [R, C],
    rank_prefix [R], recv_chan_prefix [R, C], recv_src_idx [capacity]
    (int32)."""

    def __init__(self, ep, T, C, in_rank, send_head, chan_prefix,
                 rank_prefix, recv_chan_prefix):
        self.ep, self.num_tokens, self.channels = ep, T, C
        self.in_rank, self.send_head = in_rank, send_head
        self.chan_prefix, self.rank_prefix = chan_prefix, rank_prefix
        self.recv_chan_prefix = recv_chan_prefix
        self.recv_src_idx, self.capacity = None, 0

    def _c(self):
        def p(t):
            return None if t is None else t.data_ptr()
        return _lib.EpnHandle(self.num_tokens, self.channels, self.capacity,
                              p(self.in_rank), p(self.send_head),
                              p(self.chan_prefix), p(self.rank_prefix),
                              p(self.recv_chan_prefix), p(self.recv_src_idx))


class EpNormal:
    """A gin normal-mode EP buffer (gin_epn_t) on a Comm; creating and
    destroying it are collective (every rank the same sizes)."""

    def __init__(self, comm, hidden, topk, num_experts, channels,
                 ring_tokens, device=None):
        self.comm = comm
        self.hidden, self.topk, self.num_experts = hidden, topk, num_experts
        self.channels, self.ring_tokens = channels, ring_tokens
        self.ranks = comm.size
        self.local_experts = num_experts // max(self.ranks, 1)
        self.device = device or ("cpu" if _lib.TARGET == "host" else
                                 f"cuda:{torch.cuda.current_device()}")
        cfg = _lib.EpnConfig(hidden, topk, num_experts, channels, ring_tokens)
        h = ctypes.c_void_p()
        _lib.check(_lib.gin_epn_create(comm._handle(), ctypes.byref(cfg),
                                       ctypes.byref(h)))
        self._h = h

    @staticmethod
    def size_hint(hidden, topk, num_experts, channels, ring_tokens, nranks):
        """Bytes of device memory a buffer of these sizes takes per rank."""
        cfg = _lib.EpnConfig(hidden, topk, num_experts, channels, ring_tokens)
        n = ctypes.c_size_t()
        _lib.check(_lib.gin_epn_size_hint(ctypes.byref(cfg), nranks,
                                          ctypes.byref(n)))
        return n.value

    def _handle(self):
        if self._h is None:
            raise _lib.error(_lib.ERR_STATE, "EpNormal: destroyed")
        return self._h

    def destroy(self):
        """Collective; the buffer's tensors are no longer valid after."""
        if self._h is not None:
            h, self._h = self._h, None
            _lib.check(_lib.gin_epn_destroy(h))

    def _stream(self):
        return _arrays.stream(self.device)

    def _after(self):
        _arrays.after_call(self.comm, self.device)

    def _empty(self, shape, dtype):
        return torch.empty(shape, dtype=dtype, device=self.device)

    def layout(self, topk_idx, num_experts=None):
        """DeepEP's get_dispatch_layout on the stream: (per_rank [R]
        int32, per_expert [E] int32, in_rank [T, R] bool) of topk_idx
        [T, K] (int64 or int32; -1: none)."""
        E = num_experts or self.num_experts
        if E != self.num_experts:
            raise _err(f"layout: num_experts {E}, but this buffer has "
                       f"{self.num_experts}")
        T = topk_idx.size(0) if topk_idx.dim() == 2 else -1
        K = topk_idx.size(1) if topk_idx.dim() == 2 else 0
        ip = _ptr(topk_idx, "layout: topk_idx", (torch.int64, torch.int32),
                  (T, K), self.device)
        R = self.ranks
        per_rank = self._empty((R,), torch.int32)
        per_expert = self._empty((E,), torch.int32)
        in_rank = self._empty((T, R), torch.bool)
        self.comm.check_async()
        _lib.check(_lib.gin_epn_layout(
            self._handle(), ip, int(topk_idx.dtype == torch.int64), T, K,
            per_rank.data_ptr(), per_expert.data_ptr(), in_rank.data_ptr(),
            self._stream()))
        self._after()
        return per_rank, per_expert, in_rank

    def notify(self, in_rank, per_expert, channels):
        """Exchanges a dispatch's counts with every rank (collective):
        returns (handle, recv_counts [1 + L] int32 on the device: the rows
        coming here, then the top-k slots naming each local expert)."""
        R, E, L = self.ranks, self.num_experts, self.local_experts
        T = in_rank.size(0) if in_rank.dim() == 2 else -1
        ir = _ptr(in_rank, "dispatch: is_token_in_rank",
                  (torch.bool, torch.uint8), (T, R), self.device)
        pe = _ptr(per_expert, "dispatch: num_tokens_per_expert",
                  (torch.int32,), (E,), self.device)
        C = int(channels)
        h = NormalHandle(self, T, C, in_rank,
                         self._empty((T, R), torch.int32),
                         self._empty((R, C), torch.int32),
                         self._empty((R,), torch.int32),
                         self._empty((R, C), torch.int32))
        counts = self._empty((1 + L,), torch.int32)
        c = h._c()
        self.comm.check_async()
        _lib.check(_lib.gin_epn_notify(self._handle(), ir, pe, T, C,
                                       ctypes.byref(c), counts.data_ptr(),
                                       self._stream()))
        self._after()
        return h, counts

    def dispatch(self, x, h, capacity=None, scales=None, topk_idx=None,
                 topk_weights=None, chunk=6, worst=False):
        """Sends x [T, H] (bf16, or fp8 bytes with scales [T, H / 128]
        4-byte, any strides) to the ranks the handle says; the first
        dispatch of a handle fixes its capacity (the rows of the outputs;
        a cached dispatch, topk_idx None, reuses it). Returns (recv_x,
        recv_scales or None, recv_topk_idx [cap, K] int64 or None,
        recv_topk_weights [cap, K] fp32 or None)."""
        if h.ep is not self:
            raise _err("dispatch: the handle is another buffer's")
        T, H = h.num_tokens, self.hidden
        fp8 = scales is not None
        xp = _ptr(x, "dispatch: x", (torch.float8_e4m3fn, torch.uint8)
                  if fp8 else (torch.bfloat16,), (T, H), self.device)
        if h.recv_src_idx is None:
            if capacity is None:
                raise _err("dispatch: the first dispatch of a handle needs "
                           "its capacity")
            h.capacity = int(capacity)
            h.recv_src_idx = self._empty((h.capacity,), torch.int32)
        elif topk_idx is not None:
            raise _err("dispatch: a cached dispatch (a handle that "
                       "dispatched already) takes no topk_idx")
        cap, G = h.capacity, H // 128
        a = _lib.EpnDispatchArgs()
        a.x = xp
        a.chunk = int(chunk)
        a.worst = int(bool(worst))
        recv_x = self._empty((cap, H), x.dtype)
        a.recv_x = recv_x.data_ptr()
        recv_scales = None
        if fp8:
            a.fp8 = 1  # also where this rank has no tokens
            a.scales = _ptr(scales, "dispatch: x's scales",
                            (torch.float32, torch.int32), (T, G), self.device,
                            contiguous=False)
            a.scale_stride_t, a.scale_stride_g = scales.stride()
            recv_scales = self._empty((cap, G), scales.dtype)
            a.recv_scales = recv_scales.data_ptr()
        ri = rw = None
        if topk_idx is not None:
            K = topk_idx.size(1) if topk_idx.dim() == 2 else -1
            a.topk_idx = _ptr(topk_idx, "dispatch: topk_idx",
                              (torch.int64, torch.int32), (T, K), self.device)
            a.topk_weights = _ptr(topk_weights, "dispatch: topk_weights",
                                  (torch.float32,), (T, K), self.device)
            a.idx64 = int(topk_idx.dtype == torch.int64)
            a.num_topk = K  # also where this rank has no tokens
            ri = self._empty((cap, K), torch.int64)
            rw = self._empty((cap, K), torch.float32)
            a.recv_topk_idx, a.recv_topk_weights = ri.data_ptr(), rw.data_ptr()
        c = h._c()
        self.comm.check_async()
        _lib.check(_lib.gin_epn_dispatch(self._handle(), ctypes.byref(a),
                                         ctypes.byref(c), self._stream()))
        self._after()
        return recv_x, recv_scales, ri, rw

    def combine(self, x, h, topk_weights=None, bias=None, chunk=6):
        """Returns the rows x [capacity or the rows received, H] (bf16, in
        the dispatch's receive order) to their tokens' ranks, summed there
        (fp32) with the biases (None, a [T, H] tensor or two): (out [T, H]
        bf16, summed topk_weights [T, K] fp32 or None)."""
        if h.ep is not self:
            raise _err("combine: the handle is another buffer's")
        T, H = h.num_tokens, self.hidden
        a = _lib.EpnCombineArgs()
        a.x = _ptr(x, "combine: x", (torch.bfloat16,), (None, H), self.device)
        if x.size(0) > h.capacity:
            raise _err(f"combine: x has {x.size(0)} rows, more than the "
                       f"dispatch's {h.capacity}")
        a.chunk = int(chunk)
        out = self._empty((T, H), torch.bfloat16)
        a.out = out.data_ptr()
        ow = None
        if topk_weights is not None:
            K = topk_weights.size(1) if topk_weights.dim() == 2 else -1
            a.topk_weights = _ptr(topk_weights, "combine: topk_weights",
                                  (torch.float32,), (x.size(0), K),
                                  self.device)
            a.num_topk = K
            ow = self._empty((T, K), torch.float32)
            a.out_weights = ow.data_ptr()
        if isinstance(bias, torch.Tensor):
            bias = (bias,)
        for i, b in enumerate(bias or ()):
            if b is not None:
                a.bias[i] = _ptr(b, f"combine: bias[{i}]", (torch.bfloat16,),
                                 (T, H), self.device)
        c = h._c()
        self.comm.check_async()
        _lib.check(_lib.gin_epn_combine(self._handle(), ctypes.byref(a),
                                        ctypes.byref(c), self._stream()))
        self._after()
        return out, ow
