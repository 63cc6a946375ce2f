#!/usr/bin/env python3
"""Timeline of the host target's tcp round trip (experiment, with
timeline.patch): reads DIR/tl.0 and DIR/tl.1 ("kind index tsc" lines,
kinds PRE POST WAIT SEEN SBEG SEND RECV APPL) and prints the median of
each step of an 8-byte round trip, rank 0 = A, rank 1 = B, skipping the
first SKIP messages. Usage: tl_analyze.py DIR [SKIP]"""
import statistics
import sys

K = ["PRE", "POST", "WAIT", "SEEN", "SBEG", "SEND", "RECV", "APPL"]


def load(path):
    ev = {k: [] for k in K}
    rate = None
    for line in open(path):
        f = line.split()
        if f[0] == "tsc_per_ns":
            rate = float(f[1])
            continue
        ev[K[int(f[0])]].append(int(f[2]))
    return rate, ev


d = sys.argv[1]
skip = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
ra, A = load(d + "/tl.0")
rb, B = load(d + "/tl.1")
rate = (ra + rb) / 2
n = min(len(v) for v in list(A.values()) + list(B.values())) - 1
# The chain of one round trip k: A posts, B answers, A sees the answer.
chain = [
    ("A put issued -> A proxy sees it", A, "PRE", A, "SEEN"),
    ("A proxy: descriptor -> sendmsg", A, "SEEN", A, "SBEG"),
    ("A sendmsg start -> B recv has it", A, "SBEG", B, "RECV"),
    ("B proxy: recv -> signal applied", B, "RECV", B, "APPL"),
    ("B signal applied -> B kernel sees it", B, "APPL", B, "WAIT"),
    ("B kernel: wait done -> put issued", B, "WAIT", B, "PRE"),
    ("B put issued -> B proxy sees it", B, "PRE", B, "SEEN"),
    ("B proxy: descriptor -> sendmsg", B, "SEEN", B, "SBEG"),
    ("B sendmsg start -> A recv has it", B, "SBEG", A, "RECV"),
    ("A proxy: recv -> signal applied", A, "RECV", A, "APPL"),
    ("A signal applied -> A kernel sees it", A, "APPL", A, "WAIT"),
]
side = [
    ("A sendmsg (start -> return)", A, "SBEG", A, "SEND"),
    ("B sendmsg (start -> return)", B, "SBEG", B, "SEND"),
    ("A gin_put call (PRE -> POST)", A, "PRE", A, "POST"),
    ("B recv returned before A's sendmsg did (share)", None, None, None, None),
]
total = 0.0
print("tsc %.3f per ns, %d round trips (first %d skipped)" % (rate, n - skip, skip))
for name, x, a, y, b in chain:
    v = [(y[b][k] - x[a][k]) / rate for k in range(skip, n)]
    m = statistics.median(v)
    total += m
    print("%-40s %8.0f ns  (p10 %6.0f, p90 %6.0f)" % (name, m,
          sorted(v)[len(v) // 10], sorted(v)[9 * len(v) // 10]))
rt = [(A["WAIT"][k] - A["PRE"][k]) / rate for k in range(skip, n)]
print("%-40s %8.0f ns" % ("sum of the medians", total))
print("%-40s %8.0f ns" % ("round trip (A PRE -> A WAIT), median", statistics.median(rt)))
for name, x, a, y, b in side[:3]:
    v = [(y[b][k] - x[a][k]) / rate for k in range(skip, n)]
    print("%-40s %8.0f ns" % (name, statistics.median(v)))
early = sum(1 for k in range(skip, n) if B["RECV"][k] < A["SEND"][k])
print("%-40s %8.2f" % (side[3][0], early / (n - skip)))
