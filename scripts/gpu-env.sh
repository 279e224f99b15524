# Sourced by the GPU scripts (gpu-tests.sh, gpu-check.sh) on a GPU machine:
# puts the CUDA Python packages' libcufile.so.0 on LD_LIBRARY_PATH where the
# system has none, and, where the nvidia-fs module is not loaded, lets cuFile
# run in its compatibility mode (POSIX reads, then a copy) through a config
# file under $1, as a deployment without GPUDirect Storage configures it;
# registering a file handle fails otherwise. Says what it did on stderr.
gpu_env_dir=${1:-${TMPDIR:-/tmp}}
if ! ldconfig -p 2>/dev/null | grep -q 'libcufile.so.0'; then
  gpu_cufile=$(python3 - 2>/dev/null <<'PY' || true
import glob, importlib.util
spec = importlib.util.find_spec("nvidia")
for root in (spec.submodule_search_locations if spec else []):
    for p in sorted(glob.glob(root + "/**/libcufile.so.0", recursive=True)):
        print(p.rsplit("/", 1)[0])
        raise SystemExit
PY
  )
  if [ -n "$gpu_cufile" ]; then
    export LD_LIBRARY_PATH="$gpu_cufile${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "gpu-env: libcufile from $gpu_cufile" >&2
  fi
fi
if [ ! -e /proc/driver/nvidia-fs ] && [ -z "${CUFILE_ENV_PATH_JSON:-}" ]; then
  mkdir -p "$gpu_env_dir"
  echo '{"properties": {"allow_compat_mode": true}}' >"$gpu_env_dir/cufile.json"
  export CUFILE_ENV_PATH_JSON="$gpu_env_dir/cufile.json"
  echo "gpu-env: no nvidia-fs module: cuFile in its compatibility mode ($CUFILE_ENV_PATH_JSON)" >&2
fi
