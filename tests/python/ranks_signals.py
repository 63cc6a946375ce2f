"""One rank of test_signals_ofi (started by ginrun with GIN_TRANSPORT=ofi,
GIN_BACKEND=proxy): a process that loads gin and opens the ofi transport
keeps its own signal handlers. Checks the C-level handlers of SIGINT,
SIGTERM, SIGSEGV, SIGBUS, SIGILL and SIGABRT before `import gin_comm`,
after it and after a communicator over ofi is up, then that Ctrl-C still
raises KeyboardInterrupt. (Debian's libfabric links libinfinipath, whose
constructor replaces all six with a backtrace writer.) Prints "rank R/N:
OK", or "SKIP" where the package has no ofi transport."""

import ctypes
import os
import signal
import sys
import time

SIGS = (signal.SIGINT, signal.SIGTERM, signal.SIGSEGV, signal.SIGBUS,
        signal.SIGILL, signal.SIGABRT)


class _Sigaction(ctypes.Structure):  # struct sigaction, x86-64/aarch64 glibc
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ulong * 16),
                ("flags", ctypes.c_int), ("restorer", ctypes.c_void_p)]


_libc = ctypes.CDLL(None, use_errno=True)


def handlers():
    out = {}
    for s in SIGS:
        sa = _Sigaction()
        if _libc.sigaction(int(s), None, ctypes.byref(sa)) != 0:
            raise OSError(ctypes.get_errno(), "sigaction")
        out[signal.Signals(s).name] = sa.handler or 0
    return out


def changed(a, b):
    return [f"{k}: {a[k]:#x} -> {b[k]:#x}" for k in a if a[k] != b[k]]


def main():
    fails = []
    first = handlers()
    import gin_comm
    after_import = handlers()
    fails += [f"import gin_comm replaced {c}"
              for c in changed(first, after_import)]
    try:
        comm = gin_comm.Comm.from_env()
    except gin_comm.GinError as e:
        if "no ofi transport" in str(e):
            print("SKIP: this build has no ofi transport")
            return 0
        raise
    me, n = comm.rank, comm.size
    comm.barrier()
    fails += [f"the ofi transport replaced {c}"
              for c in changed(after_import, handlers())]
    for f in fails:  # now: a replaced SIGINT handler may end the process
        print(f"rank {me}/{n}: FAIL {f}")
    sys.stdout.flush()
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(2)
        fails.append("SIGINT did not raise KeyboardInterrupt")
    except KeyboardInterrupt:
        pass
    comm.barrier()
    comm.destroy()
    if fails and "KeyboardInterrupt" in fails[-1]:
        print(f"rank {me}/{n}: FAIL {fails[-1]}")
    if not fails:
        print(f"rank {me}/{n}: OK (handlers kept, Ctrl-C raised "
              "KeyboardInterrupt)")
    sys.stdout.flush()
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
