"""The reader's warnings go through Python's `warnings`, never stderr."""

import json
import os
import subprocess
import sys

import iolab

CHILD = """
import json, sys, warnings
import iolab
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    iolab.read(sys.argv[1])
    iolab.read(sys.argv[1])
print(json.dumps([[w.category.__name__, str(w.message)] for w in caught]))
"""


def run_child(path, profile):
    env = {**os.environ, "IOLAB_PROFILE": str(profile)}
    return subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, env=env)


def test_a_missing_profile_is_one_python_warning(tmp_path, make_file):
    path, _ = make_file(100)
    out = run_child(path, tmp_path / "none.json")
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    caught = json.loads(out.stdout)
    assert len(caught) == 1
    category, message = caught[0]
    assert category == "ProfileWarning"
    assert message.startswith("no profile at ") and "none.json" in message


def test_a_corrupt_profile_is_one_python_warning(tmp_path, make_file):
    path, _ = make_file(100)
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    out = run_child(path, bad)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    caught = json.loads(out.stdout)
    assert [c for c, _ in caught] == ["ProfileWarning"]
    assert "is unusable" in caught[0][1]


def test_a_good_profile_gives_no_warning(tmp_path, make_file):
    path, _ = make_file(100)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(iolab.profile()))
    out = run_child(path, good)
    assert out.returncode == 0, out.stderr
    assert (out.stderr, json.loads(out.stdout)) == ("", [])


def test_warnings_made_errors_raise(tmp_path, make_file):
    path, _ = make_file(100)
    env = {**os.environ, "IOLAB_PROFILE": str(tmp_path / "none.json")}
    code = f"import iolab, warnings; warnings.simplefilter('error', iolab.ProfileWarning); iolab.read({str(path)!r})"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 1
    assert "iolab.ProfileWarning: no profile at" in out.stderr


def test_profile_is_a_dict_of_what_auto_decides_with():
    p = iolab.profile()
    assert p["version"] == 1
    assert p["source"] == "built-in"
    assert p["whole"]["block"] > 0 and p["random_depth"] > 0
