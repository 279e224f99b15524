"""The tensors of a loaded checkpoint as DLPack hands them to array
libraries: the structs read back field by field as dlpack.h lays them out,
NumPy's ``from_dlpack`` as a real consumer, PyTorch where it is installed,
and the GPU path where a GPU is."""

import ctypes
import gc
import json
import struct
import sys

import numpy as np
import pytest

import iolab.safetensors as st
from conftest import OPTIONAL

save_file = pytest.importorskip(
    "safetensors.numpy", reason="the safetensors package (the reference) is not installed"
).save_file


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]


def read_capsule(cap):
    """(name, the managed struct) of a capsule nobody took yet."""
    name = _get_name(cap).decode()
    kind = DLManagedTensorVersioned if name == "dltensor_versioned" else DLManagedTensor
    return name, kind.from_address(_get_pointer(cap, name.encode()))


def described(t: DLTensor):
    """What a DLTensor says: (code, bits, lanes), shape, strides, device."""
    n = t.ndim
    return (
        (t.dtype.code, t.dtype.bits, t.dtype.lanes),
        tuple(t.shape[i] for i in range(n)),
        tuple(t.strides[i] for i in range(n)),
        (t.device.device_type, t.device.device_id),
    )


def address(memory) -> int:
    """Where a host allocation starts."""
    return np.frombuffer(memoryview(memory), np.uint8).ctypes.data


def hand_written(path, tensors: dict) -> dict:
    """Writes `tensors` ({name: (dtype, shape, bytes)}) as a safetensors
    file; returns each tensor's bytes."""
    header, data = {}, b""
    for name, (dtype, shape, blob) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    j = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(j)) + j + data)
    return {name: blob for name, (_, _, blob) in tensors.items()}


#: Each type, the DLPack code, bits and lanes it is exported with, and the
#: shape DLPack gives it (F4 as PyTorch takes it: pairs of values a byte).
CODES = {
    "BOOL": ((6, 8, 1), [3], 3, None),
    "U8": ((1, 8, 1), [2, 2], 4, None),
    "I16": ((0, 16, 1), [3], 6, None),
    "F32": ((2, 32, 1), [2, 3], 24, None),
    "C64": ((5, 64, 1), [1], 8, None),
    "BF16": ((4, 16, 1), [4, 1, 2], 16, None),
    "F8_E4M3": ((10, 8, 1), [5], 5, None),
    "F8_E4M3FNUZ": ((11, 8, 1), [5], 5, None),
    "F8_E5M2": ((12, 8, 1), [2, 3], 6, None),
    "F8_E5M2FNUZ": ((13, 8, 1), [1], 1, None),
    "F8_E8M0": ((14, 8, 1), [3], 3, None),
    "F6_E2M3": ((15, 6, 1), [4], 3, None),
    "F6_E3M2": ((16, 6, 1), [2, 4], 6, None),
    "F4": ((17, 4, 2), [3, 4], 6, (3, 2)),
}


@pytest.fixture
def every_type(tmp_path):
    path = tmp_path / "types.safetensors"
    return path, hand_written(path, random_tensors(CODES))


def random_tensors(types) -> dict:
    rng = np.random.default_rng(5)
    return {d: (d, CODES[d][1], rng.integers(0, 256, CODES[d][2], dtype=np.uint8).tobytes()) for d in types}


@pytest.mark.parametrize("versioned", [False, True], ids=["legacy", "versioned"])
def test_each_type_is_described_with_its_dlpack_code_and_a_row_major_layout(every_type, versioned):
    path, blobs = every_type
    got = st.load(path, framework="dlpack")
    for name, ((code, bits, lanes), shape, n, dl_shape) in CODES.items():
        t = got[name]
        assert (t.dtype, t.shape, t.nbytes, t.device) == (name, tuple(shape), n, "cpu")
        cap = t.__dlpack__(max_version=(1, 0)) if versioned else t.__dlpack__()
        cname, m = read_capsule(cap)
        assert cname == ("dltensor_versioned" if versioned else "dltensor")
        if versioned:
            assert (m.major, m.minor, m.flags) == (1, 0, 0)
        dl_shape = dl_shape or tuple(shape)
        strides = tuple(int(np.prod(dl_shape[i + 1 :])) for i in range(len(dl_shape)))
        assert described(m.dl_tensor) == ((code, bits, lanes), dl_shape, strides, (1, 0)), name
        assert m.dl_tensor.byte_offset == 0
        assert m.dl_tensor.data == address(got.memory) + t.offset
        assert ctypes.string_at(m.dl_tensor.data, n) == blobs[name], name


def test_a_newer_dlpack_asked_for_gets_the_newest_this_speaks(every_type):
    t = st.load(every_type[0], framework="dlpack")["F32"]
    caps = [t.__dlpack__(max_version=v) for v in [(1, 7), (2, 0), (0, 8)]]
    (n1, m1), (n2, m2), (n3, _) = map(read_capsule, caps)
    assert (n1, m1.major, m1.minor) == ("dltensor_versioned", 1, 1)
    assert (n2, m2.major, m2.minor) == ("dltensor_versioned", 1, 1)
    assert n3 == "dltensor"


def test_numpy_takes_every_type_it_has_without_a_copy(tmp_path):
    path = tmp_path / "m.safetensors"
    rng = np.random.default_rng(6)
    ref = {
        "f32": rng.standard_normal((33, 7)).astype(np.float32),
        "f64": np.array(3.5),
        "i64": rng.integers(-9, 9, (4, 0, 2)),
        "b": rng.integers(0, 2, (5,)) == 1,
        "c": (rng.standard_normal(3) + 1j).astype(np.complex64),
        "u16": rng.integers(0, 9, (6,), dtype=np.uint16),
    }
    save_file(ref, path)
    got = st.load(path, framework="dlpack")
    arrays = st.load(path)
    for name, want in ref.items():
        a = np.from_dlpack(got[name])
        assert (a.dtype, a.shape, a.tobytes()) == (np.asarray(want).dtype, np.shape(want), np.asarray(want).tobytes()), name
        assert a.flags.writeable
        assert a.ctypes.data == arrays[name].ctypes.data - address(arrays.memory) + address(got.memory)


def test_a_capsule_keeps_the_memory_until_its_consumer_frees_it(checkpoint_32k):
    got = st.load(checkpoint_32k, framework="dlpack")
    mem, t = got.memory, got["w"]
    base = sys.getrefcount(mem)
    a = np.from_dlpack(t)
    assert sys.getrefcount(mem) == base + 1, "the array's capsule holds the memory"
    cap = t.__dlpack__()
    assert sys.getrefcount(mem) == base + 2
    del got, t
    gc.collect()
    left = sys.getrefcount(mem)
    assert np.array_equal(a, np.arange(8192, dtype=np.float32))
    del a
    gc.collect()
    assert sys.getrefcount(mem) == left - 1, "numpy called the deleter"
    del cap
    gc.collect()
    assert sys.getrefcount(mem) == left - 2, "a capsule nobody took frees itself"


@pytest.fixture
def checkpoint_32k(tmp_path):
    path = tmp_path / "w.safetensors"
    save_file({"w": np.arange(8192, dtype=np.float32)}, path)
    return path


def test_a_copy_or_another_device_is_refused(checkpoint_32k):
    t = st.load(checkpoint_32k, framework="dlpack")["w"]
    assert t.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError, match='tensor "w" is exported as a view'):
        t.__dlpack__(copy=True)
    with pytest.raises(BufferError, match=r"on cpu, DLPack device \(1, 0\); it cannot be exported to device \(2, 0\)"):
        t.__dlpack__(dl_device=(2, 0))
    assert read_capsule(t.__dlpack__(dl_device=(1, 0), copy=False))[0] == "dltensor"


def test_a_gpu_load_without_a_usable_gpu_is_one_clear_error(checkpoint_32k, tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(struct.pack("<Q", 99) + b"{}")
    with pytest.raises(ValueError, match="passes the end of the file"):
        st.load(bad, framework="dlpack", device="cuda:0")  # headers before the GPU
    try:
        got = st.load(checkpoint_32k, framework="dlpack", device="cuda:0")
    except RuntimeError as e:
        assert "NVIDIA" in str(e) and "\n" not in str(e)
        return
    assert got["w"].device == "cuda:0" and got["w"].__dlpack_device__() == (2, 0)
    with pytest.raises(ValueError, match="GPU 4096 does not exist"):
        st.load(checkpoint_32k, framework="dlpack", device="cuda:4096")


def torch_or_skip():
    return pytest.importorskip("torch", reason=OPTIONAL + "PyTorch is not installed (iolab never depends on it)")


@pytest.mark.parametrize("device", ["cpu", "cuda:0"])
def test_torch_tensors_equal_safetensors_torch_load_file(tmp_path, device):
    torch = torch_or_skip()
    if device != "cpu" and not torch.cuda.is_available():
        pytest.skip(OPTIONAL + "no CUDA GPU for PyTorch here")
    from safetensors.torch import load_file as torch_load_file

    lacks = {"F8_E8M0": "float8_e8m0fnu", "F4": "float4_e2m1fn_x2"}
    types = [d for d in CODES if not d.startswith("F6") and hasattr(torch, lacks.get(d, "bool"))]
    path = tmp_path / "t.safetensors"
    hand_written(path, random_tensors(types))
    want = torch_load_file(path, device=device)
    got = st.load(path, framework="torch", device=device)
    assert list(got) == list(want)
    for name, ref in want.items():
        a = got[name]
        assert (a.dtype, a.shape, a.device) == (ref.dtype, ref.shape, ref.device), name
        assert torch.equal(a.reshape(-1).view(torch.uint8).cpu(), ref.reshape(-1).view(torch.uint8).cpu()), name
    keep = got["F32"]
    del got
    gc.collect()
    assert torch.equal(keep.cpu(), want["F32"].cpu())


def test_torch_gpu_memory_is_freed_with_the_last_tensor(tmp_path):
    torch = torch_or_skip()
    if not torch.cuda.is_available():
        pytest.skip(OPTIONAL + "no CUDA GPU for PyTorch here")
    path = tmp_path / "big.safetensors"
    save_file({f"w{i}": np.full((16 << 20,), i, np.uint8) for i in range(16)}, path)  # 256 MiB
    free0 = torch.cuda.mem_get_info(0)[0]
    got = st.load(path, framework="torch", device="cuda:0")
    assert free0 - torch.cuda.mem_get_info(0)[0] >= 256 << 20
    last = got["w15"]
    del got
    gc.collect()
    assert int(last[0]) == 15 and free0 - torch.cuda.mem_get_info(0)[0] >= 256 << 20
    del last
    gc.collect()
    torch.cuda.synchronize()
    assert free0 - torch.cuda.mem_get_info(0)[0] < 64 << 20
