#!/usr/bin/env python3
"""Plots gin-perf CSV files: latency vs size and bandwidth vs size.

    scripts/perf-plot.py [-o DIR] [--title T] [--tests GLOBS] FILE.csv...

Columns are read by header name, so extra ones (path, mops, label, ...) do
not matter; the ones used are test, granularity, bytes, median_us, p99_us,
gbps, floor, floor_value, and label when present.

DIR/latency.png: median_us per size, one solid series per (label, test,
granularity), p99 as a lighter dotted line of the same colour; floors
dashed: the floor/floor_value columns of latency floors (for example
raw_flag_pingpong) and the rows whose test starts with "floor_" and have a
median but no GB/s (floor_tcp_pp, floor_shm_pp, ...). A floor measured at
one size only is drawn as a horizontal line.

DIR/bandwidth.png: gbps per size, solid; bandwidth floors dashed: the
floor_value of rows whose floor names a bandwidth (device_copy_gbps, ...)
and "floor_" rows with GB/s (floor_tcp_stream, floor_dev_copy, ...).

DIR/floorscan.png (only where `gin-perf floorscan` rows are present): the
raw floor against the flag's offset in the window, one series per pass
and file, with the floor on the ping-pong's signal line and the 8-byte
put round trip as dashed levels. floor_scan rows are left out of
latency.png.

The label of a series is the file's `label` column when present, else the
file's stem. A plot with nothing to draw is skipped with a message.
Needs matplotlib (pip install matplotlib, or apt-get install
python3-matplotlib).
"""

import argparse
import csv
import fnmatch
import math
import os
import statistics
import sys


def num(v):
    """A positive finite float from a CSV cell, else None."""
    if v is None:
        return None
    v = v.strip()
    if not v or v in ("-", "nan", "NaN"):
        return None
    try:
        x = float(v)
    except ValueError:
        return None
    return x if math.isfinite(x) and x > 0 else None


def is_bw_floor(name):
    """Whether a floor name in the floor column is a bandwidth."""
    n = name.lower()
    return "gbps" in n or n.endswith("_bw") or "bandwidth" in n


def size_label(b):
    for unit, s in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if b >= unit and b % unit == 0:
            return "%d%s" % (b // unit, s)
    return "%g" % b


class Series:
    """Points of one line: bytes -> list of values (repeats take the
    median)."""

    def __init__(self, name, kind):
        self.name = name
        self.kind = kind  # "data", "p99" or "floor"
        self.pts = {}

    def add(self, x, y):
        if x is not None and y is not None:
            self.pts.setdefault(x, []).append(y)

    def xy(self):
        xs = sorted(self.pts)
        return xs, [statistics.median(self.pts[x]) for x in xs]


def read_rows(paths, tests):
    """Rows of every file, each with '_label' set; exits on a bad file."""
    rows = []
    for p in paths:
        stem = os.path.splitext(os.path.basename(p))[0]
        try:
            with open(p, newline="") as f:
                rd = csv.DictReader(f)
                need = {"test", "bytes"}
                if not rd.fieldnames or not need <= set(rd.fieldnames):
                    sys.exit("perf-plot: %s: no gin-perf header (need %s)" %
                             (p, ", ".join(sorted(need))))
                for r in rd:
                    test = (r.get("test") or "").strip()
                    if tests and not any(
                            fnmatch.fnmatch(test, g) for g in tests):
                        continue
                    r["_label"] = (r.get("label") or "").strip() or stem
                    rows.append(r)
        except OSError as e:
            sys.exit("perf-plot: %s: %s" % (p, e.strerror))
    return rows


def collect(rows):
    """Sorts rows into latency and bandwidth series (dicts by name)."""
    lat, bw = {}, {}

    def get(d, name, kind):
        if name not in d:
            d[name] = Series(name, kind)
        return d[name]

    for r in rows:
        test = r["test"].strip()
        if test == "floor_scan":  # offsets, not sizes: floorscan.png
            continue
        gran = (r.get("granularity") or "").strip()
        x = num(r.get("bytes"))
        med, p99, gbps = (num(r.get("median_us")), num(r.get("p99_us")),
                          num(r.get("gbps")))
        base = r["_label"] + " " + test
        if gran and gran != "-":
            base += " " + gran
        if test.startswith("floor_"):
            if gbps is not None:
                get(bw, base, "floor").add(x, gbps)
            elif med is not None:
                get(lat, base, "floor").add(x, med)
            continue
        if gbps is not None:  # a bandwidth row: its time is the burst's
            get(bw, base, "data").add(x, gbps)
        elif med is not None:
            get(lat, base, "data").add(x, med)
            if p99 is not None:
                get(lat, base + " p99", "p99").add(x, p99)
        floor = (r.get("floor") or "").strip()
        fv = num(r.get("floor_value"))
        if floor and fv is not None:
            d = bw if is_bw_floor(floor) else lat
            get(d, r["_label"] + " floor " + floor, "floor").add(x, fv)
    return lat, bw


def new_figure():
    """pyplot (Agg, no display), a figure, its axes and the colour cycle."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 6.5))
    return plt, fig, ax, plt.rcParams["axes.prop_cycle"].by_key()["color"]


def save_figure(plt, fig, out):
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def draw(series, ylabel, title, out):
    """Writes one plot; returns False (and says so) when there is nothing
    to draw."""
    data = [s for s in series.values() if s.kind == "data" and s.pts]
    floors = [s for s in series.values() if s.kind == "floor" and s.pts]
    if not data and not floors:
        return False
    plt, fig, ax, colors = new_figure()
    allx, ally = [], []
    for i, s in enumerate(data):
        c = colors[i % len(colors)]
        xs, ys = s.xy()
        ax.plot(xs, ys, "-o", color=c, ms=3.5, lw=1.6, label=s.name)
        allx += xs
        ally += ys
        p = series.get(s.name + " p99")
        if p is not None and p.pts:
            px, py = p.xy()
            ax.plot(px, py, ":", color=c, lw=1.2, alpha=0.45)
            ally += py
    levels = []
    for j, s in enumerate(floors):
        c = colors[(len(data) + j) % len(colors)]
        xs, ys = s.xy()
        if len(set(ys)) == 1:  # one figure for every size: a level
            levels.append((s, c, ys[0]))
        else:
            allx += xs
            ally += ys
            ax.plot(xs, ys, "--", marker="x", color=c, ms=4, lw=1.2,
                    label=s.name)
    lo_y, hi_y = (min(ally), max(ally)) if ally else (None, None)
    for s, c, y in levels:
        # A level far outside every curve (a host-target "copy" floor of
        # 1e6 GB/s) would squash the plot: named, not drawn.
        if lo_y is not None and not lo_y / 100 <= y <= hi_y * 100:
            print("perf-plot: %s: %s = %.3g is far outside the curves; "
                  "not drawn" % (os.path.basename(out), s.name, y))
            continue
        ally.append(y)
        ax.axhline(y, ls="--", color=c, lw=1.2,
                   label="%s (%.3g)" % (s.name, y))
    ax.set_xscale("log", base=2)
    if allx:
        lo, hi = min(allx), max(allx)
        if lo == hi:
            lo, hi = lo / 2, hi * 2
        ax.set_xlim(lo / 1.3, hi * 1.3)
        ticks, t = [], 1
        while t <= hi * 1.3:
            if t >= lo / 1.3:
                ticks.append(t)
            t *= 2
        step = max(1, (len(ticks) + 11) // 12)
        ax.set_xticks(ticks[::step])
        ax.set_xticklabels([size_label(t) for t in ticks[::step]])
    if ally and max(ally) / min(ally) > 20:
        ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if any(s.kind == "data" and (s.name + " p99") in series for s in data):
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], ls=":", color="gray"))
        labels.append("dotted: p99 of the series above")
    if len(handles) > 10:
        ax.legend(handles, labels, fontsize=7, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    else:
        ax.legend(handles, labels, fontsize=8)
    save_figure(plt, fig, out)
    return True


def draw_scan(rows, title, out):
    """floorscan.png: each pass's floor per flag offset, the signal-line
    floors and the 8-byte thread ping-pongs of the same files as levels.
    False when no file has floor_scan rows."""
    scan = [r for r in rows if r["test"].strip() == "floor_scan"]
    if not scan:
        return False
    plt, fig, ax, colors = new_figure()
    lines, levels = {}, {}
    for r in scan:
        gran = (r.get("granularity") or "").strip()
        name = r["_label"] + " " + gran
        y, x = num(r.get("median_us")), num(r.get("bytes"))
        if gran.startswith("line") and y is not None:
            lines.setdefault(name, Series(name, "data")).add(x or 0.0, y)
        elif gran.startswith("signal") and y is not None:
            levels.setdefault(r["_label"] + " floor on the signal line",
                              []).append(y)
    scanned = {r["_label"] for r in scan}
    for r in rows:  # the ping-pongs floorscan ran (8 B, thread)
        if (r["_label"] in scanned and r["test"].strip() == "pingpong"
                and (r.get("granularity") or "").strip() == "thread"
                and num(r.get("bytes")) == 8):
            y = num(r.get("median_us"))
            if y is not None:
                levels.setdefault(r["_label"] + " put 8 B round trip",
                                  []).append(y)
    for i, (name, ser) in enumerate(sorted(lines.items())):
        xs, ys = ser.xy()
        ax.plot(xs, ys, "-o", color=colors[i % len(colors)], ms=3.5,
                lw=1.2, label=name)
    for j, (name, ys) in enumerate(sorted(levels.items())):
        y = statistics.median(ys)
        ax.axhline(y, ls="--", lw=1.2,
                   color=colors[(len(lines) + j) % len(colors)],
                   label="%s (median of %d: %.3f)" % (name, len(ys), y))
    ax.set_xlabel("flag offset in the window (bytes; one 128-byte line each)")
    ax.set_ylabel("round trip (us, median)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(plt, fig, out)
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Latency and bandwidth vs message size from gin-perf "
        "CSV files (DIR/latency.png, DIR/bandwidth.png).")
    ap.add_argument("csv", nargs="+", help="gin-perf --csv files")
    ap.add_argument("-o", "--out", default=".",
                    help="output directory (created; default .)")
    ap.add_argument("--title", default="gin-perf",
                    help="title prefix of both plots")
    ap.add_argument("--tests", default="",
                    help="comma-separated test name globs to keep, e.g. "
                    "'pingpong,floor_tcp_*' (default: all)")
    a = ap.parse_args(argv)
    tests = [t.strip() for t in a.tests.split(",") if t.strip()]
    rows = read_rows(a.csv, tests)
    lat, bw = collect(rows)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        sys.exit("perf-plot: needs matplotlib (pip install matplotlib, or "
                 "apt-get install python3-matplotlib)")
    os.makedirs(a.out, exist_ok=True)
    wrote = 0
    for series, name, ylabel, what in (
            (lat, "latency.png", "latency (us; round trip for ping-pongs)", "latency"),
            (bw, "bandwidth.png", "bandwidth (GB/s)", "bandwidth")):
        out = os.path.join(a.out, name)
        if draw(series, ylabel, "%s: %s vs size" % (a.title, what), out):
            print("perf-plot: wrote %s" % out)
            wrote += 1
        else:
            print("perf-plot: no %s rows; %s not written" % (what, out))
    out = os.path.join(a.out, "floorscan.png")
    if draw_scan(rows, "%s: raw floor by flag line" % a.title, out):
        print("perf-plot: wrote %s" % out)
        wrote += 1
    return 0 if wrote else 1


if __name__ == "__main__":
    sys.exit(main())
