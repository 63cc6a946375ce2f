"""Arrays across the boundary: gin's memory handed out as tensors
without copies (DLPack for torch, the array interface for NumPy), and the
pointers of the arrays callers pass in.

gin's memory is exported through DLPack (the legacy capsule that
torch.from_dlpack takes), so no compiled extension and no particular
torch build is needed. A view is valid while its owner (a buffer) lives:
destroying the owner frees the memory under it.
Arrays passed in are torch tensors or NumPy arrays (the host target's),
checked for dtype, shape, contiguity and device before their pointer is
used.
"""

import ctypes

from . import _lib

# DLPack (dlpack.h): device types and dtype codes.
_KDLCPU, _KDLCUDA = 1, 2
_INT, _UINT, _FLOAT, _BFLOAT = 0, 1, 2, 4


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice),
                ("ndim", ctypes.c_int), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor),
                             ("manager_ctx", ctypes.c_void_p),
                             ("deleter", _DELETER)]

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

# Every exported tensor's managed struct, shape and strides, kept for the
# life of the process (a few hundred bytes each; views are made once per
# buffer and format). The structs have no deleter, so no Python code runs
# when a consumer frees its tensor, which may be while the interpreter
# shuts down. The memory itself is the owner's: valid until it is
# destroyed.
_kept = []

# Element types by name: (DLPack code, bits, bytes).
DTYPES = {"int8": (_INT, 8, 1), "uint8": (_UINT, 8, 1),
          "int32": (_INT, 32, 4), "int64": (_INT, 64, 8),
          "uint16": (_UINT, 16, 2), "float32": (_FLOAT, 32, 4),
          "bfloat16": (_BFLOAT, 16, 2)}


class Exported:
    """A region of gin memory as one DLPack tensor: pass it to
    torch.from_dlpack or numpy.from_dlpack (once each)."""

    def __init__(self, owner, ptr, dtype, shape, strides=None, cuda=-1):
        self.owner, self.ptr, self.dtype = owner, ptr, dtype
        self.shape = tuple(int(n) for n in shape)
        if strides is None:  # contiguous, in elements
            strides, step = [], 1
            for n in reversed(self.shape):
                strides.append(step)
                step *= n
            strides.reverse()
        self.strides = tuple(int(s) for s in strides)
        self.device = (_KDLCUDA, cuda) if cuda >= 0 else (_KDLCPU, 0)

    @property
    def __array_interface__(self):
        # NumPy's view of host memory (writable, unlike numpy.from_dlpack's
        # of a legacy capsule); the array's base keeps this, and so the
        # owner, alive.
        if self.device[0] != _KDLCPU:
            raise AttributeError("gin memory on a GPU has no NumPy view")
        size = DTYPES[self.dtype][2]
        typestr = {"int8": "|i1", "uint8": "|u1", "int32": "<i4",
                   "int64": "<i8", "uint16": "<u2", "float32": "<f4",
                   "bfloat16": "<u2"}[self.dtype]
        return {"version": 3, "shape": self.shape, "typestr": typestr,
                "data": (self.ptr, False),
                "strides": tuple(s * size for s in self.strides)}

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, **_):
        # gin's memory is ready on the caller's stream: no sync asked of
        # the consumer (stream is the stream it will use).
        code, bits, _size = DTYPES[self.dtype]
        nd = len(self.shape)
        shape = (ctypes.c_int64 * max(nd, 1))(*self.shape)
        strides = (ctypes.c_int64 * max(nd, 1))(*self.strides)
        m = _DLManagedTensor()
        m.dl_tensor.data = self.ptr
        m.dl_tensor.device = _DLDevice(*self.device)
        m.dl_tensor.ndim = nd
        m.dl_tensor.dtype = _DLDataType(code, bits, 1)
        m.dl_tensor.shape = shape
        m.dl_tensor.strides = strides
        m.dl_tensor.byte_offset = 0
        m.manager_ctx = None
        m.deleter = _DELETER()  # NULL: nothing to release
        _kept.append((m, shape, strides))
        return _capsule_new(ctypes.addressof(m), b"dltensor", None)


# ------------------------------------------------------------- streams

def stream(device):
    """The current torch stream of device ("cuda:N"), as the void * gin's
    calls take; None (the host target's inline kernels) for "cpu"."""
    if device == "cpu":
        return None
    import torch
    return ctypes.c_void_p(torch.cuda.current_stream(device).cuda_stream)


def after_call(comm, device):
    """After a call's kernels were enqueued: on the host target they ran to
    the end in the call, so their errors (a bad expert id, a dead peer) are
    known now and raised here; on a GPU they surface later, from the
    stream or the communicator's async error."""
    if device == "cpu":
        comm.check_async()


# ------------------------------------------------------------- passed in

def _is_torch(a):
    return type(a).__module__.startswith("torch")


def describe(a):
    """(pointer, dtype name, shape, contiguous, device) of a torch tensor or
    a NumPy array; device is "cpu" or "cuda:N"."""
    if _is_torch(a):
        name = str(a.dtype).replace("torch.", "")
        if name == "float8_e4m3fn":
            name = "uint8"
        dev = "cpu" if a.device.type == "cpu" else f"cuda:{a.device.index}"
        return a.data_ptr(), name, tuple(a.shape), a.is_contiguous(), dev
    if hasattr(a, "__array_interface__"):
        ai = a.__array_interface__
        import numpy as np
        name = np.dtype(ai["typestr"]).name
        contiguous = bool(a.flags["C_CONTIGUOUS"])
        return ai["data"][0], name, tuple(ai["shape"]), contiguous, "cpu"
    raise TypeError(f"expected a torch tensor or a NumPy array, got "
                    f"{type(a).__name__}")


def pointer(a, what, dtypes, shape, device):
    """a's data pointer after checking it: dtype one of dtypes, shape
    (None entries match anything), C-contiguous, on device ("cpu" or
    "cuda:N"). Raises GinError (invalid argument) naming `what`."""
    ptr, name, got, contiguous, dev = describe(a)
    if name not in dtypes:
        raise _lib.error(_lib.ERR_INVALID,
                         f"{what}: dtype {name}, expected "
                         f"{' or '.join(dtypes)}")
    if len(got) != len(shape) or any(
            w is not None and w != g for w, g in zip(shape, got)):
        want = ", ".join("*" if w is None else str(w) for w in shape)
        raise _lib.error(_lib.ERR_INVALID,
                         f"{what}: shape {list(got)}, expected [{want}]")
    if not contiguous:
        raise _lib.error(_lib.ERR_INVALID,
                         f"{what}: not contiguous (call .contiguous())")
    if dev != device:
        raise _lib.error(_lib.ERR_INVALID,
                         f"{what}: on {dev}, expected {device}")
    return ptr
