#!/usr/bin/env python3
"""The corpus replay report (Markdown on stdout), from the records of
scripts/corpus-replay.sh.

    corpus-report.py MANIFEST.tsv REPLAY.jsonl "COMMAND"
    (env IOLAB_COMMIT=REV names the commit the replayed binary was built at;
     NOTE="..." adds a line to the header)

A ratio is the median over the rounds of the per-round ratio auto / the
fixed reader whose median time is best on that trace and cache state
("fixed": every reader but `auto` and `auto:builtin`; `thesis` included),
with the 95 % interval of that median from order statistics (the sign
test's: no assumption about the noise's shape). Geometric means are over
the traces of one half and cache state: against the per-trace best, and
against the best single fixed reader (the one reader whose geometric mean
time over the per-trace best is lowest in that half), with what the per-trace
best itself gains over that reader and the trace where Auto is furthest
behind `pread`."""
import json, math, os, platform, statistics, subprocess, sys
from collections import defaultdict

ADAPTIVE = ("auto", "auto:builtin")


def interval(v):
    """The 95 % interval of the median of v: order statistics k and n+1-k
    with P(Binomial(n, 1/2) < k) <= 0.025."""
    v, n = sorted(v), len(v)
    k, tail = 0, 0.0
    while True:
        nxt = tail + math.comb(n, k) / 2 ** n
        if nxt > 0.025:
            break
        tail, k = nxt, k + 1
    if k == 0:
        return (v[0], v[-1], 1.0 - 2 * 0.0)  # too few rounds: the range
    return (v[k - 1], v[n - k], 1.0 - 2 * tail)


def gmean(v):
    return math.exp(statistics.fmean(math.log(x) for x in v)) if v else float("nan")


def machine():
    def read(p):
        try:
            return open(p).read()
        except OSError:
            return ""
    cpu = next((l.split(":", 1)[1].strip() for l in read("/proc/cpuinfo").splitlines()
                if l.startswith("model name")), "?")
    mem = next((int(l.split()[1]) >> 20 for l in read("/proc/meminfo").splitlines()
                if l.startswith("MemTotal:")), 0)
    return f"{platform.node()}: {cpu}, {os.cpu_count()} CPUs, {mem} GiB, Linux {platform.release()}"


def commit():
    # The binary replayed may be older than the checkout (IOLAB=...).
    if os.environ.get("IOLAB_COMMIT"):
        return os.environ["IOLAB_COMMIT"] + " (the replayed binary's)"
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        c = subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"],
                           capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return c + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "?"


def load(manifest, jsonl):
    halves, what = {}, {}
    for i, line in enumerate(open(manifest)):
        f = line.rstrip("\n").split("\t")
        if i == 0 or len(f) < 5:
            continue
        halves[f[0]], what[f[0]] = f[1], (f[2], f[3], f[4])
    # (trace, cache) -> reader -> {round: seconds}; the last session of a
    # trace and cache state wins (a rerun replaces it).
    runs = defaultdict(dict)
    cpu = defaultdict(dict)
    notes = defaultdict(list)
    for line in open(jsonl):
        r = json.loads(line)
        name = os.path.basename(r["trace"]).rsplit(".", 1)[0]
        key = (name, r["cache"])
        runs[key][r["reader"]] = {x["round"]: x["wall_ns"] / 1e9 for x in r["runs"]}
        cpu[key][r["reader"]] = {x["round"]: (x.get("user_ns", 0) + x.get("sys_ns", 0)) / 1e9
                                 for x in r["runs"]}
        fell = [x.get("fell_back", 0) for x in r["runs"]]
        if r["reader"] in ADAPTIVE and any(fell):
            notes[key].append((r["reader"], statistics.median(fell), r.get("switches", [])))
    return halves, what, runs, cpu, notes


def fixed_readers(runs):
    names = sorted({n for rd in runs.values() for n in rd if n not in ADAPTIVE})
    return ", ".join(f"`{n}`" for n in names)


def ratios(readers, a, b):
    ra, rb = readers[a], readers[b]
    return [ra[k] / rb[k] for k in sorted(ra) if k in rb and rb[k] > 0]


def best_fixed(readers):
    fixed = {n: statistics.median(v.values()) for n, v in readers.items() if n not in ADAPTIVE and v}
    return min(fixed, key=fixed.get), fixed


def fmt(v):
    m = statistics.median(v)
    lo, hi, _ = interval(v)
    mark = "" if m <= 1.05 else (" ¹" if m <= 1.10 else " **")
    return f"{m:.3f} [{lo:.2f}–{hi:.2f}]{mark}"


# A round this many times the best fixed reader's counts in the tail (half
# again its time: above what this machine's noise alone gives most rounds): a
# median hides a choice that loses badly now and then (a fall back judged on
# a file's first requests, kept for the rest of it).
TAIL = 1.5


def tail(per_trace):
    """Rounds whose ratio is above TAIL, over all the traces' rounds: "k of n"."""
    v = [x for r in per_trace for x in r]
    return f"{sum(x > TAIL for x in v)} of {len(v)}" if v else "–"


def cpu_cell(rc, best):
    """Median per-round ratio of CPU time (user + system), tuned / built-in."""
    cells = []
    for a in ADAPTIVE:
        v = ratios(rc, a, best) if a in rc else []
        cells.append(f"{statistics.median(v):.2f}" if v else "–")
    return " / ".join(cells)


def worst_vs_pread(runs, ks, a):
    """The trace of ks on which reader a's median per-round ratio over
    `pread` (no policy, bare system calls) is highest: "ratio (trace)"."""
    v = [(statistics.median(ratios(runs[k], a, "pread")), k[0]) for k in ks
         if a in runs[k] and "pread" in runs[k]]
    return "{:.3f} ({})".format(*max(v)) if v else "–"


def half_table(half, halves, what, runs, cpu, out):
    keys = sorted(k for k in runs if halves.get(k[0]) == half)
    if not keys:
        return
    out.append(f"\n## {half} half\n")
    out.append("| trace | shape | cache | best fixed | its median | auto ÷ best (tuned) | auto ÷ best (built-in) | CPU time ÷ best's (tuned / built-in) | `Reader` alone: stream ÷ pread | policy alone: auto ÷ stream (tuned) | rounds |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, cache in keys:
        rd = runs[(name, cache)]
        best, fixed = best_fixed(rd)
        cells = []
        for a in ADAPTIVE:
            cells.append(fmt(ratios(rd, a, best)) if a in rd else "–")
        n = min(len(v) for v in rd.values())
        alone = ratios(rd, "stream", "pread") if "stream" in rd and "pread" in rd else []
        alone = f"{statistics.median(alone):.3f}" if alone else "–"
        policy = ratios(rd, "auto", "stream") if "auto" in rd and "stream" in rd else []
        policy = fmt(policy) if policy else "–"
        out.append(f"| {name} | {what[name][0]} | {cache} | {best} | {fixed[best]*1e3:.1f} ms | {cells[0]} | {cells[1]} "
                   f"| {cpu_cell(cpu[(name, cache)], best)} | {alone} | {policy} | {n} |")
    out.append("")
    out.append("| cache | geomean auto ÷ per-trace best (tuned / built-in) | best single fixed reader | geomean auto ÷ it (tuned / built-in) "
               "| geomean per-trace best ÷ it | worst trace, auto ÷ `pread` (tuned / built-in) "
               f"| rounds above {TAIL} × the per-trace best (tuned / built-in) | the same for `stream` ÷ `pread` |")
    out.append("|---|---|---|---|---|---|---|---|")
    for cache in ("cold", "warm", "rerun"):
        ks = [k for k in keys if k[1] == cache]
        if not ks:
            continue
        common = set.intersection(*(set(runs[k]) for k in ks)) - set(ADAPTIVE)
        # Per trace: the best fixed reader and its median time.
        best = {}
        for k in ks:
            name, medians = best_fixed(runs[k])
            best[k] = (name, medians[name])
        score = {r: gmean([statistics.median(runs[k][r].values()) / best[k][1] for k in ks]) for r in common}
        single = min(score, key=score.get)
        per_best, per_single = [], []
        for a in ADAPTIVE:
            per_best.append(gmean([statistics.median(ratios(runs[k], a, best[k][0])) for k in ks if a in runs[k]]))
            per_single.append(gmean([statistics.median(ratios(runs[k], a, single)) for k in ks if a in runs[k]]))
        # What knowing each trace ahead gains over the single reader: the
        # geometric mean of the per-trace best over it. A choice among the
        # fixed readers, however good, gets no lower than this.
        oracle = gmean([best[k][1] / statistics.median(runs[k][single].values()) for k in ks])
        worst = " / ".join(worst_vs_pread(runs, ks, a) for a in ADAPTIVE)
        tails = [tail([ratios(runs[k], a, best[k][0]) for k in ks if a in runs[k]]) for a in ADAPTIVE]
        alone = tail([ratios(runs[k], "stream", "pread") for k in ks if "stream" in runs[k] and "pread" in runs[k]])
        out.append(f"| {cache} | {per_best[0]:.3f} / {per_best[1]:.3f} | {single} | {per_single[0]:.3f} / {per_single[1]:.3f} "
                   f"| {oracle:.3f} | {worst} | {tails[0]} / {tails[1]} | {alone} |")


def main():
    manifest, jsonl, command = sys.argv[1:4]
    halves, what, runs, cpu, notes = load(manifest, jsonl)
    out = ["# Auto on the trace corpus", "",
           f"- command: `{command}`",
           f"- commit: {commit()}",
           f"- machine: {machine()} (shared with other builds: medians of alternating rounds)",
           f"- records: `{os.path.basename(jsonl)}`",
           *([f"- note: {os.environ['NOTE']}"] if os.environ.get("NOTE") else []),
           f"- fixed readers replayed: {fixed_readers(runs)}", "",
           "A ratio is the median over the rounds of the per-round ratio auto ÷ the fixed reader "
           "with the best median on that trace (every fixed reader replayed; thesis included), with the "
           "95 % interval of that median. Marks: ¹ above 1.05, ** above 1.10. Under each half, the "
           f"rounds above {TAIL} × the best count how often Auto lost badly whatever its median, next to the "
           "same count for `stream` ÷ `pread` (the library without a policy against bare system calls: "
           "mostly the machine's noise). The CPU column is "
           "the same ratio of CPU time (user + system): on a machine shared with other work a "
           "replay of cached data waits for a CPU more than it reads, and CPU time shows what "
           "Auto itself costs. "
           "Cache: cold, the files evicted; warm, the files read whole; rerun (where replayed), the "
           "files evicted and the trace replayed once untimed before each round, what a program's "
           "second run finds. "
           "Under each half, the geometric mean of the per-trace best over the best single reader is "
           "what picking the right fixed reader for every trace, knowing the traces ahead, gains over "
           "that one reader: a policy that chooses among the fixed readers gets no lower (to go "
           "further it must beat every fixed reader on some traces). The worst trace against `pread` "
           "is where Auto costs most against reading with no policy at all. "
           "Tuned: the profile of `iolab tune --quick`; built-in: no profile. "
           "`Reader` alone: the same per-round ratio for `stream` (a `Reader` that makes one `pread` "
           "per request, no policy) over `pread` (the replay's bare `File::open` and `pread`): what "
           "opening and reading through the library costs before any decision (the same system "
           "calls, an open and a `pread` per request: a `Reader` measures the file only when a read "
           "needs its length). Policy alone: the same per-round ratio for `auto` (tuned) over `stream`, "
           "with its interval: what `Auto`'s decisions gain or cost over the library's plain reader, "
           "the same opens and requests with no policy (above 1 on a trace of cached small files is "
           "the policy's own bookkeeping per open; below 1, what its choices save)."]
    for half in ("train", "test", "holdout"):
        if any(halves.get(k[0]) == half for k in runs):
            half_table(half, halves, what, runs, cpu, out)
    if notes:
        out.append("\n## Where the run-time guard fell back to pread\n")
        out.append("Open files on which the guard fell back (median over the rounds), and some of the switches of the last round.\n")
        for (name, cache), v in sorted(notes.items()):
            for reader, files, sw in v:
                out.append(f"- {name}, {cache}, {reader}: {files:g} file(s)")
                for x in sw:
                    out.append(f"  - {x}")
    out.append("\n## The programs\n")
    out.append("| trace | half | shape | maps | what it does |")
    out.append("|---|---|---|---|---|")
    for name in sorted(what, key=lambda n: (halves[n], n)):
        s, m, w = what[name]
        out.append(f"| {name} | {halves[name]} | {s} | {m} | {w} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
