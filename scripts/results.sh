#!/usr/bin/env bash
# Runs one comparison and writes what it measured as a file of the
# repository: docs/results/<date>-<machine>-<topic>.md holds the command,
# the commit, the machine's facts (from an iolab record's environment,
# taken on the same storage), the load on the machine and the table; the
# folder beside it holds the raw records and the full log. The README and
# the guides quote figures only from these files.
#
# usage: scripts/results.sh TOPIC [DIR]
#   TOPIC  vs-fio             iolab bench --vs fio on six reference workloads (scripts/vs-fio.sh)
#          vs-fio-jobs        the job files of examples/fio, iolab fio against fio (scripts/vs-fio-jobs.sh)
#          vs-fio-async       io_uring and libaio against fio, depth by depth (scripts/vs-fio-async.sh)
#          vs-cat             iolab cat against cat, dd, the course's reader and fio (scripts/vs-cat.sh)
#          adaptive-vs-fixed  Auto against every fixed technique, under a memory balloon (scripts/adaptive-vs-fixed.sh)
#          replay             real programs recorded and replayed against every reader (scripts/trace-speed.sh)
#          vs-ior             IOR against iolab (needs IOR_SOURCE=DIR, a copy of hpc/ior's source)
#          vs-lmbench         iolab sys against lmbench (needs LAT_SYSCALL=PATH, lmbench's lat_syscall)
#          vs-t-io_uring      peak IOPS against fio's t/io_uring (needs FIO_SOURCE=DIR, fio's source tree)
#          corpus             a corpus of real programs recorded, then replayed: Auto on the test half
#          vs-python          import iolab against what Python users write (scripts/vs-python.sh)
#          examples           every `$ iolab` example of README.md and docs/guide/, as written,
#                             each page's in order in a folder of its own
#   DIR    where the data files go (default: a temporary folder in the
#          current directory, removed afterwards; a DIR you name keeps the
#          data files, so a second run reuses them)
#   env    QUICK=1 runs the topic at its small scale (written in the file);
#          the topic script's own settings pass through (PAIRS, TIME, SIZE...);
#          MACHINE=NAME names the machine in the file name (default:
#          HOST-CORESc-DEVICE from the record); NOTE="..." adds a line to
#          the file (what else the machine was doing, for one).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
topic=${1:-}
usage="usage: scripts/results.sh TOPIC [DIR]  (TOPIC: vs-fio vs-fio-jobs vs-fio-async vs-cat adaptive-vs-fixed replay vs-ior vs-lmbench vs-t-io_uring corpus vs-python examples)"
[ -n "$topic" ] || { echo "$usage" >&2; exit 2; }
quick=${QUICK:-0}

# Per topic: what it measures (one paragraph), the small scale, and the command.
small=()
case $topic in
  vs-fio)
    what="iolab and fio on the same file, alternately (who runs first alternates too), through \`iolab bench --vs fio\`: six reference workloads. Ratios are iolab/fio: above 1 iolab moved more data (throughput; IOPS for the null engine), below 1 its p99 latency was lower."
    small=(PAIRS=3 TIME=2 SIZE=1g)
    cmd=(bash scripts/vs-fio.sh DATA) ;;
  vs-fio-jobs)
    what="Every job file of examples/fio run by \`iolab fio\` and by fio, alternately, on the same files, both beside the same pinned 10 ms wakers. Ratios are iolab/fio: bandwidth above 1 is iolab ahead, p99 below 1 is iolab ahead; the spread is the range of the pairs."
    small=(PAIRS=3 TIME=2 SIZE=1g)
    cmd=(bash scripts/vs-fio-jobs.sh DATA) ;;
  vs-fio-async)
    what="Random 4 KiB O_DIRECT reads with io_uring (plain, registered files, fixed buffers, SQPOLL) and libaio at depths 1 to 64, on one and two threads, each row as \`iolab bench --vs fio\` pairs; rows below 1.00 are measured again with more pairs, and all random pairs are pooled into one median with its 95 % confidence interval."
    small=(PAIRS=3 RERUN=5 TIME=2 SIZE=1g DEPTHS=1,32)
    cmd=(bash scripts/vs-fio-async.sh DATA) ;;
  vs-cat)
    what="\`iolab cat\` against cat, dd bs=1M, the course's reader (8 threads of 32 KiB reads) and fio's best sequential configuration, on one file, cold and warm, alternating. Ratios are other/iolab: above 1 iolab took less time."
    small=(GIB=1 PAIRS=3)
    cmd=(bash scripts/vs-cat.sh DATA '${GIB:-4}' '${PAIRS:-3}') ;;
  adaptive-vs-fixed)
    what="\`iolab mixed\` (2 GiB read in 4 MiB requests, then 4 KiB random reads over a 256 MiB file that fits in memory and over a 4 GiB file that does not) with every reading technique, under a memory balloon that leaves LEAVE_GIB of memory available; Auto with a profile from \`iolab tune --quick\` and without one. Times in seconds, medians of alternating rounds."
    small=(PAIRS=3 LEAVE_GIB=4 CAP_S=30)
    cmd=(bash scripts/adaptive-vs-fixed.sh DATA '${PAIRS:-3}') ;;
  replay)
    what="Real programs recorded with \`iolab record\` (an SQLite query, \`grep -r\`, python importing modules, a data loader reading shards whole, and GNU tar unless TRACES leaves it out) and replayed against every reader of the reading library, cold cache, as fast as possible, readers in rotating order each round. Times are medians over the rounds; x best is a reader's time over the fastest one's."
    small=(REPEAT=3 'TRACES=sqlite grep python loader')
    cmd=(bash scripts/trace-speed.sh DATA '${REPEAT:-5}') ;;
  vs-ior)
    what="IOR and iolab on the same MPI layouts (file per process; one shared segmented file), write then reordered read, alternating."
    [ -n "${IOR_SOURCE:-}" ] || { echo "results: vs-ior needs IOR_SOURCE=DIR, a copy of the hpc/ior source (IOR is not packaged)" >&2; exit 2; }
    small=(REPEAT=2 BLOCK=256m)
    cmd=(bash scripts/vs-ior.sh '$IOR_SOURCE' DATA) ;;
  vs-lmbench)
    what="\`iolab sys getpid read1\` against lmbench's lat_syscall null and read, alternately, both pinned to one CPU."
    [ -n "${LAT_SYSCALL:-}" ] || { echo "results: vs-lmbench needs LAT_SYSCALL=PATH, lmbench's lat_syscall built from its source" >&2; exit 2; }
    cmd=(bash scripts/vs-lmbench.sh) ;;
  vs-t-io_uring)
    what="\`iolab bench --engine uring\` against fio's peak-IOPS tool t/io_uring, alternately, on one file and CPU: cached 4 KiB reads at depth 128 (registered file and fixed buffers, with latency recorded all, sampled or off; and plain), O_DIRECT, the NOP path and two threads. Ratios are iolab/t/io_uring IOPS; CPU per op beside them."
    [ -n "${FIO_SOURCE:-}" ] || { echo "results: vs-t-io_uring needs FIO_SOURCE=DIR, fio's source tree (t/io_uring.c)" >&2; exit 2; }
    small=(ROUNDS=5)
    cmd=(env 'OUT=-' bash scripts/vs-t-io_uring.sh '$FIO_SOURCE' DATA) ;;
  corpus)
    what="Real programs (databases, tree walks, compilers, archivers, loaders, interpreters, a paced stream) recorded by scripts/record-corpus.sh in train and test halves, then replayed against every reader, cold and warm, Auto with the machine's profile and without one. Ratios are auto over the fixed reader with the best median on each trace, medians of per-round ratios with 95 % intervals."
    small=(HALF=test)
    cmd=(sh -c 'bash scripts/record-corpus.sh "$1" && bash scripts/corpus-replay.sh "$1" "${ROUNDS:-11}"' corpus DATA) ;;
  vs-python)
    what="\`import iolab\` against open().read(), Path.read_bytes, numpy.fromfile, numpy.memmap, os.pread loops, a thread pool and mmap slicing, whole files and random batches, cold and warm, alternating. Times relative to iolab's."
    cmd=(bash scripts/vs-python.sh DATA '${ROUNDS:-5}') ;;
  examples)
    what="Every \`\$ iolab\` example of README.md and of the guide (docs/guide/), run as written: each page's examples in order, in a folder of its own on the storage named by DIR (with the repository's examples/ beside them). Each command is followed by what it printed (stdout, then stderr). The pages show these outputs."
    cmd=(examples) ;;
  *)
    echo "results: unknown topic '$topic'; $usage" >&2; exit 2 ;;
esac

# The small scale sets only what the caller did not set.
scale="the script's defaults"
if [ "$quick" = 1 ] && [ ${#small[@]} -gt 0 ]; then
  for kv in "${small[@]}"; do
    k=${kv%%=*}
    [ -n "${!k:-}" ] || export "$kv"
  done
  scale="small (QUICK=1: ${small[*]})"
fi

# The commit the binary is built from, taken before the build. Only what
# builds or runs the measurement counts: documents edited while a
# comparison runs do not change its figures.
commit=$(git -C "$here" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$here" status --porcelain --untracked-files=no -- crates scripts examples Cargo.toml Cargo.lock 2>/dev/null)" ]; then
  commit="$commit, with uncommitted changes to the code"
fi
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
iolab="$here/target/release/iolab"

made_data=0
if [ -n "${2:-}" ]; then
  data=$(cd "$2" && pwd)
else
  data=$(mktemp -d "$PWD/.iolab-results.XXXXXX")
  made_data=1
fi
work=$(mktemp -d)
cleanup() {
  rm -rf "$work"
  if [ "$made_data" = 1 ]; then rm -rf "$data"; fi
}
trap cleanup EXIT
trap 'echo "results: interrupted; nothing written to docs/results" >&2; exit 130' INT TERM

# The machine's facts: an iolab record made on the same storage.
"$iolab" bench --dir "$data" --size 1m --ops 1 --json >"$work/environment.json" 2>/dev/null
env_line() {
  python3 - "$work/environment.json" "$@" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))["records"][0]["env"]
what = sys.argv[2]
if what == "slug":
    print("-".join(str(x) for x in (e["hostname"], f'{e["cores"]}c', e.get("device") or e.get("fs_type") or "nodev")))
else:
    q = e.get("queue") or {}
    gib = e["memory_bytes"] / 2**30
    dev = e.get("device") or "no block device"
    print(f'{e["hostname"]}: {e["cpu_model"]}, {e["cores"]} cores, {gib:.1f} GiB memory, '
          f'kernel {e["kernel"]}, hypervisor {e.get("hypervisor") or "unknown"}, clock source {e.get("clocksource") or "unknown"}; '
          f'{e.get("fs_type") or "?"} on {dev} ({e.get("device_model") or "model unknown"}), '
          f'scheduler {e.get("scheduler") or "none"}, physical block {q.get("physical_block_bytes", "?")} B, '
          f'max request {q.get("max_sectors_kb", "?")} KiB, read-ahead {q.get("read_ahead_kb", "?")} KiB, iolab {e["iolab_version"]}')
PY
}
machine=${MACHINE:-$(env_line slug)}
day=$(date -u +%F)
stem="$day-$machine-$topic"
n=1
while [ -e "$here/docs/results/$stem.md" ] || [ -e "$here/docs/results/$stem" ]; do
  n=$((n + 1)); stem="$day-$machine-$topic-$n"
done

# The command as a person would type it (settings, then the script).
shown=()
for kv in "${small[@]}"; do k=${kv%%=*}; [ -n "${!k:-}" ] && shown+=("$k=${!k}"); done
for k in PAIRS TIME SIZE GIB LEAVE_GIB CAP_S REPEAT TRACES RERUN DEPTHS BLOCK WAKER RUNS OTHERS MODES ROUNDS HALF READERS; do
  if [ -n "${!k:-}" ] && [[ " ${shown[*]} " != *" $k="* ]]; then shown+=("$k=${!k}"); fi
done
argv=()
for a in "${cmd[@]}"; do
  case $a in
    DATA) argv+=("$data") ;;
    \$*|\$\{*) argv+=("$(eval echo "$a")") ;;
    *) argv+=("$a") ;;
  esac
done
printable="${shown[*]:+${shown[*]} }${argv[*]/#$data/DIR}"
printable=${printable//$data/DIR}

run_examples() {
  # Each page's `$ iolab ...` lines (in fenced blocks), in order, in a
  # folder of its own under $data.
  local page c rc dir
  for page in README.md $(cd "$here" && ls docs/guide/*.md); do
    python3 - "$here/$page" >"$work/cmds" <<'PY'
import sys
fenced = False
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.lstrip().startswith("```"):
        fenced = not fenced
    elif fenced and line.startswith("$ iolab "):
        print(line[2:].split("  #")[0].rstrip())
PY
    [ -s "$work/cmds" ] || continue
    dir="$data/$(echo "$page" | tr / -)"
    mkdir -p "$dir"
    ln -sfn "$here/examples" "$dir/examples"
    echo "### $page"
    echo
    echo '```'
    while IFS= read -r c; do
      printf '$ %s\n' "$c"
      set +e
      (cd "$dir" && PATH="$here/target/release:$PATH" bash -o pipefail -c "$c" </dev/null >"$work/o" 2>"$work/e")
      rc=$?
      set -e
      cat "$work/o" "$work/e"
      [ "$rc" = 0 ] || echo "(exit status $rc)"
      echo
    done <"$work/cmds"
    echo '```'
    echo
  done
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s)
started=$(date -u '+%F %H:%M UTC')
echo "results: $topic: $printable" >&2
set +e
if [ "$topic" = examples ]; then
  run_examples >"$work/stdout" 2>"$work/stderr"
else
  (cd "$here" && SAVE="$work/records.jsonl" "${argv[@]}") >"$work/stdout" 2>"$work/stderr"
fi
rc=$?
set -e
secs=$(($(date +%s) - t0))
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
if [ "$rc" != 0 ]; then
  echo "results: $topic failed (exit $rc); nothing written to docs/results. Its output:" >&2
  tail -20 "$work/stdout" >&2
  exit 1
fi

fio_version=$(fio --version 2>/dev/null || echo "not installed")
mkdir -p "$here/docs/results/$stem"
raw="$here/docs/results/$stem"
cp "$work/environment.json" "$raw/"
cp "$work/stdout" "$raw/stdout.txt"
cp "$work/stderr" "$raw/stderr.txt"
[ -s "$work/records.jsonl" ] && cp "$work/records.jsonl" "$raw/records.jsonl"
if [ "$topic" = replay ] && [ -f "$data/replay.jsonl" ]; then cp "$data/replay.jsonl" "$raw/records.jsonl"; fi
{
  echo "# $topic"
  echo
  echo "$what"
  echo
  echo "- command: \`$printable\` (run by \`scripts/results.sh $topic\`; DIR is a folder on the storage measured)"
  echo "- scale: $scale"
  echo "- commit: $commit"
  echo "- started: $started, took $((secs / 60)) min $((secs % 60)) s"
  echo "- machine: $(env_line facts)"
  echo "- fio: $fio_version"
  echo "- load average (1, 5, 15 min): $load_before at the start, $load_after at the end; on a machine with $(nproc) CPUs, a load above that means other work shared them"
  [ -n "${NOTE:-}" ] && echo "- note: $NOTE"
  echo "- raw: [\`$stem/\`]($stem/) (the environment record, stdout, stderr$( [ -f "$raw/records.jsonl" ] && echo ', records.jsonl'))"
  echo
  echo "## Result"
  echo
  if [ "$topic" = examples ]; then
    sed "s#$data#DIR#g" "$work/stdout"
  else
    echo '```'
    sed "s#$data#DIR#g" "$work/stdout"
    echo '```'
  fi
} >"$here/docs/results/$stem.md"

# The index of docs/results/, newest first: generated, like the files.
python3 - "$here/docs/results" <<'PY'
import os, re, sys
d = sys.argv[1]
rows = []
for f in sorted(os.listdir(d), reverse=True):
    m = re.match(r"^(\d{4}-\d{2}-\d{2})-(.+)\.md$", f)
    if not m or f == "README.md":
        continue
    head = open(os.path.join(d, f)).read().split("\n")
    topic = head[0].lstrip("# ").strip()
    commit = next((l.split(": ", 1)[1] for l in head if l.startswith("- commit: ")), "")
    scale = next((l.split(": ", 1)[1] for l in head if l.startswith("- scale: ")), "")
    # <machine>-<topic>, or <machine>-<topic>-N for a second run that day
    mt = re.match(r"^(.*)-" + re.escape(topic) + r"(-\d+)?$", m.group(2))
    machine = mt.group(1) if mt else m.group(2)
    rows.append(f"| {m.group(1)} | {machine} | [{topic}]({f}) | {commit} | {scale} |")
with open(os.path.join(d, "README.md"), "w") as out:
    out.write("# Measured results\n\n")
    out.write("Each file here was written by `scripts/results.sh TOPIC` on the machine it names: the command, the commit, the machine's facts, the load on the machine, the table, and a folder of raw records beside it. Nothing here is typed by hand; to add a result, run the script. How to read them: [methodology](../methodology.md#reading-a-results-file).\n\n")
    out.write("| date | machine | topic | commit | scale |\n|---|---|---|---|---|\n")
    out.write("\n".join(rows) + "\n")
PY
echo "results: wrote docs/results/$stem.md" >&2
