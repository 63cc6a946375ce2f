"""DeepEP's low-latency API on gin: code written for DeepEP runs on gin by
changing one line,

    import deep_ep                      # before
    from gin_comm import deep_ep        # after

and keeps calling Buffer(group, num_rdma_bytes=..., low_latency_mode=True),
get_low_latency_rdma_size_hint, low_latency_dispatch,
low_latency_combine, get_next_low_latency_combine_buffer and
clean_low_latency_buffer with DeepEP's (v1.2.1) arguments, return values,
tensor shapes, dtypes and layouts: FP8 scales column-major, UE8M0 scales
packed four to an int32 with round_scale, int64 topk_idx, layout_range
as begin << 32 | count.

What differs, by design:
- Everything runs on the caller's current stream (gin needs no
  communication stream), so async_finish's event is recorded there and
  waiting on it orders nothing new; return_recv_hook splits each call
  into its send phase (issued by the call) and receive phase (the hook)
  as DeepEP does. Neither synchronises with the host, which capture in
  a CUDA graph needs (tests/python/ranks_graph.py; not yet run on a
  GPU). A graph replays the buffer its capture took every time, so a
  graph that holds a dispatch must hold its combine too (then every
  rank's receive is over before its next dispatch goes out, as the two
  buffers otherwise ensure); dispatches alone replayed back to back
  could overwrite rows a peer still reads.
- Tokens of one expert arrive grouped by source rank in rank order (one
  of the orders DeepEP allows: its own depends on arrival).
- num_rdma_bytes and num_qps_per_rank are not needed: gin sizes its
  buffers at the first dispatch of each shape (two per shape, as DeepEP's
  two low-latency buffers, so two dispatches' results may be held).
- recv_x, its scales, recv_count and the handle's tensors are views of
  those buffers, not tensors of their own: each is overwritten by the
  dispatch after next of its shape (DeepEP's warning: at most two
  results held) and freed by destroy(). Clone what must live longer.
- get_next_low_latency_combine_buffer gives the buffer the handle's
  dispatch used; when that dispatch was combined already, it first waits
  (on the stream, at a barrier of every rank) until no rank still reads
  the last combine's rows from there. It is collective, as the combine
  it prepares.
- The host target (CPU tensors, gin_comm.TARGET == "host") runs the same
  API, so it is tested without a GPU.
- Normal (high-throughput) mode: get_dispatch_layout, dispatch (with
  and without a handle, num_worst_tokens, expert_alignment, FP8 input
  with any scale strides) and combine (biases, summed top-k weights)
  with DeepEP's signatures, returns and handle, on gin's normal-mode
  buffer (gin_ep_normal.h, made at the first dispatch of each hidden
  size and expert count, collective): Config's num_sms gives the
  channels (num_sms / 2) and num_max_nvl_chunked_send_tokens the chunk;
  the ring rows are the most (up to 256) that num_nvl_bytes holds. A
  dispatch without a handle and without num_worst_tokens reads the row
  count on the host, as DeepEP's does. The handle is DeepEP's 6-tuple
  (only rank_prefix_matrix's column of this rank is filled, the one
  DeepEP reads). Groups of more than 8 ranks take DeepEP's internode
  shapes (its nodes of 8 ranks, node = rank // 8): get_dispatch_layout
  gives num_tokens_per_rdma_rank, and the handle is DeepEP's internode
  10-tuple, with is_token_in_rank, gbl_channel_prefix_matrix,
  recv_gbl_channel_prefix_matrix, recv_gbl_rank_prefix_sum (what
  DeepEP's test reads), recv_src_meta (each row's source index) and
  send_nvl_head (each token's place per destination rank) filled; its
  four RDMA-stage entries are None, since gin sends each token straight
  to every destination rank (the direct path within a host, the proxy
  across hosts) with no node-level forwarding for them to describe. Any
  group size runs either way.
LogFMT combine and the wait-cost statistics are not implemented:
calling them raises NotImplementedError naming them.
"""

import torch

from . import _lib
from .comm import Comm
from .ep import Ep
from .epn import EpNormal

__all__ = ["Buffer", "Config", "EventOverlap"]

_NAME = "gin_comm.deep_ep"
_NVL = 8  # DeepEP's ranks a node (NUM_MAX_NVL_PEERS): more is internode


def _unsupported(what):
    return NotImplementedError(
        f"{_NAME}: {what} is not supported (gin implements DeepEP's "
        f"low-latency API and its normal mode)")


class Config:
    """DeepEP's normal-mode config: num_sms (channels = num_sms / 2), the
    chunk (num_max_nvl_chunked_send_tokens) and ring rows
    (num_max_nvl_chunked_recv_tokens; gin's rings are sized once, from
    num_nvl_bytes, and the chunk is capped by them); the RDMA pair is
    kept for DeepEP's checks only."""

    def __init__(self, num_sms=20, num_max_nvl_chunked_send_tokens=6,
                 num_max_nvl_chunked_recv_tokens=256,
                 num_max_rdma_chunked_send_tokens=6,
                 num_max_rdma_chunked_recv_tokens=256):
        nvl_s, nvl_r = (num_max_nvl_chunked_send_tokens,
                        num_max_nvl_chunked_recv_tokens)
        rdma_s, rdma_r = (num_max_rdma_chunked_send_tokens,
                          num_max_rdma_chunked_recv_tokens)
        if num_sms < 0 or nvl_s <= 0 or nvl_r <= 0 or nvl_s >= nvl_r:
            raise ValueError(f"{_NAME}: Config: num_sms {num_sms} must be "
                             f">= 0 and 0 < num_max_nvl_chunked_send_tokens "
                             f"{nvl_s} < num_max_nvl_chunked_recv_tokens "
                             f"{nvl_r}")
        if rdma_s <= 0 or rdma_r <= 0:
            raise ValueError(f"{_NAME}: Config: the RDMA chunk sizes "
                             f"{rdma_s}, {rdma_r} must be positive")
        rdma_r = (rdma_r + rdma_s - 1) // rdma_s * rdma_s
        if rdma_s >= rdma_r or rdma_s > rdma_r // 2:
            raise ValueError(f"{_NAME}: Config: num_max_rdma_chunked_send_"
                             f"tokens {rdma_s} must be at most half of "
                             f"num_max_rdma_chunked_recv_tokens {rdma_r}")
        self.num_sms = num_sms
        self.num_max_nvl_chunked_send_tokens = nvl_s
        self.num_max_nvl_chunked_recv_tokens = nvl_r
        self.num_max_rdma_chunked_send_tokens = rdma_s
        self.num_max_rdma_chunked_recv_tokens = rdma_r

    def get_nvl_buffer_size_hint(self, hidden_bytes, num_ranks):
        """Bytes gin's normal-mode buffer takes per rank for this config
        (top-8, 8 experts a rank)."""
        return EpNormal.size_hint((max(hidden_bytes // 2, 1) + 7) // 8 * 8, 8,
                                  8 * num_ranks, max(self.num_sms // 2, 1),
                                  self.num_max_nvl_chunked_recv_tokens,
                                  num_ranks)

    def get_rdma_buffer_size_hint(self, hidden_bytes, num_ranks):
        """gin's normal mode takes no RDMA buffer of its own: 0."""
        return 0


class EventOverlap:
    """DeepEP's EventOverlap: event is a torch.cuda.Event recorded on the
    current stream after the call (None on the host target or without
    async_finish); extra_tensors are kept alive with it."""

    def __init__(self, event=None, extra_tensors=None):
        self.event = event
        self.extra_tensors = extra_tensors

    def current_stream_wait(self):
        if self.event is not None:
            torch.cuda.current_stream().wait_event(self.event)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.current_stream_wait()
        return False


class _Handle(tuple):
    """DeepEP's handle (src_info, layout_range, num_max_dispatch_tokens_per
    _rank, hidden, num_experts), carrying the gin buffer it came from."""

    def __new__(cls, items, ep):
        h = super().__new__(cls, items)
        h.ep = ep
        return h


class Buffer:
    """DeepEP's Buffer, low-latency mode, on a gin communicator over the
    group's ranks (or an mpi4py communicator's, as `comm`)."""

    num_sms = 20

    def __init__(self, group=None, num_nvl_bytes=0, num_rdma_bytes=0,
                 low_latency_mode=False, num_qps_per_rank=24,
                 allow_nvlink_for_low_latency_mode=True, allow_mnnvl=False,
                 explicitly_destroy=False, comm=None):
        if group is None and comm is None:
            raise ValueError("Either 'group' or 'comm' must be provided.")
        self.group = group if group is not None else comm
        self.num_nvl_bytes = num_nvl_bytes
        self.num_rdma_bytes = num_rdma_bytes
        self.low_latency_mode = low_latency_mode
        self.explicitly_destroy = explicitly_destroy
        if group is not None:
            self._comm = Comm.from_torch(group)
        else:  # mpi4py
            uid = Comm.make_uid(comm.Get_size()) if comm.Get_rank() == 0 \
                else None
            self._comm = Comm.from_uid(comm.allgather(uid)[0],
                                       comm.Get_rank(), comm.Get_size())
        self.rank = self._comm.rank
        self.group_size = self._comm.size
        self._device = "cpu" if _lib.TARGET == "host" else \
            f"cuda:{torch.cuda.current_device()}"
        self._eps = {}   # (M, hidden, topk, E) -> [Ep, Ep]
        self._turn = {}  # the same key -> which of the two is next
        self._normal = {}  # (hidden, E) -> EpNormal

    # ------------------------------------------------------------ static

    @staticmethod
    def is_sm90_compiled():
        return _lib.TARGET == "cuda"

    @staticmethod
    def set_num_sms(new_num_sms):
        """Normal mode's SM count; gin sizes its own grids (kept only)."""
        assert new_num_sms % 2 == 0, "The SM count must be even"
        Buffer.num_sms = new_num_sms

    @staticmethod
    def capture():
        """An EventOverlap of the current stream's work so far."""
        return EventOverlap(_record())

    @staticmethod
    def get_low_latency_rdma_size_hint(num_max_dispatch_tokens_per_rank,
                                       hidden, num_ranks, num_experts):
        """Bytes of device memory the two gin buffers of this shape take
        per rank, at DeepEP's default top-8 (gin allocates them itself at
        the first dispatch, for the top-k it sees)."""
        return 2 * Ep.size_hint(num_max_dispatch_tokens_per_rank, hidden,
                                min(8, num_experts), num_experts, num_ranks)

    # ----------------------------------------------------------- lifetime

    def destroy(self):
        """Collective: releases every gin buffer and the communicator."""
        eps, self._eps = self._eps, {}
        for pair in eps.values():
            for ep in pair:
                ep.destroy()
        normal, self._normal = self._normal, {}
        for ep in normal.values():
            ep.destroy()
        if self._comm is not None:
            c, self._comm = self._comm, None
            c.destroy()

    def __del__(self):
        if getattr(self, "_comm", None) is not None and \
                not self.explicitly_destroy:
            try:
                self.destroy()
            except Exception:  # noqa: BLE001 - nothing to report it to
                pass

    def _ep(self, M, hidden, topk, E):
        """The gin buffer the next dispatch of this shape uses: two per
        shape in turn (collective when first made)."""
        if self._comm is None:
            raise _lib.error(_lib.ERR_STATE, f"{_NAME}: this Buffer was "
                             "destroyed")
        key = (M, hidden, topk, E)
        if key not in self._eps:
            self._eps[key] = [Ep(self._comm, M, hidden, topk, E,
                                 device=self._device) for _ in range(2)]
            self._turn[key] = 0
        return self._eps[key][self._turn[key]]

    def _turned(self, ep):
        """After a dispatch on ep went out: the next one takes the other
        buffer of its shape (a refused call leaves the turn as it was)."""
        for key, pair in self._eps.items():
            if pair[self._turn[key]] is ep:
                self._turn[key] = 1 - self._turn[key]

    def _handle_ep(self, handle):
        ep = getattr(handle, "ep", None)
        if ep is not None:
            return ep
        ptr = handle[0].data_ptr()  # a handle rebuilt by the caller
        for pair in self._eps.values():
            for ep in pair:
                if any(r.src_token.data_ptr() == ptr
                       for r in ep._views.values() if hasattr(r, "src_token")):
                    return ep
        raise _lib.error(_lib.ERR_INVALID, f"{_NAME}: the handle is not "
                         "one this Buffer's low_latency_dispatch returned")

    # ---------------------------------------------------------- low latency

    def clean_low_latency_buffer(self, num_max_dispatch_tokens_per_rank,
                                 hidden, num_experts):
        """gin's buffers keep no state a normal-mode call could dirty:
        nothing to clean."""

    def low_latency_dispatch(self, x, topk_idx,
                             num_max_dispatch_tokens_per_rank, num_experts,
                             cumulative_local_expert_recv_stats=None,
                             dispatch_wait_recv_cost_stats=None,
                             use_fp8=True, round_scale=False,
                             use_ue8m0=False, async_finish=False,
                             return_recv_hook=False):
        """DeepEP's low_latency_dispatch: returns (recv_x, recv_count,
        handle, event, hook); recv_x is (fp8 [L, R*M, H], scales) with
        use_fp8 (scales fp32 [L, R*M, H/128] column-major, or with
        use_ue8m0 int32 [L, R*M, H/512] of packed UE8M0 bytes), else bf16
        [L, R*M, H]."""
        if dispatch_wait_recv_cost_stats is not None:
            raise _unsupported("dispatch_wait_recv_cost_stats")
        if use_ue8m0 and not round_scale:
            raise ValueError(f"{_NAME}: use_ue8m0 needs round_scale=True "
                             "(UE8M0 scales are powers of two)")
        if topk_idx.dim() != 2 or x.dim() != 2:
            raise _lib.error(_lib.ERR_INVALID, f"{_NAME}: x and topk_idx must "
                             "be 2-D ([num_tokens, hidden], [num_tokens, "
                             "num_topk])")
        ep = self._ep(num_max_dispatch_tokens_per_rank, x.size(1),
                      topk_idx.size(1), num_experts)
        kw = dict(fp8=bool(use_fp8),
                  round_scale=bool(round_scale and use_fp8),  # else unused
                  scale_layout=("ue8m0" if use_ue8m0 else "cols")
                  if use_fp8 else "rows",
                  packed_layout=True,
                  recv_stats=cumulative_local_expert_recv_stats)
        r = ep.dispatch(x, topk_idx, phases="send" if return_recv_hook
                        else "both", **kw)
        self._turned(ep)

        def hook():  # the receive phase
            ep.dispatch(x, topk_idx, phases="recv", **kw)
        handle = _Handle((r.src_token, r.layout,
                          num_max_dispatch_tokens_per_rank, x.size(1),
                          num_experts), ep)
        recv_x = (r.x, r.scales) if use_fp8 else r.x
        event = EventOverlap(_record() if async_finish else None,
                             (x, topk_idx) if async_finish else None)
        return recv_x, r.count, handle, event, \
            hook if return_recv_hook else None

    def low_latency_combine(self, x, topk_idx, topk_weights, handle,
                            use_logfmt=False, zero_copy=False,
                            async_finish=False, return_recv_hook=False,
                            out=None, combine_wait_recv_cost_stats=None):
        """DeepEP's low_latency_combine: x [L, R*M, H] bf16 (the experts'
        outputs in dispatch's slots; with zero_copy, already written to
        get_next_low_latency_combine_buffer), returns (combined_x [T, H]
        bf16, event, hook)."""
        if use_logfmt:
            raise _unsupported("use_logfmt (LogFMT combine)")
        if combine_wait_recv_cost_stats is not None:
            raise _unsupported("combine_wait_recv_cost_stats")
        ep = self._handle_ep(handle)
        y = ep.combine_buffer("torch") if zero_copy else x
        out = ep.combine(y, topk_idx, topk_weights, out=out,
                         phases="send" if return_recv_hook else "both")

        def hook():  # the receive phase
            ep.combine(y, topk_idx, topk_weights, out=out, phases="recv")
        event = EventOverlap(_record() if async_finish else None,
                             (x, topk_idx, topk_weights, out)
                             if async_finish else None)
        return out, event, hook if return_recv_hook else None

    def get_next_low_latency_combine_buffer(self, handle):
        """The combine input of the buffer behind handle, [L, R*M, H]
        bf16: outputs written here need no copy (zero_copy=True)."""
        ep = self._handle_ep(handle)
        ep.combine_fence()
        return ep.combine_buffer("torch")

    # ---------------------------------------------------------- not here

    def get_comm_stream(self):
        raise _unsupported("get_comm_stream (gin runs on the caller's "
                           "stream)")

    def get_local_buffer_tensor(self, *args, **kwargs):
        raise _unsupported("get_local_buffer_tensor")

    # ---------------------------------------------------------- normal

    # Most channels a normal-mode buffer has (num_sms / 2 of a config).
    _MAX_CHANNELS = 16

    def _epn(self, hidden, E):
        """The normal-mode buffer of this hidden size and expert count
        (collective when first made): the most ring rows, up to 256, that
        num_nvl_bytes holds (at least 8)."""
        if self._comm is None:
            raise _lib.error(_lib.ERR_STATE, f"{_NAME}: this Buffer was "
                             "destroyed")
        key = (hidden, E)
        if key not in self._normal:
            R, rows = self.group_size, 8
            for s in (256, 128, 64, 32, 16):
                if EpNormal.size_hint(hidden, 32, E, self._MAX_CHANNELS, s,
                                      R) <= self.num_nvl_bytes:
                    rows = s
                    break
            self._normal[key] = EpNormal(self._comm, hidden, 32, E,
                                         self._MAX_CHANNELS, rows,
                                         device=self._device)
        return self._normal[key]

    def _shape(self, config, ep):
        """(channels, chunk) of a config on ep."""
        ch = max(config.num_sms // 2, 1)
        if ch > ep.channels:
            raise _lib.error(_lib.ERR_INVALID, f"{_NAME}: Config num_sms "
                             f"{config.num_sms} asks for {ch} channels; "
                             f"gin's normal mode has at most {ep.channels}")
        return ch, min(config.num_max_nvl_chunked_send_tokens,
                       ep.ring_tokens)

    @staticmethod
    def _wait(previous_event):
        if previous_event is not None:
            previous_event.current_stream_wait()

    def get_dispatch_layout(self, topk_idx, num_experts, previous_event=None,
                            async_finish=False,
                            allocate_on_comm_stream=False):
        """DeepEP's get_dispatch_layout: (num_tokens_per_rank [R] int32,
        num_tokens_per_rdma_rank ([ceil(R / 8)] int32: tokens with an
        expert on each node of 8 ranks; None for 8 ranks or fewer),
        num_tokens_per_expert [E] int32, is_token_in_rank [T, R] bool,
        event), on the current stream. Ids outside [0, E) count
        nowhere here (the dispatch that carries them fails naming them)."""
        self._wait(previous_event)
        R, E = self.group_size, num_experts
        if topk_idx.dim() != 2 or E % R:
            raise _lib.error(_lib.ERR_INVALID, f"{_NAME}: topk_idx must be "
                             f"[num_tokens, num_topk] and num_experts {E} a "
                             f"multiple of the {R} ranks")
        L, T = E // R, topk_idx.size(0)
        idx = topk_idx.long()
        ok = (idx >= 0) & (idx < E)
        e = torch.where(ok, idx, torch.full_like(idx, E))
        per_expert = torch.zeros(E + 1, dtype=torch.int64,
                                 device=idx.device)
        per_expert.scatter_add_(0, e.reshape(-1), torch.ones_like(
            e.reshape(-1)))
        r = torch.where(ok, idx // L, torch.full_like(idx, R))
        in_rank = torch.zeros((T, R + 1), dtype=torch.bool,
                              device=idx.device)
        in_rank.scatter_(1, r, True)
        in_rank = in_rank[:, :R].contiguous()
        per_rank = in_rank.sum(0, dtype=torch.int32)
        per_node = None
        if R > _NVL:  # DeepEP's internode shape: tokens to each node
            per_node = torch.stack(
                [in_rank[:, n:n + _NVL].any(1) for n in range(0, R, _NVL)],
                1).sum(0, dtype=torch.int32)
        event = EventOverlap(_record() if async_finish else None,
                             (topk_idx,) if async_finish else None)
        return per_rank, per_node, per_expert[:E].to(torch.int32), in_rank, \
            event

    def dispatch(self, x, handle=None, num_tokens_per_rank=None,
                 num_tokens_per_rdma_rank=None, is_token_in_rank=None,
                 num_tokens_per_expert=None, topk_idx=None,
                 topk_weights=None, expert_alignment=1, num_worst_tokens=0,
                 config=None, previous_event=None, async_finish=False,
                 allocate_on_comm_stream=False):
        """DeepEP's normal-mode dispatch: (recv_x or (recv_x, scales),
        recv_topk_idx, recv_topk_weights, num_recv_tokens_per_expert_list,
        handle, event); with a handle (cached) (recv_x, None, None, None,
        None, event)."""
        self._wait(previous_event)
        x, scales = x if isinstance(x, tuple) else (x, None)
        config = config or self.get_dispatch_config(self.group_size)
        if handle is not None:
            if topk_idx is not None or topk_weights is not None:
                raise _lib.error(_lib.ERR_INVALID, f"{_NAME}: a dispatch "
                                 "with a handle takes no topk_idx or "
                                 "topk_weights")
            h = getattr(handle, "gin", None)
            if h is None:
                raise _lib.error(_lib.ERR_INVALID, f"{_NAME}: the handle is "
                                 "not one this Buffer's dispatch returned")
            ch, chunk = self._shape(config, h.ep)
            rx, rs, _, _ = h.ep.dispatch(x, h, scales=scales, chunk=chunk)
            event = EventOverlap(_record() if async_finish else None,
                                 (x, scales) if async_finish else None)
            return (rx, rs) if scales is not None else rx, None, None, \
                None, None, event
        if is_token_in_rank is None or num_tokens_per_expert is None:
            raise _lib.error(_lib.ERR_INVALID, f"{_NAME}: a dispatch without "
                             "a handle needs is_token_in_rank and "
                             "num_tokens_per_expert (get_dispatch_layout's)")
        if (topk_idx is None) != (topk_weights is None):
            raise _lib.error(_lib.ERR_INVALID, f"{_NAME}: topk_idx and "
                             "topk_weights go together")
        if num_worst_tokens > 0 and topk_idx is None:
            raise _lib.error(_lib.ERR_INVALID, f"{_NAME}: num_worst_tokens "
                             "needs topk_idx and topk_weights")
        if x.dim() != 2:
            raise _lib.error(_lib.ERR_INVALID, f"{_NAME}: x must be "
                             "[num_tokens, hidden]")
        ep = self._epn(x.size(1), num_tokens_per_expert.numel())
        ch, chunk = self._shape(config, ep)
        h, counts = ep.notify(is_token_in_rank, num_tokens_per_expert, ch)
        if num_worst_tokens > 0:
            cap, per_expert = num_worst_tokens, []
        else:
            got = counts.cpu().tolist()  # the host's sync, as DeepEP's
            a = max(int(expert_alignment), 1)
            cap, per_expert = got[0], [(n + a - 1) // a * a for n in got[1:]]
        rx, rs, ri, rw = ep.dispatch(x, h, cap, scales=scales,
                                     topk_idx=topk_idx,
                                     topk_weights=topk_weights, chunk=chunk,
                                     worst=num_worst_tokens > 0)
        R = self.group_size
        if R > _NVL:  # DeepEP's internode handle (RDMA stage: none here)
            handle = _NormalHandle((is_token_in_rank, None, h.chan_prefix,
                                    None, None, h.recv_chan_prefix,
                                    h.rank_prefix, h.recv_src_idx, None,
                                    h.send_head), h)
        else:
            rank_prefix = torch.zeros((R, R), dtype=torch.int32,
                                      device=h.rank_prefix.device)
            rank_prefix[:, self.rank] = h.rank_prefix
            handle = _NormalHandle((rank_prefix, h.chan_prefix,
                                    h.recv_chan_prefix, h.recv_src_idx,
                                    is_token_in_rank, h.send_head), h)
        event = EventOverlap(_record() if async_finish else None,
                             (x, scales, topk_idx, topk_weights)
                             if async_finish else None)
        return (rx, rs) if scales is not None else rx, ri, rw, per_expert, \
            handle, event

    def combine(self, x, handle, topk_weights=None, bias=None, config=None,
                previous_event=None, async_finish=False,
                allocate_on_comm_stream=False):
        """DeepEP's normal-mode combine: (combined_x [T, H] bf16,
        combined_topk_weights [T, K] fp32 or None, event)."""
        self._wait(previous_event)
        h = getattr(handle, "gin", None)
        if h is None:
            raise _lib.error(_lib.ERR_INVALID, f"{_NAME}: the handle is not "
                             "one this Buffer's dispatch returned")
        config = config or self.get_combine_config(self.group_size)
        ch, chunk = self._shape(config, h.ep)
        out, ow = h.ep.combine(x, h, topk_weights=topk_weights, bias=bias,
                               chunk=chunk)
        event = EventOverlap(_record() if async_finish else None,
                             (x, topk_weights, out) if async_finish else None)
        return out, ow, event

    def internode_dispatch(self, *args, **kwargs):
        """DeepEP's internode_dispatch: dispatch (one path for any group:
        the direct path within a host, the proxy across hosts)."""
        return self.dispatch(*args, **kwargs)

    def internode_combine(self, *args, **kwargs):
        """DeepEP's internode_combine: combine."""
        return self.combine(*args, **kwargs)

    # DeepEP's recommended configs by rank count (its intranode table):
    # (num_max_nvl_chunked_send_tokens, _recv_tokens, rdma send, recv);
    # other counts take the 8-rank one (gin's channels and chunks are what
    # a config sets; its RDMA fields are not used).
    _DISPATCH = {2: (24, 256, 6, 128), 4: (6, 256, 6, 128),
                 8: (6, 256, 6, 128)}
    _COMBINE = {2: (10, 256, 6, 128), 4: (9, 256, 6, 128),
                8: (4, 256, 6, 128)}

    @staticmethod
    def get_dispatch_config(num_ranks):
        """DeepEP's recommended dispatch config for 2, 4 or 8 ranks, with
        Buffer.num_sms; for other counts gin's default, the 8-rank values
        (DeepEP's own for larger counts tune its RDMA stage, which gin
        does not have)."""
        return Buffer._config(Buffer._DISPATCH, num_ranks)

    @staticmethod
    def get_combine_config(num_ranks):
        """DeepEP's recommended combine config (as get_dispatch_config)."""
        return Buffer._config(Buffer._COMBINE, num_ranks)

    @staticmethod
    def _config(table, num_ranks):
        if int(num_ranks) < 1:
            raise _lib.error(_lib.ERR_INVALID, f"{_NAME}: a config for "
                             f"{num_ranks} ranks")
        return Config(Buffer.num_sms, *table.get(num_ranks, table[_NVL]))


class _NormalHandle(tuple):
    """DeepEP's intranode handle (rank_prefix_matrix, channel_prefix_matrix,
    recv_channel_prefix_matrix, recv_src_idx, is_token_in_rank, send_head),
    or its internode one (is_token_in_rank, rdma_channel_prefix_matrix,
    gbl_channel_prefix_matrix, recv_rdma_channel_prefix_matrix,
    recv_rdma_rank_prefix_sum, recv_gbl_channel_prefix_matrix,
    recv_gbl_rank_prefix_sum, recv_src_meta, send_rdma_head,
    send_nvl_head) for more than 8 ranks, carrying gin's (NormalHandle)
    for the calls that reuse it."""

    def __new__(cls, items, gin):
        h = super().__new__(cls, items)
        h.gin = gin
        return h


def _record():
    """A CUDA event recorded on the current stream (None on the host
    target, whose calls finish before they return)."""
    if _lib.TARGET == "host":
        return None
    ev = torch.cuda.Event()
    ev.record()
    return ev
