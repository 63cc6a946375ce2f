"""How a rank of the Python tests reports (the pytest side reads it):
one "rank R/N: FAIL ..." line per failure (the first 20), or
"rank R/N: OK (what)"; the exit status to return."""

import sys


def report(rank, nranks, fails, what):
    for f in fails[:20]:
        print(f"rank {rank}/{nranks}: FAIL {f}")
    if not fails:
        print(f"rank {rank}/{nranks}: OK ({what})")
    sys.stdout.flush()
    return 1 if fails else 0
