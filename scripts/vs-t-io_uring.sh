#!/usr/bin/env bash
# iolab against fio's peak-IOPS tool t/io_uring, alternately, on the same
# file and CPU; per workload the median IOPS of each, the median of the
# rounds' iolab / t/io_uring ratios with their spread, and each tool's CPU
# time per op.
#
#   scripts/vs-t-io_uring.sh FIO_SOURCE_DIR [DIR]
#
# FIO_SOURCE_DIR is a copy of fio's source tree that you provide (t/io_uring
# is not packaged); it is built in a temporary folder (./configure, make
# t/io_uring). iolab is built in release mode. The data file (SIZE, made
# by iolab in DIR, default .; not tmpfs: one row reads with O_DIRECT) is
# read through the page cache, warmed before every round.
#
# Workloads, 4 KiB random reads, depth 128, submitted and reaped in batches
# of 32, t/io_uring pinned with `taskset -c CPU`, iolab with `--cpus CPU`:
#   cached-regfix-*   registered file and fixed buffers (-F1 -B1), latency
#                     off (-t0 / --lat off), sampled (-t1, which reads the
#                     clock once per batch / --lat sampled, 1 op in 32) and
#                     all (-t1 / --lat all);
#   cached-plain      neither registered (-F0 -B0);
#   direct            O_DIRECT (-O1 -p0: this disk has no poll queues);
#   nop               no-ops through io_uring_enter (-N1 / --uring-nop, each
#                     naming the registered file and buffer);
#   2-threads         two submitters (-n2 / --threads 2) on CPUS2.
# Both open the file O_NOATIME (t/io_uring always does; iolab --noatime)
# and read into page-aligned buffers (t/io_uring's; iolab's with fixed
# buffers or O_DIRECT, and in the plain row by --buf-offset 0).
# Windows: t/io_uring -r5 prints one line per second; the first is the
# ramp, the mean of the next three is its figure; iolab --ramp 1s --time 3s.
# CPU per op: t/io_uring's threads' CPU time (/proc/PID/task/*/schedstat)
# between its first and last line over the ops of those lines; iolab's
# user + system time over its measured ops (its record's cpu_ns_per_op).
#
# env: ROUNDS=5 (at least 5 for a claim), CPU=1, CPUS2=0,1, SIZE=1g,
# ONLY=name,name (a subset of the workloads), OUT=FILE (the results as
# Markdown; default docs/results/vs-t-io_uring.md; OUT=- prints only).
set -euo pipefail
src=${1:?usage: scripts/vs-t-io_uring.sh FIO_SOURCE_DIR [DIR]}
dir=${2:-.}
rounds=${ROUNDS:-5}
cpu=${CPU:-1}
cpus2=${CPUS2:-0,1}
size=${SIZE:-1g}
here=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$here/docs/results/vs-t-io_uring.md}
me=vs-t-io_uring
[ -f "$src/t/io_uring.c" ] || { echo "$me: $src is not a fio source tree (no t/io_uring.c)" >&2; exit 2; }
[ -d "$dir" ] || { echo "$me: $dir: no such directory" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "$me: ROUNDS must be a whole number >= 1, got '$rounds'" >&2; exit 2; }
for t in make taskset stdbuf python3; do
  command -v $t >/dev/null || { echo "$me: $t missing (Debian: build-essential, util-linux, coreutils, python3)" >&2; exit 2; }
done
work=$(mktemp -d /tmp/vs-t-io_uring.XXXXXX)
file=$(mktemp "$dir/.vs-t-io_uring.XXXXXX")
trap 'rm -rf "$work" "$file"' EXIT
# shellcheck source=scripts/tio-tools.sh
. "$here/scripts/tio-tools.sh"
tio_tools

# name | CPUs | t/io_uring flags | iolab flags
workloads=(
  "cached-regfix-off|$cpu|-O0 -F1 -B1 -n1 -t0|--reg-files --fixed-bufs --lat off"
  "cached-regfix-sampled|$cpu|-O0 -F1 -B1 -n1 -t1|--reg-files --fixed-bufs --lat sampled"
  "cached-regfix-all|$cpu|-O0 -F1 -B1 -n1 -t1|--reg-files --fixed-bufs --lat all"
  "cached-plain|$cpu|-O0 -F0 -B0 -n1 -t0|--lat off --buf-offset 0"
  "direct|$cpu|-O1 -F1 -B1 -n1 -t0|--direct --reg-files --fixed-bufs --lat off"
  "nop|$cpu|-N1 -F1 -B1 -n1 -t0|--uring-nop --reg-files --fixed-bufs --lat off"
  "2-threads|$cpus2|-O0 -F1 -B1 -n2 -t0|--threads 2 --reg-files --fixed-bufs --lat off"
)
tcommon="-d128 -s32 -c32 -b4096 -p0 -R1 -X1 -r5"
icommon="--engine uring --pattern rand --bs 4k --qd 128 --batch 32 --batch-complete 32 --cache as-is --noatime --ramp 1s --time 3s"

# t/io_uring's figure and CPU per op (see the header), as "IOPS NS_PER_OP".
cat >"$work/tio.py" <<'PY'
import glob, os, re, subprocess, sys, time
def cpu_ns(pid):
    total = 0
    for f in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            total += int(open(f).read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, text=True)
lines = []
for line in p.stdout:
    m = re.match(r"IOPS=([0-9.]+)([MK]?),", line)
    if m:
        iops = float(m.group(1)) * {"M": 1e6, "K": 1e3, "": 1}[m.group(2)]
        lines.append((iops, cpu_ns(p.pid)))
p.wait()
if len(lines) < 3:
    sys.exit(f"t/io_uring printed {len(lines)} lines of IOPS (exit {p.returncode})")
meas = lines[1:]
ops = sum(i for i, _ in meas)
print(f"{ops / len(meas):.0f} {(meas[-1][1] - lines[0][1]) / ops:.1f}")
PY

rows=$work/rows.tsv
: >"$rows"
runs() { # round name cpus tflags iflags
  local r=$1 name=$2 cpus=$3 tf=$4 ifl=$5 side res
  for side in $([ $((r % 2)) = 1 ] && echo "t iolab" || echo "iolab t"); do
    if [ $side = t ]; then
      # shellcheck disable=SC2086
      res=$(python3 "$work/tio.py" taskset -c "$cpus" stdbuf -oL "$tio" $tcommon $tf "$file")
    else
      # shellcheck disable=SC2086
      res=$("$iolab" bench $icommon $ifl --cpus "$cpus" --file "$file" --json |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["records"][0]["runs"][0]; print("%.0f %.1f" % (r["iops"], r["cpu"]["cpu_ns_per_op"]))')
    fi
    printf '%s\t%s\t%s\t%s\n' "$name" "$r" "$side" "${res// /	}" >>"$rows"
    echo "round $r $name $side: $res" >&2
  done
}
for r in $(seq "$rounds"); do
  "$iolab" xor "$file" >/dev/null
  for w in "${workloads[@]}"; do
    IFS='|' read -r name cpus tf ifl <<<"$w"
    if [ -n "${ONLY:-}" ] && [[ ,$ONLY, != *,$name,* ]]; then continue; fi
    runs "$r" "$name" "$cpus" "$tf" "$ifl"
  done
done

commit=$(cd "$here" && git rev-parse --short HEAD)$(cd "$here" && git diff --quiet HEAD -- crates || echo "+changes")
machine="$(uname -sr), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $(df -T "$dir" | awk 'NR==2 {print $2}') on $(df "$dir" | awk 'NR==2 {print $1}')"
fiov=$(cd "$src" && (git describe --tags 2>/dev/null || cat FIO-VERSION-FILE 2>/dev/null || echo "source tree"))
report=$(python3 - "$rows" "$commit" "$machine" "$fiov" "$rounds" "$tio" "$tcommon" "$iolab" "$icommon" "${workloads[@]}" <<'PY'
import collections, statistics as st, sys
rows, commit, machine, fiov, rounds, tio, tcommon, iolab, icommon = sys.argv[1:10]
work = [w.split("|") for w in sys.argv[10:]]
d = collections.defaultdict(dict)
for line in open(rows):
    name, r, side, iops, ns = line.rstrip("\n").split("\t")
    d[(name, int(r))][side] = (float(iops), float(ns))
print(f"# iolab against t/io_uring\n\niolab {commit}, fio's t/io_uring ({fiov}); {machine}.")
print(f"{rounds} alternating rounds per workload (who goes first alternates); other work may share the machine, so the spread is shown.\n")
print("| workload | t/io_uring IOPS | iolab IOPS | iolab / t/io_uring (spread) | CPU per op t/io_uring | CPU per op iolab |")
print("|---|---:|---:|---:|---:|---:|")
for name, cpus, tf, ifl in work:
    pairs = [v for (n, _), v in sorted(d.items()) if n == name and len(v) == 2]
    if not pairs:
        continue
    ratio = [p["iolab"][0] / p["t"][0] for p in pairs]
    med = lambda side, i: st.median(p[side][i] for p in pairs)
    print(f"| {name} | {med('t', 0):,.0f} | {med('iolab', 0):,.0f} | {st.median(ratio):.3f} ({min(ratio):.2f}-{max(ratio):.2f}) | {med('t', 1):.0f} ns | {med('iolab', 1):.0f} ns |")
print("\nCommands (FILE the data file):\n")
for name, cpus, tf, ifl in work:
    if any(n == name for n, _ in d):
        print(f"- {name}: `taskset -c {cpus} t/io_uring {tcommon} {tf} FILE` against `iolab bench {icommon} {ifl} --cpus {cpus} --file FILE`")
print("\nEach round, IOPS and CPU ns per op, t/io_uring then iolab:\n")
for (name, r), v in sorted(d.items()):
    if len(v) == 2:
        print(f"- {name} round {r}: {v['t'][0]:,.0f} / {v['t'][1]:.0f} ns, {v['iolab'][0]:,.0f} / {v['iolab'][1]:.0f} ns")
PY
)
echo "$report"
if [ "$out" != - ]; then
  mkdir -p "$(dirname "$out")"
  printf '%s\n' "$report" >"$out"
  echo "written to $out" >&2
fi
