"""`ginrun` (or python -m gin_comm.launch): gin's launcher, as built into
this package: ginrun -n N PROGRAM ARGS... starts N ranks of PROGRAM with
the environment gin_comm.Comm.from_env() reads (ginrun --help)."""

import os
import sys

_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin",
                    "ginrun")


def main():
    if not os.access(_BIN, os.X_OK):
        sys.exit(f"gin_comm: no ginrun at {_BIN}")
    os.execv(_BIN, [_BIN] + sys.argv[1:])


if __name__ == "__main__":
    main()
