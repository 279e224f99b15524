#!/usr/bin/env bash
# The GPU checks of the reading library (crates/iolab-cuda-tests): every
# byte a load puts in device memory is copied back and compared with the
# file, for every technique, cold and warm, pinned and pageable; checkpoints
# tensor for tensor; out-of-memory and a bad GPU number; cuFile where its
# library is found (the CUDA Python packages' libcufile is looked for too).
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
# libcufile.so.0 from the CUDA Python packages, where the system has none.
cufile=$(python3 - 2>/dev/null <<'PY' || true
import glob, importlib.util
spec = importlib.util.find_spec("nvidia")
for root in (spec.submodule_search_locations if spec else []):
    for p in sorted(glob.glob(root + "/**/libcufile.so.0", recursive=True)):
        print(p.rsplit("/", 1)[0])
        raise SystemExit
PY
)
if [ -n "$cufile" ]; then
  export LD_LIBRARY_PATH="$cufile${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "gpu-tests: libcufile from $cufile" >&2
fi
# Every test, the GPU ones included, one at a time (they share the GPU).
TMPDIR=$tmp "$carry/gpu-tests" --include-ignored --test-threads=1
