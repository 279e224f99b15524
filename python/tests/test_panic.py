"""A panic in the native code becomes a Python exception; the process and
the package go on."""

import pytest

import iolab
from iolab import _native


@pytest.mark.parametrize("detached", [False, True], ids=["gil-held", "gil-released"])
def test_a_panic_is_an_exception_not_an_abort(make_file, detached):
    with pytest.raises(BaseException) as e:
        _native._panic_for_test(detached=detached)
    assert type(e.value).__name__ == "PanicException"
    assert "a panic on purpose" in str(e.value)
    # The package still works after it.
    path, data = make_file(5000)
    assert iolab.read(path) == data
    with iolab.Reader(path) as r:
        assert r.read_at(10, 10) == data[10:20]
