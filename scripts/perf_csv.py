"""Reading and writing gin-perf's CSVs, shared by the scripts that join
them into tables (scripts/nvshmem-table.py, scripts/multigpu-table.py).

Cells collect every value seen for a key, so that repeated rows take the
median. Python standard library only.
"""

import csv
import math
import statistics

GRAN_ORDER = {"thread": 0, "warp": 1, "block": 2}


def num(v):
    """A positive finite float from a CSV cell, else None."""
    try:
        x = float((v or "").strip())
    except ValueError:
        return None
    return x if math.isfinite(x) and x > 0 else None


def row_bytes(r):
    """The row's `bytes` column as an int (0 when empty), else None."""
    try:
        return int(float(r.get("bytes") or "0"))
    except ValueError:
        return None


def collect(cell, r, cols):
    """Appends row r's numbers (num) of cols to cell ({col: [values]})."""
    for c in cols:
        v = num(r.get(c))
        if v is not None:
            cell.setdefault(c, []).append(v)


def med(cell, col):
    """The median of a cell's values of col, else None."""
    vals = (cell or {}).get(col)
    return statistics.median(vals) if vals else None


def write_csv(path, cols, rows):
    """Rows (dicts) as a CSV of cols: floats as %.6g, None empty."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow(["" if r[c] is None else
                        ("%.6g" % r[c] if isinstance(r[c], float) else r[c])
                        for c in cols])
