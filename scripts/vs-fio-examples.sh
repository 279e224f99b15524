#!/usr/bin/env bash
# fio's own example job files, shrunk (sizes to at most SIZE, runs to at
# most TIME seconds, devices and folders to local files), run by
# `iolab fio` and by `fio` alternately, PAIRS pairs each, in one folder.
# Per example: the JSON key sets (iolab's own `iolab` key aside), the
# number of jobs and of groups, the median iolab/fio bandwidth ratio, and
# whether fio_jsonplus_clat2csv reads both outputs into the same columns.
# Then fio2gnuplot on both tools' --bandwidth-log logs: the same columns.
#
# usage: scripts/vs-fio-examples.sh FIO_TREE [EXAMPLE...]
#   env: PAIRS=3 SIZE=64m TIME=2 DIR=(a temporary folder) OUT=(a file to
#   copy the report to, with the command, commit and machine)
# FIO_TREE is a fio source tree; its examples are read, never copied into
# this repository. Needs fio (3.33 from Debian), its tools, and gnuplot
# (installed here with apt-get when missing).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tree=${1:?usage: scripts/vs-fio-examples.sh FIO_TREE [EXAMPLE...]}
shift
examples=("$@")
[ ${#examples[@]} -gt 0 ] || examples=(aio-read backwards-read basic-verify butterfly fio-rand-read
  fio-rand-write fio-rand-RW fio-seq-read fio-seq-write fio-seq-RW fixed-rate-submission fsx
  iometer-file-access-server null zipf tiobench-example ssd-test surface-scan waitfor
  poisson-rate-submission latency-profile rand-zones jesd219)
pairs=${PAIRS:-3}
size=${SIZE:-64m}
time_s=${TIME:-2}
limit=$((time_s * 15 + 60))
command -v fio >/dev/null || bash "$here/scripts/setup.sh"
if ! command -v gnuplot >/dev/null; then
  apt-get install -y -qq gnuplot-nox >/dev/null 2>&1 || apt-get install -y -qq gnuplot >/dev/null 2>&1 || true
fi
for t in fio fio_jsonplus_clat2csv fio2gnuplot gnuplot; do
  command -v "$t" >/dev/null || { echo "vs-fio-examples: $t is not installed" >&2; exit 2; }
done
# The workspace's dev profile is optimised; it is what the tests build.
(cd "$here" && cargo build --quiet -p iolab-cli)
iolab="$here/target/debug/iolab"
dir=${DIR:-$(mktemp -d)}
mkdir -p "$dir/run"
keep_dir=${DIR:+1}
cleanup() { [ -n "$keep_dir" ] || rm -rf "$dir"; }
trap cleanup EXIT INT TERM
report="$dir/report"
: >"$report"
say() { echo "$@" | tee -a "$report"; }
say "fio examples of $tree, shrunk to size <= $size and <= ${time_s}s, $pairs pairs each (iolab first in odd pairs)"
say "iolab: $("$iolab" fio --version) at $(git -C "$here" rev-parse --short HEAD); fio: $(fio --version)"
say "machine: $(uname -r), $(nproc) CPUs, $(df -T "$dir" | awk 'NR==2 {print $2 " on " $1}')"
printf '%-28s %5s %5s %5s %9s %9s %7s %5s %5s %5s\n' example jobs grps pairs iolab_MiBs fio_MiBs ratio keys jobs= csv= | tee -a "$report"

for ex in "${examples[@]}"; do
  src="$tree/examples/$ex.fio"
  [ -f "$src" ] || { say "$ex: no such example"; continue; }
  job="$dir/$ex.fio"
  python3 "$here/scripts/fio-shrink.py" "$src" "$size" "$time_s" >"$job"
  if ! (cd "$dir/run" && "$iolab" fio --parse-only "$job" >/dev/null 2>"$dir/err"); then
    say "$ex: iolab refuses it: $(head -1 "$dir/err")"
    continue
  fi
  writes=$(grep -Eq '^ *(rw|readwrite) *= *(write|randwrite|rw|randrw|readwrite|trim|randtrim|trimwrite)' "$job" && echo 1 || echo 0)
  for p in $(seq 1 "$pairs"); do
    run() {
      local who=$1 rc=0
      # A job file that writes starts from no files, for both tools alike.
      [ "$writes" = 1 ] && find "$dir/run" -mindepth 1 -delete
      # Each run gets at most `limit` seconds (fio 3.33 can hang at the end
      # of an io_submit_mode=offload job): a hang is reported, then killed.
      if [ "$who" = iolab ]; then
        (cd "$dir/run" && timeout -k 5 "$limit" "$iolab" fio --overwrite --output-format=json+ "$job" >"$dir/$ex.iolab.$p.json" 2>"$dir/err.iolab") || rc=$?
      else
        (cd "$dir/run" && timeout -k 5 "$limit" fio --output-format=json+ "$job" >"$dir/$ex.fio.$p.json" 2>"$dir/err.fio") || rc=$?
      fi
      case $rc in
        0) return 0 ;;
        124|137) say "$ex: $who did not finish in ${limit}s (killed)" ;;
        *) say "$ex: $who failed: $(tail -1 "$dir/err.$who")" ;;
      esac
      return 1
    }
    if [ $((p % 2)) = 1 ]; then run iolab && run fio; else run fio && run iolab; fi || continue 2
  done
  python3 "$here/scripts/fio-compare.py" "$dir" "$ex" "$pairs" | tee -a "$report"
done

# fio2gnuplot on each tool's aggregate bandwidth log of one example.
say ""
g="$dir/gnuplot"
ex=fio-rand-read
for who in iolab fio; do
  mkdir -p "$g/$who"
  if [ "$who" = iolab ]; then
    (cd "$g/$who" && "$iolab" fio --bandwidth-log --output-format=json "$dir/$ex.fio" >/dev/null 2>&1)
  else
    (cd "$g/$who" && fio --bandwidth-log --output-format=json "$dir/$ex.fio" >/dev/null 2>&1)
  fi
  (cd "$g/$who" && fio2gnuplot -p 'agg-read_bw.log' -g -k >/dev/null 2>&1 || true)
done
cols() { awk '!/^#/ {print NF; exit}' "$1" 2>/dev/null || true; }
a=$(cols "$g/iolab/gnuplot_temp_file.0"); b=$(cols "$g/fio/gnuplot_temp_file.0")
say "fio2gnuplot (agg-read_bw.log of $ex): columns iolab=${a:-none} fio=${b:-none} $([ -n "$a" ] && [ "$a" = "$b" ] && echo same || echo DIFFERENT)"
if [ -n "${OUT:-}" ]; then
  { echo "command: scripts/vs-fio-examples.sh $tree ${examples[*]} (PAIRS=$pairs SIZE=$size TIME=$time_s)"; cat "$report"; } >"$OUT"
  echo "report written to $OUT"
fi
