"""gin_comm's EP at 2, 4 and 8 ranks under ginrun, every rank checking
its outputs against ep_ref.py computed in one process: the array-level
Ep on NumPy arrays and on torch CPU tensors (ranks_ep.py), DeepEP's
low-latency API through gin_comm.deep_ep on a gloo group
(ranks_deep_ep.py), its normal mode (ranks_deep_ep_normal.py; also
across two network namespaces, over tcp and ofi), the same captured in
CUDA graphs (ranks_graph.py,
cuda target), and a rank killed mid-run (ranks_kill.py). The torch
tests skip where torch is not installed, unless GIN_REQUIRE_TORCH=1 (CI
sets it)."""

import os
import re
import subprocess
import sys

import pytest

from harness import HERE, all_ok, free_port, launch, need_host, need_numpy, \
    need_torch

@pytest.mark.parametrize("n", [2, 4, 8])
def test_ep_numpy(n):
    need_numpy()
    need_host("numpy")
    all_ok(launch(n, "ranks_ep.py", "numpy"), n)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_ep_torch(n):
    need_numpy()
    need_torch()
    all_ok(launch(n, "ranks_ep.py", "torch"), n)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_deep_ep(n):
    need_numpy()
    need_torch()
    all_ok(launch(n, "ranks_deep_ep.py", free_port()), n)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_deep_ep_normal(n):
    """DeepEP's normal mode (ranks_deep_ep_normal.py)."""
    need_torch()
    all_ok(launch(n, "ranks_deep_ep_normal.py", free_port()), n)


@pytest.mark.parametrize("transport,n", [("tcp", 4), ("ofi", 4),
                                         ("tcp", 16)])
def test_deep_ep_normal_hosts(transport, n):
    """DeepEP's normal mode across two hosts: ranks_deep_ep_normal.py at n
    ranks, n / 2 in each of two network namespaces (tests/transport/
    multihost.sh; root only), started as torchrun starts ranks. The
    Buffer's job id goes through the gloo group, its bootstrap root at
    MASTER_ADDR with nothing set; the direct path or ipc within a host,
    tcp or ofi (tcp;ofi_rxm) across. 16 ranks: two of DeepEP's nodes of 8,
    so its internode shapes (num_tokens_per_rdma_rank, the internode
    handle)."""
    need_torch()
    script = os.path.join(HERE, "..", "transport", "multihost.sh")
    env = dict(os.environ, MULTIHOST_TRANSPORT=transport,
               MULTIHOST_RANKS=str(n))
    p = subprocess.run(["bash", script, "env", f"PYTHONPATH={HERE}",
                        sys.executable,
                        os.path.join(HERE, "ranks_deep_ep_normal.py"),
                        "29600"], capture_output=True, text=True,
                       timeout=500, env=env)
    out = p.stdout + p.stderr
    if p.returncode == 77:
        if os.environ.get("GIN_REQUIRE_NETNS") == "1":
            pytest.fail("no network namespaces (GIN_REQUIRE_NETNS=1): " +
                        out[-2000:])
        pytest.skip("network namespaces need root")
    if transport == "ofi" and "this build has no ofi transport" in out:
        pytest.skip("the package was built without libfabric")
    assert p.returncode == 0, out[-8000:]
    for job in ("auto", "proxy"):  # multihost.sh runs the job twice
        for r in range(n):
            assert f"[{job} {r}] rank {r}/{n}: OK" in p.stdout, out[-8000:]


@pytest.mark.parametrize("n", [2, 4, 8])
def test_deep_ep_graph(n):
    """low_latency_dispatch and low_latency_combine captured in a CUDA
    graph and replayed, equal to the eager calls (ranks_graph.py)."""
    need_numpy()
    need_torch()
    import gin_comm
    if gin_comm.TARGET != "cuda":
        pytest.skip("CUDA graphs: the cuda target only")
    all_ok(launch(n, "ranks_graph.py", free_port()), n)


def test_killed_rank():
    """Rank 2 of 3 dies; ranks 0 and 1 get a GinError naming it within
    twice the timeout, and ginrun reports the kill."""
    need_numpy()
    if os.environ.get("GIN_COMM_TARGET") == "cuda":
        need_torch()  # device memory: ranks_kill.py passes tensors there
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


def test_moe_example():
    """The README's quick start: examples/python/moe.py under torchrun at
    2 ranks prints its check against one process and its figures."""
    need_torch()
    ex = os.path.join(HERE, "..", "..", "examples", "python", "moe.py")
    p = subprocess.run([sys.executable, "-m", "torch.distributed.run",
                        "--nproc-per-node", "2", "--master-port",
                        str(free_port()), ex, "--fp8", "--iters", "3"],
                       capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-6000:]
    assert re.search(r"check: .* OK", p.stdout), out[-6000:]
    assert re.search(r"dispatch: gin [0-9.]+ us, all_to_all_single", p.stdout)
    assert p.stdout.strip().endswith("OK"), out[-6000:]
