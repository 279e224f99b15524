"""Whole files: iolab.read and iolab.read_into return the file's bytes, for
every technique, size and cache state, into every kind of buffer."""

import array

import numpy as np
import pytest
from conftest import SIZES, TECHNIQUES, evict

import iolab


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("technique", TECHNIQUES)
def test_read_returns_the_file_for_every_technique(make_file, technique, size):
    path, data = make_file(size, seed=size)
    got = iolab.read(path, technique=technique)
    assert isinstance(got, memoryview)
    assert len(got) == size
    assert got == data


@pytest.mark.parametrize("cold", [True, False], ids=["cold", "warm"])
def test_auto_reads_cold_and_warm_files_whole(make_file, cold):
    # Over 64 MiB and odd: the cold path's O_DIRECT pieces end in a
    # partial block; the warm path shares the copy among threads.
    path, data = make_file((65 << 20) + 4097, seed=3)
    if cold:
        evict(path)
    else:
        path.read_bytes()
    assert iolab.read(path) == data


def test_read_accepts_str_and_pathlike(make_file):
    path, data = make_file(5000)
    assert iolab.read(str(path)) == data
    assert iolab.read(path) == data


def test_read_gives_writable_memory_numpy_wraps_without_a_copy(make_file):
    path, data = make_file(1 << 20, seed=1)
    view = iolab.read(path)
    assert not view.readonly
    assert type(view.obj).__name__ == "Buffer"
    arr = np.frombuffer(view, dtype=np.uint32)
    assert arr.tobytes() == data
    # The array is the same memory: a write through it shows in the view.
    arr[0] = 0xDEADBEEF
    assert bytes(view[:4]) == (0xDEADBEEF).to_bytes(4, "little")


@pytest.mark.parametrize("technique", ["auto", "pread", "direct", "uring", "mapped"])
@pytest.mark.parametrize("size", [0, 4097, (9 << 20) + 3])
def test_read_into_fills_every_kind_of_buffer(make_file, technique, size):
    path, data = make_file(size, seed=7)
    targets = [
        bytearray(size),
        memoryview(bytearray(size)),
        np.zeros(size, dtype=np.uint8),
        array.array("B", bytes(size)),
    ]
    for buf in targets:
        assert iolab.read_into(path, buf, technique=technique) == size
        assert bytes(buf) == data


def test_read_into_a_typed_array_fills_its_bytes(make_file):
    path, data = make_file(4096 * 3, seed=11)
    floats = np.zeros(3 * 1024, dtype=np.float32)
    assert iolab.read_into(path, floats) == len(data)
    assert floats.tobytes() == data
    grid = np.zeros((3, 512), dtype=np.int64)
    assert iolab.read_into(path, grid) == len(data)
    assert grid.tobytes() == data


def test_read_into_from_an_offset_and_into_a_short_or_long_buffer(make_file):
    path, data = make_file(100_000, seed=5)
    small = bytearray(1000)
    assert iolab.read_into(path, small, 12_345) == 1000
    assert small == data[12_345:13_345]
    big = bytearray(200_000)
    assert iolab.read_into(path, big) == 100_000
    assert big[:100_000] == data and big[100_000:] == bytes(100_000)
    tail = bytearray(10)
    assert iolab.read_into(path, tail, 99_995) == 5
    assert tail[:5] == data[-5:]
    assert iolab.read_into(path, bytearray(10), 100_000) == 0
    assert iolab.read_into(path, bytearray(10), 10**12) == 0


def test_read_into_refuses_read_only_and_strided_buffers(make_file):
    path, _ = make_file(4096)
    with pytest.raises(TypeError, match="read-only"):
        iolab.read_into(path, b"\0" * 4096)
    with pytest.raises(TypeError, match="writable buffer"):
        iolab.read_into(path, "not a buffer")
    strided = np.zeros(8192, dtype=np.uint8)[::2]
    with pytest.raises(BufferError, match="contiguous"):
        iolab.read_into(path, strided)


def test_read_into_a_torch_style_numpy_view(make_file):
    # A torch CPU tensor reaches iolab as `tensor.numpy()`: a view of
    # someone else's memory. A NumPy view of a bigger array stands in.
    path, data = make_file(8192, seed=9)
    backing = np.zeros(16384, dtype=np.uint8)
    view = backing[4096:12288]
    assert iolab.read_into(path, view) == 8192
    assert backing[4096:12288].tobytes() == data
    assert not backing[:4096].any() and not backing[12288:].any()
