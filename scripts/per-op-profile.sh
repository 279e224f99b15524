#!/usr/bin/env bash
# Where one op's CPU time goes, in iolab and in fio's t/io_uring: each tool
# runs the same workload pinned to one CPU under `perf record -e cpu-clock`
# (a timer sample: no hardware counters needed, so it works in a VM), and
# the samples are split into user space and kernel and by function.
#
#   scripts/per-op-profile.sh FIO_SOURCE_DIR [DIR]
#
# FIO_SOURCE_DIR is a fio source tree; its t/io_uring is used if built,
# else built in a temporary copy (./configure, make t/io_uring). iolab is
# built in release mode. DIR holds the data file (default .).
# Workloads (as scripts/vs-t-io_uring.sh names them): nop (-N1 against
# --uring-nop) and cached-regfix-off (cached 4 KiB random reads, -t0
# against --lat off), both at depth 128 in batches of 32 with the file and
# buffers registered. The tools alternate, ROUNDS times each (default 3),
# and each share is the median over the rounds.
#
# env: ROUNDS=3, CPU=1, SIZE=1g, FREQ=10000 (samples per second),
# OUT=FILE (default docs/results/per-op-profile.md; OUT=- prints only).
set -euo pipefail
src=${1:?usage: scripts/per-op-profile.sh FIO_SOURCE_DIR [DIR]}
dir=${2:-.}
rounds=${ROUNDS:-3}
cpu=${CPU:-1}
size=${SIZE:-1g}
freq=${FREQ:-10000}
here=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$here/docs/results/per-op-profile.md}
me=per-op-profile
[ -f "$src/t/io_uring.c" ] || { echo "$me: $src is not a fio source tree (no t/io_uring.c)" >&2; exit 2; }
[ -d "$dir" ] || { echo "$me: $dir: no such directory" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "$me: ROUNDS must be a whole number >= 1, got '$rounds'" >&2; exit 2; }
for t in perf make taskset python3; do
  command -v $t >/dev/null || { echo "$me: $t missing (Debian: linux-perf, build-essential, util-linux, python3)" >&2; exit 2; }
done
work=$(mktemp -d /tmp/per-op-profile.XXXXXX)
file=$(mktemp "$dir/.per-op-profile.XXXXXX")
trap 'rm -rf "$work" "$file"' EXIT
# shellcheck source=scripts/tio-tools.sh
. "$here/scripts/tio-tools.sh"
tio_tools

# name | t/io_uring flags | iolab flags
workloads=(
  "nop|-N1 -F1 -B1 -n1 -t0|--uring-nop --reg-files --fixed-bufs --lat off"
  "cached-regfix-off|-O0 -F1 -B1 -n1 -t0|--reg-files --fixed-bufs --lat off"
)
tcommon="-d128 -s32 -c32 -b4096 -p0 -R1 -X1 -r4"
icommon="--engine uring --pattern rand --bs 4k --qd 128 --batch 32 --batch-complete 32 --cache as-is --noatime --ramp 1s --time 3s"

: >"$work/rows.tsv"
one() { # name round side cmd...
  local name=$1 r=$2 side=$3 data=$work/$1.$2.$3.data
  shift 3
  perf record -q -e cpu-clock -F "$freq" -o "$data" -- taskset -c "$cpu" "$@" >/dev/null 2>&1
  # One line per function: share, user or kernel, name.
  perf report -i "$data" --no-children -g none --sort dso,sym --stdio -q 2>/dev/null |
    awk -v n="$name" -v r="$r" -v s="$side" '$1 ~ /%$/ {
      pct = $1; sub(/%/, "", pct); where = ($3 == "[k]") ? "kernel" : "user"
      sym = ""; for (i = 4; i <= NF; i++) sym = sym (i > 4 ? " " : "") $i
      printf "%s\t%s\t%s\t%s\t%s\t%s\n", n, r, s, where, pct, sym }' >>"$work/rows.tsv"
  rm -f "$data"
  echo "round $r $name $side done" >&2
}
for r in $(seq "$rounds"); do
  "$iolab" xor "$file" >/dev/null
  for w in "${workloads[@]}"; do
    IFS='|' read -r name tf ifl <<<"$w"
    for side in $([ $((r % 2)) = 1 ] && echo "t iolab" || echo "iolab t"); do
      if [ $side = t ]; then
        # shellcheck disable=SC2086
        one "$name" "$r" t "$tio" $tcommon $tf "$file"
      else
        # shellcheck disable=SC2086
        one "$name" "$r" iolab "$iolab" bench $icommon $ifl --cpus "$cpu" --file "$file"
      fi
    done
  done
done

commit=$(cd "$here" && git rev-parse --short HEAD)$(cd "$here" && git diff --quiet HEAD -- crates || echo "+changes")
machine="$(uname -sr), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs"
report=$(python3 - "$work/rows.tsv" "$commit" "$machine" "$rounds" "$freq" "$cpu" "$tcommon" "$icommon" "${workloads[@]}" <<'PY'
import collections, statistics as st, sys
rows, commit, machine, rounds, freq, cpu, tcommon, icommon = sys.argv[1:9]
work = [w.split("|") for w in sys.argv[9:]]
# (name, side) -> round -> {(where, sym): pct}
d = collections.defaultdict(lambda: collections.defaultdict(dict))
for line in open(rows):
    name, r, side, where, pct, sym = line.rstrip("\n").split("\t")
    d[(name, side)][r][(where, sym)] = float(pct)
def med(name, side, key):
    rs = d[(name, side)].values()
    return st.median(r.get(key, 0.0) for r in rs) if rs else 0.0
def share(name, side, where):
    rs = d[(name, side)].values()
    return st.median(sum(p for (w, _), p in r.items() if w == where) for r in rs)
print(f"# Where one op's CPU time goes: iolab and t/io_uring\n")
print(f"iolab {commit}; {machine}. `perf record -e cpu-clock -F {freq}` of each whole process pinned with `taskset -c {cpu}`; "
      f"{rounds} alternating rounds, each figure the median over them (% of the process's samples).\n")
names = {"t": "t/io_uring", "iolab": "iolab"}
for name, tf, ifl in work:
    print(f"## {name}\n")
    print(f"`t/io_uring {tcommon} {tf} FILE` against `iolab bench {icommon} {ifl} --cpus {cpu} --file FILE`\n")
    print("| | t/io_uring | iolab |\n|---|---:|---:|")
    for where in ("user", "kernel"):
        print(f"| {where} space | {share(name, 't', where):.1f} % | {share(name, 'iolab', where):.1f} % |")
    print()
    for side in ("t", "iolab"):
        keys = set().union(*[set(r) for r in d[(name, side)].values()]) if d[(name, side)] else set()
        top = sorted(keys, key=lambda k: -med(name, side, k))
        user = [k for k in top if k[0] == "user"][:8]
        kern = [k for k in top if k[0] == "kernel"][:10]
        print(f"{names[side]}, user space: " + ", ".join(f"`{s}` {med(name, side, (w, s)):.2f} %" for w, s in user if med(name, side, (w, s)) >= 0.05) + "\n")
        print(f"{names[side]}, kernel: " + ", ".join(f"`{s}` {med(name, side, (w, s)):.2f} %" for w, s in kern) + "\n")
PY
)
echo "$report"
if [ "$out" != - ]; then
  mkdir -p "$(dirname "$out")"
  printf '%s\n' "$report" >"$out"
  echo "written to $out" >&2
fi
