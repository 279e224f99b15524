#!/usr/bin/env bash
# Every test, with its own set-up: the README's test command, and exactly
# what CI runs (.ci/run calls this script).
#   1. scripts/setup.sh installs what the tests need (Debian packages, the
#      Python test environment) when it is missing;
#   2. the Rust test suite, all crates (real files, io_uring, AIO, MPI);
#   3. the layering of the crates (no file cycle, no upward edge) and no
#      function over 60 lines without a sentence saying why;
#   4. the rendered report: every figure and the HTML page.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# cargo prints a summary per test binary; the line after them adds them up.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
cargo test --workspace 2>&1 | tee "$log" || rc=$?
awk '/^test result:/ { p += $4; f += $6; i += $8; n++ }
     END { printf "all Rust tests: %d passed, %d failed, %d ignored, in %d test binaries\n", p, f, i, n }' "$log"
[ "$rc" = 0 ] || exit "$rc"
python3 scripts/import-graph.py --quiet
python3 scripts/long-fns.py --limit 60
bash scripts/check-report.sh
