#!/usr/bin/env bash
# iolab cat against cat, dd bs=1M, the course's 8 threads x 32 KiB reader
# and fio's best sequential configuration (searched over io_uring depth x
# block size x direct/buffered), on one file, cold and warm. Runs
# alternate (pair k: A then B when k is odd, B then A when even) and the
# median of PAIRS pairs is reported with the ratio best-other / iolab
# (above 1: iolab is faster).
#
#   scripts/vs-cat.sh [DIR] [SIZE_GIB] [PAIRS]     (defaults: . 4 3)
#   env: OTHERS="cat dd course fio", MODES="cold warm", FIO_BEST="fio ..."
#   (a configuration found before: skips the search)
#
# Cold: the file's pages are dropped before each run (dd iflag=nocache
# count=0, i.e. POSIX_FADV_DONTNEED); warm: it is read once first.
set -euo pipefail
DIR=${1:-.}
GIB=${2:-4}
PAIRS=${3:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
F="$DIR/vs-cat-${GIB}g"
cargo build --release -q -p iolab-cli --manifest-path "$ROOT/Cargo.toml"
cargo build --release -q -p iolab-reader --example course_reader --manifest-path "$ROOT/Cargo.toml"
IOLAB="$ROOT/target/release/iolab"
COURSE="$ROOT/target/release/examples/course_reader"
command -v fio >/dev/null || { echo "vs-cat: fio is missing (scripts/setup.sh installs it)" >&2; exit 2; }
if [ ! -f "$F" ] || [ "$(stat -c %s "$F")" != "$((GIB << 30))" ]; then
  echo "creating $F ($GIB GiB)" >&2
  head -c "$((GIB << 30))" /dev/urandom > "$F.tmp" && mv "$F.tmp" "$F"
fi
drop() { dd if="$F" iflag=nocache count=0 status=none; }
warm() { cat "$F" > /dev/null; }
secs() { local t0 t1; t0=$(date +%s.%N); "$@" > /dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
declare -A CMD
CMD[iolab]="$IOLAB cat $F"
CMD[cat]="cat $F"
CMD[dd]="dd if=$F of=/dev/null bs=1M status=none"
CMD[course]="$COURSE $F 8 32768"
# fio's best: one cold pass per configuration, keep the fastest.
best_fio=${FIO_BEST:-} ; best_t=999999
[ -n "$best_fio" ] || for direct in 1 0; do for bs in 1m 4m; do for qd in 8 32; do
  drop
  c="fio --name=s --filename=$F --rw=read --bs=$bs --iodepth=$qd --ioengine=io_uring --direct=$direct --size=${GIB}g --output=/dev/null"
  t=$(secs $c)
  echo "fio search: direct=$direct bs=$bs iodepth=$qd: $t s" >&2
  if (( $(echo "$t < $best_t" | bc -l) )); then best_t=$t; best_fio=$c; fi
done; done; done
echo "fio best: $best_fio" >&2
for mode in ${MODES:-cold warm}; do
  # fio drops the file's cache when a job starts (invalidate=1): warm runs
  # must tell it not to, or they measure it cold.
  if [ $mode = warm ]; then CMD[fio]="$best_fio --invalidate=0"; else CMD[fio]="$best_fio"; fi
  for other in ${OTHERS:-cat dd course fio}; do
    a=(); b=()
    for ((k = 1; k <= PAIRS; k++)); do
      for who in $( ((k % 2)) && echo "iolab $other" || echo "$other iolab"); do
        if [ $mode = cold ]; then drop; else warm; fi
        t=$(secs ${CMD[$who]})
        if [ "$who" = iolab ]; then a+=("$t"); else b+=("$t"); fi
      done
    done
    python3 - "$mode" "$other" "${a[*]}" "${b[*]}" <<'PY'
import sys, statistics as st
mode, other, a, b = sys.argv[1], sys.argv[2], list(map(float, sys.argv[3].split())), list(map(float, sys.argv[4].split()))
ma, mb = st.median(a), st.median(b)
print(f"{mode:4} iolab {ma:7.3f} s  {other:6} {mb:7.3f} s  ratio {other}/iolab {mb/ma:5.2f}  (median of {len(a)} pairs; iolab {a}, {other} {b})")
PY
  done
done
