"""What every rank of the Python tests shares: how it joins the test's
torch.distributed group, and how it reports (the pytest side reads it):
one "rank R/N: FAIL ..." line per failure (the first 20), or
"rank R/N: OK (what)"; the exit status to return."""

import os
import sys


def _iface_to(host):
    """The interface whose IPv4 network holds host's address (a name or
    an address), or None (no IPv4 address, no `ip` tool, no match)."""
    import ipaddress
    import socket
    import subprocess
    try:
        addr = ipaddress.ip_address(socket.getaddrinfo(
            host, None, socket.AF_INET)[0][4][0])
        out = subprocess.run(["ip", "-o", "-4", "addr", "show"],
                             capture_output=True, text=True).stdout
    except (OSError, ValueError):
        return None
    for line in out.splitlines():
        f = line.split()
        if len(f) > 3 and f[2] == "inet" and \
                addr in ipaddress.ip_network(f[3], strict=False):
            return f[1]
    return None


def gloo_group():
    """This rank in a gloo group of every rank, rendezvous at the port in
    argv[1]: (ranks, rank, group). Under ginrun (GIN_RANK, GIN_NRANKS) on
    this host; started as torchrun starts ranks (RANK, WORLD_SIZE,
    MASTER_ADDR), at MASTER_ADDR, so that the job may span hosts."""
    import torch.distributed as dist
    port = int(sys.argv[1])
    env = os.environ
    if "GIN_RANK" in env:
        n, me, at = int(env["GIN_NRANKS"]), int(env["GIN_RANK"]), "127.0.0.1"
    else:
        n, me, at = int(env["WORLD_SIZE"]), int(env["RANK"]), \
            env["MASTER_ADDR"]
        # gloo connects its pairs from the hostname's address, loopback
        # in a network namespace: the interface that reaches MASTER_ADDR.
        iface = _iface_to(at)
        if iface:
            os.environ.setdefault("GLOO_SOCKET_IFNAME", iface)
    dist.init_process_group("gloo", init_method=f"tcp://{at}:{port}",
                            rank=me, world_size=n)
    return n, me, dist.new_group(list(range(n)))


def report(rank, nranks, fails, what):
    for f in fails[:20]:
        print(f"rank {rank}/{nranks}: FAIL {f}")
    if not fails:
        print(f"rank {rank}/{nranks}: OK ({what})")
    sys.stdout.flush()
    return 1 if fails else 0
