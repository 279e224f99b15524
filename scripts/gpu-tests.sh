#!/usr/bin/env bash
# The GPU checks of the reading library (crates/iolab-cuda-tests): every
# byte a load puts in device memory is copied back and compared with the
# file, for every technique, cold and warm, pinned and pageable; checkpoints
# tensor for tensor; out-of-memory and a bad GPU number; cuFile where its
# library is found (scripts/gpu-env.sh: the CUDA Python packages' libcufile,
# its compatibility mode where nvidia-fs is not loaded).
#
# Where cargo is installed it first builds target/gpu-carry/ (scripts/gpu-carry.sh;
# GPU_TESTS_NO_BUILD=1 skips that); on a GPU machine without a Rust
# toolchain it runs what was carried. Without an NVIDIA GPU it says so in
# one line and exits with status 2.
#
#   bash scripts/gpu-tests.sh
#   GPU_TESTS_DIR=/mnt/disk bash scripts/gpu-tests.sh
#
# The tests write their files under $GPU_TESTS_DIR (default
# target/gpu-carry/tmp): it must be on a disk, not tmpfs, for the cold
# (evicted) cases to mean anything.
set -euo pipefail
cd "$(dirname "$0")/.."
carry=${GPU_CARRY:-target/gpu-carry}

if command -v cargo >/dev/null 2>&1 && [ "${GPU_TESTS_NO_BUILD:-0}" != 1 ]; then
  bash scripts/gpu-carry.sh
fi
if [ ! -x "$carry/gpu-tests" ]; then
  echo "gpu-tests: no $carry/gpu-tests: build it with scripts/gpu-carry.sh where cargo is installed, and carry $carry" >&2
  exit 2
fi
if ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
  echo "gpu-tests: no NVIDIA GPU here (no /dev/nvidia0): carry $carry to a GPU machine and run scripts/gpu-check.sh there" >&2
  exit 2
fi

tmp=${GPU_TESTS_DIR:-$carry/tmp}
mkdir -p "$tmp"
echo "gpu-tests: kernel $(uname -r), files in $tmp ($(stat -f -c %T "$tmp"))" >&2
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >&2
# libcufile and cuFile's compatibility mode where nvidia-fs is missing.
source scripts/gpu-env.sh "$tmp"
# Every test, the GPU ones included, one at a time (they share the GPU).
TMPDIR=$tmp "$carry/gpu-tests" --include-ignored --test-threads=1
