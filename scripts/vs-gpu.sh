#!/usr/bin/env bash
# File -> GPU on the GPU machine, in one call: iolab (`iolab cat --gpu 0`,
# and its Python loader where a wheel of it was carried) against
# safetensors.torch.load_file, the naive pageable copy, fastsafetensors
# without GPUDirect Storage, the Run:ai model streamer and KvikIO in
# compatibility mode, with the page-locked copy and `iolab cat FILE >
# /dev/null` as the limits; cold and warm, alternating rounds, medians
# (scripts/vs_gpu.py says how). It needs no network and no cargo there:
# build target/gpu-carry/ here with scripts/gpu-carry.sh and carry it.
#
#   bash scripts/vs-gpu.sh [--rounds 3] [--size 6g] [--budget 420] ...
#
# The table goes to docs/results/gpu/vs-gpu.txt (GPU_RESULTS, or --out, to
# put it elsewhere) with the command, date, commit and machine, every
# sample to vs-gpu.json beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
carry=${GPU_CARRY:-target/gpu-carry}

if [ ! -x "$carry/iolab" ]; then
  echo "vs-gpu: no $carry/iolab: build it with scripts/gpu-carry.sh where cargo is installed, and carry $carry" >&2
  exit 2
fi
if ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
  echo "vs-gpu: no NVIDIA GPU here (no /dev/nvidia0): run it on a GPU machine" >&2
  exit 2
fi
if [ -z "${GPU_SITE_READY:-}" ] && ls "$carry"/whl/*.whl >/dev/null 2>&1; then
  site=${TMPDIR:-/tmp}/iolab-vs-gpu-site
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" "$carry"/whl/*.whl \
    || echo "vs-gpu: some wheels did not install; their loaders will say so" >&2
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
echo "vs-gpu: kernel $(uname -r)" >&2
export PYTHONUNBUFFERED=1
IOLAB_COMMIT=$(cat "$carry/COMMIT" 2>/dev/null || echo unknown)
export IOLAB_COMMIT
# The table and every sample go to docs/results/gpu/ unless --out says otherwise.
exec python3 scripts/vs_gpu.py --iolab "$carry/iolab" --out "${GPU_RESULTS:-docs/results/gpu}" "$@"
