#!/usr/bin/env python3
"""What reading a file whole ahead would have cost a recorded program, at
each point it could be asked: a study of the bet `Auto` makes on random
reads of cold files (`policy::read_ahead_whole`), on the corpus's traces.

    whole-file-bet.py WORKDIR [ROUNDS]     (default 5 rounds)
    env: ONLY="dbm-lookups sqlite-index" (the traces; default: every trace
         with random reads of a file of MIN_MIB or more), MIN_MIB=16,
         PROFILE=FILE (default WORKDIR/profile.json: its cold sequential
         speed prices a file's reading), REPORT=FILE (default
         docs/results/whole-file-bet.md; "-" prints it)

WORKDIR is scripts/record-corpus.sh's, after scripts/corpus-replay.sh has
made the trace's files (WORKDIR/files/NAME/...). For each trace, the reads
of its large files are replayed in the recorded order on one thread with
plain `pread`s, from a cold cache (each file's pages dropped with
POSIX_FADV_DONTNEED before every round), and each file is asked for whole
(POSIX_FADV_WILLNEED, one call per 8 MiB) at one point:

- never;
- at its Nth read (N = 1, 100, 1000): a rule that bets at once;
- once its reads have waited F times what reading it whole takes
  (F = 0.25, 0.5, 1, 2; the wait beyond moving each read's bytes, at the
  profile's speed): ski rental, F = 1 its break-even.

The table gives each point's median time over `never`'s, per round, and
marks the best point of each trace. A point within 5 % of the best on
every trace would be a rule to adopt; the last table says how far each
one is from that. This is a Python loop: its own cost per read (about a
microsecond) is in every column alike.
"""
import csv, importlib.util, json, os, statistics, sys, tempfile, time
from collections import defaultdict

STEP = 8 << 20
AT = (1, 100, 1000)
WAIT = (0.25, 0.5, 1.0, 2.0)
TITLE = "# Reading a file whole ahead: what each point of asking would have cost"
# A read that took longer waited for the device (a cached 4 KiB read takes
# a few microseconds here, Python's loop included).
MISS_S = 20e-6


def report_helpers():
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("corpus_report", os.path.join(here, "corpus-report.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def fail(msg):
    print(f"whole-file-bet: {msg}", file=sys.stderr)
    sys.exit(2)


def cold_speed(profile):
    """The profile's cold sequential speed into the page cache, bytes/s."""
    try:
        p = json.load(open(profile))
    except (OSError, ValueError) as e:
        fail(f"cannot read the profile {profile} ({e}); make one with `iolab tune --quick --out {profile}`")
    v = [m["mib_s"] for m in p.get("measurements", [])
         if m.get("pattern") == "seq" and m.get("cache") == "cold" and "direct" not in m.get("technique", "")]
    if not v:
        fail(f"the profile {profile} has no cold sequential measurement; make one with `iolab tune --quick`")
    return max(v) * (1 << 20)


def reads(work, name, min_bytes):
    """The trace's reads of its files of min_bytes or more: (path, offset, len)."""
    out, sizes = [], {}
    for r in csv.DictReader(open(os.path.join(work, "corpus", f"{name}.csv"))):
        if r["op"] == "mmap":
            continue
        path = os.path.join(work, "files", name) + r["file"]
        if path not in sizes:
            try:
                sizes[path] = os.path.getsize(path)
            except OSError:
                fail(f"{path} is missing: replay the trace once first (scripts/corpus-replay.sh {work} with ONLY={name})")
        if sizes[path] >= min_bytes:
            out.append((path, int(r["offset"]), int(r["len"])))
    return out, {p: s for p, s in sizes.items() if s >= min_bytes}


def evict(paths):
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)


def ask_whole(fd, size):
    at = 0
    while at < size:
        os.posix_fadvise(fd, at, min(STEP, size - at), os.POSIX_FADV_WILLNEED)
        at += STEP


def one_round(rs, sizes, point, speed):
    """Seconds to replay rs with each file asked for whole at `point`:
    None (never), ("at", n) or ("wait", f)."""
    evict(sizes)
    t = time.perf_counter()
    fds = {p: os.open(p, os.O_RDONLY) for p in sizes}
    n, waited, asked = defaultdict(int), defaultdict(float), set()
    for path, off, ln in rs:
        fd = fds[path]
        n[path] += 1
        if point and path not in asked:
            kind, x = point
            if kind == "at" and n[path] >= x or kind == "wait" and waited[path] >= x * sizes[path] / speed:
                ask_whole(fd, sizes[path])
                asked.add(path)
        t0 = time.perf_counter()
        os.pread(fd, ln, off)
        dt = time.perf_counter() - t0
        if dt > MISS_S:
            waited[path] += max(0.0, dt - ln / speed)
    for fd in fds.values():
        os.close(fd)
    return time.perf_counter() - t


def label(point):
    if point is None:
        return "never"
    return f"read {point[1]}" if point[0] == "at" else f"waited {point[1]:g}×"


def main():
    if len(sys.argv) < 2:
        fail("usage: scripts/whole-file-bet.py WORKDIR [ROUNDS]")
    work = os.path.abspath(sys.argv[1])
    try:
        rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
        assert rounds >= 1
    except (ValueError, AssertionError):
        fail(f"ROUNDS is {sys.argv[2]!r}, not a number of rounds (a whole number from 1, e.g. 5)")
    try:
        min_bytes = int(os.environ.get("MIN_MIB", "16")) << 20
    except ValueError:
        fail(f"MIN_MIB={os.environ['MIN_MIB']} is not a size in MiB (e.g. 16)")
    report = report_path()
    manifest = os.path.join(work, "corpus", "MANIFEST.tsv")
    if not os.path.exists(manifest):
        fail(f"no {manifest} (run scripts/record-corpus.sh {work} first)")
    speed = cold_speed(os.environ.get("PROFILE") or os.path.join(work, "profile.json"))
    halves = {}
    for i, line in enumerate(open(manifest)):
        f = line.rstrip("\n").split("\t")
        if i and len(f) >= 2:
            halves[f[0]] = f[1]
    only = os.environ.get("ONLY", "").split()
    for n in only:
        if n not in halves:
            fail(f"ONLY names {n!r}, not a trace of {manifest} ({', '.join(sorted(halves))})")
    points = [None] + [("at", x) for x in AT] + [("wait", x) for x in WAIT]
    rows = []
    for name in only or sorted(halves):
        rs, sizes = reads(work, name, min_bytes)
        if not only:
            # Random reads: a third or more do not start where the last one
            # of their file ended (a loader reads a record's body, then its
            # tail in order).
            last, jumps = {}, 0
            for p, off, ln in rs:
                jumps += last.get(p) != off
                last[p] = off + ln
            if not rs or jumps * 3 < len(rs):
                continue
        print(f"whole-file-bet: {name}", file=sys.stderr)
        times = defaultdict(list)
        for k in range(rounds):
            for j in range(len(points)):
                point = points[(j + k) % len(points)]
                times[label(point)].append(one_round(rs, sizes, point, speed))
        rows.append((name, halves[name], len(rs), sum(sizes.values()), times))
    if not rows:
        fail("no trace with random reads of a large file (see ONLY and MIN_MIB)")
    print_report(rows, points, rounds, speed, work, report)


def print_report(rows, points, rounds, speed, work, report):
    h = report_helpers()
    labels = [label(p) for p in points]
    out = [TITLE, "",
           f"- command: `scripts/whole-file-bet.py WORKDIR {rounds}`"
           + (f" (ONLY=\"{os.environ['ONLY']}\")" if os.environ.get("ONLY") else ""),
           f"- commit: {h.commit()}",
           f"- machine: {h.machine()}",
           f"- reading speed assumed (the profile's cold sequential): {speed / (1 << 20):.0f} MiB/s", "",
           "Each trace's reads of its large files, replayed in order on one thread with `pread` from a "
           "cold cache, with each file asked for whole (POSIX_FADV_WILLNEED) at one point: never, at its "
           "Nth read, or once its reads had waited F times what reading it whole takes (ski rental; "
           "F = 1 is its break-even). Cells: the median over the rounds of the per-round time over "
           "`never`'s, 95 % interval in brackets; **bold** the best point of the trace.", "",
           "| trace | half | reads | MiB | never | " + " | ".join(labels[1:]) + " |",
           "|---|---|---|---|---|" + "---|" * (len(labels) - 1)]
    best_of = {}
    for name, half, n, size, times in rows:
        med = {lb: statistics.median(v) for lb, v in times.items()}
        best = min(med, key=med.get)
        best_of[name] = med[best]
        cells = []
        for lb in labels[1:]:
            r = [a / b for a, b in zip(times[lb], times["never"])]
            lo, hi, _ = h.interval(r)
            c = f"{statistics.median(r):.2f} [{lo:.2f}–{hi:.2f}]"
            cells.append(f"**{c}**" if lb == best else c)
        never = f"{med['never'] * 1e3:.0f} ms"
        out.append(f"| {name} | {half} | {n} | {size >> 20} | {'**' + never + '**' if best == 'never' else never} | "
                   + " | ".join(cells) + " |")
    out += ["", "Each point as one rule for every trace: its median time over each trace's best point.", "",
            "| point | geomean | worst | traces within 1.05 of their best |", "|---|---|---|---|"]
    for lb in labels:
        r = {name: statistics.median(times[lb]) / best_of[name] for name, _, _, _, times in rows}
        worst = max(r, key=r.get)
        within = sum(v <= 1.05 for v in r.values())
        out.append(f"| {lb} | {h.gmean(list(r.values())):.2f} | {r[worst]:.2f} ({worst}) | {within} of {len(r)} |")
    text = "\n".join(out) + "\n"
    if report == "-":
        sys.stdout.write(text)
        return
    # Written whole or not at all: a temporary file beside it, renamed over
    # it once complete, removed if anything fails.
    fd, tmp = tempfile.mkstemp(prefix=".whole-file-bet-", dir=os.path.dirname(os.path.abspath(report)))
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, report)
    except BaseException:
        os.unlink(tmp)
        raise
    print(f"whole-file-bet: report in {report}", file=sys.stderr)


def report_path():
    """REPORT, checked before any round: "-" (stdout), or a path that is
    new or holds a report of this script (anything else there is the
    user's, and is not replaced)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    report = os.environ.get("REPORT") or os.path.join(here, "docs", "results", "whole-file-bet.md")
    if report == "-" or not os.path.lexists(report):
        return report
    try:
        with open(report) as f:
            first = f.readline().rstrip("\n")
    except (OSError, UnicodeDecodeError):
        first = None
    if first != TITLE:
        fail(f"REPORT={report} exists and is not a report of this script; name a new file (or - for stdout)")
    return report


if __name__ == "__main__":
    main()
