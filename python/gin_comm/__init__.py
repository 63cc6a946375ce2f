"""gin from Python: a communicator among the ranks a launcher started.

    import gin_comm
    comm = gin_comm.Comm.from_env()     # under ginrun, mpirun, srun, torchrun
    comm.rank, comm.size
    comm.allgather(b"...")              # every rank's bytes, in rank order
    comm.barrier()
    comm.destroy()

    comm = gin_comm.Comm.from_torch()   # the torch.distributed group's ranks
    w = gin_comm.Window(comm, (n,), "float32")  # w.tensor, w.peer(r)
    ep = gin_comm.Ep(comm, max_tokens, hidden, topk, num_experts)
    # MoE dispatch and combine (gin_comm.ep); DeepEP's low-latency Buffer:
    # gin_comm.deep_ep

Errors raise GinError with gin's own message (which names the bad
argument, rank or limit). The library is the host target's (CPU threads
stand in for GPU blocks) or the cuda target's: gin_comm.TARGET says which
(GIN_COMM_TARGET chooses).
"""

from ._lib import TARGET, GinError
from . import _lib
from .comm import Comm
from .ep import Ep, Recv
from .window import Window

__all__ = ["Comm", "Ep", "GinError", "Recv", "TARGET", "Window", "version",
           "__version__"]


def version():
    """The C library's version, "MAJOR.MINOR.PATCH"."""
    return _lib.gin_version().decode()


# What Python tools look for: the loaded C library's version (the
# distribution's is the same: pyproject.toml follows gin.h).
__version__ = version()
