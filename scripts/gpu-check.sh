#!/usr/bin/env bash
# The whole GPU check, in one call on the GPU machine, within a 9-minute
# budget (GPU_CHECK_BUDGET, seconds). Build here first with
# scripts/gpu-carry.sh and carry target/gpu-carry with the working tree;
# the GPU machine needs no cargo and no network. In order of what matters
# most, each part skipped (with a line) when too little time is left:
#
#   1. gpu-tests.txt   the ignored GPU tests (scripts/gpu-tests.sh): every
#                      byte in device memory equals the file
#   2. refusals.txt    a GPU number out of range and a file larger than the
#                      GPU's memory: one line and exit 2 from each command
#   3. vs-gpu.txt/json iolab against its peers (scripts/vs-gpu.sh)
#   4. python.txt      iolab.safetensors.load on the GPU against
#                      safetensors (scripts/gpu_safetensors.py), where
#                      iolab's wheel was carried
#   5. warm-sweep.txt  a cached checkpoint into the GPU by reading threads
#                      and piece size (scripts/gpu_sweep.py)
#   6. commands.txt    bench --mem cuda:0, fio's libcufile jobs, tune --gpu 0,
#                      lab run to-gpu
#
# Each file starts with the command, the date, the commit and the machine,
# and goes to docs/results/gpu/ (GPU_RESULTS) and, when set, to
# $OUT/gpu-check.tar.gz (with summary.txt beside it).
# Exit status: 0 when every part that ran passed, 1 when one failed, 2
# when there is no GPU or nothing was carried.
#
#   bash scripts/gpu-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
budget=${GPU_CHECK_BUDGET:-540}
carry=${GPU_CARRY:-target/gpu-carry}
results=${GPU_RESULTS:-docs/results/gpu}

if [ ! -x "$carry/iolab" ] || [ ! -x "$carry/gpu-tests" ]; then
  echo "gpu-check: nothing carried in $carry: build it with scripts/gpu-carry.sh where cargo is installed, and carry $carry" >&2
  exit 2
fi
if ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU here (no /dev/nvidia0): build with scripts/gpu-carry.sh, carry $carry, and run this on a GPU machine" >&2
  exit 2
fi
mkdir -p "$results"
iolab=$carry/iolab
work=$carry/tmp/check
mkdir -p "$work"
left() { echo $((budget - ($(date +%s) - start))); }
header() {
  echo "command: bash scripts/gpu-check.sh ($1)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); commit: $(cat "$carry/COMMIT" 2>/dev/null || echo unknown); iolab: $("$iolab" --version)"
  echo "machine: kernel $(uname -r); $(nproc) CPUs; $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo);" \
    "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1);" \
    "$(stat -f -c %T "$work") at $work"
  echo
}
# part NAME FILE NEEDED_SECONDS COMMAND...: runs COMMAND into FILE (and the
# terminal) when NEEDED_SECONDS are left; its status is kept in status_NAME.
declare -A status
part() {
  local name=$1 file=$2 need=$3
  shift 3
  if [ "$(left)" -lt "$need" ]; then
    echo "gpu-check: $name skipped: $(left) s left of the budget, it needs $need" | tee -a "$results/$file"
    status[$name]=skipped
    return
  fi
  { header "$name"; "$@" 2>&1; } | tee "$results/$file"
  status[$name]=${PIPESTATUS[0]}
}

# libcufile.so.0, the iolab wheel and the peers' wheels, for every part.
if ls "$carry"/whl/*.whl >/dev/null 2>&1; then
  site=$work/site
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" "$carry"/whl/*.whl \
    || echo "gpu-check: some wheels did not install; their loaders will say so" >&2
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" GPU_SITE_READY=1
fi

source scripts/gpu-env.sh "$work"

part tests gpu-tests.txt 60 env GPU_TESTS_NO_BUILD=1 GPU_CARRY="$carry" bash scripts/gpu-tests.sh
part refusals refusals.txt 30 bash scripts/gpu-refusals.sh "$iolab" "$work"
# vs-gpu gets what is left less what parts 4 to 6 need at least.
vs_budget=$(($(left) - 210))
part vs-gpu vs-gpu.log 120 bash scripts/vs-gpu.sh --budget "$vs_budget" --out "$results"
if python3 -c 'import iolab, torch' >/dev/null 2>&1; then
  part python python.txt 60 timeout 120 python3 scripts/gpu_safetensors.py "$work/py" 0
else
  echo "gpu-check: python skipped: no iolab wheel (or no torch) to import" | tee "$results/python.txt"
fi
part sweep warm-sweep.txt 60 env IOLAB_COMMIT="$(cat "$carry/COMMIT" 2>/dev/null || echo unknown)" \
  timeout 150 python3 scripts/gpu_sweep.py --iolab "$iolab" --dir "$work/sweep"
part commands commands.txt 60 bash scripts/gpu-commands.sh "$iolab" "$work" "$(($(left) - 10))"
rm -rf "$work"

summary="gpu-check: tests ${status[tests]}, refusals ${status[refusals]}, vs-gpu ${status[vs-gpu]}, python ${status[python]:-skipped}, sweep ${status[sweep]}, commands ${status[commands]} (exit statuses); $(($(date +%s) - start)) s in all"
echo "$summary" | tee "$results/summary.txt"
# What comes back from a device machine is a few files at most: this
# run's files go to $OUT as one archive, with the summary beside it.
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  ( cd "$results" && tar czf "$OUT/gpu-check.tar.gz" gpu-tests.txt refusals.txt vs-gpu.log vs-gpu.txt vs-gpu.json python.txt warm-sweep.txt commands.txt summary.txt 2>/dev/null )
  cp "$results/summary.txt" "$OUT/"
fi
for s in "${status[@]}"; do
  case $s in 0 | skipped) ;; *) exit 1 ;; esac
done
exit 0
