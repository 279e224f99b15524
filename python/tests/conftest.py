"""What the tests share: files of known bytes, page-cache eviction, and a
process without a profile (so every machine decides with the same built-in
defaults)."""

import os
import random
import tempfile
import warnings

# Before iolab loads a profile: none, on every machine.
os.environ["IOLAB_PROFILE"] = os.path.join(tempfile.mkdtemp(), "no-profile.json")

import pytest  # noqa: E402

import iolab  # noqa: E402

# Loading it now says, once, that there is none (the only warning of the run).
with warnings.catch_warnings(record=True) as _caught:
    warnings.simplefilter("always")
    assert iolab.profile()["source"] == "built-in"
assert [w.category for w in _caught] == [iolab.ProfileWarning], _caught

#: The start of a skip's reason for what iolab never installs (PyTorch, a
#: GPU): the test runner lets those skips pass under CI, where any other
#: skip fails the run.
OPTIONAL = "optional: "

#: Every technique name, with parameters where they change the code path.
TECHNIQUES = [
    "auto",
    "pread",
    "stream",
    "buffered",
    "buffered:64k",
    "mapped",
    "direct",
    "uring",
    "uring:1",
    "thesis",
]

#: Empty, tiny, around a page, odd, and larger than one 4 MiB piece.
SIZES = [0, 1, 4095, 4096, 4097, 1_000_003, (9 << 20) + 3]


def pattern(size: int, seed: int) -> bytes:
    """`size` bytes that differ from file to file and from place to place."""
    return random.Random(seed).randbytes(size)


@pytest.fixture
def make_file(tmp_path):
    """make_file(size, seed=0) -> (path, bytes): a file holding those bytes."""

    def make(size: int, seed: int = 0, name: str | None = None):
        data = pattern(size, seed)
        path = tmp_path / (name or f"f{size}-{seed}")
        path.write_bytes(data)
        return path, data

    return make


def evict(path) -> None:
    """Drops the file's pages from the page cache (the next read is cold)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


@pytest.fixture
def fault_dir():
    """The fault-injecting file system the test runner mounted (files
    `eio`, `denied`, `short`), or a skip saying why there is none."""
    d = os.environ.get("IOLAB_TEST_FAULT_DIR")
    if not d:
        pytest.skip(os.environ.get("IOLAB_TEST_NO_FAULT_DIR", "no fault file system mounted"))
    return d
