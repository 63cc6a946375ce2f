"""What the Python tests share: launching N ranks of a script under the
package's ginrun, and the checks of their reports."""

import os
import socket
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _has(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def _need(module, switch):
    """Skips a test whose module is missing, unless the environment's
    switch (CI sets it) says it must run: then it fails."""
    if not _has(module):
        if os.environ.get(switch) == "1":
            pytest.fail(f"{module} is not installed ({switch}=1)")
        pytest.skip(f"{module} is not installed")


def need_torch():
    _need("torch", "GIN_REQUIRE_TORCH")


def need_numpy():
    """NumPy: the host target's arrays, and the references the ranks'
    scripts check against."""
    _need("numpy", "GIN_REQUIRE_NUMPY")


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


def need_host(kind):
    """NumPy arrays are host memory: the cuda target takes tensors."""
    if kind == "numpy" and os.environ.get("GIN_COMM_TARGET") == "cuda":
        pytest.skip("NumPy arrays are not device memory (cuda target)")
