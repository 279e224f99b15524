#!/usr/bin/env bash
# The runner's own cost, before and after a change: the null engine's wall
# time per op (no I/O, so the figure is the framework), for two builds run
# alternately (before, after, after, before, ...) so that a busy machine
# drifts both sides alike. Prints each run and the medians and their ratio.
#
# Usage: scripts/null-before-after.sh [BASE_REV] [PAIRS] [SECONDS]
#   BASE_REV  the "before" revision (default: main); "after" is the work tree
#   PAIRS     alternating pairs (default 5, at least 3)
#   SECONDS   measured time of each run (default 2)
# BEFORE_BIN / AFTER_BIN: use these iolab binaries instead of building.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-main}
pairs=${2:-5}
secs=${3:-2}
if (( pairs < 3 )); then
  echo "PAIRS: at least 3 (a median of fewer says little)" >&2
  exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/iolab-nba.XXXXXX")
trap 'git worktree remove --force "$work/src" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

if [[ -z "${AFTER_BIN:-}" ]]; then
  cargo build --release -q -p iolab-cli
  AFTER_BIN=$work/after
  cp target/release/iolab "$AFTER_BIN"
fi
if [[ -z "${BEFORE_BIN:-}" ]]; then
  git worktree add -q --detach "$work/src" "$base"
  # Its own target folder under ours: dependencies build once, then stay.
  CARGO_TARGET_DIR="$PWD/target/nba-before" cargo build --release -q -p iolab-cli --manifest-path "$work/src/Cargo.toml"
  BEFORE_BIN=$work/before
  cp target/nba-before/release/iolab "$BEFORE_BIN"
fi

# ns per op of one run: wall time of the measured phase over its ops.
one() {
  "$1" bench --engine null --qd 1 --time "${secs}s" --size 64m --dir "$work" --cache as-is --json 2>/dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["records"][0]["runs"][0]; print("%.2f" % (r["duration_ns"]/max(r["ops"],1)))'
}

before=() after=()
for ((i = 0; i < pairs; i++)); do
  if (( i % 2 == 0 )); then b=$(one "$BEFORE_BIN"); a=$(one "$AFTER_BIN"); else a=$(one "$AFTER_BIN"); b=$(one "$BEFORE_BIN"); fi
  before+=("$b") after+=("$a")
  echo "pair $((i + 1)): before $b ns/op, after $a ns/op"
done
python3 - "${before[*]}" "${after[*]}" <<'PY'
import statistics, sys
b = [float(x) for x in sys.argv[1].split()]
a = [float(x) for x in sys.argv[2].split()]
mb, ma = statistics.median(b), statistics.median(a)
print(f"null engine, median of {len(b)} alternating pairs: before {mb:.2f} ns/op, after {ma:.2f} ns/op, after/before {ma / mb:.3f}")
print(f"spread: before {min(b):.2f}..{max(b):.2f}, after {min(a):.2f}..{max(a):.2f}")
PY
