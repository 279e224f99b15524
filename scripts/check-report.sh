#!/usr/bin/env bash
# Runs every lab experiment at smoke scale, builds the HTML report from the
# records, opens it in headless Chromium (installed from Debian if missing),
# saves a screenshot to target/check-report/report.png, and fails if a
# figure is missing from the rendered page or the page logs a console message.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "check-report: $*" >&2; exit 1; }
browser=""
for b in chromium chromium-browser; do
  command -v "$b" >/dev/null 2>&1 && browser="$b" && break
done
if [ -z "$browser" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "check-report: installing chromium" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    browser=chromium
  else
    fail "chromium is missing (install Debian's chromium package)"
  fi
fi
cargo build -q -p iolab-cli
bin=target/debug/iolab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
shots=target/check-report
mkdir -p "$shots"
"$bin" lab run all --scale smoke --dir "$work" --out "$work/out" >"$work/lab.txt"
"$bin" report "$work/out" -o "$work/report.html"
want=$(find "$work/out" -name '*.svg' | wc -l)
[ "$want" -gt 0 ] || fail "the lab wrote no figures"
flags=(--headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0)
"$browser" "${flags[@]}" --dump-dom "file://$work/report.html" >"$work/dom.html" 2>"$work/dom.log" ||
  fail "chromium could not open the report"
got=$(grep -o '<figure class="figure"[^>]*><svg' "$work/dom.html" | wc -l)
[ "$got" -eq "$want" ] || fail "$got figure(s) rendered in the page, $want written by the lab"
if grep -E ':CONSOLE[:(]' "$work/dom.log"; then
  fail "the page logged console messages (above)"
fi
"$browser" "${flags[@]}" --window-size=1200,6000 --screenshot="$shots/report.png" \
  "file://$work/report.html" >/dev/null 2>&1 || fail "chromium could not take the screenshot"
[ -s "$shots/report.png" ] || fail "no screenshot"
cp "$work/report.html" "$shots/report.html"
echo "check-report: $got figure(s) rendered, no console message; screenshot $shots/report.png"
