#!/usr/bin/env bash
# iolab against fio on the same file, alternately, PAIRS pairs per workload;
# prints per workload the median iolab/fio ratio of throughput and of p99
# latency, and for the null engine the framework-cost ratio both fair (fio
# with iolab's per-op accounting) and default (fio's own accounting).
#
# fio's options are never written here: every run goes through
# `iolab bench --vs fio`, and the commands shown come from
# `iolab bench --print-fio`, the same translation.
#
# usage: scripts/vs-fio.sh [DIR]   (env: PAIRS=3 TIME=5 SIZE=2g KEEP SAVE: see vs-fio-setup.sh)
set -euo pipefail
default_secs=5
# shellcheck source=scripts/vs-fio-setup.sh
source "$(dirname "$0")/vs-fio-setup.sh" "$@"

# name | iolab flags (fio's come from the same translation)
workloads=(
  "seq-1m-direct-pread-qd1|--engine pread --pattern seq --bs 1m --direct --cache cold"
  "rand-4k-direct-pread-qd1|--engine pread --pattern rand --bs 4k --direct --cache cold"
  "rand-4k-direct-uring-qd32|--engine uring --qd 32 --pattern rand --bs 4k --direct --cache cold"
  "seq-128k-buffered-warm-pread|--engine pread --pattern seq --bs 128k --cache warm"
  "rand-4k-mmap-warm|--engine mmap --pattern rand --bs 4k --cache warm"
  "null-qd1-iops-per-thread|--engine null --pattern rand --bs 4k --cache as-is"
)

for w in "${workloads[@]}"; do
  IFS='|' read -r name flags <<<"$w"
  # shellcheck disable=SC2086
  common=($flags --file "$file" --size "$size" --time "${secs}s")
  echo "$name: $("$iolab" bench "${common[@]}" --print-fio)"
  if [[ $name == null* ]]; then
    echo "$name (fair): $("$iolab" bench "${common[@]}" --print-fio fair)"
  fi
  "$iolab" bench "${common[@]}" --vs fio --pairs "$pairs" --jsonl "$out/$name.jsonl" >/dev/null
done
echo
python3 - "$out" "${workloads[@]%%|*}" <<'PY'
import json, sys, statistics as st
d, names = sys.argv[1], sys.argv[2:]
print(f'{"workload":<30} {"pair":>4} {"iolab_MiBs":>11} {"fio_MiBs":>10} {"iolab_p99":>10} {"fio_p99":>9} {"thr_ratio":>9} {"p99_ratio":>9}')
med = {}
dev, outside = {}, {}
for n in names:
    r = json.loads(open(f"{d}/{n}.jsonl").readline())
    c = r["vs_fio"]
    null = n.startswith("null")
    key = "iops" if null else "mib_per_s"
    rows = []
    for p, (i, f) in enumerate(zip(c["iolab"], c["fio"]), 1):
        tr, pr = i[key] / f[key], i["p99_ns"] / f["p99_ns"]
        rows.append((tr, pr))
        print(f'{n:<30} {p:>4} {i["mib_per_s"]:>11.1f} {f["mib_per_s"]:>10.1f} {i["p99_ns"]:>10.0f} {f["p99_ns"]:>9.0f} {tr:>9.3f} {pr:>9.3f}')
    med[n] = (st.median(a for a, _ in rows), st.median(b for _, b in rows))
    # The device's view: its mean time per request on both sides, and at
    # depth 1 the rest of an op's time (1/IOPS - await), spent on the host.
    # Only where the device moved at least half of each run's bytes (a warm
    # run's device requests are other programs').
    bs = r["spec"]["bs"]
    carried = lambda x: x.get("dev_await_ns") and x.get("dev_bytes", 0) >= 0.5 * x["ops"] * bs
    aw = [(i["dev_await_ns"], f["dev_await_ns"]) for i, f in zip(c["iolab"], c["fio"]) if carried(i) and carried(f)]
    if aw:
        dev[n] = st.median(x / y for x, y in aw)
        if "qd" not in n or "qd1" in n:
            out = [(1e9 / i["iops"] - i["dev_await_ns"], 1e9 / f["iops"] - f["dev_await_ns"]) for i, f in zip(c["iolab"], c["fio"]) if carried(i) and carried(f) and all(abs(x["dev_requests"] / x["ops"] - 1) < 0.02 for x in (i, f))]
            if out:
                outside[n] = (st.median(x for x, _ in out), st.median(y for _, y in out))
    if null and c.get("fair"):
        fair = [i["iops"] / f["iops"] for i, f in zip(c["iolab"], c["fair"]["fio"])]
        med[n + " (fair)"] = (st.median(fair), float("nan"))
        # CPU per op of the submitting threads, fio/iolab: on a loaded
        # machine IOPS also measure who got the CPU; this does not.
        per_op = lambda x: x.get("cpu_submit_pct", x["cpu_pct"]) / max(x["iops"], 1)
        for tag, side in (("default", c["fio"]), ("fair", c["fair"]["fio"])):
            r_ = [per_op(f) / per_op(i) for i, f in zip(c["iolab"], side)]
            print(f'{n} ({tag}): fio/iolab CPU per op {st.median(r_):.3f}')
print()
print(f"median iolab/fio ratios (throughput, IOPS for null: higher is better for iolab; p99: lower is better):")
print(f'{"workload":<36} {"throughput":>10} {"p99":>8}')
for k, (a, b) in med.items():
    label = k + (" (default)" if k.startswith("null") and not k.endswith("(fair)") else "")
    print(f'{label:<36} {a:>10.3f} {b:>8.3f}')
if dev:
    print()
    print("the device's mean time per request (iolab/fio, median of pairs), and at depth 1 an op's time outside the device (1/IOPS - await):")
    for k, r in dev.items():
        o = outside.get(k)
        extra = f"   outside: iolab {o[0]/1e3:.2f} us, fio {o[1]/1e3:.2f} us" if o else ""
        print(f"{k:<36} await {r:>6.3f}{extra}")
print("null: fair = fio with iolab's per-op accounting (--disable_slat/--disable_lat), default = fio's own; both tools pinned to one CPU")
PY
