"""One rank of test_comm.py (started by ginrun): the communicator from the
launcher's environment, its rank and size, an all-gather and a barrier
checked against what every rank sent, bad arguments raising GinError with
gin's message, and a destroyed Comm raising. Prints "rank R/N: OK"."""

import os
import sys

import gin_comm
from report import report


def main():
    n = int(os.environ["GIN_NRANKS"])
    r = int(os.environ["GIN_RANK"])
    fails = []
    with gin_comm.Comm.from_env() as comm:
        if (comm.rank, comm.size) != (r, n):
            fails.append(f"rank/size {comm.rank}/{comm.size}, want {r}/{n}")
        got = comm.allgather(bytes([r]) * 8 + b"gin")
        want = [bytes([k]) * 8 + b"gin" for k in range(n)]
        if got != want:
            fails.append(f"allgather gave {got!r}")
        comm.barrier()
        # Bad input: no bytes on every rank (gin_comm_allgather's NULL
        # buffer), refused on every rank with gin's reason.
        try:
            comm.allgather(b"")
            fails.append("an empty allgather succeeded")
        except gin_comm.GinError as e:
            if e.code != -1 or "NULL" not in e.message:
                fails.append(f"empty allgather: {e.code} {e}")
        comm.barrier()  # still usable after a refused call
    try:
        comm.rank
        fails.append("a destroyed Comm answered")
    except gin_comm.GinError as e:
        if e.code != -10:
            fails.append(f"destroyed Comm: {e.code} {e}")
    return report(r, n, fails,
                  f"{gin_comm.TARGET} target, gin {gin_comm.version()}")


if __name__ == "__main__":
    sys.exit(main())
