"""iolab.safetensors.load(device="cuda:N") on a GPU machine, checked against
the safetensors package: makes checkpoints in DIR (one file of every type
PyTorch has, bf16 and the 8-bit floats included; a sharded one; a ~1 GiB one
of 64 bf16 tensors), loads each with both, and compares every tensor (name,
order, dtype, shape, device, every byte) cold and warm; then that the GPU
memory goes with the last tensor, that CuPy takes the same memory, and that
a bad GPU number or a NumPy request for the GPU is one clear error, and
that the page-locked staging kept between loads is freed on request. Prints
one line per check and the load times; exits 1 on any mismatch.

    python3 scripts/gpu_safetensors.py DIR [GPU]

Needs torch with CUDA and safetensors; the iolab wheel on the path (see
docs/python.md for how to carry one to a machine without a Rust toolchain).
"""

import gc
import json
import os
import statistics
import struct
import sys
import time

import torch
from safetensors.torch import load_file, save_file

import iolab
import iolab.safetensors as st

failed = []


def check(what, ok):
    print(f"{'ok  ' if ok else 'FAIL'} {what}", flush=True)
    if not ok:
        failed.append(what)


def evict(path):
    for p in [path] if os.path.isfile(path) else [os.path.join(path, f) for f in os.listdir(path)]:
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)


def same(got, want, device):
    if list(got) != list(want):
        return "names or order differ"
    for name, ref in want.items():
        a = got[name]
        if (a.dtype, a.shape, a.device) != (ref.dtype, ref.shape, ref.device):
            return f"{name}: {a.dtype} {tuple(a.shape)} {a.device} != {ref.dtype} {tuple(ref.shape)} {ref.device}"
        if a.device != torch.device(device):
            return f"{name} is on {a.device}"
        if not torch.equal(a.reshape(-1).view(torch.uint8), ref.reshape(-1).view(torch.uint8)):
            return f"{name}: bytes differ"
    return None


def every_type(path):
    """One tensor of each type torch has, written by hand (odd sizes, an
    empty one, a scalar)."""
    g = torch.Generator().manual_seed(1)
    names = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
             "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool", "C64": "complex64",
             "U16": "uint16", "U32": "uint32", "U64": "uint64", "F8_E4M3": "float8_e4m3fn",
             "F8_E5M2": "float8_e5m2", "F8_E8M0": "float8_e8m0fnu", "F4": "float4_e2m1fn_x2"}
    shapes = [[3, 5], [7], [], [0, 4], [2, 3, 4], [1001]]
    header, data = {}, b""
    for i, (code, name) in enumerate(names.items()):
        if not hasattr(torch, name):
            continue
        shape = shapes[i % len(shapes)]
        if code == "F4" and (not shape or shape[-1] % 2):
            shape = [3, 4]
        size = getattr(torch, name).itemsize
        n = 1
        for d in shape:
            n *= d
        nbytes = n * size // (2 if code == "F4" else 1)
        blob = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, generator=g).numpy().tobytes()
        if code == "BOOL":
            blob = bytes(b & 1 for b in blob)
        header[f"t.{code}"] = {"dtype": code, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    j = json.dumps(header).encode()
    j += b" " * (-len(j) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(j)) + j + data)


def sharded(d):
    os.makedirs(d, exist_ok=True)
    wm = {}
    for i in range(3):
        name = f"model-{i + 1:05d}-of-00003.safetensors"
        part = {f"l{i}.w": torch.randn(1024, 700 + i).to(torch.bfloat16), f"l{i}.b": torch.randn(700 + i)}
        save_file(part, os.path.join(d, name))
        wm.update({k: name for k in part})
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": wm}, f)


def reference(path):
    """What safetensors gives, shard by shard for an index."""
    if os.path.isdir(path):
        index = json.load(open(os.path.join(path, "model.safetensors.index.json")))
        out = {}
        for shard in sorted(set(index["weight_map"].values())):
            out.update(load_file(os.path.join(path, shard), device=DEVICE))
        return out
    return load_file(path, device=DEVICE)


def compare(label, path):
    for cache in ["cold", "warm"]:
        if cache == "cold":
            evict(path)
        got = st.load(path, framework="torch", device=DEVICE)
        torch.cuda.synchronize()
        why = same(got, reference(path), DEVICE)
        check(f"{label}, {cache}: every tensor equals safetensors.torch.load_file's" + (f" ({why})" if why else ""), why is None)
        del got
        gc.collect()


def timed(call):
    """Seconds one call takes, the GPU synchronised after it; what it
    returned is dropped before the next."""
    t0 = time.perf_counter()
    out = call()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    del out
    gc.collect()
    return dt


def timing(path, rounds=3):
    size = os.path.getsize(path)
    calls = {"iolab.safetensors.load": lambda: st.load(path, framework="torch", device=DEVICE),
             "safetensors.torch.load_file": lambda: load_file(path, device=DEVICE)}
    for cache in ["cold", "warm"]:
        times = {n: [] for n in calls}
        for k in range(rounds):
            for n in list(calls)[k % 2:] + list(calls)[:k % 2]:
                if cache == "cold":
                    evict(path)
                times[n].append(timed(calls[n]))
        for n, ts in times.items():
            print(f"     {cache} {n:30s} {statistics.median(ts):7.3f} s  {size / statistics.median(ts) / 1e9:6.2f} GB/s", flush=True)


def memory_goes_with_the_last_tensor(path):
    torch.cuda.synchronize()
    free0 = torch.cuda.mem_get_info(ORDINAL)[0]
    got = st.load(path, framework="torch", device=DEVICE)
    used = free0 - torch.cuda.mem_get_info(ORDINAL)[0]
    last = got[list(got)[-1]]
    del got
    gc.collect()
    held = free0 - torch.cuda.mem_get_info(ORDINAL)[0]
    del last
    gc.collect()
    torch.cuda.synchronize()
    left = free0 - torch.cuda.mem_get_info(ORDINAL)[0]
    size = os.path.getsize(path)
    check(f"GPU memory: {used >> 20} MiB while loaded, {held >> 20} MiB while one tensor lives, {left >> 20} MiB after",
          used >= size * 0.9 and held >= size * 0.9 and left < 64 << 20)


def errors(path):
    try:
        st.load(path, framework="torch", device=f"cuda:{torch.cuda.device_count() + 3}")
        check("a GPU number out of range is refused", False)
    except ValueError as e:
        check(f"a GPU number out of range: ValueError: {e}", "does not exist" in str(e))
    try:
        st.load(path, device=DEVICE)
        check("NumPy arrays on the GPU are refused", False)
    except ValueError as e:
        check(f"framework numpy on the GPU: ValueError: {str(e)[:60]}...", True)


def staging_is_kept_then_freed():
    kept = st.free_staging()
    check(f"page-locked staging kept for the next load: {kept >> 20} MiB (0 < it <= 192), none after free_staging()",
          0 < kept <= 192 << 20 and st.free_staging() == 0)


def kept_staging_against_fresh(path, pairs=7):
    """Warm loads with the staging kept from the last load against loads
    that lock it anew (freed just before), alternated; medians."""
    size = os.path.getsize(path)
    st.load(path, framework="torch", device=DEVICE)
    times = {"kept": [], "fresh": []}
    for k in range(pairs):
        for how in (["kept", "fresh"] if k % 2 == 0 else ["fresh", "kept"]):
            if how == "fresh":
                st.free_staging()
            torch.cuda.synchronize()
            times[how].append(timed(lambda: st.load(path, framework="torch", device=DEVICE)))
    for how, ts in times.items():
        print(f"     warm, staging {how:5s} {size / statistics.median(ts) / 1e9:6.2f} GB/s (median of {pairs})", flush=True)


def cupy_takes_it(path):
    try:
        import cupy
    except ImportError:
        print("     (no CuPy here)")
        return
    got = st.load(path, framework="cupy", device=DEVICE)
    want = load_file(path, device=DEVICE)
    ok = all(bytes(cupy.asnumpy(got[n]).tobytes()) == want[n].view(torch.uint8).cpu().numpy().tobytes() for n in want)
    check(f"CuPy arrays ({len(got)}) hold the same bytes (bf16 as uint16)", ok)


def main():
    global DEVICE, ORDINAL
    d = sys.argv[1]
    ORDINAL = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    DEVICE = f"cuda:{ORDINAL}"
    os.makedirs(d, exist_ok=True)
    print(f"iolab {iolab.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name(ORDINAL)}, {os.uname().release}", flush=True)
    every_type(os.path.join(d, "types.safetensors"))
    compare("every type torch has", os.path.join(d, "types.safetensors"))
    sharded(os.path.join(d, "sharded"))
    compare("a sharded checkpoint (index directory)", os.path.join(d, "sharded"))
    big = os.path.join(d, "big.safetensors")
    save_file({f"layers.{i}.w": torch.randn(2048, 4096).to(torch.bfloat16) for i in range(64)}, big)  # 1 GiB
    compare("64 bf16 tensors, 1 GiB", big)
    memory_goes_with_the_last_tensor(big)
    cupy_takes_it(os.path.join(d, "sharded", "model-00001-of-00003.safetensors"))
    errors(big)
    staging_is_kept_then_freed()
    kept_staging_against_fresh(big)
    timing(big)
    print(f"{len(failed)} failed" if failed else "all checks passed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
