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


# ------------------------------------------------------------------- init

UNIQUE_ID_BYTES = 128  # GIN_UNIQUE_ID_BYTES (gin.h)


class UniqueId(ctypes.Structure):
    """gin_unique_id_t: names a job; rank 0 makes it, every rank joins."""
    _fields_ = [("bytes", ctypes.c_char * UNIQUE_ID_BYTES)]


class Config(ctypes.Structure):
    """gin_config_t."""
    _fields_ = [("size", ctypes.c_size_t), ("timeout_ms", ctypes.c_int)]


gin_get_unique_id = _sig("gin_get_unique_id", ctypes.c_int, ctypes.c_int,
                         ctypes.POINTER(UniqueId))
gin_comm_init_built_ = _sig(
    "gin_comm_init_built_", ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
    ctypes.c_int, ctypes.c_int, ctypes.POINTER(UniqueId),
    ctypes.POINTER(Config), ctypes.POINTER(Build))
gin_comm_device_ranks = _sig("gin_comm_device_ranks", ctypes.c_int,
                             ctypes.c_void_p, _c_int_p)

# ----------------------------------------------------------------- memory

gin_mem_alloc = _sig("gin_mem_alloc", ctypes.c_int, ctypes.c_size_t,
                     ctypes.POINTER(ctypes.c_void_p))
gin_mem_free = _sig("gin_mem_free", ctypes.c_int, ctypes.c_void_p)
gin_mem_copy = _sig("gin_mem_copy", ctypes.c_int, ctypes.c_void_p,
                    ctypes.c_void_p, ctypes.c_size_t)
gin_mem_set = _sig("gin_mem_set", ctypes.c_int, ctypes.c_void_p,
                   ctypes.c_int, ctypes.c_size_t)

# --------------------------------------------------------------------- EP

EP_SEND, EP_RECV, EP_BOTH = 1, 2, 3
EP_FP8_ANY = 2
EP_PAYLOAD_BUFFER, EP_PAYLOAD_BF16, EP_PAYLOAD_FP8 = 0, 1, 2
EP_SCALES_ROWS, EP_SCALES_COLS, EP_SCALES_UE8M0 = 0, 1, 2
EP_LAYOUT_PAIRS, EP_LAYOUT_PACKED = 0, 1


class EpConfig(ctypes.Structure):
    """gin_ep_config_t."""
    _fields_ = [("max_tokens", ctypes.c_int), ("hidden", ctypes.c_int),
                ("topk", ctypes.c_int), ("num_experts", ctypes.c_int),
                ("fp8", ctypes.c_int)]


class EpRecv(ctypes.Structure):
    """gin_ep_recv_t: where a dispatch left its results."""
    _fields_ = [("x", ctypes.c_void_p), ("scales", ctypes.c_void_p),
                ("src_rank", ctypes.c_void_p), ("src_token", ctypes.c_void_p),
                ("count", ctypes.c_void_p), ("layout", ctypes.c_void_p),
                ("local_experts", ctypes.c_int), ("ranks", ctypes.c_int),
                ("slots_per_expert", ctypes.c_int), ("fp8", ctypes.c_int),
                ("scale_layout", ctypes.c_int)]


class EpDispatchOpts(ctypes.Structure):
    """gin_ep_dispatch_opts_t."""
    _fields_ = [("payload", ctypes.c_int), ("round_scale", ctypes.c_int),
                ("scale_layout", ctypes.c_int), ("layout", ctypes.c_int),
                ("idx64", ctypes.c_int), ("recv_stats", ctypes.c_void_p)]


class EpCombineOpts(ctypes.Structure):
    """gin_ep_combine_opts_t."""
    _fields_ = [("idx64", ctypes.c_int)]


_vp = ctypes.c_void_p
gin_ep_size_hint = _sig("gin_ep_size_hint", ctypes.c_int,
                        ctypes.POINTER(EpConfig), ctypes.c_int,
                        ctypes.POINTER(ctypes.c_size_t))
gin_ep_create = _sig("gin_ep_create", ctypes.c_int, _vp,
                     ctypes.POINTER(EpConfig), ctypes.POINTER(_vp))
gin_ep_destroy = _sig("gin_ep_destroy", ctypes.c_int, _vp)
gin_ep_dispatch_ex = _sig(
    "gin_ep_dispatch_ex", ctypes.c_int, _vp, _vp, _vp, ctypes.c_int,
    ctypes.POINTER(EpDispatchOpts), ctypes.POINTER(EpRecv), _vp,
    ctypes.c_int)
gin_ep_combine_ex = _sig(
    "gin_ep_combine_ex", ctypes.c_int, _vp, _vp, _vp, _vp, ctypes.c_int,
    ctypes.POINTER(EpCombineOpts), _vp, _vp, ctypes.c_int)
gin_ep_combine_buffer = _sig("gin_ep_combine_buffer", ctypes.c_int, _vp,
                             ctypes.POINTER(_vp))
gin_ep_combine_fence = _sig("gin_ep_combine_fence", ctypes.c_int, _vp, _vp)

# ------------------------------------------------------ EP normal mode


class EpnConfig(ctypes.Structure):
    """gin_epn_config_t."""
    _fields_ = [("hidden", ctypes.c_int), ("topk", ctypes.c_int),
                ("num_experts", ctypes.c_int), ("channels", ctypes.c_int),
                ("ring_tokens", ctypes.c_int)]


class EpnHandle(ctypes.Structure):
    """gin_epn_handle_t."""
    _fields_ = [("num_tokens", ctypes.c_int), ("channels", ctypes.c_int),
                ("capacity", ctypes.c_int), ("in_rank", ctypes.c_void_p),
                ("send_head", ctypes.c_void_p),
                ("chan_prefix", ctypes.c_void_p),
                ("rank_prefix", ctypes.c_void_p),
                ("recv_chan_prefix", ctypes.c_void_p),
                ("recv_src_idx", ctypes.c_void_p)]


class EpnDispatchArgs(ctypes.Structure):
    """gin_epn_dispatch_args_t."""
    _fields_ = [("x", ctypes.c_void_p), ("fp8", ctypes.c_int),
                ("scales", ctypes.c_void_p),
                ("scale_stride_t", ctypes.c_int64),
                ("scale_stride_g", ctypes.c_int64),
                ("topk_idx", ctypes.c_void_p),
                ("topk_weights", ctypes.c_void_p), ("idx64", ctypes.c_int),
                ("num_topk", ctypes.c_int), ("chunk", ctypes.c_int),
                ("recv_x", ctypes.c_void_p), ("recv_scales", ctypes.c_void_p),
                ("recv_topk_idx", ctypes.c_void_p),
                ("recv_topk_weights", ctypes.c_void_p),
                ("worst", ctypes.c_int)]


class EpnCombineArgs(ctypes.Structure):
    """gin_epn_combine_args_t."""
    _fields_ = [("x", ctypes.c_void_p), ("topk_weights", ctypes.c_void_p),
                ("num_topk", ctypes.c_int), ("bias", ctypes.c_void_p * 2),
                ("chunk", ctypes.c_int), ("out", ctypes.c_void_p),
                ("out_weights", ctypes.c_void_p)]


gin_epn_size_hint = _sig("gin_epn_size_hint", ctypes.c_int,
                         ctypes.POINTER(EpnConfig), ctypes.c_int,
                         ctypes.POINTER(ctypes.c_size_t))
gin_epn_create = _sig("gin_epn_create", ctypes.c_int, _vp,
                      ctypes.POINTER(EpnConfig), ctypes.POINTER(_vp))
gin_epn_destroy = _sig("gin_epn_destroy", ctypes.c_int, _vp)
gin_epn_layout = _sig("gin_epn_layout", ctypes.c_int, _vp, _vp, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, _vp, _vp, _vp, _vp)
gin_epn_notify = _sig("gin_epn_notify", ctypes.c_int, _vp, _vp, _vp,
                      ctypes.c_int, ctypes.c_int, ctypes.POINTER(EpnHandle),
                      _vp, _vp)
gin_epn_dispatch = _sig("gin_epn_dispatch", ctypes.c_int, _vp,
                        ctypes.POINTER(EpnDispatchArgs),
                        ctypes.POINTER(EpnHandle), _vp)
gin_epn_combine = _sig("gin_epn_combine", ctypes.c_int, _vp,
                       ctypes.POINTER(EpnCombineArgs),
                       ctypes.POINTER(EpnHandle), _vp)

# ---------------------------------------------------------------- windows


def _window_struct():
    """gin_window_t as this library lays it out (gin/device/impl/types.h):
    idx, gen, size, this rank's base, then the first ranks' bases as
    mapped here (NULL where not mapped)."""
    b = Build()
    gin_build_self_(ctypes.byref(b))

    class WindowT(ctypes.Structure):
        _fields_ = [("idx", ctypes.c_uint32), ("gen", ctypes.c_uint32),
                    ("size", ctypes.c_uint64), ("local", ctypes.c_void_p),
                    ("peer", ctypes.c_void_p * ((b.window_bytes - 24) // 8))]
    if ctypes.sizeof(WindowT) != b.window_bytes:
        raise GinError(ERR_UNSUPPORTED, "unsupported",
                       f"gin_window_t is {b.window_bytes} bytes in {_PATH}, "
                       f"which this gin_comm does not lay out")
    return WindowT


WindowT = _window_struct()
gin_window_register = _sig("gin_window_register", ctypes.c_int, _vp, _vp,
                           ctypes.c_size_t, ctypes.POINTER(WindowT))
gin_window_deregister = _sig("gin_window_deregister", ctypes.c_int, _vp,
                             WindowT)

# ------------------------------------------------------------ struct check


def _check_structs():
    """Every struct this package lays out by hand against the library's
    own size of it (gin_struct_size_): a package and a library of other
    versions fail here, naming the struct, instead of passing arguments
    the library reads wrong."""
    try:
        size_of = _sig("gin_struct_size_", ctypes.c_size_t, ctypes.c_char_p)
    except AttributeError:
        raise GinError(ERR_UNSUPPORTED, "unsupported",
                       f"{_PATH} has no gin_struct_size_: it is older than "
                       f"this gin_comm (reinstall gin-comm)") from None
    for cls, name in ((Build, "gin_build_t_"), (UniqueId, "gin_unique_id_t"),
                      (Config, "gin_config_t"), (WindowT, "gin_window_t"),
                      (EpConfig, "gin_ep_config_t"),
                      (EpRecv, "gin_ep_recv_t"),
                      (EpDispatchOpts, "gin_ep_dispatch_opts_t"),
                      (EpCombineOpts, "gin_ep_combine_opts_t"),
                      (EpnConfig, "gin_epn_config_t"),
                      (EpnHandle, "gin_epn_handle_t"),
                      (EpnDispatchArgs, "gin_epn_dispatch_args_t"),
                      (EpnCombineArgs, "gin_epn_combine_args_t")):
        n = size_of(name.encode())
        if n != ctypes.sizeof(cls):
            raise GinError(ERR_UNSUPPORTED, "unsupported",
                           f"{name} is {n} bytes in {_PATH} but "
                           f"{ctypes.sizeof(cls)} in this gin_comm: the "
                           f"package and the library are of other versions "
                           f"(reinstall gin-comm)")


_check_structs()
