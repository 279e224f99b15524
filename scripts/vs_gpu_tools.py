#!/usr/bin/env python3
"""One loader of scripts/vs_gpu.py, in a process of its own that imports
its libraries and starts CUDA once, so each measurement times the load
alone: a file into GPU memory, synchronised.

    python3 scripts/vs_gpu_tools.py TOOL DEVICE WARMUP_FILE

It loads WARMUP_FILE once, then prints one JSON line: {"ready": true,
"version": ...} or {"error": ...}. Then, for each line "load PATH" on
stdin, it loads PATH, waits for the GPU, prints {"seconds": s, "bytes": n}
(or {"error": ...}) and frees what it loaded before reading the next line.
"""

import json
import os
import sys
import time


def nbytes(tensors):
    """Bytes held by a dict of tensors (0 for anything else: the caller
    counts the file's bytes)."""
    try:
        return sum(t.numel() * t.element_size() for t in tensors.values())
    except (AttributeError, TypeError):
        return 0


def torch_sync():
    import torch

    return torch.cuda.synchronize


def tool_safetensors(dev):
    import safetensors
    import safetensors.torch

    def load(p):
        t = safetensors.torch.load_file(p, device=dev)
        return nbytes(t), t

    return load, torch_sync(), f"safetensors {safetensors.__version__}"


def tool_naive(dev):
    """The whole file read into one pageable buffer, then one copy."""
    import torch

    def load(p):
        buf = bytearray(os.path.getsize(p))
        with open(p, "rb", buffering=0) as f:
            f.readinto(buf)
        t = torch.frombuffer(buf, dtype=torch.uint8).to(dev)
        return len(buf), t

    return load, torch_sync(), f"torch {torch.__version__}"


def tool_fastsafetensors(dev):
    import fastsafetensors
    from fastsafetensors import fastsafe_open

    def load(p):
        with fastsafe_open(p, framework="pt", device=dev, nogds=True) as f:
            t = {k: f.get_tensor(k) for k in f.keys()}
        return nbytes(t), t

    version = getattr(fastsafetensors, "__version__", "0.5")
    return load, torch_sync(), f"fastsafetensors {version} (nogds)"


def tool_runai(dev):
    import runai_model_streamer
    from runai_model_streamer import SafetensorsStreamer

    def load(p):
        t = {}
        with SafetensorsStreamer() as s:
            s.stream_file(p, device=dev)
            for name, x in s.get_tensors():
                t[name] = x
        return nbytes(t), t

    version = getattr(runai_model_streamer, "__version__", "0.16")
    return load, torch_sync(), f"runai-model-streamer {version}"


def tool_kvikio(dev):
    """The whole file into one CuPy allocation, KvikIO in compatibility mode."""
    os.environ.setdefault("KVIKIO_COMPAT_MODE", "ON")
    os.environ.setdefault("KVIKIO_NTHREADS", str(min(16, os.cpu_count() or 1)))
    import cupy
    import kvikio

    cupy.cuda.Device(int(dev.split(":")[1])).use()

    def load(p):
        n = os.path.getsize(p)
        buf = cupy.empty(n, dtype=cupy.uint8)
        with kvikio.CuFile(p, "r") as f:
            f.pread(buf, n).get()
        return n, buf

    sync = cupy.cuda.runtime.deviceSynchronize
    return load, sync, f"kvikio {kvikio.__version__} (compat mode, {os.environ['KVIKIO_NTHREADS']} threads)"


def tool_iolab_py(dev):
    import iolab

    def load(p):
        t = iolab.safetensors.load(p, framework="torch", device=dev)
        return nbytes(t), t

    return load, torch_sync(), f"iolab (Python) {getattr(iolab, '__version__', '')}"


def copy_tool(pinned):
    """One 1 GiB copy from page-locked (or pageable) host memory: the link's
    limit; PATH is ignored."""

    def make(dev):
        import torch

        n = 1 << 30
        src = torch.ones(n, dtype=torch.uint8, pin_memory=pinned)
        dst = torch.empty(n, dtype=torch.uint8, device=dev)

        def load(_p):
            dst.copy_(src, non_blocking=pinned)
            return n, None

        kind = "page-locked" if pinned else "pageable"
        return load, torch_sync(), f"torch {torch.__version__}, {kind} 1 GiB"

    return make


def tool_safetensors_cpu(_dev):
    """Stand-in without a GPU (--dry): the reference loader into host memory."""
    import safetensors
    import safetensors.numpy

    def load(p):
        t = safetensors.numpy.load_file(p)
        return sum(a.nbytes for a in t.values()), t

    return load, lambda: None, f"safetensors {safetensors.__version__} (numpy, host memory)"


def tool_naive_cpu(_dev):
    """Stand-in without a GPU (--dry): the whole file into one buffer."""

    def load(p):
        buf = bytearray(os.path.getsize(p))
        with open(p, "rb", buffering=0) as f:
            f.readinto(buf)
        return len(buf), buf

    return load, lambda: None, "python read (host memory)"


TOOLS = {
    "safetensors": tool_safetensors,
    "naive": tool_naive,
    "fastsafetensors": tool_fastsafetensors,
    "runai": tool_runai,
    "kvikio": tool_kvikio,
    "iolab-py": tool_iolab_py,
    "pinned-copy": copy_tool(True),
    "pageable-copy": copy_tool(False),
    "safetensors-cpu": tool_safetensors_cpu,
    "naive-cpu": tool_naive_cpu,
}


def say(obj):
    print(json.dumps(obj), flush=True)


def one_line(e):
    return f"{type(e).__name__}: {e}".splitlines()[0][:300]


def main():
    name, dev, warmup = sys.argv[1], sys.argv[2], sys.argv[3]
    try:
        load, sync, version = TOOLS[name](dev)
        _, keep = load(warmup)
        sync()
        del keep
    except Exception as e:  # noqa: BLE001 - any failure is this tool's answer
        say({"error": one_line(e)})
        return
    say({"ready": True, "version": version})
    for line in sys.stdin:
        cmd, _, path = line.strip().partition(" ")
        if cmd != "load":
            break
        try:
            t0 = time.perf_counter()
            n, keep = load(path)
            sync()
            s = time.perf_counter() - t0
            del keep
            say({"seconds": s, "bytes": n})
        except Exception as e:  # noqa: BLE001
            say({"error": one_line(e)})
        finally:
            free()


def free():
    """Gives back what a load allocated (PyTorch's and CuPy's caches)."""
    import gc

    gc.collect()
    if "torch" in sys.modules:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    if "cupy" in sys.modules:
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
