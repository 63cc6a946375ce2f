"""gin_comm.Window: memory gin allocates, registered as a window of a
communicator, seen as a tensor (or NumPy array) without copies.

    w = gin_comm.Window(comm, (1024,), "float32")   # collective
    w.tensor[:] = 1                                 # this rank's window
    w.peer(r)        # rank r's window as mapped here (load/store peers)
    w.handle         # gin_window_t's bytes, for a kernel's argument
    w.close()        # collective

On the host target windows are CPU memory shared between the processes
of one machine, and peer(r) reads and writes rank r's window directly;
on the cuda target they are GPU memory and the views CUDA tensors
(peer(r): mapped over NVLink or PCIe where the ranks share a machine).
"""

import ctypes

from . import _arrays, _lib

__all__ = ["Window"]

class Window:
    """A registered window of shape and dtype ("float32", "int32",
    "int64", "uint8", "bfloat16", "uint16"), zeroed; kind "torch" or
    "numpy" (NumPy: host target only). Collective: every rank creates its
    windows in the same order with the same size (a mismatch fails on
    every rank naming the sizes)."""

    def __init__(self, comm, shape, dtype, kind="torch"):
        if dtype not in _arrays.DTYPES:
            raise _lib.error(_lib.ERR_INVALID,
                             f"Window: dtype {dtype!r} is not one of "
                             f"{', '.join(sorted(_arrays.DTYPES))}")
        if kind not in ("torch", "numpy"):
            raise _lib.error(_lib.ERR_INVALID,
                             f"Window: kind {kind!r} is not 'torch' or "
                             f"'numpy'")
        self.comm, self.kind, self.dtype = comm, kind, dtype
        self.shape = tuple(int(n) for n in ((shape,) if isinstance(
            shape, int) else shape))
        n = 1
        for d in self.shape:
            n *= d
        self.nbytes = n * _arrays.DTYPES[dtype][2]
        self._ptr = ctypes.c_void_p()
        self._win = None
        # A rank that cannot allocate still registers (NULL), so that
        # every rank fails together instead of waiting for it.
        rc = _lib.gin_mem_alloc(max(self.nbytes, 1), ctypes.byref(self._ptr))
        if rc == 0:
            rc = _lib.gin_mem_set(self._ptr, 0, max(self.nbytes, 1))
        why = (_lib.gin_last_error() or b"").decode(errors="replace")
        win = _lib.WindowT()
        rr = _lib.gin_window_register(comm._handle(),
                                      self._ptr if rc == 0 else None,
                                      self.nbytes, ctypes.byref(win))
        if rc != 0 or rr != 0:
            if self._ptr.value:
                _lib.gin_mem_free(self._ptr)
            self._ptr = ctypes.c_void_p()
            if rc != 0:
                raise _lib.error(rc, why)
            _lib.check(rr)
        self._win = win
        self._device = _device()
        self._peers = {}
        self.tensor = self._view(win.local)

    def _view(self, ptr):
        cuda = -1 if self._device == "cpu" else \
            int(self._device.split(":")[1])
        e = _arrays.Exported(self, ptr, self.dtype, self.shape, None, cuda)
        if self.kind == "torch":
            import torch
            return torch.from_dlpack(e)
        import numpy
        return numpy.asarray(e)

    @property
    def handle(self):
        """gin_window_t's bytes (a kernel takes it by value)."""
        self._live()
        return ctypes.string_at(ctypes.addressof(self._win),
                                ctypes.sizeof(self._win))

    def peer(self, rank):
        """Rank `rank`'s window as mapped into this process (this rank's
        own for rank == comm.rank), or None where it is not mapped (a
        peer on another machine, or past the ranks a handle names)."""
        self._live()
        if not 0 <= rank < self.comm.size:
            raise _lib.error(_lib.ERR_INVALID,
                             f"Window.peer: rank {rank} outside [0, "
                             f"{self.comm.size})")
        if rank == self.comm.rank:
            return self.tensor
        if rank >= len(self._win.peer) or not self._win.peer[rank]:
            return None
        if rank not in self._peers:
            self._peers[rank] = self._view(self._win.peer[rank])
        return self._peers[rank]

    def _live(self):
        if self._win is None:
            raise _lib.error(_lib.ERR_STATE, "this Window was closed")

    def close(self):
        """Collective: deregisters the window and frees its memory; the
        views must not be used after it."""
        if self._win is None:
            return
        win, self._win = self._win, None
        self._peers.clear()
        rc = _lib.gin_window_deregister(self.comm._handle(), win)
        _lib.gin_mem_free(self._ptr)
        _lib.check(rc)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _device():
    if _lib.TARGET == "host":
        return "cpu"
    import torch
    return f"cuda:{torch.cuda.current_device()}"
