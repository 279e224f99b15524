#!/usr/bin/env bash
# iolab against fio on the same 2 GiB file, alternately, PAIRS pairs per
# workload; prints per workload the median iolab/fio ratio of throughput and
# of p99 latency (both tools measure submit-to-completion latency here: fio's
# lat percentiles are requested with --lat_percentiles=1).
#
# usage: scripts/vs-fio.sh [DIR]   (env: PAIRS=3 TIME=5 SIZE=2g KEEP=0)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$PWD}
pairs=${PAIRS:-3}
secs=${TIME:-5}
size=${SIZE:-2g}
command -v fio >/dev/null 2>&1 || bash "$here/scripts/setup.sh"
command -v fio >/dev/null 2>&1 || { echo "vs-fio: fio is not installed and could not be installed" >&2; exit 2; }
(cd "$here" && cargo build --release --quiet)
iolab="$here/target/release/iolab"
file="$dir/iolab-vs-fio.dat"
out=$(mktemp -d)
cleanup() { rm -rf "$out"; [ "${KEEP:-0}" = 1 ] || rm -f "$file"; }
trap cleanup EXIT INT TERM
[ -e "$file" ] || "$iolab" bench --file "$file" --size "$size" --ops 1 >/dev/null
warm() { dd if="$file" of=/dev/null bs=1M status=none; }
# This disk may sit on a host cache: read the file twice first so neither
# tool inherits a cache the other warmed, and alternate who goes first.
"$iolab" xor "$file" >/dev/null 2>&1; "$iolab" xor "$file" >/dev/null 2>&1

# name | iolab flags | fio flags | cache (cold/warm)
workloads=(
  "seq-1m-direct-pread-qd1|--engine pread --pattern seq --bs 1m --direct|--ioengine=psync --rw=read --bs=1m --direct=1|cold"
  "rand-4k-direct-pread-qd1|--engine pread --pattern rand --bs 4k --direct|--ioengine=psync --rw=randread --norandommap --randrepeat=0 --bs=4k --direct=1|cold"
  "rand-4k-direct-uring-qd32|--engine uring --qd 32 --pattern rand --bs 4k --direct|--ioengine=io_uring --iodepth=32 --rw=randread --norandommap --randrepeat=0 --bs=4k --direct=1|cold"
  "seq-128k-buffered-warm-pread|--engine pread --pattern seq --bs 128k|--ioengine=psync --rw=read --bs=128k --direct=0|warm"
  "rand-4k-mmap-warm|--engine mmap --pattern rand --bs 4k|--ioengine=mmap --rw=randread --norandommap --randrepeat=0 --bs=4k|warm"
  "null-qd1-iops-per-thread|--engine null --pattern rand --bs 4k|--ioengine=null --rw=randread --norandommap --randrepeat=0 --bs=4k|null"
)

printf '%-30s %5s %12s %12s %10s %10s %10s %10s\n' workload pair iolab_MiBs fio_MiBs iolab_p99 fio_p99 thr_ratio p99_ratio
for w in "${workloads[@]}"; do
  IFS='|' read -r name iflags fflags cache <<<"$w"
  for p in $(seq 1 "$pairs"); do
    case $cache in
      cold) icache="--cache cold"; finv="--invalidate=1" ;;
      warm) icache="--cache warm"; finv="--invalidate=0"; warm ;;
      null) icache="--cache as-is"; finv="--invalidate=0" ;;
    esac
    run_iolab() {
      # shellcheck disable=SC2086
      "$iolab" bench $iflags $icache --file "$file" --time "${secs}s" --json >"$out/i.json"
    }
    run_fio() {
      if [ "$cache" = warm ]; then warm; fi
      # shellcheck disable=SC2086
      fio --name=vs --filename="$file" --size="$size" $fflags $finv --time_based --runtime="$secs" \
          --lat_percentiles=1 --output-format=json >"$out/f.json" 2>/dev/null
    }
    if [ $((p % 2)) = 1 ]; then run_iolab; run_fio; else run_fio; run_iolab; fi
    python3 - "$out/i.json" "$out/f.json" "$name" "$p" <<'PY' | tee -a "$out/rows"
import json, sys
i = json.load(open(sys.argv[1]))["records"][0]["runs"][0]
f = json.load(open(sys.argv[2]))["jobs"][0]
side = f["read"] if f["read"]["io_bytes"] > 0 else f["write"]
def p99(d):
    for k in ("lat_ns", "clat_ns"):
        pc = d.get(k, {}).get("percentile")
        if pc:
            return pc["99.000000"]
    return float("nan")
fi_mib = side["bw_bytes"] / 2**20
ratio = i["mib_per_s"] / fi_mib if fi_mib else float("nan")
if sys.argv[3].startswith("null"):
    ratio = i["iops"] / side["iops"]
pr = i["latency"]["p99_ns"] / p99(side)
print(f'{sys.argv[3]:<30} {sys.argv[4]:>5} {i["mib_per_s"]:>12.1f} {fi_mib:>12.1f} {i["latency"]["p99_ns"]:>10} {p99(side):>10.0f} {ratio:>10.3f} {pr:>10.3f}')
PY
  done
done
echo
echo "median iolab/fio ratios over $pairs pairs (throughput: higher is better for iolab; p99: lower is better):"
python3 - "$out/rows" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    rows[f[0]].append((float(f[6]), float(f[7])))
print(f'{"workload":<30} {"throughput":>10} {"p99":>8}')
for k, v in rows.items():
    print(f'{k:<30} {statistics.median(a for a, _ in v):>10.3f} {statistics.median(b for _, b in v):>8.3f}')
PY
