#!/usr/bin/env python3
"""Joins the multi-GPU run's CSVs into two markdown tables with ratios
(scripts/multigpu-run.sh).

    scripts/multigpu-table.py [-o DIR] [--gpus N] [--meta FILE] CSV...

Input: every CSV of the run, told apart by their columns and rows:
gin-perf's columns (gin_perf_cuda with path `direct` or `proxy-ipc`,
nvshmem_perf with path `nvshmem`, nccl_perf with path `nccl`, or
`nccl-self` for one rank) and gin-ep-bench's columns (gin_ep_bench_cuda:
impl `gin`, `gin-pipelined`, `host-baseline`; scripts/ep_nccl_a2a.py:
`nccl-a2a`, `nccl-a2a-counts`). Repeated rows take the median.

1. Point to point, two ranks on two GPUs: pingpong (put+signal round trip
   against NCCL's ncclSend/ncclRecv round trip, median us) per issuer and
   size, and bw (GB/s) per message size. Columns: gin direct, gin proxy
   (ipc), NVSHMEM (same issuer), NCCL (stream-ordered), NCCL with the
   host waiting for each message, the floor (pingpong: gin-perf's raw flag
   ping-pong between the two ranks; bw: the best copy into the peer's
   memory, floor_peer_copy, the NVLink copy floor), and the ratios
   gin direct / NVSHMEM, gin direct / NCCL, gin proxy / NCCL and
   gin direct / floor of the row's metric. For us, below 1 means gin is
   faster; for GB/s, above 1 means gin is faster.
2. EP dispatch and combine per rank count: gin (host-synchronised wall
   clock), gin pipelined (steps back to back, per-phase GPU time), the
   host-initiated baseline, NCCL all_to_all_single (split sizes known;
   and with the counts exchanged first), DeepEP's published EP8 NVLink
   figures (77 us dispatch, 114 us combine, H800), and gin pipelined /
   each of them (time: below 1 means gin is faster).

With --gpus below 2 the output says first that it is not the multi-GPU
measurement (ranks shared one GPU; NCCL ran one rank sending to itself).
Printed as markdown and written to DIR/multigpu.md, DIR/multigpu-p2p.csv
and DIR/multigpu-ep.csv. Python standard library only. Exit status 1 when
no row could be read.
"""

import argparse
import csv
import os
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ in scripts/
from perf_csv import (  # noqa: E402
    GRAN_ORDER, collect, med, row_bytes, write_csv)

DEEPEP_EP8_US = {"dispatch": 77.0, "combine": 114.0}  # H800, NVLink
P2P_COLS = ("test", "issuer", "bytes", "metric", "gin_direct", "gin_proxy",
            "nvshmem", "nccl", "nccl_host_sync", "floor", "direct_nvshmem",
            "direct_nccl", "proxy_nccl", "direct_floor")
EP_COLS = ("ranks", "op", "gin", "gin_pipelined", "gin_pipelined_zc",
           "host_baseline", "nccl_a2a", "nccl_a2a_counts", "deepep_h800",
           "pipe_nccl", "pipe_nccl_counts", "pipe_deepep", "pipe_zc_deepep")


def read(paths):
    """({(path, test, gran, bytes): {col: [values]}},
    {(impl, op, ranks): {col: [values]}}) from every file."""
    p2p, ep = {}, {}
    for p in paths:
        try:
            with open(p, newline="") as f:
                rd = csv.DictReader(f)
                cols = set(rd.fieldnames or ())
                if {"path", "test", "bytes"} <= cols:
                    for r in rd:
                        size = row_bytes(r)
                        if size is None:
                            continue
                        key = (r["path"].strip(), r["test"].strip(),
                               (r.get("granularity") or "").strip(), size)
                        collect(p2p.setdefault(key, {}), r,
                                ("median_us", "gbps"))
                elif {"impl", "op", "ranks"} <= cols:
                    # gin-ep-bench --zero-copy runs (multigpu-run.sh's
                    # ep_gin_zc_*): their gin rows apart, as impl + "-zc".
                    zc = "-zc" if os.path.basename(p).startswith(
                        "ep_gin_zc_") else ""
                    for r in rd:
                        try:
                            ranks = int(r["ranks"])
                        except ValueError:
                            continue
                        impl = r["impl"].strip()
                        if impl.startswith("gin"):
                            impl += zc
                        elif zc:
                            continue  # its baseline: already in the others
                        key = (impl, r["op"].strip(), ranks)
                        collect(ep.setdefault(key, {}), r, ("median_us",))
                else:
                    print("multigpu-table: %s: columns not known, skipped"
                          % p, file=sys.stderr)
        except OSError as e:
            print("multigpu-table: %s: %s" % (p, e.strerror), file=sys.stderr)
    return p2p, ep


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(v):
    if v is None:
        return ""
    if v >= 1000:
        return "%.0f" % v
    return "%.4g" % v


def size_name(n):
    for unit, s in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= s and n % s == 0:
            return "%d %s" % (n // s, unit)
    return "%d B" % n


def p2p_rows(p2p):
    """The point-to-point table's rows (dicts of P2P_COLS)."""
    def get(path, test, gran, size, col):
        return med(p2p.get((path, test, gran, size)), col)

    nccl = "nccl" if any(k[0] == "nccl" for k in p2p) else "nccl-self"
    floor_pp = [v for k, c in p2p.items()
                if k[0] == "direct" and k[1] == "floor_raw_flag_pp"
                for v in c.get("median_us", [])]
    floor_pp = statistics.median(floor_pp) if floor_pp else None
    copies = [med(c, "gbps") for k, c in p2p.items()
              if k[1] == "floor_peer_copy"
              and k[0] in ("direct", "proxy-ipc")]
    floor_bw = max([v for v in copies if v], default=None)
    rows = []
    keys = sorted({(k[2], k[3]) for k in p2p
                   if k[0] in ("direct", "proxy-ipc") and k[1] == "pingpong"},
                  key=lambda k: (GRAN_ORDER.get(k[0], 9), k[1]))
    for gran, size in keys:
        d = get("direct", "pingpong", gran, size, "median_us")
        px = get("proxy-ipc", "pingpong", gran, size, "median_us")
        nv = get("nvshmem", "pingpong", gran, size, "median_us")
        nc = get(nccl, "pingpong", "host", size, "median_us")
        ns = get(nccl, "pingpong_sync", "host", size, "median_us")
        rows.append(dict(zip(P2P_COLS, (
            "pingpong", gran, size, "us", d, px, nv, nc, ns, floor_pp,
            ratio(d, nv), ratio(d, nc), ratio(px, nc), ratio(d, floor_pp)))))
    sizes = sorted({k[3] for k in p2p
                    if k[0] in ("direct", "proxy-ipc") and k[1] == "bw"})
    for size in sizes:
        d = get("direct", "bw", "block", size, "gbps")
        px = get("proxy-ipc", "bw", "block", size, "gbps")
        nv = get("nvshmem", "bw", "block", size, "gbps")
        nc = get(nccl, "bw", "host", size, "gbps")
        rows.append(dict(zip(P2P_COLS, (
            "bw", "block", size, "GB/s", d, px, nv, nc, None, floor_bw,
            ratio(d, nv), ratio(d, nc), ratio(px, nc), ratio(d, floor_bw)))))
    return rows, nccl


def ep_rows(ep):
    """The EP table's rows (dicts of EP_COLS)."""
    def get(impl, op, ranks):
        return med(ep.get((impl, op, ranks)), "median_us")

    rows = []
    for ranks in sorted({k[2] for k in ep}):
        for op in ("dispatch", "combine"):
            g, gp = get("gin", op, ranks), get("gin-pipelined", op, ranks)
            gz = get("gin-pipelined-zc", op, ranks)
            hb = get("host-baseline", op, ranks)
            na, nc = get("nccl-a2a", op, ranks), get("nccl-a2a-counts", op,
                                                      ranks)
            dp = DEEPEP_EP8_US[op] if ranks == 8 else None
            if not any((g, gp, gz, hb, na, nc)):
                continue
            rows.append(dict(zip(EP_COLS, (
                ranks, op, g, gp, gz, hb, na, nc, dp, ratio(gp, na),
                ratio(gp, nc), ratio(gp, dp), ratio(gz, dp)))))
    return rows


def markdown(cols, heads, rows, conv):
    out = ["| " + " | ".join(heads) + " |",
           "| " + " | ".join("---" if i < 2 else "---:"
                             for i in range(len(heads))) + " |"]
    for r in rows:
        out.append("| " + " | ".join(conv(c, r[c]) for c in cols) + " |")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", default=".", help="output directory")
    ap.add_argument("--gpus", type=int, default=0,
                    help="GPUs of the run (below 2: labelled degenerate)")
    ap.add_argument("--meta", help="a file of 'key: value' lines to quote")
    ap.add_argument("csv", nargs="+")
    a = ap.parse_args()
    p2p, ep = read(a.csv)
    prows, nccl = p2p_rows(p2p)
    erows = ep_rows(ep)
    if not prows and not erows:
        print("multigpu-table: no rows to join", file=sys.stderr)
        return 1

    md = ["# gin across GPUs: side by side with NCCL and NVSHMEM",
          ""]
    if a.gpus < 2:
        md += ["**1 GPU: not the multi-GPU measurement.** The ranks shared "
               "GPU 0 under MPS, NCCL and the NCCL all-to-all ran one rank "
               "sending to itself (NCCL refuses two ranks on one GPU), and "
               "the peer copy floor is a copy within the GPU. This output "
               "only shows that the run works end to end.", ""]
    else:
        md += ["%d GPUs, one rank per GPU; point-to-point rows between "
               "GPU 0 and GPU 1." % a.gpus, ""]
    if a.meta:
        try:
            with open(a.meta) as f:
                md += ["- " + ln.rstrip() for ln in f if ln.strip()] + [""]
        except OSError as e:
            print("multigpu-table: %s: %s" % (a.meta, e.strerror),
                  file=sys.stderr)

    def conv(c, v):
        if c == "bytes":
            return size_name(v)
        return v if isinstance(v, str) else ("" if v is None else
                                             (fmt(v) if isinstance(v, float)
                                              else str(v)))

    if prows:
        nc = "NCCL" if nccl == "nccl" else "NCCL (1 rank, self)"
        md += ["## Point to point, two ranks", ""]
        md += markdown(P2P_COLS, (
            "test", "issuer", "size", "metric", "gin direct",
            "gin proxy (ipc)", "NVSHMEM", nc, nc + " host waits", "floor",
            "direct / NVSHMEM", "direct / NCCL", "proxy / NCCL",
            "direct / floor"), prows, conv)
        md += ["", "pingpong: put+signal round trip (NCCL: ncclSend then "
               "ncclRecv), median us, lower is better: ratios below 1 mean "
               "gin is faster; floor: raw flag ping-pong between the two "
               "ranks (no library). bw: one direction, GB/s, higher is "
               "better: ratios above 1 mean gin is faster; floor: the best "
               "copy into the peer's memory (floor_peer_copy, copy engine, "
               "what cudaMemcpyPeer does).", ""]
    if erows:
        md += ["## EP dispatch and combine (DeepEP low-latency sizes)", ""]
        md += markdown(EP_COLS, (
            "ranks", "op", "gin", "gin pipelined",
            "gin pipelined, zero-copy", "host baseline", "NCCL all-to-all",
            "NCCL all-to-all + counts", "DeepEP (H800)", "pipelined / NCCL",
            "pipelined / NCCL + counts", "pipelined / DeepEP",
            "zero-copy / DeepEP"), erows, conv)
        md += ["", "Median us on rank 0, lower is better; ratios below 1 "
               "mean gin is faster. gin: wall clock with a host "
               "synchronisation per call; gin pipelined: steps issued back "
               "to back, per-phase GPU time; zero-copy: the same with the "
               "experts' outputs written into gin's combine buffer "
               "(--zero-copy; its dispatch code is the same); NCCL: "
               "all_to_all_single timed "
               "by CUDA events, exchange only (split sizes known), and with "
               "the counts exchanged first; DeepEP: published EP8 figures "
               "(H800, NVLink), not measured here.", ""]
    text = "\n".join(md)
    print(text)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "multigpu.md"), "w") as f:
        f.write(text + "\n")
    write_csv(os.path.join(a.out, "multigpu-p2p.csv"), P2P_COLS, prows)
    write_csv(os.path.join(a.out, "multigpu-ep.csv"), EP_COLS, erows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
