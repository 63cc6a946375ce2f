"""The Python package's communicator at 2 and 4 ranks under ginrun (the
launcher the package installs): every rank runs ranks_comm.py and must
report OK."""

import os
import subprocess
import sys

import pytest

from harness import all_ok, free_port, launch, need_host, need_numpy, \
    need_torch

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("n", [2, 4])
def test_comm(n):
    cmd = [sys.executable, "-m", "gin_comm.launch", "-n", str(n), "--timeout",
           "60", sys.executable, os.path.join(HERE, "ranks_comm.py")]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    for r in range(n):
        assert f"rank {r}/{n}: OK" in p.stdout, out


def test_target_setting():
    """A GIN_COMM_TARGET the package does not know is refused by name."""
    env = dict(os.environ, GIN_COMM_TARGET="tpu")
    p = subprocess.run([sys.executable, "-c", "import gin_comm"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert "GIN_COMM_TARGET=tpu" in p.stderr


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_window(kind):
    """Windows as arrays and tensors at 3 ranks (ranks_window.py)."""
    need_numpy()
    if kind == "torch":
        need_torch()
    need_host(kind)
    all_ok(launch(3, "ranks_window.py", kind), 3)


def test_comm_torchrun(tmp_path):
    """Comm.from_env under torchrun (its RANK, WORLD_SIZE, MASTER_*),
    3 ranks: ranks_comm.py reads them through GIN_RANK/GIN_NRANKS, which
    torchrun does not set, so a small script checks instead."""
    need_torch()
    code = ("import os, gin_comm\n"
            "with gin_comm.Comm.from_env() as c:\n"
            "    r, n = int(os.environ['RANK']), int(os.environ['WORLD_SIZE'])\n"
            "    got = c.allgather(bytes([c.rank]) * 4)\n"
            "    ok = (c.rank, c.size) == (r, n) and "
            "got == [bytes([k]) * 4 for k in range(n)]\n"
            "    print(f'rank {r}/{n}: ' + ('OK' if ok else 'FAIL'), "
            "flush=True)\n")
    script = tmp_path / "from_env.py"
    script.write_text(code)
    p = subprocess.run([sys.executable, "-m", "torch.distributed.run",
                        "--nproc-per-node", "3", "--master-port",
                        str(free_port()), str(script)],
                       capture_output=True, text=True, timeout=120)
    all_ok(p, 3)


def test_package_version():
    """The distribution's version (pyproject.toml) is the C library's
    (gin.h, the version's one home), and so is gin_comm.__version__."""
    from importlib import metadata
    import gin_comm
    assert gin_comm.__version__ == gin_comm.version()
    try:
        dist = metadata.version("gin-comm")
    except metadata.PackageNotFoundError:
        pytest.skip("gin-comm is not installed (run from a source tree)")
    assert dist == gin_comm.version()


def test_struct_sizes(monkeypatch):
    """The package checks every struct it lays out by hand against the
    library's size of it (at import): one laid out wrong is named."""
    import ctypes
    from gin_comm import _lib
    _lib._check_structs()  # the real layouts pass

    class Short(ctypes.Structure):
        _fields_ = [("idx64", ctypes.c_int), ("extra", ctypes.c_int)]
    monkeypatch.setattr(_lib, "EpCombineOpts", Short)
    with pytest.raises(_lib.GinError, match="gin_ep_combine_opts_t is 4 "
                       "bytes .* but 8 in this gin_comm"):
        _lib._check_structs()


def test_signals_ofi():
    """A process that loads the package and opens the ofi transport keeps
    its signal handlers, and Ctrl-C raises KeyboardInterrupt
    (ranks_signals.py), at 2 ranks through libfabric's tcp provider."""
    env = {"GIN_TRANSPORT": "ofi", "GIN_OFI_PROVIDER": "tcp",
           "GIN_BACKEND": "proxy"}
    p = launch(2, "ranks_signals.py", env=env, timeout=120)
    if "SKIP: this build has no ofi transport" in p.stdout:
        pytest.skip("the package was built without libfabric")
    all_ok(p, 2)
