#!/usr/bin/env python3
"""Warm file -> GPU by reading threads and piece size, on a GPU machine:
`iolab cat --gpu 0 --json --threads T --block B` on a checkpoint held in
the page cache, every setting once per round, the order rotated each
round; prints the median GB/s of each setting with its range, and what the
threads' time went to (setting up, reading, copying, waiting), so the
built-in thread count (`iolab_reader::gpu::MAX_THREADS`) can be checked
against the machine.

    python3 scripts/gpu_sweep.py --iolab target/gpu-carry/iolab --dir D
        [--size 4g] [--rounds 3] [--threads 4,8,12,16] [--blocks 2m,4m,8m]
        [--out FILE]
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vs_gpu  # noqa: E402  (the checkpoint and page-cache helpers)


def one(iolab, path, threads, block):
    """One load; its JSON, or None and why."""
    r = subprocess.run([iolab, "cat", "--gpu", "0", "--json", "--threads", str(threads), "--block", block, path],
                       capture_output=True, text=True, timeout=120, check=False)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["no message"])[-1]
    return json.loads(r.stdout), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iolab", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--size", default="4g", type=vs_gpu.size_arg)
    ap.add_argument("--rounds", default=3, type=int)
    ap.add_argument("--threads", default="4,8,12,16")
    ap.add_argument("--blocks", default="2m,4m,8m")
    ap.add_argument("--out")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    path = os.path.join(a.dir, "sweep.safetensors")
    if os.path.exists(path):
        print(f"gpu_sweep: {path} exists: give a --dir without it (the sweep writes and removes that file)", file=sys.stderr)
        sys.exit(2)
    vs_gpu.make_checkpoint(path, a.size, 64)
    if vs_gpu.warm(path, a.iolab) < 0.98:
        sys.exit("gpu_sweep: the checkpoint could not be held in the page cache")
    settings = [(int(t), b) for t in a.threads.split(",") for b in a.blocks.split(",")]
    rates = {s: [] for s in settings}
    parts = {s: [] for s in settings}
    for r in range(a.rounds):
        k = r % len(settings)
        for s in settings[k:] + settings[:k]:
            j, err = one(a.iolab, path, *s)
            if j is None:
                print(f"gpu_sweep: {s[0]} threads, {s[1]}: {err}", file=sys.stderr)
                continue
            rates[s].append(j["gb_per_s"])
            st = j["stats"]
            parts[s].append([st[f] / 1e6 / st["threads"] for f in ("setup_ns", "read_ns", "copy_ns", "wait_ns")])
    os.remove(path)
    gpu = vs_gpu.sh(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"])
    lines = [
        "command: python3 scripts/gpu_sweep.py " + " ".join(sys.argv[1:]),
        f"date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; commit: {os.environ.get('IOLAB_COMMIT', 'unknown')}",
        f"machine: kernel {platform.release()}; {os.cpu_count()} CPUs; {gpu or 'no nvidia-smi'}",
        f"{a.size / 2**30:.2f} GiB checkpoint in the page cache, `iolab cat --gpu 0` (pieces staged 3 per thread,"
        " page-locked); GB/s, median [min-max] of the rounds; per-thread ms, medians",
        "",
        f"{'threads':>7} {'piece':>5} {'GB/s':>22}   {'setup':>6} {'read':>6} {'copy':>6} {'wait':>6}",
    ]
    for s in settings:
        v = rates[s]
        if not v:
            lines.append(f"{s[0]:>7} {s[1]:>5} {'failed':>22}")
            continue
        p = [statistics.median(c) for c in zip(*parts[s])]
        lines.append(f"{s[0]:>7} {s[1]:>5} {statistics.median(v):>8.2f} [{min(v):.2f}-{max(v):.2f}]"
                     f"   {p[0]:>6.1f} {p[1]:>6.1f} {p[2]:>6.1f} {p[3]:>6.1f}")
    best = max((s for s in settings if rates[s]), key=lambda s: statistics.median(rates[s]), default=None)
    if best:
        lines += ["", f"best: {best[0]} threads, {best[1]} pieces, {statistics.median(rates[best]):.2f} GB/s"]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    sys.exit(1 if any(not rates[s] for s in settings) else 0)


if __name__ == "__main__":
    main()
