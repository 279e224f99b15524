#!/usr/bin/env bash
# iolab's Python package against what Python programs use today
# (open().read(), Path.read_bytes, numpy.fromfile, numpy.memmap, loops of
# os.pread, mmap slicing, a thread pool of os.pread, safetensors' load_file),
# cold and warm, alternated, median of ROUNDS rounds (scripts/vs_python.py
# says how). Builds the package in release into the environment
# scripts/setup.sh makes, makes the files the comparisons need in DIR if
# they are not there (1 GiB and 4 GiB of random bytes, a ~2 GiB safetensors
# checkpoint of ~900 tensors), removes what it made unless KEEP=1, and writes
# the table with the command, commit and machine to docs/results/
# (vs-python.txt; vs-python-<ONLY>.txt for a subset).
#
#   scripts/vs-python.sh [DIR] [ROUNDS]        (defaults: . 5)
#   env: ONLY="whole random small safetensors" (a subset), KEEP=1,
#        IOLAB_PY_VENV, TUNE=1: measure DIR with iolab.tune first (about
#        five minutes) and run with that profile (else with the user's
#        profile, or the built-in defaults when there is none)
set -euo pipefail
DIR=${1:-.}
ROUNDS=${2:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${IOLAB_PY_VENV:-$ROOT/.venv-py}
[ -x "$VENV/bin/maturin" ] || { echo "vs-python: no $VENV with maturin (run scripts/setup.sh)" >&2; exit 2; }
[ -d "$DIR" ] || { echo "vs-python: $DIR: no such directory" >&2; exit 2; }
(cd "$ROOT/python" && VIRTUAL_ENV="$VENV" "$VENV/bin/maturin" develop --release --quiet)
made=()
cleanup() { [ "${KEEP:-0}" = 1 ] || for f in "${made[@]}"; do rm -f "$f"; done; }
trap cleanup EXIT
ONLY_=${ONLY:-whole random small safetensors}
wants() { case " $ONLY_ " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
files=()
for gib in 1 4; do
  f="$DIR/vs-python-${gib}g"
  files+=("$f")
  # 1 GiB: whole files, small reads; 4 GiB: whole files, random reads.
  { wants whole || { [ $gib = 1 ] && wants small; } || { [ $gib = 4 ] && wants random; }; } || continue
  if [ ! -f "$f" ] || [ "$(stat -c %s "$f")" != "$((gib << 30))" ]; then
    echo "vs-python: making $f ($gib GiB)" >&2
    made+=("$f")
    head -c "$((gib << 30))" /dev/urandom > "$f"
  fi
done
ck="$DIR/vs-python-model.safetensors"
files+=("$ck")
if wants safetensors && [ ! -f "$ck" ]; then
  echo "vs-python: making $ck (2 GiB of tensors)" >&2
  made+=("$ck")
  "$VENV/bin/python" "$ROOT/scripts/vs_python.py" --make-checkpoint "$ck" 2
fi
suffix=""
if [ "${TUNE:-0}" = 1 ]; then
  suffix=-tuned
  tuned=$(mktemp -d)
  trap 'cleanup; rm -rf "$tuned"' EXIT
  export IOLAB_PROFILE="$tuned/profile.json"
  echo "vs-python: iolab.tune($DIR) into $IOLAB_PROFILE" >&2
  "$VENV/bin/python" -c "import iolab, sys; iolab.tune(sys.argv[1], out=sys.argv[2], progress=lambda l: print(l, file=sys.stderr))" "$DIR" "$IOLAB_PROFILE"
fi
subset=${ONLY:+-${ONLY// /-}}
out="$ROOT/docs/results/vs-python$subset$suffix.txt"
mkdir -p "$(dirname "$out")"
{
  echo "command: ${suffix:+TUNE=1 }${ONLY:+ONLY=\"$ONLY\" }scripts/vs-python.sh $*"
  echo "commit: $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo ' (with local changes)')"
  echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -r), $(df -T "$DIR" | awk 'NR==2 {print $2}') on $(df "$DIR" | awk 'NR==2 {print $1}')"
  echo "python: $("$VENV/bin/python" -c 'import sys, numpy, safetensors; print(sys.version.split()[0], "numpy", numpy.__version__, "safetensors", safetensors.__version__)')"
  echo
  "$VENV/bin/python" "$ROOT/scripts/vs_python.py" "${files[@]}" "$ROUNDS"
} | tee "$out"
