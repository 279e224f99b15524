#!/usr/bin/env bash
# The GPU checks of the reading library (crates/iolab-cuda-tests): every
# byte a load puts in device memory is copied back and compared with the
# file, for every technique, cold and warm, pinned and pageable; checkpoints
# tensor for tensor; out-of-memory and a bad GPU number; cuFile where its
# library is installed.
#
# Where cargo is installed it first builds the test binary (release,
# stripped) and the to_gpu example into target/gpu-tests/; on a GPU machine
# without a Rust toolchain it runs what is already there (carry
# target/gpu-tests/ along). Without an NVIDIA GPU it builds and stops.
#
#   bash scripts/gpu-tests.sh            # build (if cargo), then run (if GPU)
#   GPU_TESTS_DIR=/mnt/disk bash scripts/gpu-tests.sh
#
# The tests write their files under $GPU_TESTS_DIR (default
# target/gpu-tests/tmp): it must be on a disk, not tmpfs, for the cold
# (evicted) cases to mean anything.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/gpu-tests

if command -v cargo >/dev/null 2>&1 && [ "${GPU_TESTS_NO_BUILD:-0}" != 1 ]; then
  mkdir -p "$out"
  # The test binary's path comes from cargo's JSON messages.
  bin=$(cargo test --release -p iolab-cuda-tests --test gpu --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "gpu":
        print(m["executable"])')
  cp "$bin" "$out/gpu-tests"
  cargo build --release -p iolab-reader --features cuda --example to_gpu
  cp target/release/examples/to_gpu "$out/to_gpu"
  strip "$out/gpu-tests" "$out/to_gpu"
  echo "gpu-tests: built $out/gpu-tests and $out/to_gpu ($(du -sh "$out" | cut -f1))" >&2
fi

if [ ! -x "$out/gpu-tests" ]; then
  echo "gpu-tests: no $out/gpu-tests: run this script where cargo is installed first" >&2
  exit 2
fi
if ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
  echo "gpu-tests: no NVIDIA GPU here (no /dev/nvidia0); carry $out to a GPU machine and run this script there" >&2
  exit 0
fi

tmp=${GPU_TESTS_DIR:-$out/tmp}
mkdir -p "$tmp"
echo "gpu-tests: $(uname -r), files in $tmp ($(stat -f -c %T "$tmp"))" >&2
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >&2
# Every test, the GPU ones included, one at a time (they share the GPU).
TMPDIR=$tmp "$out/gpu-tests" --include-ignored --test-threads=1
