"""gin from Python: a communicator among the ranks a launcher started.

    import gin_comm
    comm = gin_comm.Comm.from_env()     # under ginrun, mpirun, srun, torchrun
    comm.rank, comm.size
    comm.allgather(b"...")              # every rank's bytes, in rank order
    comm.barrier()
    comm.destroy()

Errors raise GinError with gin's own message (which names the bad
argument, rank or limit). The library is the host target's (CPU threads
stand in for GPU blocks) or the cuda target's: gin_comm.TARGET says which
(GIN_COMM_TARGET chooses).
"""

import ctypes

from ._lib import TARGET, GinError
from . import _lib

__all__ = ["Comm", "GinError", "TARGET", "version"]


def version():
    """The C library's version, "MAJOR.MINOR.PATCH"."""
    return _lib.gin_version().decode()


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
