#!/usr/bin/env bash
# Every job file of a fio source tree's examples/ through
# `iolab fio --parse-only`, unchanged: accepted, accepted with notes (an
# option that cannot change the measurement, or a value read as fio reads
# it), or refused with the reason. Ends with the counts and the reasons
# grouped, as the closing note.
#
# usage: scripts/fio-examples.sh FIO_TREE
#   FIO_TREE: a fio source tree (its examples/ folder is read; nothing of
#   it is copied). Variables the examples expect from the environment
#   (${FIO_BS}, ${FIO_RW}, ${FIO_IODEPTH}) get the values their comments
#   show unless already set; the others stay unset, as fio expands them.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tree=${1:?usage: scripts/fio-examples.sh FIO_TREE}
[ -d "$tree/examples" ] || { echo "fio-examples: $tree/examples: no such folder (give a fio source tree)" >&2; exit 2; }
(cd "$here" && cargo build --quiet -p iolab-cli)
iolab="$here/target/debug/iolab"
export FIO_BS=${FIO_BS:-4k} FIO_RW=${FIO_RW:-randread} FIO_IODEPTH=${FIO_IODEPTH:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "iolab fio --parse-only on $tree/examples (FIO_BS=$FIO_BS FIO_RW=$FIO_RW FIO_IODEPTH=$FIO_IODEPTH)"
for job in "$tree"/examples/*.fio; do
  name=$(basename "$job")
  # Run where nothing of the tree's can be touched; --parse-only makes nothing.
  if (cd "$work" && "$iolab" fio --parse-only "$job" >"$work/out" 2>"$work/err"); then
    n=$(grep -c "note: $job:" "$work/out" || true)
    if [ "$n" -gt 0 ]; then
      echo "accepted with notes  $name ($n): $(grep "note: $job:" "$work/out" | head -1 | sed "s|.*note: $job:||")"
    else
      echo "accepted             $name"
    fi
  else
    echo "refused              $name: $(head -1 "$work/err" | sed "s|^error: $job:||; s|^error: ||")"
  fi
done | tee "$work/rows"
python3 - "$work/rows" <<'PY'
import re, sys
rows = open(sys.argv[1]).read().splitlines()
acc = [r for r in rows if r.startswith("accepted ")]
notes = [r for r in rows if r.startswith("accepted with notes")]
ref = [r for r in rows if r.startswith("refused")]
cats = [
    ("an engine named only on fio's command line", r"this job has no ioengine="),
    ("an engine iolab does not have", r"is not an engine iolab has|belongs to ioengine .* none of which iolab has"),
    ("zoned devices or zone profiles", r"zoned block devices"),
    ("steady-state detection (and SSD steady-state preconditioning)", r"steady-state|steady state"),
    ("command priorities", r"I/O priorities"),
    ("NUMA placement", r"NUMA"),
    ("dedupe buffer generation", r"dedupable"),
]
groups = {c: [] for c, _ in cats}
other = []
for r in ref:
    name = r.split()[1].rstrip(":")
    for c, pat in cats:
        if re.search(pat, r):
            groups[c].append(name)
            break
    else:
        other.append(r)
print()
print(f"{len(rows)} examples: {len(acc)} accepted, {len(notes)} accepted with notes, {len(ref)} refused")
for c, _ in cats:
    if groups[c]:
        print(f"  refused, {c}: {len(groups[c])} ({', '.join(groups[c])})")
for r in other:
    print(f"  refused, other: {r[len('refused'):].strip()}")
PY
