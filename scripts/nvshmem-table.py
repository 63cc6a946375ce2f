#!/usr/bin/env python3
"""Joins gin-perf and nvshmem_perf CSVs into one gin vs NVSHMEM table.

    scripts/nvshmem-table.py [-o DIR] [--title T] --gin A.csv... --nvshmem B.csv...

Both programs write gin-perf's CSV columns; rows are matched on (test,
granularity, bytes) for the tests both run: pingpong (median and p99
round trip, us), bw (GB/s) and rate (Mops/s). Repeated rows of one side
take the median. Printed as markdown; written to DIR/nvshmem-compare.csv
and DIR/nvshmem-compare.md; with matplotlib, DIR/nvshmem-latency.png
(round trip vs size, one panel per issue granularity) and
DIR/nvshmem-bandwidth.png (GB/s vs size, gin-perf's device copy floor
dashed). Without matplotlib the plots are skipped with a message.

ratio = gin / NVSHMEM of the row's metric. For latency (us, lower is
better) below 1 means gin is faster; for GB/s and Mops/s (higher is
better) above 1 means gin is faster. Python standard library only, plus
matplotlib for the plots. Exit status 1 when no row could be joined.
"""

import argparse
import csv
import os
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ in scripts/
from perf_csv import (  # noqa: E402
    GRAN_ORDER, collect, med, num, row_bytes, write_csv)

TESTS = ("pingpong", "bw", "rate")
METRIC = {"pingpong": ("median_us", "us", "lower"),
          "bw": ("gbps", "GB/s", "higher"),
          "rate": ("mops", "Mops/s", "higher")}
CSV_COLS = ("test", "granularity", "bytes", "metric", "better", "gin",
            "nvshmem", "ratio", "gin_p99_us", "nvshmem_p99_us",
            "copy_floor_gbps")


def read(paths, who):
    """{(test, gran, bytes): {column: [values]}} and gin-perf's floors
    ({name: [values]}) from every file of one side."""
    rows, floors = {}, {}
    for p in paths:
        try:
            with open(p, newline="") as f:
                rd = csv.DictReader(f)
                if not rd.fieldnames or not {"test", "bytes"} <= set(
                        rd.fieldnames):
                    sys.exit("nvshmem-table: %s: not a gin-perf CSV" % p)
                for r in rd:
                    test = (r.get("test") or "").strip()
                    gran = (r.get("granularity") or "").strip()
                    size = row_bytes(r)
                    if size is None:
                        continue
                    if test == "floor_raw_flag_pp":
                        v = num(r.get("median_us"))
                        if v:
                            floors.setdefault("raw_flag_pingpong_us",
                                              []).append(v)
                        continue
                    if test == "rate_raw":
                        v = num(r.get("mops"))
                        if v:
                            floors.setdefault("rate_raw_mops", []).append(v)
                        continue
                    if test not in TESTS:
                        continue
                    collect(rows.setdefault((test, gran, size), {}), r,
                            ("median_us", "p99_us", "gbps", "mops",
                             "floor_value"))
        except OSError as e:
            sys.exit("nvshmem-table: %s: %s" % (p, e.strerror))
    if not rows:
        print("nvshmem-table: no pingpong/bw/rate rows in the %s files" % who,
              file=sys.stderr)
    return rows, floors


def join(gin, nv):
    """One dict per (test, gran, bytes) either side has, in table order."""
    keys = sorted(set(gin) | set(nv),
                  key=lambda k: (TESTS.index(k[0]),
                                 GRAN_ORDER.get(k[1], 9), k[1], k[2]))
    out = []
    for k in keys:
        col, unit, better = METRIC[k[0]]
        g, n = med(gin.get(k), col), med(nv.get(k), col)
        lat = k[0] == "pingpong"  # elsewhere p99_us holds the slowest rep
        out.append({
            "test": k[0], "granularity": k[1], "bytes": k[2],
            "metric": col, "unit": unit, "better": better,
            "gin": g, "nvshmem": n,
            "ratio": g / n if g and n else None,
            "gin_p99_us": med(gin.get(k), "p99_us") if lat else None,
            "nvshmem_p99_us": med(nv.get(k), "p99_us") if lat else None,
            "copy_floor_gbps": med(gin.get(k), "floor_value")
            if k[0] == "bw" else None})
    return out


def size_label(b):
    for unit, s in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= unit and b % unit == 0:
            return "%d %s" % (b // unit, s)
    return "%d B" % b


def fmt(v, digits=4):
    return "-" if v is None else "%.*g" % (digits, v)


def markdown(rows, floors, title):
    lines = []
    if title:
        lines += ["**%s**" % title, ""]
    lines += ["| test | issued by | size | metric | gin | NVSHMEM | "
              "gin / NVSHMEM |",
              "| --- | --- | ---: | --- | ---: | ---: | ---: |"]
    for r in rows:
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            r["test"], r["granularity"], size_label(r["bytes"]), r["unit"],
            fmt(r["gin"]), fmt(r["nvshmem"]), fmt(r["ratio"], 3)))
    lines += ["", "pingpong: put+signal round trip, median (us, lower is "
              "better: gin / NVSHMEM below 1 means gin is faster); bw: "
              "GB/s and rate: Mops/s (higher is better: above 1 means gin "
              "is faster)."]
    f = floors.get("raw_flag_pingpong_us")
    if f:
        lines.append("Raw flag ping-pong floor (no library, gin-perf, same "
                     "run): %s us." % fmt(statistics.median(f)))
    f = floors.get("rate_raw_mops")
    rate = [r for r in rows if r["test"] == "rate"]
    if f and rate:
        raw = statistics.median(f)
        g, n = rate[0]["gin"], rate[0]["nvshmem"]
        lines.append("Rate's floor, the same 8-byte stores with no library "
                     "(gin-perf --raw, same run): %s Mops/s; gin %s x, "
                     "NVSHMEM %s x of it." % (
                         fmt(raw), fmt(g / raw if g else None, 3),
                         fmt(n / raw if n else None, 3)))
    return "\n".join(lines) + "\n"


def plot(rows, outdir, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        print("nvshmem-table: no matplotlib: plots skipped (pip install "
              "matplotlib, then run this script again on the CSVs)")
        return

    def series(test, gran, key):
        pts = [(r["bytes"], r[key]) for r in rows
               if r["test"] == test and r["granularity"] == gran and r[key]]
        return [p[0] for p in pts], [p[1] for p in pts]

    def axes(ax, ylabel):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
            lambda x, _: size_label(int(x)).replace(" ", "") if x >= 1
            else ""))
        ax.set_yscale("log")
        ax.tick_params(axis="x", labelrotation=45, labelsize=8)
        ax.yaxis.set_major_formatter(
            matplotlib.ticker.FuncFormatter(lambda y, _: "%g" % y))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.LogFormatter(
            labelOnlyBase=False, minor_thresholds=(1, 0.4)))
        ax.set_xlabel("bytes")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)

    grans = sorted({r["granularity"] for r in rows if r["test"] == "pingpong"},
                   key=lambda g: GRAN_ORDER.get(g, 9))
    if grans:
        fig, axs = plt.subplots(1, len(grans), figsize=(5 * len(grans), 4.5),
                                squeeze=False)
        for ax, g in zip(axs[0], grans):
            for key, style, name in (("gin", "-o", "gin median"),
                                     ("nvshmem", "-s", "NVSHMEM median"),
                                     ("gin_p99_us", ":", "gin p99"),
                                     ("nvshmem_p99_us", ":", "NVSHMEM p99")):
                xs, ys = series("pingpong", g, key)
                if xs:
                    ax.plot(xs, ys, style, ms=3.5, lw=1.4, label=name,
                            color="C0" if key.startswith("gin") else "C1")
            ax.set_title("put+signal round trip, %s-issued" % g)
            axes(ax, "us")
        if title:
            fig.suptitle(title)
        fig.tight_layout()
        p = os.path.join(outdir, "nvshmem-latency.png")
        fig.savefig(p, dpi=110)
        print("nvshmem-table: wrote %s" % p)
    if any(r["test"] == "bw" for r in rows):
        fig, ax = plt.subplots(figsize=(7.5, 4.5))
        for key, style, name, c in (("gin", "-o", "gin", "C0"),
                                    ("nvshmem", "-s", "NVSHMEM", "C1"),
                                    ("copy_floor_gbps", "--", "device copy "
                                     "floor (cudaMemcpy)", "gray")):
            xs, ys = series("bw", "block", key)
            if xs:
                ax.plot(xs, ys, style, ms=3.5, lw=1.4, label=name, color=c)
        ax.set_title("put bandwidth, block-issued" +
                     (" - " + title if title else ""))
        axes(ax, "GB/s")
        fig.tight_layout()
        p = os.path.join(outdir, "nvshmem-bandwidth.png")
        fig.savefig(p, dpi=110)
        print("nvshmem-table: wrote %s" % p)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gin", nargs="+", required=True, help="gin-perf CSVs")
    ap.add_argument("--nvshmem", nargs="+", required=True,
                    help="nvshmem_perf CSVs")
    ap.add_argument("-o", "--outdir", default=".", help="output directory")
    ap.add_argument("--title", default="", help="title of table and plots")
    a = ap.parse_args()
    gin, floors = read(a.gin, "gin")
    nv, _ = read(a.nvshmem, "nvshmem")
    rows = join(gin, nv)
    if not any(r["ratio"] for r in rows):
        print("nvshmem-table: no row has both a gin and an NVSHMEM figure",
              file=sys.stderr)
    os.makedirs(a.outdir, exist_ok=True)
    md = markdown(rows, floors, a.title)
    sys.stdout.write(md)
    with open(os.path.join(a.outdir, "nvshmem-compare.md"), "w") as f:
        f.write(md)
    write_csv(os.path.join(a.outdir, "nvshmem-compare.csv"), CSV_COLS, rows)
    if rows:
        plot(rows, a.outdir, a.title)
    return 0 if any(r["ratio"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
