#!/usr/bin/env bash
# Replays the corpus that scripts/record-corpus.sh recorded against every
# reader, cold and warm, and writes the train/test report: per trace, Auto's
# time over the fixed reader with the best median (the median of the
# per-round ratios, with its 95 % interval), tuned (`auto`, the profile of
# `iolab tune --quick`) and untuned (`auto:builtin`, the built-in defaults),
# and the geometric means of each half.
#
#   scripts/corpus-replay.sh WORKDIR [ROUNDS]     (default 11 rounds)
#   env: HALF=test|train|holdout|all (default all), CACHES="cold warm"
#        (or any of cold, warm, rerun: rerun replays each round after the
#        trace's own reads from a cold cache, what a second run finds),
#        WARM_ROUNDS=N (rounds of the warm replays; default ROUNDS: a warm
#        replay takes milliseconds, and more rounds narrow its interval),
#        ONLY="sqlite-index dbm-lookups" (some traces), PROFILE=FILE (default:
#        WORKDIR/profile.json, made by `iolab tune --quick` when missing),
#        REPORT=FILE (default docs/results/corpus-replay.md; "-" prints it),
#        IOLAB=path/to/iolab (default: build this checkout's release binary),
#        READERS=LIST (default: every reader; the report names a shorter list).
#
# Every reader replays the same trace on the same files in each round, in
# an order that rotates each round; the page cache is set (evicted or read
# once) before every replay.
set -euo pipefail
work=${1:?usage: scripts/corpus-replay.sh WORKDIR [ROUNDS]}
rounds=${2:-11}
warm_rounds=${WARM_ROUNDS:-$rounds}
case $warm_rounds in ''|*[!0-9]*|0) echo "corpus-replay: WARM_ROUNDS=$warm_rounds is not a number of rounds (a whole number from 1, e.g. 41)" >&2; exit 2 ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
work=$(cd "$work" && pwd)
half=${HALF:-all}
case $half in train|test|holdout|all) ;; *) echo "corpus-replay: HALF=$half is not a half (train, test, holdout or all)" >&2; exit 2 ;; esac
for cache in ${CACHES:-cold warm}; do
  case $cache in cold|warm|rerun) ;; *) echo "corpus-replay: CACHES has '$cache', not a cache state (cold, warm or rerun)" >&2; exit 2 ;; esac
done
[ -f "$work/corpus/MANIFEST.tsv" ] || { echo "corpus-replay: no $work/corpus/MANIFEST.tsv (run scripts/record-corpus.sh $work first)" >&2; exit 2; }
if [ -z "${IOLAB:-}" ]; then
  cargo build --release -q -p iolab-cli --manifest-path "$ROOT/Cargo.toml"
fi
iolab=${IOLAB:-$ROOT/target/release/iolab}
profile=${PROFILE:-$work/profile.json}
if [ ! -f "$profile" ]; then
  mkdir -p "$work/tune"
  "$iolab" tune --dir "$work/tune" --quick --out "$profile" >&2
fi
all_readers=stream,buffered:4k,buffered:4m,mapped,direct,uring:32,thesis,pread,auto,auto:builtin
readers=${READERS:-$all_readers}
stamp=$(date +%Y%m%d-%H%M%S)
jsonl=$work/replay-$stamp.jsonl
while IFS=$'\t' read -r name h _; do
  [ "$name" = name ] && continue
  [ "$half" = all ] || [ "$half" = "$h" ] || continue
  [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $name "* ]] || continue
  for cache in ${CACHES:-cold warm}; do
    n=$rounds
    [ "$cache" = warm ] && n=$warm_rounds
    echo "corpus-replay: $name ($h) $cache" >&2
    mkdir -p "$work/files/$name"
    IOLAB_PROFILE=$profile "$iolab" replay "$work/corpus/$name.csv" --dir "$work/files/$name" \
      --reader "$readers" --cache "$cache" --repeat "$n" --jsonl "$jsonl" >/dev/null
  done
done < "$work/corpus/MANIFEST.tsv"
report=${REPORT:-$ROOT/docs/results/corpus-replay.md}
cmd="scripts/corpus-replay.sh WORKDIR $rounds (HALF=$half CACHES=\"${CACHES:-cold warm}\"${WARM_ROUNDS:+ WARM_ROUNDS=$WARM_ROUNDS}${ONLY:+ ONLY=\"$ONLY\"}${READERS:+ READERS=$READERS})"
if [ "$report" = - ]; then
  python3 "$ROOT/scripts/corpus-report.py" "$work/corpus/MANIFEST.tsv" "$jsonl" "$cmd"
else
  mkdir -p "$(dirname "$report")"
  python3 "$ROOT/scripts/corpus-report.py" "$work/corpus/MANIFEST.tsv" "$jsonl" "$cmd" > "$report.tmp"
  mv "$report.tmp" "$report"
  echo "corpus-replay: report in $report (records in $jsonl)" >&2
fi
