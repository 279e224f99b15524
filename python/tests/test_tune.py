"""iolab.tune: what it refuses before measuring, and that stopping it
leaves nothing behind. (A whole tuning takes minutes; `iolab tune`'s own
tests measure one.)"""

import errno
import json

import pytest

import iolab


def test_tune_refuses_a_missing_directory_or_a_file(tmp_path, make_file):
    with pytest.raises(FileNotFoundError) as e:
        iolab.tune(tmp_path / "missing", out=tmp_path / "p.json")
    assert e.value.errno == errno.ENOENT
    path, _ = make_file(10)
    with pytest.raises(NotADirectoryError):
        iolab.tune(path, out=tmp_path / "p.json")


def test_tune_never_replaces_a_file_that_is_not_a_profile(tmp_path):
    out = tmp_path / "notes.txt"
    out.write_text("mine")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        iolab.tune(tmp_path, out=out, quick=True)
    assert out.read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_stopped_tune_removes_its_test_file_and_writes_nothing(tmp_path):
    dir = tmp_path / "storage"
    dir.mkdir()
    out = tmp_path / "profile.json"
    seen = []

    def progress(line):
        seen.append(line)
        raise KeyboardInterrupt("stop")

    with pytest.raises(KeyboardInterrupt, match="stop"):
        iolab.tune(dir, quick=True, out=out, progress=progress)
    assert seen and "test file" in seen[0]
    assert list(dir.iterdir()) == []
    assert not out.exists()
    # The process's profile is unchanged.
    assert iolab.profile()["source"] == "built-in"
    json.dumps(iolab.profile())
