#!/usr/bin/env bash
# Installs what iolab's tests and comparison scripts need on a fresh Debian
# machine. Safe to run again: it only installs what is missing.
set -euo pipefail
need=()
command -v fio >/dev/null 2>&1 || need+=(fio)
command -v python3 >/dev/null 2>&1 || need+=(python3)
# scripts/vs-cat.sh times runs with bc; the reader's run tests compile a C reference.
command -v bc >/dev/null 2>&1 || need+=(bc)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
# iolab record runs programs under strace (and its tests record a child).
command -v strace >/dev/null 2>&1 || need+=(strace)
# scripts/trace-speed.sh records SQLite queries (and grep, python3: always there).
command -v sqlite3 >/dev/null 2>&1 || need+=(sqlite3)
# The fault-injecting FUSE file system of the hardening tests mounts with
# fuse3 (fusermount3 when not root); pkg-config and libfuse3-dev let a FUSE
# crate link libfuse if it is ever built with that feature.
command -v fusermount3 >/dev/null 2>&1 || need+=(fuse3)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
[ -e /usr/include/fuse3/fuse.h ] || need+=(libfuse3-dev)
# MPI scale-out (`cargo test --workspace` builds the `mpi` feature): Open MPI
# to build against and to launch ranks, libclang for rsmpi's bindings.
command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
[ -e /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h ] || [ -e /usr/include/mpi.h ] \
  || dpkg -s libopenmpi-dev >/dev/null 2>&1 || need+=(libopenmpi-dev)
dpkg -s libclang-dev >/dev/null 2>&1 || need+=(libclang-dev)
# The safetensors loader's tests read files the reference Python package
# writes (installed with pip below).
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ${need[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "setup: missing ${need[*]} (install them with your package manager)" >&2
  fi
fi
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import safetensors.numpy, numpy' >/dev/null 2>&1; then
  echo "setup: installing the Python packages safetensors and numpy" >&2
  # Debian's own python3 refuses pip installs outside a venv unless told.
  python3 -m pip install --quiet safetensors numpy 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages safetensors numpy \
    || echo "setup: could not install safetensors and numpy with pip" >&2
fi
