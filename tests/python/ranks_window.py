"""One rank of test_window.py (started by ginrun): gin_comm.Window as
NumPy arrays and torch tensors (argv[1]): each rank fills its window,
reads every peer's through its mapping, writes a word into the next
rank's and finds the previous rank's word in its own; the handle names
this rank's base; a size that differs on one rank fails on every rank
naming the sizes; a closed window raises. Prints "rank R/N: OK"."""

import os
import sys

import numpy as np

import gin_comm
from report import report

N = 64


def main():
    kind = sys.argv[1]
    n, me = int(os.environ["GIN_NRANKS"]), int(os.environ["GIN_RANK"])
    fails = []

    def arr(v):
        return np.asarray(v) if kind == "numpy" else v.cpu().numpy()

    with gin_comm.Comm.from_env() as comm:
        w = gin_comm.Window(comm, (N,), "int32", kind)
        if arr(w.tensor).any():
            fails.append("a new window is not zeroed")
        seq = me * 1000 + np.arange(N, dtype=np.int32)
        if kind == "torch":
            import torch
            seq = torch.from_numpy(seq).to(w.tensor.device)
        w.tensor[:] = seq
        comm.barrier()
        for r in range(n):
            p = w.peer(r)
            if p is None:
                fails.append(f"rank {r}'s window is not mapped here")
                continue
            want = r * 1000 + np.arange(N)
            if not (arr(p) == want).all():
                fails.append(f"rank {r}'s window reads {arr(p)[:4]}...")
        comm.barrier()
        w.peer((me + 1) % n)[N - 1] = -1 - me  # into the next rank's
        comm.barrier()
        if arr(w.tensor)[N - 1] != -1 - (me - 1) % n:
            fails.append(f"own last word {arr(w.tensor)[N - 1]}, want "
                         f"{-1 - (me - 1) % n} from rank {(me - 1) % n}")
        base = int.from_bytes(w.handle[16:24], "little")
        ptr = w.tensor.ctypes.data if kind == "numpy" else \
            w.tensor.data_ptr()
        if base != ptr:
            fails.append(f"handle base {base:#x}, tensor at {ptr:#x}")
        try:
            gin_comm.Window(comm, (N + (me == n - 1),), "int32", kind)
            fails.append("windows of different sizes were registered")
        except gin_comm.GinError as e:
            if "size" not in str(e):
                fails.append(f"size mismatch: '{e}' names no size")
        w.close()
        try:
            w.peer(0)
            fails.append("a closed window answered")
        except gin_comm.GinError as e:
            if e.code != -10:
                fails.append(f"closed window: {e}")
    return report(me, n, fails, f"{kind}")


if __name__ == "__main__":
    sys.exit(main())
