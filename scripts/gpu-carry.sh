#!/usr/bin/env bash
# Builds, here where cargo is, everything a GPU machine without a Rust
# toolchain needs for the GPU checks, into ONE git-ignored folder:
#
#   target/gpu-carry/iolab       the iolab binary (release, cuda feature, stripped)
#   target/gpu-carry/gpu-tests   the GPU test binary of crates/iolab-cuda-tests
#   target/gpu-carry/to_gpu      the reading library's to_gpu example
#   target/gpu-carry/whl/        Python wheels found in .whl/ (fastsafetensors,
#                                the Run:ai model streamer, KvikIO, ...) and
#                                target/wheels/ (iolab's own, when built)
#
# and refuses a folder over 40 MB. Then carry target/gpu-carry to the GPU
# machine with the working tree and run scripts/gpu-check.sh there.
#
#   bash scripts/gpu-carry.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=${GPU_CARRY:-target/gpu-carry}
limit=$((40 * 1000 * 1000))

rm -rf "$out"
mkdir -p "$out/whl"
cargo build --release -p iolab-cli --features cuda
cp target/release/iolab "$out/iolab"
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
strip "$out/iolab" "$out/gpu-tests" "$out/to_gpu"
for w in .whl/*.whl target/wheels/iolab*.whl; do
  [ -f "$w" ] && cp "$w" "$out/whl/"
done
bytes=$(du -sb "$out" | cut -f1)
echo "gpu-carry: $out holds $(ls "$out" | tr '\n' ' ')and $(ls "$out/whl" | wc -l) wheels: $((bytes / 1000 / 1000)) MB" >&2
if [ "$bytes" -gt "$limit" ]; then
  echo "gpu-carry: $out is $bytes bytes, over the 40 MB a GPU check may carry: leave wheels out of .whl/" >&2
  exit 1
fi
