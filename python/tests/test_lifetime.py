"""Memory iolab allocates lives as long as any view of it, and no longer."""

import gc

import numpy as np

import iolab


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_a_view_keeps_its_memory_after_everything_else_is_gone(make_file):
    path, data = make_file((3 << 20) + 1, seed=1)
    view = iolab.read(path)
    arr = np.frombuffer(view, dtype=np.uint8)
    part = view[1000:2000]
    del view
    gc.collect()
    path.unlink()
    assert arr.tobytes() == data
    del arr
    gc.collect()
    assert part == data[1000:2000]
    assert bytes(part.obj)[:10] == data[:10]


def test_memory_is_freed_when_the_last_view_goes(make_file):
    path, data = make_file(32 << 20, seed=2)
    iolab.read(path)  # warm the file and the allocator
    before = rss_bytes()
    for _ in range(40):  # 1.25 GiB in all, 32 MiB at a time
        view = iolab.read(path)
        assert view[-1] == data[-1]
        del view
    gc.collect()
    assert rss_bytes() - before < 128 << 20


def test_a_view_of_a_closed_reader_read(make_file):
    path, data = make_file(1 << 20, seed=3)
    r = iolab.Reader(path)
    buf = np.zeros(4096, dtype=np.uint8)
    r.read_into(4096, buf)
    got = r.read_at(0, 4096)
    r.close()
    del r
    gc.collect()
    assert buf.tobytes() == data[4096:8192]
    assert got == data[:4096]
