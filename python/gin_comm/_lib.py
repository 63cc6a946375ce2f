"""The gin C library, loaded with ctypes, and its errors as exceptions.

The package holds the libraries `pip install .` built: libgin_host (the
host target: CPU threads stand in for the GPU) and, where CUDA was found,
libgin_cuda. GIN_COMM_TARGET picks one: host, cuda, or auto (the default:
cuda where it was built and an NVIDIA device node exists, else host).
"""

import ctypes
import glob
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


class GinError(RuntimeError):
    """A gin call failed: `code` is gin's result code, `name` its name
    (gin_strerror) and the message gin's own (gin_last_error)."""

    def __init__(self, code, name, message):
        super().__init__(f"{name}: {message}" if message else name)
        self.code = code
        self.name = name
        self.message = message


# gin's result codes (gin/result.h) that the package raises itself.
ERR_INVALID, ERR_UNSUPPORTED, ERR_STATE = -1, -6, -10


def _find(target):
    libs = sorted(glob.glob(os.path.join(_HERE, f"libgin_{target}.so*")))
    return libs[0] if libs else None


def _pick():
    want = os.environ.get("GIN_COMM_TARGET", "auto")
    if want not in ("auto", "host", "cuda"):
        raise GinError(ERR_INVALID, "invalid argument",
                       f"GIN_COMM_TARGET={want}: expected auto, host or cuda")
    if want == "auto":
        want = "cuda" if _find("cuda") and os.path.exists(
            "/dev/nvidiactl") else "host"
    path = _find(want)
    if not path:
        raise GinError(ERR_UNSUPPORTED, "unsupported",
                       f"this gin_comm has no {want} target library in "
                       f"{_HERE} (the cuda target is built where pip found "
                       f"the CUDA toolkit)")
    return want, path


TARGET, _PATH = _pick()
lib = ctypes.CDLL(_PATH)

_c_int_p = ctypes.POINTER(ctypes.c_int)


class Build(ctypes.Structure):
    """gin_build_t_ (gin.h): the library's own, from gin_build_self_."""
    _fields_ = [("version", ctypes.c_uint32),
                ("devcomm_bytes", ctypes.c_uint32),
                ("window_bytes", ctypes.c_uint32),
                ("cuda", ctypes.c_uint32)]


def _sig(name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


gin_version = _sig("gin_version", ctypes.c_char_p)
gin_strerror = _sig("gin_strerror", ctypes.c_char_p, ctypes.c_int)
gin_last_error = _sig("gin_last_error", ctypes.c_char_p)
gin_build_self_ = _sig("gin_build_self_", None, ctypes.POINTER(Build))
gin_comm_init_from_env_built_ = _sig(
    "gin_comm_init_from_env_built_", ctypes.c_int,
    ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.POINTER(Build))
gin_comm_destroy = _sig("gin_comm_destroy", ctypes.c_int, ctypes.c_void_p)
gin_comm_abort = _sig("gin_comm_abort", ctypes.c_int, ctypes.c_void_p)
gin_comm_rank = _sig("gin_comm_rank", ctypes.c_int, ctypes.c_void_p,
                     _c_int_p)
gin_comm_size = _sig("gin_comm_size", ctypes.c_int, ctypes.c_void_p,
                     _c_int_p)
gin_comm_barrier = _sig("gin_comm_barrier", ctypes.c_int, ctypes.c_void_p)
gin_comm_allgather = _sig("gin_comm_allgather", ctypes.c_int,
                          ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.c_size_t)
gin_comm_get_async_error = _sig("gin_comm_get_async_error", ctypes.c_int,
                                ctypes.c_void_p)


def error(rc, message):
    """A GinError for result rc (named by gin_strerror) with message."""
    return GinError(rc, gin_strerror(rc).decode(errors="replace"), message)


def check(rc):
    """Raises GinError, with gin's message, for a result other than
    GIN_SUCCESS (0)."""
    if rc != 0:
        raise error(rc, (gin_last_error() or b"").decode(errors="replace"))
