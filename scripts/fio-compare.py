#!/usr/bin/env python3
"""One example's pairs of runs (DIR/EX.iolab.N.json, DIR/EX.fio.N.json):
one table row with the jobs and groups, the medians of each tool's total
bandwidth and of the iolab/fio ratio of every pair, whether the JSON key
sets are equal (iolab's own `iolab` key aside), whether the job and group
counts are, and whether fio_jsonplus_clat2csv reads both into the same
columns. Differences are printed under the row.

usage: fio-compare.py DIR EX PAIRS
"""
import json
import os
import statistics
import subprocess
import sys


def load(path):
    text = open(path).read()
    return json.loads(text[text.index("{"):])


def keys(v, prefix, out):
    if isinstance(v, dict):
        for k, x in v.items():
            k = "*" if prefix.endswith(("percentile", "bins")) else k
            p = f"{prefix}.{k}"
            out.add(p)
            keys(x, p, out)
    elif isinstance(v, list) and v:
        keys(v[0], prefix, out)


def key_set(doc):
    out = set()
    keys(doc, "", out)
    return {k for k in out if not k.startswith(".jobs.iolab") and not k.startswith(".global options.")
            and not k.startswith(".jobs.job options.")}


def mib(doc):
    return sum(j[d]["bw_bytes"] for j in doc["jobs"] for d in ("read", "write", "trim")) / 2**20


def csv_columns(path, tag, d):
    """The header of fio_jsonplus_clat2csv's first CSV of one output."""
    base = os.path.join(d, f"{tag}.csv")
    r = subprocess.run(["fio_jsonplus_clat2csv", path, base], capture_output=True, text=True)
    first = os.path.join(d, f"{tag}_job0.csv")
    if r.returncode != 0 or not os.path.exists(first):
        return None
    with open(first) as f:
        return f.readline().strip()


def main():
    d, ex, pairs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ours = [load(f"{d}/{ex}.iolab.{p}.json") for p in range(1, pairs + 1)]
    theirs = [load(f"{d}/{ex}.fio.{p}.json") for p in range(1, pairs + 1)]
    a, b = key_set(ours[0]), key_set(theirs[0])
    njobs = (len(ours[0]["jobs"]), len(theirs[0]["jobs"]))
    groups = (len({j["groupid"] for j in ours[0]["jobs"]}), len({j["groupid"] for j in theirs[0]["jobs"]}))
    ratios = [mib(o) / mib(t) for o, t in zip(ours, theirs) if mib(t) > 0]
    ci, cf = (csv_columns(f"{d}/{ex}.{w}.1.json", f"{ex}-{w}", d) for w in ("iolab", "fio"))
    csv = "-" if cf is None else ("yes" if ci == cf else "NO")
    print(f"{ex:<28} {njobs[0]:5} {groups[0]:5} {pairs:5} "
          f"{statistics.median(mib(o) for o in ours):9.1f} {statistics.median(mib(t) for t in theirs):9.1f} "
          f"{statistics.median(ratios) if ratios else float('nan'):7.2f} "
          f"{'yes' if a == b else 'NO':>5} {'yes' if njobs[0] == njobs[1] and groups[0] == groups[1] else 'NO':>5} {csv:>5}")
    if a != b:
        print(f"    keys only iolab has: {sorted(a - b)[:8]}; only fio has: {sorted(b - a)[:8]}")
    if njobs[0] != njobs[1] or groups[0] != groups[1]:
        print(f"    jobs iolab/fio {njobs}, groups {groups}")
    if csv == "NO":
        print(f"    clat2csv columns: iolab {ci!r}, fio {cf!r}")


if __name__ == "__main__":
    main()
