#!/usr/bin/env bash
# Auto against every fixed technique on the mixed workload (iolab mixed:
# a third large sequential reads of a 2 GiB file, a third 4 KiB random
# reads over a 256 MiB file that fits, a third 4 KiB random reads over a
# 4 GiB file that does not fit the 1 GiB the readers are told is free;
# every phase starts with its file evicted). Auto runs with a profile from
# `iolab tune --quick` and without one (built-in thesis defaults).
# Techniques run in alternating order, PAIRS rounds; medians reported with
# Auto's time over the best fixed technique's and over ThesisRules'.
#
#   scripts/adaptive-vs-fixed.sh [DIR] [PAIRS]     (defaults: . 3)
set -euo pipefail
DIR=${1:-.}
PAIRS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release -q -p iolab-cli --manifest-path "$ROOT/Cargo.toml"
IOLAB="$ROOT/target/release/iolab"
PROFILE="$DIR/adaptive-profile.json"
"$IOLAB" mixed --dir "$DIR" --prepare
[ -f "$PROFILE" ] || "$IOLAB" tune --dir "$DIR" --quick --out "$PROFILE" >&2
RUNS=(auto auto-noprofile thesis stream buffered:4m mapped direct uring:32)
OUT=$(mktemp)
for ((k = 1; k <= PAIRS; k++)); do
  order=("${RUNS[@]}")
  if ! ((k % 2)); then order=($(printf '%s\n' "${RUNS[@]}" | tac)); fi
  for t in "${order[@]}"; do
    if [ "$t" = auto-noprofile ]; then
      line=$("$IOLAB" mixed --dir "$DIR" --technique auto --profile none 2>/dev/null)
      line="auto-noprofile ${line#auto }"
    else
      line=$("$IOLAB" mixed --dir "$DIR" --technique "$t" --profile "$PROFILE" 2>/dev/null)
    fi
    echo "$line" | tee -a "$OUT" >&2
  done
done
python3 - "$OUT" <<'PY'
import sys, statistics as st, collections
rows = collections.defaultdict(list)
for l in open(sys.argv[1]):
    f = l.split()
    rows[f[0]].append({f[i]: float(f[i + 1]) for i in range(1, len(f) - 1, 2)})
med = {t: {k: st.median(r[k] for r in rs) for k in rs[0]} for t, rs in rows.items()}
for t, m in sorted(med.items(), key=lambda x: x[1]["total"]):
    print(f"{t:16} total {m['total']:7.3f}  seq {m['seq']:6.3f}  fit {m['fit']:6.3f}  big {m['big']:6.3f}   (median of {len(rows[t])})")
fixed = {t: m["total"] for t, m in med.items() if not t.startswith("auto")}
best = min(fixed, key=fixed.get)
a = med["auto"]["total"]
print(f"auto / best fixed ({best}) = {a / fixed[best]:.2f}   (target <= 0.9)")
print(f"auto / thesis = {a / med['thesis']['total']:.2f}   (target <= 0.7)")
print(f"auto without profile / thesis = {med['auto-noprofile']['total'] / med['thesis']['total']:.2f}")
PY
rm -f "$OUT"
