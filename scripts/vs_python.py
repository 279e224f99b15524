"""iolab's Python package against what Python programs use today, on the
same files in one session: whole files, a batch of random 4 KiB reads, the
cost of one small read, and a safetensors checkpoint loaded whole. Each comparison alternates the contenders
(round k starts with contender k mod n), cold (the file's pages dropped
with posix_fadvise DONTNEED before every run) and warm (read once first),
and reports each one's median time and the median over rounds of its time
over iolab's (above 1.00: iolab is faster). Run by scripts/vs-python.sh.

    python vs_python.py FILE_1G FILE_4G CHECKPOINT [ROUNDS]
    python vs_python.py --make-checkpoint CHECKPOINT [GIB]
"""

import mmap
import os
import random
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import warnings

import numpy as np

import iolab
import iolab.safetensors

# The profile in force is printed at the start; its warning would only
# repeat it.
warnings.simplefilter("ignore", iolab.ProfileWarning)

CHUNK = 64 << 20


def evict(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def warm(path):
    buf = bytearray(CHUNK)
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buf):
            pass


def read_open(p):
    with open(p, "rb") as f:
        return f.read()


def memmap_copy(p):
    m = np.memmap(p, mode="r")
    a = np.array(m)
    del m
    return a


WHOLE = {
    "iolab.read": lambda p: iolab.read(p),
    "open().read()": read_open,
    "Path.read_bytes": lambda p: Path(p).read_bytes(),
    "numpy.fromfile": lambda p: np.fromfile(p, dtype=np.uint8),
    "numpy.memmap+copy": memmap_copy,
}


class RandomContenders:
    """The ways to read 4 KiB at each of a list of offsets. Each keeps what
    a program would keep between batches (a descriptor, a mapping, a
    reader, an output buffer); `cold()` drops the file's pages, including
    those the mapping holds."""

    def __init__(self, path, n, pool):
        self.path = path
        self.fd = os.open(path, os.O_RDONLY)
        self.mm = mmap.mmap(self.fd, 0, access=mmap.ACCESS_READ)
        self.pool = pool
        self.reader = iolab.Reader(path)
        self.out = np.ones(n * 4096, dtype=np.uint8)
        fd, mm = self.fd, self.mm
        self.calls = {
            "Reader.read_many": lambda offs: self.reader.read_many([(o, 4096) for o in offs]),
            "Reader.read_many(out=)": lambda offs: self.reader.read_many([(o, 4096) for o in offs], out=self.out),
            "os.pread loop": lambda offs: [os.pread(fd, 4096, o) for o in offs],
            "mmap slicing": lambda offs: [mm[o : o + 4096] for o in offs],
            "ThreadPool(32) os.pread": lambda offs: list(pool.map(lambda o: os.pread(fd, 4096, o), offs)),
        }

    def cold(self):
        # A page mapped by a process is not dropped: unmap them first. A
        # new Reader, so nothing it learnt of the file outlives the drop.
        self.mm.madvise(mmap.MADV_DONTNEED)
        self.reader.close()
        self.reader = iolab.Reader(self.path)
        evict(self.path)

    def close(self):
        self.reader.close()
        self.mm.close()
        os.close(self.fd)


def alternate(names, run_one, rounds, prepare):
    """Times run_one(name) for every name, `rounds` times, alternating."""
    times = {n: [] for n in names}
    for k in range(rounds):
        order = names[k % len(names) :] + names[: k % len(names)]
        for n in order:
            prepare(k)
            t0 = time.perf_counter()
            out = run_one(n, k)
            times[n].append(time.perf_counter() - t0)
            del out
    return times


def report(title, times, base, unit_bytes=None, per=None):
    rows = []
    for n, ts in times.items():
        med = statistics.median(ts)
        ratio = statistics.median(t / b for t, b in zip(ts, times[base]))
        speed = f"{unit_bytes / med / 1e9:6.2f} GB/s" if unit_bytes else ""
        shown = f"{med * 1e9 / per:9.0f} ns" if per else f"{med:9.3f} s "
        rows.append(f"  {n:26s} {shown}  {speed:>11s}  {ratio:5.2f}x")
    print(f"{title}\n" + "\n".join(rows), flush=True)
    return times


def best_other(times, base):
    others = {n: statistics.median(ts) for n, ts in times.items() if n != base}
    best = min(others, key=others.get)
    ratio = statistics.median(t / b for t, b in zip(times[best], times[base]))
    return best, ratio


def whole_files(files, rounds, verdicts):
    for path in files:
        size = os.path.getsize(path)
        for cache in ["cold", "warm"]:
            prep = (lambda k, p=path: evict(p)) if cache == "cold" else (lambda k, p=path: None)
            if cache == "warm":
                warm(path)
            t = alternate(list(WHOLE), lambda n, k, p=path: WHOLE[n](p), rounds, prep)
            report(f"whole file, {size >> 30} GiB, {cache} (median time, speed, time / iolab.read's)", t, "iolab.read", size)
            best, r = best_other(t, "iolab.read")
            need = 1.3 if cache == "cold" else 1.0
            verdicts.append((f"whole {size >> 30} GiB {cache}: iolab.read vs {best}", r, need))


def random_batch(path, rounds, verdicts, n=10_000):
    size = os.path.getsize(path)
    with ThreadPoolExecutor(32) as pool:
        c = RandomContenders(path, n, pool)
        try:
            for cache in ["cold", "warm"]:
                rngs = [random.Random(k * 7919 + (cache == "warm")) for k in range(rounds)]
                offsets = [[g.randrange(size // 4096) * 4096 for _ in range(n)] for g in rngs]
                if cache == "warm":
                    warm(path)
                prep = (lambda k: c.cold()) if cache == "cold" else (lambda k: None)
                t = alternate(list(c.calls), lambda name, k: c.calls[name](offsets[k]), rounds, prep)
                report(f"{n} random 4 KiB reads, {size >> 30} GiB file, {cache}", t, "Reader.read_many", n * 4096)
                wants = {
                    "cold": [("os.pread loop", 3.0), ("ThreadPool(32) os.pread", 1.0)],
                    "warm": [("mmap slicing", 1.0)],
                }[cache]
                for form in ["Reader.read_many", "Reader.read_many(out=)"]:
                    for other, need in wants:
                        r = statistics.median(a / b for a, b in zip(t[other], t[form]))
                        verdicts.append((f"random {cache}: {form} vs {other}", r, need))
        finally:
            c.close()


def small_read_cost(path, rounds, verdicts, calls=200_000):
    """One 4 KiB read of cached data: the binding's cost per call."""
    warm(path)
    size = os.path.getsize(path)
    rng = random.Random(5)
    offs = [rng.randrange(size // 4096) * 4096 for _ in range(calls)]
    fd = os.open(path, os.O_RDONLY)
    readers = {t: iolab.Reader(path, technique=t) for t in ["pread", "mapped"]}

    def loop(name, k):
        if name == "os.pread":
            pr = os.pread
            for o in offs:
                pr(fd, 4096, o)
        else:
            ra = readers[name.split("=")[1]].read_at
            for o in offs:
                ra(o, 4096)

    names = ["Reader.read_at technique=pread", "os.pread", "Reader.read_at technique=mapped"]
    t = alternate(names, loop, rounds, lambda k: None)
    report(f"one 4 KiB read of cached data, {calls} calls (median per call, time / os.pread's)", t, "os.pread", per=calls)
    r = statistics.median(b / a for a, b in zip(t["os.pread"], t["Reader.read_at technique=pread"]))
    verdicts.append(("read_at(pread) cost / os.pread's (at most)", r, 1.5))
    os.close(fd)
    for r_ in readers.values():
        r_.close()


def make_checkpoint(path, gib=2.0):
    """A checkpoint shaped like a model's: per layer four 4 MiB F32
    matrices, a 2 MiB F16 one, two F32 norms and an I64 counter (about
    900 tensors for 2 GiB), written as safetensors writes it (header padded
    to 8 bytes, data in header order) with random bytes."""
    import json
    import struct

    layers = max(1, int(gib * 1024 / 18))
    kinds = [("q", "F32", [1024, 1024]), ("k", "F32", [1024, 1024]), ("v", "F32", [1024, 1024]),
             ("o", "F32", [1024, 1024]), ("mlp", "F16", [1024, 1024]), ("norm1", "F32", [1024]),
             ("norm2", "F32", [1024]), ("steps", "I64", [1])]
    size = {"F32": 4, "F16": 2, "I64": 8}
    header, at = {}, 0
    for i in range(layers):
        for name, dtype, shape in kinds:
            n = size[dtype] * (shape[0] * (shape[1] if len(shape) > 1 else 1))
            header[f"layers.{i}.{name}"] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + n]}
            at += n
    j = json.dumps(header).encode()
    j += b" " * (-len(j) % 8)
    rng = np.random.default_rng(0)
    tmp = f"{path}.part"
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(j)) + j)
            left = at
            while left:
                n = min(left, CHUNK)
                f.write(rng.bytes(n))
                left -= n
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def safetensors_load(path, rounds, verdicts):
    """The whole checkpoint, every tensor in memory: iolab.safetensors.load
    against the safetensors package's own load_file (NumPy, and torch's
    when torch is importable)."""
    from safetensors.numpy import load_file

    calls = {
        "iolab.safetensors.load": lambda: iolab.safetensors.load(path),
        "safetensors.numpy.load_file": lambda: load_file(path),
    }
    try:
        import torch  # noqa: F401
        from safetensors.torch import load_file as torch_load_file

        calls["iolab (framework=torch)"] = lambda: iolab.safetensors.load(path, framework="torch")
        calls["safetensors.torch.load_file"] = lambda: torch_load_file(path)
    except ImportError:
        pass
    size = os.path.getsize(path)
    n = len(iolab.safetensors.load(path, framework="dlpack"))
    for cache in ["cold", "warm"]:
        prep = (lambda k: evict(path)) if cache == "cold" else (lambda k: None)
        if cache == "warm":
            warm(path)
        t = alternate(list(calls), lambda name, k: calls[name](), rounds, prep)
        report(f"safetensors, {size / (1 << 30):.1f} GiB, {n} tensors, {cache} (median time, speed, time / iolab's)", t, "iolab.safetensors.load", size)
        need = 1.5 if cache == "cold" else 1.0
        for base, other in [("iolab.safetensors.load", "safetensors.numpy.load_file"), ("iolab (framework=torch)", "safetensors.torch.load_file")]:
            if other in t:
                r = statistics.median(a / b for a, b in zip(t[other], t[base]))
                verdicts.append((f"safetensors {cache}: {base} vs {other}", r, need))


def main():
    if sys.argv[1] == "--make-checkpoint":
        make_checkpoint(sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 2.0)
        return
    f1, f4, ck = sys.argv[1], sys.argv[2], sys.argv[3]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    what = os.environ.get("ONLY", "whole random small safetensors").split()
    verdicts = []
    load = lambda: " ".join(f"{x:.1f}" for x in os.getloadavg())  # noqa: E731
    print(f"iolab {iolab.__version__}, profile: {iolab.profile()['source']}, {rounds} rounds each, alternated")
    print(f"load average at the start: {load()}\n", flush=True)
    if "whole" in what:
        whole_files([f1, f4], rounds, verdicts)
    if "random" in what:
        random_batch(f4, rounds, verdicts)
    if "small" in what:
        small_read_cost(f1, rounds, verdicts)
    if "safetensors" in what:
        safetensors_load(ck, rounds, verdicts)
    print(f"\nload average at the end: {load()}")
    print("\ntargets:")
    for name, r, need in verdicts:
        at_most = "at most" in name
        ok = r <= need if at_most else r >= need
        print(f"  {'met ' if ok else 'MISSED'} {name}: {r:.2f}x (target {'<=' if at_most else '>='} {need}x)")


if __name__ == "__main__":
    main()
