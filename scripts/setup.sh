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
# The Python package's tests build it into a virtual environment (below),
# which needs venv's ensurepip; its permission test drops capabilities with
# setpriv (util-linux).
if [ "$(command -v python3 || true)" = /usr/bin/python3 ] && command -v dpkg >/dev/null 2>&1; then
  dpkg -s python3-venv >/dev/null 2>&1 || need+=(python3-venv)
fi
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
# MPI scale-out (`cargo test --workspace` builds the `mpi` feature): Open MPI
# to build against and to launch ranks, libclang for rsmpi's bindings.
command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
[ -e /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h ] || [ -e /usr/include/mpi.h ] \
  || dpkg -s libopenmpi-dev >/dev/null 2>&1 || need+=(libopenmpi-dev)
dpkg -s libclang-dev >/dev/null 2>&1 || need+=(libclang-dev)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ${need[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "setup: missing ${need[*]} (install them with your package manager)" >&2
  fi
fi

# The Python package (python/, crates/iolab-py): a virtual environment at
# .venv-py with maturin to build it and what its tests compare against.
# `cargo test -p iolab-py-tests` builds the package into it and runs pytest.
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${IOLAB_PY_VENV:-$root/.venv-py}"
py_need=('maturin>=1.9.4,<2' pytest numpy safetensors)
if ! command -v python3 >/dev/null 2>&1; then
  echo "setup: no python3, so no Python environment for the Python package's tests" >&2
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: making the Python environment $venv" >&2
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import maturin, pytest, numpy, safetensors' >/dev/null 2>&1 \
   || [ ! -x "$venv/bin/maturin" ]; then
  echo "setup: installing ${py_need[*]} into $venv" >&2
  "$venv/bin/python" -m pip install -q "${py_need[@]}"
fi
