#!/usr/bin/env bash
# The asynchronous interfaces against fio: random 4 KiB O_DIRECT reads at
# depth 1..64 with io_uring (plain, +F registered files, +FM fixed buffers,
# +S SQPOLL) and libaio on 1 and 2 threads, plus sequential 1 MiB at depth
# 4 and 16, each as `iolab bench --vs fio` pairs (alternating who goes
# first). Prints per row the median iolab/fio ratios of IOPS, CPU per I/O
# (submitting threads on both sides: like for like) and p99.9 latency, and
# the spread (min-max) of the per-pair IOPS ratios.
#
# usage: scripts/vs-fio-async.sh [DIR]   (env: PAIRS=3 TIME=3 SIZE=2g DEPTHS=1,4,16,32,64;
#   KEEP, SAVE: see vs-fio-setup.sh)
set -euo pipefail
default_secs=3
# shellcheck source=scripts/vs-fio-setup.sh
source "$(dirname "$0")/vs-fio-setup.sh" "$@"
depths=${DEPTHS:-1,4,16,32,64}
common=(--file "$file" --direct --time "${secs}s" --vs fio --pairs "$pairs" --jsonl "$out/r.jsonl")
rand=(--pattern rand --bs 4k --qd "$depths" --threads 1,2)
run() { "$iolab" bench "$@" "${common[@]}" >/dev/null; }
run --engine uring,libaio "${rand[@]}"
run --engine uring --reg-files "${rand[@]}"
run --engine uring --reg-files --fixed-bufs "${rand[@]}"
run --engine uring --sqpoll --pattern rand --bs 4k --qd "$depths" --threads 1
run --engine uring,libaio --pattern seq --bs 1m --qd 4,16
python3 - "$out/r.jsonl" <<'PY'
import json, sys, statistics as st
print(f'{"label":<16} {"iolab IOPS":>11} {"fio IOPS":>11} {"IOPS":>6} {"spread":>13} {"cpu/IO":>7} {"p99.9":>6}')
for line in open(sys.argv[1]):
    r = json.loads(line)
    c = r["vs_fio"]
    def med(side, f):
        return st.median(f(x) for x in c[side])
    ii, fi = med("iolab", lambda x: x["iops"]), med("fio", lambda x: x["iops"])
    ic = med("iolab", lambda x: x.get("cpu_submit_pct", x["cpu_pct"]) / max(x["iops"], 1))
    fc = med("fio", lambda x: x.get("cpu_submit_pct", x["cpu_pct"]) / max(x["iops"], 1))
    ip, fp = med("iolab", lambda x: x["p99_9_ns"]), med("fio", lambda x: x["p99_9_ns"])
    # Spread: min-max of the per-pair IOPS ratios (pair k = iolab k vs fio k).
    pr = [a["iops"] / b["iops"] for a, b in zip(c["iolab"], c["fio"]) if b["iops"] > 0]
    spread = f'{min(pr):.2f}-{max(pr):.2f}' if pr else '-'
    print(f'{r["label"]:<16} {ii:>11.0f} {fi:>11.0f} {ii/fi:>6.3f} {spread:>13} {ic/fc:>7.3f} {ip/fp:>6.3f}')
PY
