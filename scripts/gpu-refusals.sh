#!/usr/bin/env bash
# On a GPU machine: what a user gets wrong about the GPU is one line on
# stderr and exit status 2, with nothing left behind, from every command
# that reaches a GPU: a GPU number the machine does not have (cat, bench,
# tune, fio's libcufile) and a file larger than the GPU's memory (cat).
# Prints one line per case; exit status 1 when one case failed.
# (Without a GPU the same commands are checked by cargo test, in
# crates/iolab-cli/tests/gpu_cli.rs.)
#
#   bash scripts/gpu-refusals.sh IOLAB DIR
set -uo pipefail
if [ $# -ne 2 ] || [ ! -x "$1" ]; then
  echo "usage: scripts/gpu-refusals.sh IOLAB DIR (IOLAB: the iolab binary, built with the cuda feature)" >&2
  exit 2
fi
iolab=$(realpath "$1") dir=$2
d=$dir/refusals
rm -rf "$d" && mkdir -p "$d" || exit 1
failed=0

# expect WORDS COMMAND...: exit status 2, one line (after warnings) holding WORDS.
expect() {
  local words=$1 err rc lines
  shift
  err=$(cd "$d" && "$@" 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s\n' "$err" | grep -v '^warning:' | grep -c .)
  if [ "$rc" = 2 ] && [ "$lines" = 1 ] && [[ $err == *"$words"* ]]; then
    echo "ok    $* -> $(printf '%s\n' "$err" | grep -v '^warning:')"
  else
    echo "FAIL  $* -> exit status $rc, $lines lines, wanted one holding '$words': $err"
    failed=1
  fi
}

head -c 1000000 /dev/urandom >"$d/small"
truncate -s 1T "$d/huge"
printf '[global]\nioengine=libcufile\ncuda_io=posix\ngpu_dev_ids=99\nbs=1m\nsize=4m\nfilename=small\n[read]\nrw=read\n' >"$d/gpu99.fio"
before=$(ls "$d" | sort | tr '\n' ' ')

expect "GPU 99 does not exist" "$iolab" cat --gpu 99 small
expect "GPU 99 does not exist" "$iolab" bench --mem cuda:99 --size 1m --dir .
expect "GPU 99 does not exist" "$iolab" tune --quick --gpu 99 --dir . --out p.json
expect "GPU 99 does not exist" "$iolab" fio gpu99.fio
expect "out of memory on GPU 0" "$iolab" cat --gpu 0 huge
after=$(ls "$d" | sort | tr '\n' ' ')
if [ "$before" = "$after" ]; then
  echo "ok    nothing left behind ($after)"
else
  echo "FAIL  left behind: before '$before', after '$after'"
  failed=1
fi
rm -rf "$d"
exit $failed
