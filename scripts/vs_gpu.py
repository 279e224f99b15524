#!/usr/bin/env python3
"""File -> GPU, iolab against its peers, in one run (scripts/vs-gpu.sh
starts it on the GPU machine).

A checkpoint of N bf16 tensors is written; every loader is started once in
a process of its own (scripts/vs_gpu_tools.py: imports, CUDA's start and a
warm-up on a small file stay out of the figures); then, round after round
(the order rotated each round), each loader moves the checkpoint into GPU
memory cold (the file evicted from the page cache, and checked to be) and
warm (checked to be resident). iolab runs as the command a user types,
`iolab cat --gpu 0 --json`, whose own clock starts after the driver's start.
Two limits are measured in the same rounds: `iolab cat FILE > /dev/null`
(the disk, or the page cache) and one 1 GiB page-locked copy (the link).
Each figure is the checkpoint's size over the time of the load, GB/s
(10^9 bytes/s): the median of the rounds, with their range; ratios are the
medians of the per-round ratios. Where the file cannot be evicted (gVisor,
say), no cold figure is given, and the table says why.

    python3 scripts/vs_gpu.py --iolab target/gpu-carry/iolab [--size 6g]
        [--tensors 64] [--rounds 3] [--budget 420] [--dir D] [--out OUT]
        [--variant NAME=FLAGS ...]   # iolab with other flags, warm, same rounds
    python3 scripts/vs_gpu.py --dry ...   # no GPU: host-memory stand-ins

The raw numbers go to OUT/vs-gpu.json and the table to OUT/vs-gpu.txt
when --out (or $OUT) is given.
"""

import argparse
import ctypes
import ctypes.util
import json
import os
import platform
import select
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GB = 1e9

# (key, label, kind): kind "peer" loads the checkpoint into the GPU,
# "limit" bounds what a loader can reach, "link" copies host memory only
# (measured warm); `--variant` adds "variant" rows, iolab with other flags
# (measured warm).
TOOLS = [
    ("iolab", "iolab cat --gpu 0", "peer"),
    ("iolab-py", "iolab.safetensors.load (Python)", "peer"),
    ("safetensors", "safetensors.torch.load_file", "peer"),
    ("naive", "naive: read() then .to(cuda)", "peer"),
    ("fastsafetensors", "fastsafetensors (no GDS)", "peer"),
    ("runai", "Run:ai model streamer", "peer"),
    ("kvikio", "KvikIO (compatibility mode)", "peer"),
    ("cat", "limit: iolab cat FILE > /dev/null", "limit"),
    ("pinned-copy", "limit: page-locked copy, 1 GiB", "link"),
    ("pageable-copy", "pageable copy, 1 GiB", "link"),
]
DRY_TOOLS = [
    ("safetensors-cpu", "safetensors.numpy.load_file", "peer"),
    ("naive-cpu", "python read()", "peer"),
    ("cat", "limit: iolab cat FILE > /dev/null", "limit"),
]


def size_arg(s):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    s = s.strip().lower()
    if s and s[-1] in units:
        return int(float(s[:-1]) * units[s[-1]])
    return int(s)


# ---------------------------------------------------------------- page cache

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]


def resident(path):
    """Fraction of the file's pages in the page cache (mincore over a
    mapping of it); 1.0 when it cannot be told (so cold is never claimed)."""
    n = os.path.getsize(path)
    if n == 0:
        return 1.0
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = _libc.mmap(None, n, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        if addr in (None, ctypes.c_void_p(-1).value):
            return 1.0
        try:
            pages = (n + 4095) // 4096
            vec = ctypes.create_string_buffer(pages)
            if _libc.mincore(addr, n, vec) != 0:
                return 1.0
            return sum(b & 1 for b in vec.raw) / pages
        finally:
            _libc.munmap(addr, n)
    finally:
        os.close(fd)


def evict(path):
    """Drops the file from the page cache (POSIX_FADV_DONTNEED, then, as
    root, drop_caches if pages stayed); returns the fraction still resident."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    r = resident(path)
    if r > 0.02 and os.geteuid() == 0:
        try:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("1\n")
        except OSError:
            pass
        r = resident(path)
    return r


def warm(path, iolab):
    """Reads the file into the page cache (if it is not) and returns the
    fraction resident."""
    if resident(path) < 0.98:
        subprocess.run([iolab, "cat", "--direct", "off", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return resident(path)


# ---------------------------------------------------------------- checkpoint

def make_checkpoint(path, size, tensors, dtype="BF16"):
    """A safetensors file of `tensors` 2-byte tensors (BF16, or F16 for
    loaders without bfloat16), `size` bytes of data in all, each tensor's
    bytes a different slice of one random block (so a misplaced tensor is
    caught), written and synced."""
    cols = 4096
    rows = max(1, size // tensors // (2 * cols))
    each = rows * cols * 2
    header = {"__metadata__": {"format": "pt", "made_by": "iolab scripts/vs_gpu.py"}}
    for i in range(tensors):
        header[f"layers.{i}.weight"] = {"dtype": dtype, "shape": [rows, cols], "data_offsets": [i * each, (i + 1) * each]}
    h = json.dumps(header).encode()
    h += b" " * (-(8 + len(h)) % 4096)  # data starts on a page, as writers pad
    block = os.urandom(min(each, 64 << 20) * 2)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h)
        for i in range(tensors):
            left = each
            while left:
                start = (i * 1_000_003 + left) % (len(block) // 2)
                n = min(left, len(block) - start)
                f.write(memoryview(block)[start : start + n])
                left -= n
        f.flush()
        os.fsync(f.fileno())
    return os.path.getsize(path)


# ---------------------------------------------------------------- loaders

class Worker:
    """One loader in its own process (scripts/vs_gpu_tools.py)."""

    def __init__(self, key, device, warmup):
        self.key, self.version, self.error = key, "", None
        self.p = subprocess.Popen(
            [sys.executable, "-u", os.path.join(HERE, "vs_gpu_tools.py"), key, device, warmup],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def _line(self, timeout):
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        if not r:
            self.stop()
            return {"error": f"no answer in {timeout:.0f} s"}
        line = self.p.stdout.readline()
        if not line:
            return {"error": f"exited ({self.p.wait()})"}
        return json.loads(line)

    def ready(self, timeout):
        m = self._line(timeout)
        self.error = m.get("error")
        self.version = m.get("version", "")
        return self.error is None

    def load(self, path, timeout):
        if self.error:
            return {"error": self.error}
        try:
            self.p.stdin.write(f"load {path}\n")
            self.p.stdin.flush()
        except BrokenPipeError:
            return {"error": "the loader's process is gone"}
        m = self._line(timeout)
        if "error" in m and self.p.poll() is not None:
            self.error = m["error"]
        return m

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


class Command:
    """A loader that is an iolab command, one process per load: `iolab cat
    --gpu` (with a variant's flags), or `iolab cat` to /dev/null (the
    `cat` limit)."""

    def __init__(self, key, iolab, device, flags=()):
        self.key, self.iolab, self.device, self.error = key, iolab, device, None
        self.flags = list(flags)
        out = subprocess.run([iolab, "--version"], capture_output=True, text=True, check=False)
        self.version = out.stdout.strip()

    def ready(self, _timeout):
        return True

    def load(self, path, timeout):
        gpu = self.device.split(":")[-1]
        gpu_json = self.key != "cat"
        args = [self.iolab, "cat", "--gpu", gpu, "--json", *self.flags, path] if gpu_json else [self.iolab, "cat", path]
        t0 = time.perf_counter()
        try:
            out = subprocess.run(args, stdout=subprocess.PIPE if gpu_json else subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return {"error": f"no answer in {timeout:.0f} s"}
        wall = time.perf_counter() - t0
        if out.returncode != 0:
            err = (out.stderr or b"").decode(errors="replace").strip().splitlines()
            return {"error": (err[-1] if err else f"exit status {out.returncode}")[:300]}
        if not gpu_json:
            return {"seconds": wall, "bytes": os.path.getsize(path)}
        j = json.loads(out.stdout)
        return {"seconds": j["seconds"], "bytes": j["bytes"], "process_seconds": wall, "technique": j["stats"]["technique"]}

    def stop(self):
        pass


# ---------------------------------------------------------------- rounds

class Run:
    """What the rounds measured: GB/s per tool, state and round (None where
    a load failed), the raw seconds, and why anything is missing."""

    def __init__(self, args, tools, size):
        self.args, self.tools, self.size = args, tools, size
        self.gbs = {k: {"cold": [], "warm": []} for k, _, _ in tools}
        self.raw = {k: {"cold": [], "warm": []} for k, _, _ in tools}
        self.notes = {}
        self.versions = {}
        self.cold_refused = None
        self.rounds = 0
        self.resident = {"cold": [], "warm": []}

    def measure(self, loader, kind, state, path):
        """One load, after setting and checking the page cache."""
        if kind in ("link", "variant") and state == "cold":
            return
        if kind != "link":
            r = evict(path) if state == "cold" else warm(path, self.args.iolab)
            self.resident[state].append(r)
            if state == "cold" and r > 0.05:
                self.cold_refused = f"{r:.0%} of the file stayed in the page cache after eviction"
                return
        m = loader.load(path, self.args.timeout)
        rate = None
        if "error" in m:
            self.notes.setdefault(loader.key, m["error"])
        else:
            n = m["bytes"] if kind == "link" else self.size
            rate = n / m["seconds"] / GB
        self.gbs[loader.key][state].append(rate)
        self.raw[loader.key][state].append(m)


def rounds(run, loaders, path, t_start):
    """Alternating rounds, each tool in a rotated order, cold then warm,
    until --rounds are done or the next round would pass the budget."""
    kinds = {k: kind for k, _, kind in run.tools}
    last = 0.0
    for r in range(run.args.rounds):
        spent = time.monotonic() - t_start
        if r > 0 and spent + last > run.args.budget:
            run.notes["rounds"] = f"stopped after {r} rounds: the next would pass the {run.args.budget:.0f} s budget"
            break
        t = time.monotonic()
        order = loaders[r % len(loaders):] + loaders[: r % len(loaders)]
        for state in ("cold", "warm"):
            if state == "cold" and run.cold_refused:
                continue
            for ld in order:
                run.measure(ld, kinds[ld.key], state, path)
        run.rounds = r + 1
        last = time.monotonic() - t
        print(f"vs-gpu: round {r + 1} took {last:.0f} s", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- summary

def summary(v):
    """(median, min, max) of the values that are there, or None."""
    x = [a for a in v if a is not None]
    return (statistics.median(x), min(x), max(x)) if x else None


def cell(v):
    s = summary(v)
    if s is None:
        return "-"
    return f"{s[0]:6.2f} [{s[1]:.2f}-{s[2]:.2f}]"


def ratio(run, state, a, b):
    """Median over rounds of a's rate over b's (b a key or a list of keys,
    whose least rate that round counts), or None."""
    bs = b if isinstance(b, list) else [b]
    if a not in run.gbs or any(k not in run.gbs for k in bs):
        return None
    per = []
    for i, x in enumerate(run.gbs[a][state]):
        ys = []
        for k in bs:
            st = "warm" if dict((t[0], t[2]) for t in run.tools)[k] == "link" else state
            ys.append(run.gbs[k][st][i] if i < len(run.gbs[k][st]) else None)
        if x is not None and all(y for y in ys):
            per.append(x / min(ys))
    return statistics.median(per) if per else None


def best_peer(run, state):
    """The fastest loader other than iolab's own, by median."""
    peers = [(summary(run.gbs[k][state]), k) for k, _, kind in run.tools if kind == "peer" and not k.startswith("iolab")]
    peers = [(s[0], k) for s, k in peers if s]
    return max(peers)[1] if peers else None


def targets(run):
    """The comparisons the targets are about, one line each."""
    lines = []
    checks = [
        ("warm", "safetensors", 5.0),
        ("warm", best_peer(run, "warm"), 1.2),
        ("warm", ["pinned-copy", "cat"], 0.8),
        ("cold", "cat", 0.95),
        ("cold", "safetensors", 1.2),
    ]
    for state, other, want in checks:
        if other is None or "iolab" not in run.gbs:
            continue
        r = ratio(run, state, "iolab", other)
        name = " and ".join(other) + " (the lesser)" if isinstance(other, list) else other
        got = "not measured" if r is None else f"{r:.2f}x ({'met' if r >= want else 'NOT met'})"
        lines.append(f"  {state}: iolab / {name}: {got}; target >= {want}x")
    return lines


def table(run, meta):
    """The final table."""
    out = [
        f"command: {meta['command']}",
        f"date: {meta['date']}; commit: {meta['commit']}; {meta['iolab']}; {meta['cpus']} CPUs",
        f"vs-gpu: {meta['checkpoint_bytes'] / (1 << 30):.2f} GiB checkpoint, {meta['tensors']} {meta['dtype']} tensors, "
        f"on {meta['gpu']}; kernel {meta['kernel']}; {meta['fs']} at {meta['dir']}",
        f"GB/s (10^9 bytes/s over each load), median [min-max] of {run.rounds} alternating rounds",
        f"{'':46} {'cold':>22} {'warm':>22}",
    ]
    for key, label, _ in run.tools:
        g = run.gbs[key]
        note = f"  ({run.notes[key]})" if key in run.notes and not any(x for x in g["warm"] + g["cold"]) else ""
        out.append(f"{label:46} {cell(g['cold']):>22} {cell(g['warm']):>22}{note}")
    if run.cold_refused:
        out.append(f"cold: refused: {run.cold_refused} (no cold figure is given)")
    if "rounds" in run.notes:
        out.append(run.notes["rounds"])
    t = targets(run)
    if t:
        out.append("ratios (median of the per-round ratios):")
        out.extend(t)
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- main

def sh(cmd):
    """A command's first line of output, or ''."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=30)
        return out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def parse():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--iolab", required=True, help="the iolab binary (built with the cuda feature)")
    a.add_argument("--size", type=size_arg, default=6 << 30, help="tensor data in the checkpoint (default 6g)")
    a.add_argument("--tensors", type=int, default=64)
    a.add_argument("--rounds", type=int, default=3)
    a.add_argument("--budget", type=float, default=420.0, help="seconds; no round starts that would end past it")
    a.add_argument("--timeout", type=float, default=60.0, help="seconds one load may take")
    a.add_argument("--device", default="cuda:0")
    a.add_argument("--dir", default=os.environ.get("VS_GPU_DIR", "target/vs-gpu"), help="where the checkpoint is written (a disk, not tmpfs)")
    a.add_argument("--out", default=os.environ.get("OUT"), help="folder for vs-gpu.json and vs-gpu.txt")
    a.add_argument("--only", help="comma-separated tool keys (default: all)")
    a.add_argument("--variant", action="append", default=[], metavar="NAME=FLAGS",
                   help="one more loader, `iolab cat --gpu` with FLAGS (e.g. t16=\"--threads 16\"), key iolab-NAME,"
                        " measured warm (its row beside iolab's, in the same rounds)")
    a.add_argument("--dry", action="store_true", help="no GPU: host-memory stand-ins, to check this script")
    return a.parse_args()


def variants(args):
    """`--variant NAME=FLAGS` as (key, label, kind, flags)."""
    out = []
    for v in args.variant:
        name, sep, flags = v.partition("=")
        if not sep or not name or not flags.strip():
            print(f"vs-gpu: --variant {v!r}: give NAME=FLAGS, e.g. t16=\"--threads 16\"", file=sys.stderr)
            sys.exit(2)
        out.append((f"iolab-{name}", f"iolab cat --gpu 0 {flags.strip()}", "variant", flags.split()))
    return out


def start(args, tools, warmup):
    """Every loader started at once (they import and warm up in parallel)."""
    flags = {key: f for key, _, _, f in variants(args)}
    loaders = []
    for key, _, _ in tools:
        if key in ("iolab", "cat") or key in flags:
            loaders.append(Command(key, args.iolab, args.device, flags.get(key, ())))
        else:
            loaders.append(Worker(key, "cpu" if args.dry else args.device, warmup))
    return loaders


def ready(loaders, run):
    """Waits for the loaders; keeps those that started."""
    kept = []
    for ld in loaders:
        if ld.ready(300):
            run.versions[ld.key] = ld.version
            kept.append(ld)
        else:
            run.notes[ld.key] = f"not available: {ld.error}"
            ld.stop()
    return kept


def verify(args, path):
    """Every byte of the checkpoint's tensors copied back from the GPU and
    compared (warm); the command's last line."""
    gpu = args.device.split(":")[-1]
    out = subprocess.run([args.iolab, "cat", "--gpu", gpu, "--verify=all", path], capture_output=True, text=True, check=False)
    # The verdict is the last line on stdout; stderr holds warnings (no
    # profile, say) and, on failure, the reason.
    lines = out.stdout.strip().splitlines() if out.returncode == 0 else (out.stdout + out.stderr).strip().splitlines()
    return out.returncode == 0, lines[-1] if lines else f"exit status {out.returncode}"


def write_out(args, run, meta, text):
    if not args.out:
        return
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "vs-gpu.txt"), "w") as f:
        f.write(text)
    doc = {"meta": meta, "gb_per_s": run.gbs, "raw": run.raw, "notes": run.notes, "versions": run.versions,
           "resident": run.resident, "cold_refused": run.cold_refused, "targets": targets(run)}
    with open(os.path.join(args.out, "vs-gpu.json"), "w") as f:
        json.dump(doc, f, indent=1)


def main():
    args = parse()
    t_start = time.monotonic()
    if not args.dry and not os.path.exists("/dev/nvidia0"):
        print("vs-gpu: no NVIDIA GPU here (no /dev/nvidia0): run it on a GPU machine, or give --dry", file=sys.stderr)
        return 2
    tools = DRY_TOOLS if args.dry else TOOLS
    if args.only:
        keep = set(args.only.split(","))
        tools = [t for t in tools if t[0] in keep]
    if not args.dry:
        # Variants go right after iolab's own row.
        at = next((i + 1 for i, t in enumerate(tools) if t[0] == "iolab"), 0)
        tools = tools[:at] + [(k, label, kind) for k, label, kind, _ in variants(args)] + tools[at:]
    os.makedirs(args.dir, exist_ok=True)
    path = os.path.join(os.path.abspath(args.dir), "checkpoint.safetensors")
    warmup = os.path.join(os.path.abspath(args.dir), "warmup.safetensors")
    dtype = "F16" if args.dry else "BF16"  # numpy has no bfloat16
    make_checkpoint(warmup, 4 << 20, 4, dtype)
    loaders = start(args, tools, warmup)
    try:
        size = make_checkpoint(path, args.size, args.tensors, dtype)
        meta = {
            "kernel": platform.release(),
            "gpu": "host memory (--dry)" if args.dry else sh(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"]),
            "fs": sh(["stat", "-f", "-c", "%T", args.dir]),
            "dir": args.dir,
            "checkpoint_bytes": size,
            "tensors": args.tensors,
            "dtype": dtype,
            "iolab": sh([args.iolab, "--version"]),
            "command": " ".join(["python3", "scripts/vs_gpu.py"] + sys.argv[1:]),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "commit": os.environ.get("IOLAB_COMMIT", "unknown"),
            "cpus": os.cpu_count(),
        }
        print(f"vs-gpu: {meta['kernel']}; {meta['gpu']}; {meta['fs']}; checkpoint written ({size} bytes)", file=sys.stderr, flush=True)
        run = Run(args, tools, size)
        loaders = ready(loaders, run)
        rounds(run, loaders, path, t_start)
        ok = True
        if not args.dry and any(ld.key == "iolab" for ld in loaders):
            ok, line = verify(args, path)
            run.notes["verify"] = line
        text = table(run, meta) + (f"verify: {run.notes['verify']}\n" if "verify" in run.notes else "")
        print(text, end="")
        meta["seconds"] = time.monotonic() - t_start
        write_out(args, run, meta, text)
        iolab_ran = summary(run.gbs.get("iolab", run.gbs.get("cat", {})).get("warm", [])) is not None
        return 0 if ok and iolab_ran else 1
    finally:
        for ld in loaders:
            ld.stop()
        for p in (path, warmup):
            if os.path.exists(p):
                os.remove(p)


if __name__ == "__main__":
    sys.exit(main())
