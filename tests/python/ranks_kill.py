"""One rank of test_kill.py (started by ginrun): after a first good
dispatch and combine, the last rank SIGKILLs itself; every other rank
goes on dispatching and combining and must get a GinError that names the
dead rank, within twice GIN_TIMEOUT_MS, never a hang. Prints
"rank R/N: raised after S s: MESSAGE" (the test checks the words and the
time)."""

import os
import signal
import sys
import time

import numpy as np

import gin_comm

M, H, K = 8, 256, 2


def step(ep, me, E):
    rng = np.random.default_rng(me)
    x = np.zeros((M, H), np.uint16)
    idx = np.stack([rng.permutation(E)[:K] for _ in range(M)])
    w = np.ones((M, K), np.float32)
    if gin_comm.TARGET == "cuda":  # device memory: torch tensors there
        import torch
        x, idx, w = (torch.from_numpy(a).cuda() for a in (x, idx, w))
        x = x.view(torch.bfloat16)
    r = ep.dispatch(x, idx)
    ep.combine(r.x * 0 if gin_comm.TARGET == "cuda" else
               np.zeros(r.x.shape, np.uint16), idx, w)


def main():
    n, me = int(os.environ["GIN_NRANKS"]), int(os.environ["GIN_RANK"])
    victim = n - 1
    comm = gin_comm.Comm.from_env()
    ep = gin_comm.Ep(comm, M, H, K, 2 * n, fp8=False)
    step(ep, me, 2 * n)
    comm.barrier()
    if me == victim:
        os.kill(os.getpid(), signal.SIGKILL)
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < 120:
            step(ep, me, 2 * n)
        print(f"rank {me}/{n}: FAIL no error in 120 s")
        return 1
    except gin_comm.GinError as e:
        print(f"rank {me}/{n}: raised after {time.monotonic() - t0:.1f} s: "
              f"{e}")
    sys.stdout.flush()
    # The communicator is aborted: its teardown is local.
    try:
        ep.destroy()
    except gin_comm.GinError:
        pass
    comm.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
