"""gin_comm's EP at 2, 4 and 8 ranks under ginrun, every rank checking
its outputs against ep_ref.py computed in one process: the array-level
Ep on NumPy arrays and on torch CPU tensors (ranks_ep.py), DeepEP's
low-latency API through gin_comm.deep_ep on a gloo group
(ranks_deep_ep.py), and a rank killed mid-run (ranks_kill.py). The torch
tests skip where torch is not installed, unless GIN_REQUIRE_TORCH=1 (CI
sets it)."""

import os
import re
import socket
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _has_torch():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def need_torch():
    if not _has_torch():
        if os.environ.get("GIN_REQUIRE_TORCH") == "1":
            pytest.fail("torch is not installed (GIN_REQUIRE_TORCH=1)")
        pytest.skip("torch is not installed")


def launch(n, script, *args, env=None, timeout=300):
    cmd = [sys.executable, "-m", "gin_comm.launch", "-n", str(n),
           "--timeout", str(timeout - 20), "--grace", "20", sys.executable,
           os.path.join(HERE, script)] + [str(a) for a in args]
    e = dict(os.environ, PYTHONPATH=HERE + os.pathsep +
             os.environ.get("PYTHONPATH", ""), **(env or {}))
    return subprocess.run(cmd, capture_output=True, text=True,
                          timeout=timeout, env=e)


def all_ok(p, n):
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-6000:]
    for r in range(n):
        assert f"rank {r}/{n}: OK" in p.stdout, out[-6000:]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("n", [2, 4, 8])
def test_ep_numpy(n):
    all_ok(launch(n, "ranks_ep.py", "numpy"), n)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_ep_torch(n):
    need_torch()
    all_ok(launch(n, "ranks_ep.py", "torch"), n)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_deep_ep(n):
    need_torch()
    all_ok(launch(n, "ranks_deep_ep.py", free_port()), n)


def test_killed_rank():
    """Rank 2 of 3 dies; ranks 0 and 1 get a GinError naming it within
    twice the timeout, and ginrun reports the kill."""
    timeout_ms = 3000
    p = launch(3, "ranks_kill.py", env={"GIN_TIMEOUT_MS": str(timeout_ms)})
    out = p.stdout + p.stderr
    assert p.returncode == 137, out[-6000:]
    assert "rank 2 (pid" in p.stderr and "killed by signal 9" in p.stderr, \
        out[-6000:]
    for r in (0, 1):
        m = re.search(rf"rank {r}/3: raised after ([0-9.]+) s: (.*)",
                      p.stdout)
        assert m, out[-6000:]
        assert float(m.group(1)) <= 2 * timeout_ms / 1000, m.group(0)
        assert "rank 2" in m.group(2), m.group(0)
