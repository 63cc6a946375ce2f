"""gin_comm.Comm: a gin communicator (gin_comm_t) among the ranks a
launcher or a torch.distributed group started."""

import ctypes

from . import _lib


class Comm:
    """A gin communicator (gin_comm_t). Create it with Comm.from_env();
    destroy() (or the with-block's end) releases it; calls after that raise
    GinError."""

    def __init__(self, handle):
        self._h = handle

    @classmethod
    def from_env(cls):
        """Joins the job the launcher's environment describes (ginrun,
        mpirun, srun, torchrun), as gin_comm_init_from_env: collective."""
        b = _lib.Build()
        _lib.gin_build_self_(ctypes.byref(b))
        h = ctypes.c_void_p()
        _lib.check(_lib.gin_comm_init_from_env_built_(ctypes.byref(h), None,
                                                      ctypes.byref(b)))
        return cls(h)

    @classmethod
    def from_uid(cls, uid, rank, size, timeout_ms=0):
        """Joins the job named by uid (bytes from make_uid on one rank,
        passed to every rank by the caller) as rank `rank` of `size`:
        collective. timeout_ms bounds every wait (0: GIN_TIMEOUT_MS)."""
        u = _lib.UniqueId()
        uid = bytes(uid)
        if len(uid) != _lib.UNIQUE_ID_BYTES:
            raise _lib.error(_lib.ERR_INVALID,
                             f"uid has {len(uid)} bytes, not "
                             f"{_lib.UNIQUE_ID_BYTES} (make_uid's)")
        ctypes.memmove(ctypes.addressof(u), uid, len(uid))
        cfg = _lib.Config(ctypes.sizeof(_lib.Config), int(timeout_ms))
        b = _lib.Build()
        _lib.gin_build_self_(ctypes.byref(b))
        h = ctypes.c_void_p()
        _lib.check(_lib.gin_comm_init_built_(
            ctypes.byref(h), int(size), int(rank), ctypes.byref(u),
            ctypes.byref(cfg), ctypes.byref(b)))
        return cls(h)

    @staticmethod
    def make_uid(size):
        """A new job id for `size` ranks (bytes), and its bootstrap root
        started in this process (at GIN_ROOT_ADDR; unset, at MASTER_ADDR
        where that is a non-loopback address of this host, as under
        torchrun; else at 127.0.0.1: set one of them when ranks run on
        other hosts)."""
        u = _lib.UniqueId()
        _lib.check(_lib.gin_get_unique_id(int(size), ctypes.byref(u)))
        return ctypes.string_at(ctypes.addressof(u), _lib.UNIQUE_ID_BYTES)

    @classmethod
    def from_torch(cls, group=None, timeout_ms=0):
        """The ranks of a torch.distributed process group (None: the
        default group) as a gin communicator, with the same rank numbers:
        collective over the group. The group's rank 0 makes the job id,
        which reaches the others through the group."""
        import torch.distributed as dist
        rank = dist.get_rank(group)
        size = dist.get_world_size(group)
        uid = cls.make_uid(size) if rank == 0 else None
        ids = [None] * size
        dist.all_gather_object(ids, uid, group=group)
        return cls.from_uid(ids[0], rank, size, timeout_ms)

    def _handle(self):
        if self._h is None:
            raise _lib.error(_lib.ERR_STATE, "this Comm was destroyed")
        return self._h

    def _int(self, fn):
        v = ctypes.c_int()
        _lib.check(fn(self._handle(), ctypes.byref(v)))
        return v.value

    @property
    def rank(self):
        return self._int(_lib.gin_comm_rank)

    @property
    def size(self):
        return self._int(_lib.gin_comm_size)

    def barrier(self):
        """Collective barrier over the bootstrap network (bounded)."""
        _lib.check(_lib.gin_comm_barrier(self._handle()))

    def allgather(self, data):
        """Collective: every rank passes bytes of the same length; returns
        the list of every rank's bytes in rank order."""
        data = bytes(data)
        n = self.size
        send = ctypes.create_string_buffer(data, len(data))
        recv = ctypes.create_string_buffer(max(1, n * len(data)))
        _lib.check(_lib.gin_comm_allgather(
            self._handle(), send if data else None, recv, len(data)))
        raw = recv.raw
        return [raw[r * len(data):(r + 1) * len(data)] for r in range(n)]

    def abort(self):
        """Aborts the communicator on every rank (any thread)."""
        _lib.check(_lib.gin_comm_abort(self._handle()))

    def check_async(self):
        """Raises the error a device wait, the proxy or a peer's abort
        raised asynchronously, if any."""
        _lib.check(_lib.gin_comm_get_async_error(self._handle()))

    def destroy(self):
        """Releases the communicator (local; also after an abort)."""
        if self._h is not None:
            h, self._h = self._h, None
            _lib.check(_lib.gin_comm_destroy(h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
        return False
