#!/usr/bin/env bash
# iolab sys against lmbench's lat_syscall, alternately, both pinned to one
# CPU: per pair the medians of `lat_syscall -N 5 null|read` and of
# `iolab sys getpid read1 --repeat 5`, then the median ratios over pairs.
# lmbench is not packaged: build lat_syscall from its source first (it
# needs libtirpc-dev) and name it in LAT_SYSCALL.
#
# usage: LAT_SYSCALL=/path/to/lat_syscall scripts/vs-lmbench.sh [PAIRS] [CPU]
set -euo pipefail
lat=${LAT_SYSCALL:-}
if [ -z "$lat" ] || [ ! -x "$lat" ]; then
  echo "vs-lmbench: LAT_SYSCALL must name lmbench's lat_syscall binary (built from lmbench's source), got '$lat'" >&2
  exit 2
fi
pairs=${1:-9}
cpu=${2:-1}
if ! [[ $pairs =~ ^[1-9][0-9]*$ && $cpu =~ ^[0-9]+$ ]]; then
  echo "vs-lmbench: PAIRS must be a whole number >= 1 and CPU a CPU number, got '$pairs' '$cpu'" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")/.." && pwd)
(cd "$here" && cargo build --release --quiet)
iolab="$here/target/release/iolab"
rows=$(mktemp) json=$(mktemp) pick=$(mktemp)
trap 'rm -f "$rows" "$json" "$pick"' EXIT
# pick FILE NAME: the median time of one measurement in `iolab sys --json`.
cat >"$pick" <<'PY'
import json, sys
e = {x["name"]: x["time_ns"]["median"] for x in json.load(open(sys.argv[1]))["entries"]}
print(e[sys.argv[2]])
PY
for p in $(seq 1 "$pairs"); do
  # lat_syscall prints "Simple syscall: 0.1410 microseconds".
  l_null=$(taskset -c "$cpu" "$lat" -N 5 null 2>&1 | awk '{print $3 * 1000}')
  l_read=$(taskset -c "$cpu" "$lat" -N 5 read 2>&1 | awk '{print $3 * 1000}')
  taskset -c "$cpu" "$iolab" sys getpid read1 --repeat 5 --json >"$json" 2>/dev/null
  i_null=$(python3 "$pick" "$json" getpid)
  i_read=$(python3 "$pick" "$json" read1)
  echo "pair $p: lat_syscall null $l_null ns, iolab getpid $i_null ns; lat_syscall read $l_read ns, iolab read1 $i_read ns" >&2
  echo "$l_null $i_null $l_read $i_read" >>"$rows"
done
python3 - "$rows" <<'PY'
import statistics as st, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
g = [r[1] / r[0] for r in rows]
r = [r[3] / r[2] for r in rows]
print(f"median of {len(rows)} pairs: iolab getpid / lat_syscall null {st.median(g):.3f} (spread {min(g):.2f}-{max(g):.2f})")
print(f"median of {len(rows)} pairs: iolab read1 / lat_syscall read {st.median(r):.3f} (spread {min(r):.2f}-{max(r):.2f})")
PY
