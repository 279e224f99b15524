#!/usr/bin/env bash
# Auto against every fixed technique on the mixed workload (iolab mixed:
# a third large sequential reads of a 2 GiB file, a third 4 KiB random
# reads over a 256 MiB file that fits, a third 4 KiB random reads over a
# 4 GiB file that does not fit the memory left to it; every phase starts
# with its file evicted).
#
# "The memory left to it" is real: `iolab mixed --balloon-leave` holds an
# mlock balloon (the one `iolab sys` uses for the file-cache knee) so that
# only LEAVE_GIB of memory stays available (default 3: at least 2 GiB for
# everyone else on the machine and about 1 GiB of page cache for the
# workload), and the readers read MemAvailable (--budget real). The
# balloon is freed on exit, on error and on Ctrl-C; if the OOM killer
# takes it (it volunteers first) the script stops.
#
# Auto runs with a profile from `iolab tune --quick` and without one
# (built-in thesis defaults). Techniques run in alternating order, PAIRS
# rounds; medians reported with Auto's time over the best fixed
# technique's and over ThesisRules'. buffered:4m reads 4 MiB for every
# 4 KiB random read (the thesis's BufferedStream): it gets one pass capped
# at CAP_S seconds instead of PAIRS full ones.
#
#   scripts/adaptive-vs-fixed.sh [DIR] [PAIRS]   (defaults: . 3; env LEAVE_GIB=3 CAP_S=120,
#   CAP_S=0 skips buffered:4m; RUNS="auto thesis uring:32" picks the techniques)
set -euo pipefail
DIR=${1:-.}
PAIRS=${2:-3}
LEAVE_GIB=${LEAVE_GIB:-3}
CAP_S=${CAP_S:-120}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release -q -p iolab-cli --manifest-path "$ROOT/Cargo.toml"
IOLAB="$ROOT/target/release/iolab"
PROFILE="$DIR/adaptive-profile.json"
"$IOLAB" mixed --dir "$DIR" --prepare
[ -f "$PROFILE" ] || "$IOLAB" tune --dir "$DIR" --quick --out "$PROFILE" >&2
OUT=$(mktemp)
BLOG=$(mktemp)
BPID=
cleanup() {
  if [ -n "$BPID" ]; then kill "$BPID" 2>/dev/null || true; wait "$BPID" 2>/dev/null || true; fi
  rm -f "$OUT" "$BLOG"
}
trap cleanup EXIT
trap 'echo "adaptive-vs-fixed: interrupted; balloon freed" >&2; exit 130' INT TERM
"$IOLAB" mixed --dir "$DIR" --balloon-leave "${LEAVE_GIB}g" > "$BLOG" &
BPID=$!
until grep -q balloon: "$BLOG"; do
  kill -0 "$BPID" 2>/dev/null || { echo "adaptive-vs-fixed: the balloon did not inflate" >&2; exit 1; }
  sleep 0.5
done
cat "$BLOG" >&2
alive() { kill -0 "$BPID" 2>/dev/null || { echo "adaptive-vs-fixed: the balloon died (OOM killer?); stopping" >&2; exit 1; }; }
one() {
  local t=$1 line
  if [ "$t" = auto-noprofile ]; then
    line=$("$IOLAB" mixed --dir "$DIR" --budget real --technique auto --profile none 2>/dev/null)
    line="auto-noprofile ${line#auto }"
  else
    line=$("$IOLAB" mixed --dir "$DIR" --budget real --technique "$t" --profile "$PROFILE" 2>/dev/null)
  fi
  alive
  echo "$line" | tee -a "$OUT" >&2
}
read -r -a RUNS <<< "${RUNS:-auto auto-noprofile thesis stream buffered:128k mapped direct uring:32}"
for ((k = 1; k <= PAIRS; k++)); do
  order=("${RUNS[@]}")
  if ! ((k % 2)); then mapfile -t order < <(printf '%s\n' "${RUNS[@]}" | tac); fi
  for t in "${order[@]}"; do one "$t"; done
done
t0=$(date +%s)
if [ "$CAP_S" = 0 ]; then :
elif line=$(timeout "$CAP_S" "$IOLAB" mixed --dir "$DIR" --budget real --technique buffered:4m 2>/dev/null); then
  echo "$line" | tee -a "$OUT" >&2
else
  echo "buffered:4m did not finish one pass in $((CAP_S)) s (stopped after $(($(date +%s) - t0)) s)" >&2
  echo "buffered:4m total $CAP_S seq 0 fit 0 big 0 capped" >> "$OUT"
fi
alive
python3 - "$OUT" <<'PY'
import sys, statistics as st, collections
rows = collections.defaultdict(list)
for l in open(sys.argv[1]):
    f = l.split()
    rows[f[0]].append({f[i]: float(f[i + 1]) for i in range(1, len(f) - 1, 2)})
med = {t: {k: st.median(r[k] for r in rs) for k in rs[0]} for t, rs in rows.items()}
for t, m in sorted(med.items(), key=lambda x: x[1]["total"]):
    more = "  (one pass, capped: at least this long)" if t == "buffered:4m" else ""
    print(f"{t:16} total {m['total']:7.3f}  seq {m['seq']:6.3f}  fit {m['fit']:6.3f}  big {m['big']:6.3f}   (median of {len(rows[t])}){more}")
# ThesisRules adapts (mapped or buffered): it is compared on its own line.
fixed = {t: m["total"] for t, m in med.items() if not t.startswith("auto") and t != "thesis"}
best = min(fixed, key=fixed.get)
a = med["auto"]["total"]
print(f"auto / best fixed ({best}) = {a / fixed[best]:.2f}   (target <= 0.9)")
print(f"auto / thesis = {a / med['thesis']['total']:.2f}   (target <= 0.7)")
print(f"auto without profile / best fixed = {med['auto-noprofile']['total'] / fixed[best]:.2f}, / thesis = {med['auto-noprofile']['total'] / med['thesis']['total']:.2f}")
PY
