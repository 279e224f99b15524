#!/usr/bin/env bash
# The asynchronous interfaces against fio: random 4 KiB O_DIRECT reads at
# depth 1..64 with io_uring (plain, +F registered files, +FM fixed buffers,
# +S SQPOLL) and libaio on 1 and 2 threads, plus sequential 1 MiB at depth
# 4 and 16, each row as `iolab bench --vs fio` pairs (alternating who goes
# first). Prints per row the median iolab/fio ratios of IOPS, CPU per I/O
# (submitting threads on both sides: like for like) and p99.9 latency, and
# the spread (min-max) of the per-pair IOPS ratios.
#
# Rows at parity with the device's noise land on either side of 1.00; a row
# whose median IOPS ratio is below 1.00 is measured again with RERUN pairs
# (default 7; RERUN=0: never) and printed a second time, so a miss is
# concluded on the longer run and both runs are shown. Under each table, all
# random-read pairs pooled: the median pair ratio with its 95 % confidence
# interval, which says whether the rows below 1.00 are a loss or the noise.
#
# usage: scripts/vs-fio-async.sh [DIR]   (env: PAIRS=3 RERUN=7 TIME=3 SIZE=2g
#   DEPTHS=1,4,16,32,64; KEEP, SAVE: see vs-fio-setup.sh)
set -euo pipefail
default_secs=3
# shellcheck source=scripts/vs-fio-setup.sh
source "$(dirname "$0")/vs-fio-setup.sh" "$@"
rerun=${RERUN:-7}
IFS=, read -r -a depths <<<"${DEPTHS:-1,4,16,32,64}"
# One row per line: the bench flags that make it.
rows=()
for engine in "uring" "libaio" "uring --reg-files" "uring --reg-files --fixed-bufs"; do
  for t in 1 2; do
    for d in "${depths[@]}"; do
      rows+=("--engine $engine --pattern rand --bs 4k --qd $d --threads $t")
    done
  done
done
for d in "${depths[@]}"; do
  rows+=("--engine uring --sqpoll --pattern rand --bs 4k --qd $d --threads 1")
done
for engine in uring libaio; do
  for d in 4 16; do rows+=("--engine $engine --pattern seq --bs 1m --qd $d"); done
done
# pass NAME PAIRS ROW...: each row once, its record appended to $out/NAME.jsonl.
pass() {
  local name=$1 n=$2 row
  shift 2
  for row in "$@"; do
    # shellcheck disable=SC2086 # a row is a list of flags
    "$iolab" bench $row --file "$file" --direct --time "${secs}s" --vs fio \
      --pairs "$n" --jsonl "$out/$name.jsonl" >/dev/null
  done
}
# table FILE: the rows' ratios; the 0-based indices of the misses go to FILE.miss.
table() {
  python3 - "$1" <<'PY'
import json, sys, statistics as st
path = sys.argv[1]
print(f'{"label":<16} {"pattern":<9} {"pairs":>5} {"iolab IOPS":>11} {"fio IOPS":>11} {"IOPS":>6} {"spread":>11} {"cpu/IO":>7} {"p99.9":>6}')
misses, pooled = [], []
for i, line in enumerate(open(path)):
    r = json.loads(line)
    c = r["vs_fio"]
    def med(side, f):
        return st.median(f(x) for x in c[side])
    ii, fi = med("iolab", lambda x: x["iops"]), med("fio", lambda x: x["iops"])
    ic = med("iolab", lambda x: x.get("cpu_submit_pct", x["cpu_pct"]) / max(x["iops"], 1))
    fc = med("fio", lambda x: x.get("cpu_submit_pct", x["cpu_pct"]) / max(x["iops"], 1))
    ip, fp = med("iolab", lambda x: x["p99_9_ns"]), med("fio", lambda x: x["p99_9_ns"])
    # Spread: min-max of the per-pair IOPS ratios (pair k = iolab k vs fio k).
    pr = [a["iops"] / b["iops"] for a, b in zip(c["iolab"], c["fio"]) if b["iops"] > 0]
    spread = f'{min(pr):.2f}-{max(pr):.2f}' if pr else '-'
    sp = r["spec"]
    what = f'{sp["pattern"]} {sp["bs"] >> 10}k'
    print(f'{r["label"]:<16} {what:<9} {len(pr):>5} {ii:>11.0f} {fi:>11.0f} {ii/fi:>6.3f} {spread:>11} {ic/fc:>7.3f} {ip/fp:>6.3f}')
    if ii < fi:
        misses.append(i)
    if sp["pattern"] == "rand":
        pooled.extend(pr)
with open(path + ".miss", "w") as m:
    m.write("".join(f"{i}\n" for i in misses))
print(f'{len(misses)} of {i + 1} rows below 1.00')
# All random-read pairs together: is iolab behind, or are the misses the
# device's noise? The median pair ratio with its 95 % confidence interval
# from order statistics (the sign test's: no assumption about the noise's
# shape), and how many pairs went each way.
if len(pooled) >= 6:
    import math
    v, n = sorted(pooled), len(pooled)
    k = max(0, math.floor(n / 2 - 1.96 * math.sqrt(n) / 2) - 1)
    lo, hi = v[k], v[n - 1 - k]
    up = sum(1 for x in v if x >= 1.0)
    gm = math.exp(st.fmean(math.log(x) for x in v))
    print(f'all {n} random-read pairs: median ratio {st.median(v):.3f} '
          f'(95 % CI {lo:.3f}-{hi:.3f}), geometric mean {gm:.3f}, {up} of {n} pairs >= 1.00')
PY
}
pass first "$pairs" "${rows[@]}"
table "$out/first.jsonl"
again=()
while read -r i; do again+=("${rows[$i]}"); done <"$out/first.jsonl.miss"
if [ "$rerun" -gt 0 ] && [ ${#again[@]} -gt 0 ]; then
  echo
  echo "rows below 1.00, measured again with $rerun pairs:"
  pass rerun "$rerun" "${again[@]}"
  table "$out/rerun.jsonl"
fi
