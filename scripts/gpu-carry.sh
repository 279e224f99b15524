#!/usr/bin/env bash
# Builds, here where cargo is, everything a GPU machine without a Rust
# toolchain or network needs for the GPU checks, into ONE git-ignored
# folder:
#
#   target/gpu-carry/iolab       the iolab binary (release, cuda feature, stripped)
#   target/gpu-carry/gpu-tests   the GPU test binary of crates/iolab-cuda-tests
#   target/gpu-carry/COMMIT      the commit it was built from (+ "-dirty")
#   target/gpu-carry/whl/        iolab's own Python wheel (built with
#                                .venv-py's maturin, which scripts/setup.sh
#                                installs) and the peers' wheels found in
#                                .whl/ (fastsafetensors, the Run:ai model
#                                streamer, KvikIO and what they need that
#                                the GPU machine lacks)
#
# The folder travels with the working tree, both within 64 MiB, so it
# must stay under 40 MB (else this fails, naming the largest files).
# Peers' wheels are fetched once with pip's ordinary client, e.g.
#   pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --platform manylinux_2_28_x86_64 -d .whl fastsafetensors==0.5.0
# Then carry target/gpu-carry and run scripts/gpu-check.sh there.
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
[ -n "$bin" ] || { echo "gpu-carry: the GPU test binary was not built" >&2; exit 1; }
cp "$bin" "$out/gpu-tests"
strip "$out/iolab" "$out/gpu-tests"
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- 2>/dev/null || commit="$commit-dirty"
echo "$commit" >"$out/COMMIT"

maturin=.venv-py/bin/maturin
if [ -x "$maturin" ]; then
  (cd python && "../$maturin" build --quiet --release --strip --out "../$out/whl") >&2
else
  echo "gpu-carry: no $maturin (run scripts/setup.sh): iolab's Python wheel is not carried" >&2
fi
for w in .whl/*.whl; do
  [ -f "$w" ] && cp "$w" "$out/whl/"
done
bytes=$(du -sb "$out" | cut -f1)
echo "gpu-carry: $out ($commit): $(ls "$out" | tr '\n' ' ')and $(ls "$out/whl" | wc -l) wheels: $((bytes / 1000 / 1000)) MB" >&2
if [ "$bytes" -gt "$limit" ]; then
  echo "gpu-carry: $out is $bytes bytes, over the 40 MB a GPU check may carry; largest: $(du -ab "$out" | sort -n | tail -4 | awk '{print $2" "$1}' | tr '\n' ';')" >&2
  exit 1
fi
