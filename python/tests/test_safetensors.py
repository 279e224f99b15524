"""iolab.safetensors.load gives what the safetensors package gives: the same
names in the same order, shapes, dtypes and bytes; dtypes NumPy lacks as
raw views named in ``dtypes``; one allocation that lives as long as any view
of it; and one clear exception per malformed checkpoint."""

import gc
import json
import os
import struct

import numpy as np
import pytest

import iolab
import iolab.safetensors as st

from conftest import evict

safetensors_numpy = pytest.importorskip(
    "safetensors.numpy", reason="the safetensors package (the reference) is not installed"
)
load_file, save_file = safetensors_numpy.load_file, safetensors_numpy.save_file

#: One tensor of every type NumPy has, in shapes that matter: a scalar, an
#: empty one, odd sizes, and one larger than a 4 MiB read.
def numpy_tensors(seed: int) -> dict:
    rng = np.random.default_rng(seed)

    def r(dtype, shape):
        n = int(np.prod(shape))
        return rng.integers(0, 256, size=n * np.dtype(dtype).itemsize, dtype=np.uint8).view(dtype).reshape(shape)

    return {
        "embed.weight": r(np.float32, (1031, 1103)),
        "scale": r(np.float64, ()),
        "empty": r(np.float16, (0, 7)),
        "mask": (rng.integers(0, 2, size=(3, 5)) == 1),
        "ids": r(np.int64, (17,)),
        "u64": r(np.uint64, (2, 3)),
        "i32": r(np.int32, (5, 1, 3)),
        "u32": r(np.uint32, (9,)),
        "i16": r(np.int16, (7, 7)),
        "u16": r(np.uint16, (11,)),
        "half": r(np.float16, (4095,)),
        "i8": r(np.int8, (13,)),
        "u8": r(np.uint8, (1, 4097)),
        "z": r(np.complex64, (3, 2)),
    }


def assert_same(got, want) -> None:
    """Same names in the same order, dtypes, shapes and bytes."""
    assert list(got) == list(want)
    for name, ref in want.items():
        a = got[name]
        assert isinstance(a, np.ndarray), name
        assert (a.dtype, a.shape) == (ref.dtype, ref.shape), name
        assert a.tobytes() == ref.tobytes(), name


@pytest.fixture
def checkpoint(tmp_path):
    path = tmp_path / "model.safetensors"
    save_file(numpy_tensors(1), path, metadata={"format": "np", "step": "7"})
    return path


@pytest.mark.parametrize("cold", [True, False], ids=["cold", "warm"])
def test_every_numpy_dtype_equals_the_reference_byte_for_byte(checkpoint, cold):
    want = load_file(checkpoint)
    if cold:
        evict(checkpoint)
    got = st.load(checkpoint)
    assert_same(got, want)
    assert got.metadata == {"format": "np", "step": "7"}
    assert got.device == "cpu"
    assert got.dtypes["embed.weight"] == "F32" and got.dtypes["mask"] == "BOOL"
    # Cold data goes in with O_DIRECT io_uring, cached data by copies.
    assert got.stats["technique"] == ("ring" if cold else "threads")
    assert got.stats["bytes"] >= sum(a.nbytes for a in want.values())


def test_every_array_is_a_view_of_one_allocation(checkpoint):
    got = st.load(checkpoint)
    mem = got.memory
    assert isinstance(mem, iolab.Buffer)
    lo = np.frombuffer(memoryview(mem), np.uint8).ctypes.data
    for a in got.values():
        assert not a.flags.owndata
        assert lo <= a.ctypes.data <= lo + len(mem)
    got["ids"][0] = 12345
    assert np.frombuffer(memoryview(mem), np.int64, count=1, offset=got["ids"].ctypes.data - lo)[0] == 12345


# The bytes of a file written by hand, for types the reference cannot give
# NumPy: (dtype, shape, bytes).
def raw_file(path, tensors: dict, pad_to: int = 8) -> dict:
    header, data = {}, b""
    for name, (dtype, shape, blob) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    j = json.dumps(header).encode()
    j += b" " * (-len(j) % pad_to)
    path.write_bytes(struct.pack("<Q", len(j)) + j + data)
    return tensors


def test_types_numpy_lacks_come_back_as_raw_views_with_their_type_named(tmp_path):
    rng = np.random.default_rng(2)
    b = lambda n: rng.integers(0, 256, size=n, dtype=np.uint8).tobytes()  # noqa: E731
    want = raw_file(
        tmp_path / "m.safetensors",
        {
            "bf": ("BF16", [3, 5], b(30)),
            "e4m3": ("F8_E4M3", [4, 3], b(12)),
            "e5m2": ("F8_E5M2", [7], b(7)),
            "e8m0": ("F8_E8M0", [2], b(2)),
            "e4m3fnuz": ("F8_E4M3FNUZ", [5], b(5)),
            "e5m2fnuz": ("F8_E5M2FNUZ", [1, 1], b(1)),
            "fp4": ("F4", [3, 4], b(6)),
            "fp6": ("F6_E2M3", [2, 8], b(12)),
            "fp6b": ("F6_E3M2", [4], b(3)),
        },
    )
    got = st.load(tmp_path / "m.safetensors")
    assert list(got) == list(want)
    shapes = {"fp4": (3, 2), "fp6": (2, 6), "fp6b": (3,)}
    for name, (dtype, shape, blob) in want.items():
        a = got[name]
        assert got.dtypes[name] == dtype
        assert a.dtype == (np.uint16 if dtype == "BF16" else np.uint8), name
        assert a.shape == shapes.get(name, tuple(shape)), name
        assert a.tobytes() == blob, name
    bf = got["bf"].astype(np.uint32) << 16
    assert np.array_equal(bf.view(np.float32).view(np.uint32) >> 16, got["bf"])


def test_a_packed_tensor_whose_rows_split_a_byte_has_no_byte_view(tmp_path):
    raw_file(tmp_path / "m.safetensors", {"odd": ("F4", [4, 3], b"\x11" * 6)})
    with pytest.raises(ValueError, match=r'tensor "odd" of F4 .* shape \[4, 3\].*whole bytes'):
        st.load(tmp_path / "m.safetensors")
    t = st.load(tmp_path / "m.safetensors", framework="dlpack")["odd"]
    assert (t.dtype, t.shape, t.nbytes) == ("F4", (4, 3), 6)


def write_sharded(d, parts: list[dict]) -> dict:
    weight_map, want = {}, {}
    for i, part in enumerate(parts):
        name = f"model-{i + 1:05d}-of-{len(parts):05d}.safetensors"
        save_file(part, d / name, metadata={"shard": str(i)})
        want.update(load_file(d / name))
        weight_map.update({k: name for k in part})
    (d / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map})
    )
    return want


def test_a_sharded_checkpoint_loads_shard_by_shard_from_its_index_or_directory(tmp_path):
    rng = np.random.default_rng(3)
    parts = [
        {f"layers.{i}.w": rng.standard_normal((257, 63 + i)).astype(np.float32), f"layers.{i}.b": rng.standard_normal(63 + i).astype(np.float16)}
        for i in range(3)
    ]
    parts[1]["layers.1.empty"] = np.zeros((0,), np.int32)
    want = write_sharded(tmp_path, parts)
    evict(tmp_path / "model-00002-of-00003.safetensors")
    for path in (tmp_path / "model.safetensors.index.json", tmp_path):
        got = st.load(path)
        assert_same(got, want)
        assert got.metadata == {"shard": "0"}
    (tmp_path / "model.safetensors.index.json").unlink()
    (tmp_path / "model-00001-of-00003.safetensors").rename(tmp_path / "model.safetensors")
    assert_same(st.load(tmp_path), load_file(tmp_path / "model.safetensors"))


def test_arrays_outlive_the_mapping_the_loader_and_the_file(checkpoint):
    want = load_file(checkpoint)["embed.weight"]
    got = st.load(checkpoint)
    keep, part = got["embed.weight"], got["u8"][0, 100:200]
    del got
    gc.collect()
    checkpoint.unlink()
    assert keep.tobytes() == want.tobytes()
    del keep
    gc.collect()
    assert part.tobytes() == numpy_tensors(1)["u8"][0, 100:200].tobytes()


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_the_allocation_is_freed_when_the_last_view_goes(tmp_path):
    path = tmp_path / "m.safetensors"
    save_file({"w": np.ones((8 << 20,), np.float32)}, path)  # 32 MiB
    st.load(path)
    before = rss_bytes()
    for _ in range(40):  # 1.25 GiB in all
        got = st.load(path, framework="dlpack")
        arr = np.from_dlpack(got["w"])
        del got
        assert arr[-1] == 1.0
        del arr
    gc.collect()
    assert rss_bytes() - before < 128 << 20


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\x01\x02\x03", "the file has 3 bytes"),
        (struct.pack("<Q", 1000) + b"{}", "header length of 1000 bytes passes the end of the file"),
        (struct.pack("<Q", 1 << 40) + b"{}", "more than the 100000000 a safetensors header may have"),
        (struct.pack("<Q", 5) + b'{"a":', "the header is not valid JSON"),
        (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
    ],
    ids=["too-short", "header-beyond-file", "header-too-large", "not-json", "not-an-object"],
)
def test_a_malformed_file_raises_one_value_error_naming_it(tmp_path, content, message):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(ValueError) as e:
        st.load(path)
    assert message in str(e.value) and str(path) in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "tensors, message",
    [
        ({"w": ("Q4", [2], b"ab")}, 'tensor "w" has unknown dtype "Q4" (known: BOOL, F4,'),
        ({"w": ("F32", [3], b"x" * 8)}, 'tensor "w": shape [3] of F32 is 12 bytes, but its data_offsets hold 8'),
    ],
    ids=["unknown-dtype", "size-mismatch"],
)
def test_a_bad_tensor_entry_is_named(tmp_path, tensors, message):
    raw_file(tmp_path / "m.safetensors", tensors)
    with pytest.raises(ValueError) as e:
        st.load(tmp_path / "m.safetensors")
    assert message in str(e.value)


def test_overlapping_and_truncated_tensors_are_refused(tmp_path):
    path = tmp_path / "m.safetensors"
    j = json.dumps({
        "a": {"dtype": "U8", "shape": [10], "data_offsets": [0, 10]},
        "b": {"dtype": "U8", "shape": [4], "data_offsets": [8, 12]},
    }).encode()
    path.write_bytes(struct.pack("<Q", len(j)) + j + bytes(12))
    with pytest.raises(ValueError, match=r'"a" \(data bytes 0..10\) and "b" \(data bytes 8..12\) overlap'):
        st.load(path)
    save_file({"w": np.arange(1000, dtype=np.float32)}, path)
    os.truncate(path, path.stat().st_size - 1)
    with pytest.raises(ValueError, match='tensor "w" ends at data byte 4000, but the file holds only 3999 bytes of data after its header: the file is truncated'):
        st.load(path)


def test_a_bad_index_or_a_missing_file_is_refused(tmp_path):
    write_sharded(tmp_path, [{"a": np.zeros(3, np.float32)}, {"b": np.zeros(2, np.float32)}])
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"a": "model-00002-of-00002.safetensors"}}))
    with pytest.raises(ValueError, match='the index puts tensor "a" in model-00002-of-00002.safetensors, which has no such tensor'):
        st.load(index)
    index.write_text(json.dumps({"weight_map": {"a": "../elsewhere.safetensors"}}))
    with pytest.raises(ValueError, match="not a file name in the index's directory"):
        st.load(tmp_path)
    index.write_text("{}")
    with pytest.raises(ValueError, match="not a checkpoint index: missing field `weight_map`"):
        st.load(tmp_path)
    index.write_text(json.dumps({"weight_map": {"a": "model-00009-of-00009.safetensors"}}))
    with pytest.raises(FileNotFoundError):
        st.load(tmp_path)
    with pytest.raises(FileNotFoundError):
        st.load(tmp_path / "nothing.safetensors")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError) as e:
        st.load(tmp_path / "empty")
    assert e.value.filename.endswith("model.safetensors")


def test_a_bad_framework_or_device_is_named_before_anything_is_read(tmp_path):
    missing = tmp_path / "nothing.safetensors"
    with pytest.raises(ValueError, match="framework must be 'numpy', 'torch', 'cupy' or 'dlpack', not 'jax'"):
        st.load(missing, framework="jax")
    with pytest.raises(ValueError, match="device must be 'cpu', 'cuda', 'cuda:N' or a GPU number N, not 'gpu0'"):
        st.load(missing, device="gpu0")
    with pytest.raises(ValueError, match="NumPy arrays live in host memory"):
        st.load(missing, device="cuda:0")
    with pytest.raises(ValueError, match="CuPy arrays live in GPU memory"):
        st.load(missing, framework="cupy")


def test_loads_into_host_memory_keep_no_page_locked_staging(checkpoint):
    st.load(checkpoint)
    assert st.free_staging() == 0
