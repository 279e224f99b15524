#!/usr/bin/env bash
# On a GPU machine: the GPU commands as a user runs them, each bounded in
# time, their output kept: reads copied into GPU 0 per op (bench --mem
# cuda:0, two engines), fio's libcufile jobs (posix and cufile), a file
# into the GPU with every technique and --verify=all, tune's GPU part (its
# profile's gpu section printed), and the to-gpu lab experiment. Commands
# that would start with too little of BUDGET seconds left, and cuFile where
# udev keeps no record of the disk, are skipped with a line. Exit status 1
# when one failed.
#
#   bash scripts/gpu-commands.sh IOLAB DIR [BUDGET]
set -uo pipefail
if [ $# -lt 2 ] || [ ! -x "$1" ]; then
  echo "usage: scripts/gpu-commands.sh IOLAB DIR [BUDGET] (IOLAB: the iolab binary, built with the cuda feature)" >&2
  exit 2
fi
iolab=$(realpath "$1") dir=$2
end=$(($(date +%s) + ${3:-400}))
d=$dir/commands
rm -rf "$d" && mkdir -p "$d" || exit 1
failed=0

# run SECONDS COMMAND...: runs it (at most SECONDS) if that many are left.
run() {
  local t=$1
  shift
  if [ $((end - $(date +%s))) -lt "$t" ]; then
    echo "== skipped (fewer than $t s left): $*"
    return
  fi
  echo "== $*"
  (cd "$d" && timeout "$t" "$@")
  local rc=$?
  [ "$rc" = 0 ] || { echo "== FAILED (exit status $rc): $*"; failed=1; }
}

run 40 "$iolab" bench --mem cuda:0 --engine uring --qd 16 --bs 1m --size 1g --cache cold --direct --time 3s --dir .
run 30 "$iolab" bench --mem cuda:0 --engine pread --bs 4k --size 256m --cache warm --time 2s --dir .
for io in posix cufile; do
  printf '[global]\nioengine=libcufile\ncuda_io=%s\ndirect=1\ngpu_dev_ids=0\nbs=1m\nsize=256m\nfilename=fio.data\nruntime=3s\ntime_based\n[read]\nrw=read\n[randread]\nstonewall\nrw=randread\n' "$io" >"$d/$io.fio"
  run 40 "$iolab" fio "$io.fio"
done
head -c $((768 << 20)) /dev/urandom >"$d/file.bin"
# cuFile identifies a file's volume by udev's record of its block device;
# a machine without udev has none, and cuFile refuses every file there.
dev=$(stat -c %d "$d/file.bin")
udev=/run/udev/data/b$((dev >> 8)):$((dev & 255))
for how in "--technique ring" "--technique threads" "--technique cufile" "--pageable"; do
  if [ "$how" = "--technique cufile" ] && [ ! -e "$udev" ]; then
    echo "== skipped ($udev does not exist: no udev here, and cuFile needs it): $iolab cat --gpu 0 $how"
    continue
  fi
  # shellcheck disable=SC2086 # the flags are two words on purpose
  run 40 "$iolab" cat --gpu 0 $how --verify=all file.bin
done
run 150 "$iolab" tune --quick --gpu 0 --dir . --out profile.json
[ -f "$d/profile.json" ] && python3 -c 'import json,sys; print("profile gpu section:", json.dumps(json.load(open(sys.argv[1])).get("gpu")))' "$d/profile.json"
run 90 "$iolab" lab run to-gpu --scale smoke --dir . --out lab
[ -d "$d/lab" ] && cat "$d"/lab/*.txt 2>/dev/null | tail -20
rm -rf "$d"
exit $failed
