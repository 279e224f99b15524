#!/usr/bin/env bash
# The whole GPU check, in one call on the GPU machine: the byte-for-byte
# tests (scripts/gpu-tests.sh), the GPU commands (bench --mem cuda, tune's
# GPU part, the to-gpu experiment), then iolab against its peers
# (scripts/vs-gpu.sh) in what is left of a 9-minute budget. Build here
# first with scripts/gpu-carry.sh and carry target/gpu-carry along; with
# OUT set, each part's output is kept there (gpu-tests.txt, commands.txt,
# vs-gpu.log, vs-gpu.txt, vs-gpu.json). Exit status: 0 when all passed, 1
# when one failed, 2 when there is no GPU (or nothing carried).
#
#   bash scripts/gpu-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
budget=${GPU_CHECK_BUDGET:-540}
carry=${GPU_CARRY:-target/gpu-carry}

if ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU here (no /dev/nvidia0): build with scripts/gpu-carry.sh, carry $carry, and run this on a GPU machine" >&2
  exit 2
fi
keep() {
  if [ -n "${OUT:-}" ]; then tee "$OUT/$1"; else cat; fi
}
[ -n "${OUT:-}" ] && mkdir -p "$OUT"
GPU_TESTS_NO_BUILD=1 bash scripts/gpu-tests.sh 2>&1 | keep gpu-tests.txt
tests=${PIPESTATUS[0]}

# The commands themselves on the GPU, each bounded in time: a per-op copy
# into the GPU for two engines, tune's GPU part, the lab experiment.
commands() {
  local d=$carry/tmp/commands rc=0
  mkdir -p "$d"
  set -x
  timeout 60 "$carry/iolab" bench --mem cuda:0 --engine uring --qd 16 --bs 1m --size 1g --cache cold --direct --dir "$d" || rc=1
  timeout 60 "$carry/iolab" bench --mem cuda:0 --engine pread --bs 4k --size 256m --cache warm --time 2s --dir "$d" || rc=1
  timeout 150 "$carry/iolab" tune --quick --dir "$d" --out "$d/profile.json" || rc=1
  python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])).get("gpu")))' "$d/profile.json" || rc=1
  timeout 90 "$carry/iolab" lab run to-gpu --scale smoke --dir "$d" --out "$d/lab" || rc=1
  set +x
  rm -rf "$d"
  return $rc
}
commands 2>&1 | keep commands.txt
cmds=${PIPESTATUS[0]}
# What is left, less half a minute for the final verification and clean-up.
left=$((budget - ($(date +%s) - start) - 30))
bash scripts/vs-gpu.sh --budget "$left" 2>&1 | keep vs-gpu.log
vs=${PIPESTATUS[0]}
echo "gpu-check: gpu-tests exit status $tests, commands $cmds, vs-gpu $vs; $(($(date +%s) - start)) s in all"
if [ "$tests" = 2 ] && [ "$vs" = 2 ]; then exit 2; fi
[ "$tests" = 0 ] && [ "$cmds" = 0 ] && [ "$vs" = 0 ]
