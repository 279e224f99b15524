# Sourced by vs-fio.sh and vs-fio-async.sh (not run on its own): the
# settings both take from the environment, fio installed, iolab built, the
# data file made, a temporary folder $out for the records, and clean-up.
# The caller sets default_secs first and passes its DIR argument on.
#
# env: PAIRS=3 TIME=$default_secs SIZE=2g; KEEP=1 keeps a data file this
# script made (one that was there before is never removed); SAVE=FILE keeps
# every record the comparison wrote (JSON lines), e.g. to see what a run
# chose, such as SQPOLL's cpu.spin_waits.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:-$PWD}
pairs=${PAIRS:-3}
secs=${TIME:-$default_secs}
size=${SIZE:-2g}
me=$(basename "$0")
command -v fio >/dev/null 2>&1 || bash "$here/scripts/setup.sh"
command -v fio >/dev/null 2>&1 || { echo "$me: fio is not installed and could not be installed" >&2; exit 2; }
(cd "$here" && cargo build --release --quiet)
iolab="$here/target/release/iolab"
file="$dir/iolab-vs-fio.dat"
out=$(mktemp -d)
made=0
cleanup() {
  if [ -n "${SAVE:-}" ]; then cat "$out"/*.jsonl >"$SAVE" 2>/dev/null || true; fi
  rm -rf "$out"
  if [ "$made" = 1 ] && [ "${KEEP:-0}" != 1 ]; then rm -f "$file"; fi
}
trap cleanup EXIT INT TERM
if [ ! -e "$file" ]; then
  made=1
  "$iolab" bench --file "$file" --size "$size" --ops 1 >/dev/null
fi
# This disk may sit on a host cache: read the file twice first so neither
# tool inherits a cache the other warmed (--vs fio alternates who goes first).
"$iolab" xor "$file" >/dev/null 2>&1
"$iolab" xor "$file" >/dev/null 2>&1
