"""iolab.Reader: reads at offsets, batches in order, the file's length, and
the context manager."""

import numpy as np
import pytest
from conftest import TECHNIQUES

import iolab


@pytest.mark.parametrize("technique", TECHNIQUES)
def test_read_at_returns_the_bytes_at_the_offset(make_file, technique):
    path, data = make_file((9 << 20) + 3, seed=1)
    with iolab.Reader(path, technique=technique) as r:
        assert len(r) == len(data)
        for off, n in [(0, 1), (1, 4095), (4095, 2), (1 << 20, 5 << 20), (len(data) - 7, 7)]:
            got = r.read_at(off, n)
            assert type(got) is bytes
            assert got == data[off : off + n], (off, n)
        # Short where the file ends, empty past it, as os.pread.
        assert r.read_at(len(data) - 3, 100) == data[-3:]
        assert r.read_at(len(data), 100) == b""
        assert r.read_at(len(data) + 10**9, 100) == b""
        assert r.read_at(5, 0) == b""


@pytest.mark.parametrize("technique", TECHNIQUES)
def test_read_many_returns_each_request_in_order(make_file, technique):
    path, data = make_file(3_000_001, seed=2)
    reqs = [(2_999_990, 20), (0, 4096), (123, 1), (1 << 20, 1 << 20), (5, 0), (3_000_001, 8), (77, 65_536)]
    with iolab.Reader(path, technique=technique) as r:
        got = r.read_many(reqs)
    assert [len(b) for b in got] == [11, 4096, 1, 1 << 20, 0, 0, 65_536]
    assert got == [data[o : o + n] for o, n in reqs]
    assert all(type(b) is bytes for b in got)


def test_read_many_of_many_random_requests(make_file):
    path, data = make_file(8 << 20, seed=3)
    rng = np.random.default_rng(3)
    offs = rng.integers(0, len(data) - 4096, size=2000)
    reqs = [(int(o), 4096) for o in offs]
    for technique in ["auto", "uring", "pread", "mapped"]:
        with iolab.Reader(path, technique=technique) as r:
            got = r.read_many(reqs)
        assert got == [data[o : o + 4096] for o, _ in reqs], technique


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.int32, np.uint32])
def test_read_many_takes_a_numpy_array_of_pairs(make_file, dtype):
    path, data = make_file(100_000, seed=4)
    reqs = np.array([[10, 5], [99_990, 10], [4096, 4096]], dtype=dtype)
    with iolab.Reader(path) as r:
        assert r.read_many(reqs) == [data[10:15], data[99_990:], data[4096:8192]]


def test_read_many_fills_one_buffer_back_to_back(make_file):
    path, data = make_file(50_000, seed=5)
    reqs = [(100, 10), (49_995, 10), (0, 3)]
    out = np.zeros(10 + 10 + 3, dtype=np.uint8)
    with iolab.Reader(path, technique="uring") as r:
        counts = r.read_many(reqs, out=out)
    assert counts == [10, 5, 3]
    assert out.tobytes() == data[100:110] + data[49_995:] + bytes(5) + data[:3]


def test_read_into_at_an_offset(make_file):
    path, data = make_file(1_000_000, seed=6)
    with iolab.Reader(path) as r:
        buf = bytearray(5000)
        assert r.read_into(123_456, buf) == 5000
        assert buf == data[123_456:128_456]
        arr = np.zeros(100, dtype=np.uint16)
        assert r.read_into(999_900, arr) == 100
        assert arr.tobytes()[:100] == data[999_900:]


def test_an_empty_file(make_file):
    path, _ = make_file(0)
    for technique in TECHNIQUES:
        with iolab.Reader(path, technique=technique) as r:
            assert len(r) == 0
            assert r.read_at(0, 10) == b""
            assert r.read_many([(0, 1), (5, 0)]) == [b"", b""]
            assert r.read_into(0, bytearray(4)) == 0


def test_closing_and_what_a_closed_reader_says(make_file):
    path, data = make_file(10_000)
    r = iolab.Reader(path, technique="pread")
    assert r.technique == "stream" and not r.closed
    assert str(path) in repr(r) and "10000 bytes" in repr(r)
    with r:
        assert r.read_at(0, 4) == data[:4]
    assert r.closed
    r.close()  # twice is fine
    for call in (lambda: r.read_at(0, 1), lambda: r.read_many([(0, 1)]), lambda: r.read_into(0, bytearray(1))):
        with pytest.raises(ValueError, match="closed"):
            call()
    assert len(r) == len(data)


def test_results_outlive_their_reader(make_file):
    path, data = make_file(70_000, seed=8)
    with iolab.Reader(path) as r:
        one = r.read_at(1, 100)
        many = r.read_many([(0, 10), (60_000, 10_000)])
    del r
    assert one == data[1:101]
    assert many == [data[:10], data[60_000:]]
