"""What every rank of the Python tests shares: how it joins the test's
torch.distributed group, and how it reports (the pytest side reads it):
one "rank R/N: FAIL ..." line per failure (the first 20), or
"rank R/N: OK (what)"; the exit status to return."""

import os
import sys


def gloo_group():
    """This rank under ginrun in a gloo group of every rank, rendezvous at
    the port in argv[1]: (ranks, rank, group)."""
    import torch.distributed as dist
    port = int(sys.argv[1])
    n, me = int(os.environ["GIN_NRANKS"]), int(os.environ["GIN_RANK"])
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=me, world_size=n)
    return n, me, dist.new_group(list(range(n)))


def report(rank, nranks, fails, what):
    for f in fails[:20]:
        print(f"rank {rank}/{nranks}: FAIL {f}")
    if not fails:
        print(f"rank {rank}/{nranks}: OK ({what})")
    sys.stdout.flush()
    return 1 if fails else 0
