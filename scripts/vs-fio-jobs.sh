#!/usr/bin/env bash
# The same fio job files run by `iolab fio` and by `fio`, alternately,
# PAIRS pairs per job, on one file; prints per job the median iolab/fio
# ratio of bandwidth and of p99 latency (lat percentiles where the job asks
# for them, as every job in examples/fio does; clat otherwise).
#
# usage: scripts/vs-fio-jobs.sh [DIR] [JOB.fio...]
#   env: PAIRS=3 TIME=3 SIZE=1g KEEP=0 WAKER=10ms; SAVE=FILE keeps every
#   run's JSON document, one line each ({"job", "pair", "tool", "output"})
# fio's supervisor process wakes every 10 ms beside its jobs, and on some
# VMs that makes every completed I/O cheaper to return from (README: "Depth
# 1 against fio"); `iolab fio` runs its jobs beside a stand-in for it. This
# script also runs one pinned `iolab __waker` per CPU, every WAKER, for the
# whole session, so both tools measure next to the same shared neighbours,
# as `bench --vs fio` does. WAKER=off: no shared wakers.
# The job files read ${IOLAB_FIO_FILE} (and ${IOLAB_FIO_FILE2}, a second
# file of the same size, for jobs over two files), ${IOLAB_FIO_SIZE} and
# ${IOLAB_FIO_RUNTIME} from the environment (fio and iolab both expand them).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$PWD}
shift || true
jobs=("$@")
[ ${#jobs[@]} -gt 0 ] || jobs=("$here"/examples/fio/*.fio)
pairs=${PAIRS:-3}
command -v fio >/dev/null 2>&1 || bash "$here/scripts/setup.sh"
command -v fio >/dev/null 2>&1 || { echo "vs-fio-jobs: fio is not installed and could not be installed" >&2; exit 2; }
(cd "$here" && cargo build --release --quiet)
iolab="$here/target/release/iolab"
export IOLAB_FIO_FILE="$dir/iolab-vs-fio-jobs.dat"
export IOLAB_FIO_FILE2="$dir/iolab-vs-fio-jobs-2.dat"
export IOLAB_FIO_SIZE=${SIZE:-1g}
export IOLAB_FIO_RUNTIME=${TIME:-3}
waker=${WAKER:-10ms}
cpus=$(python3 -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0)))))')
wpids=()
start_wakers() {
  [ "$waker" = off ] && return
  for c in $cpus; do "$iolab" __waker --cpu "$c" --every "$waker" & wpids+=($!); done
  sleep 0.1
}
stop_wakers() {
  [ ${#wpids[@]} -gt 0 ] || return 0
  kill "${wpids[@]}" 2>/dev/null || true
  wait "${wpids[@]}" 2>/dev/null || true
  wpids=()
}
out=$(mktemp -d)
cleanup() { stop_wakers; rm -rf "$out"; [ "${KEEP:-0}" = 1 ] || rm -f "$IOLAB_FIO_FILE" "$IOLAB_FIO_FILE2"; }
trap cleanup EXIT INT TERM
for f in "$IOLAB_FIO_FILE" "$IOLAB_FIO_FILE2"; do
  [ -e "$f" ] || "$iolab" bench --file "$f" --size "$IOLAB_FIO_SIZE" --ops 1 >/dev/null
done
# Both tools refuse nothing the other accepts: check every job first.
for j in "${jobs[@]}"; do
  "$iolab" fio --parse-only "$j" >/dev/null
  fio --parse-only "$j" >/dev/null
done

start_wakers
printf '%-36s %4s %10s %10s %10s %10s %8s %8s\n' job pair iolab_MiBs fio_MiBs iolab_p99 fio_p99 bw_ratio p99_ratio
for j in "${jobs[@]}"; do
  name=$(basename "$j" .fio)
  # One unmeasured run first, so that every measured pair starts from the
  # cache state the job leaves (a job with invalidate=0 reads a file the
  # previous job left cold: without this the first tool of the first pairs
  # warms it for the second).
  fio --output-format=json "$j" >/dev/null 2>&1 || true
  # A job that keeps the cache (invalidate=0) is measured warm: read the
  # files whole first (a 3 s random job after a cold one warms a 1 GiB
  # file only partly, and the first pairs then measure the device).
  if grep -q '^invalidate=0' "$j"; then cat "$IOLAB_FIO_FILE" "$IOLAB_FIO_FILE2" >/dev/null; fi
  for p in $(seq 1 "$pairs"); do
    # --overwrite: write jobs write into the file fio wrote last.
    run_iolab() { "$iolab" fio --overwrite --output-format=json "$j" >"$out/i.json"; }
    run_fio() { fio --output-format=json "$j" >"$out/f.json" 2>/dev/null; }
    if [ $((p % 2)) = 1 ]; then run_iolab; run_fio; else run_fio; run_iolab; fi
    if [ -n "${SAVE:-}" ]; then
      python3 - "$out/i.json" "$out/f.json" "$name" "$p" >>"$SAVE" <<'PY'
import json, sys
for tool, path in (("iolab", sys.argv[1]), ("fio", sys.argv[2])):
    text = open(path).read()
    doc = json.loads(text[text.index("{"):])
    print(json.dumps({"job": sys.argv[3], "pair": int(sys.argv[4]), "tool": tool, "output": doc}))
PY
    fi
    python3 - "$out/i.json" "$out/f.json" "$name" "$p" <<'PY' | tee -a "$out/rows"
import json, sys
def load(path):
    text = open(path).read()
    return json.loads(text[text.index("{"):])
def summary(doc):
    bw, p99s = 0.0, []
    for job in doc["jobs"]:
        for side in ("read", "write"):
            s = job[side]
            if s["io_bytes"] == 0:
                continue
            bw += s["bw_bytes"]
            for k in ("lat_ns", "clat_ns"):
                pc = s.get(k, {}).get("percentile")
                if pc:
                    p99s.append((s["total_ios"], pc["99.000000"]))
                    break
    n = sum(w for w, _ in p99s)
    p99 = sum(w * v for w, v in p99s) / n if n else float("nan")
    return bw / 2**20, p99
im, ip = summary(load(sys.argv[1]))
fm, fp = summary(load(sys.argv[2]))
br = im / fm if fm else float("nan")
pr = ip / fp if fp else float("nan")
print(f"{sys.argv[3]:<36} {sys.argv[4]:>4} {im:>10.1f} {fm:>10.1f} {ip:>10.0f} {fp:>10.0f} {br:>8.3f} {pr:>8.3f}")
PY
  done
done
echo
echo "median iolab/fio ratios over $pairs pairs, spread = min-max of the pairs (bandwidth: higher is better for iolab; p99: lower is better); wakers: $waker"
python3 - "$out/rows" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    rows[f[0]].append((float(f[6]), float(f[7])))
print(f'{"job":<36} {"bandwidth":>10} {"spread":>13} {"p99":>8} {"spread":>13}')
for k, v in rows.items():
    bw = [a for a, _ in v]
    p99 = [b for _, b in v]
    print(f'{k:<36} {statistics.median(bw):>10.3f} {min(bw):>6.3f}-{max(bw):<6.3f} '
          f'{statistics.median(p99):>8.3f} {min(p99):>6.3f}-{max(p99):<6.3f}')
PY
