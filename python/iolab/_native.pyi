"""Type stubs of iolab's native module (re-exported by ``iolab``)."""

import os
import pathlib
import sys
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Self, final

from typing_extensions import Buffer as _BufferLike

__version__: str
__all__ = [
    "Buffer",
    "DeviceMemory",
    "ProfileWarning",
    "Reader",
    "Tensor",
    "__version__",
    "_free_staging",
    "_load_safetensors",
    "_panic_for_test",
    "profile",
    "read",
    "read_into",
    "tune",
]

_Path = str | os.PathLike[str]

# Any writable buffer (bytearray, memoryview, NumPy array). NumPy declares
# its arrays buffers (PEP 688) only for Python 3.12 on.
if sys.version_info >= (3, 12):
    _Writable = _BufferLike
else:
    _Writable = Any

class ProfileWarning(UserWarning):
    """Something about the profile iolab decides with: none was found (the
    built-in defaults are used; run :func:`tune`), or it was measured on
    another device."""

@final
class Buffer:
    """Bytes read by iolab, in memory iolab allocated (2 MiB aligned
    transparent huge pages for large ones), lent to Python through the
    buffer protocol without a copy. :func:`read` returns a ``memoryview`` of
    one; the memory is freed when the last view of it is gone."""

    def __len__(self) -> int:
        """Bytes held."""
    if sys.version_info >= (3, 12):
        def __buffer__(self, flags: int, /) -> memoryview:
            """A view of the bytes (writable, format ``"B"``)."""

def read(path: _Path, *, technique: str = "auto") -> memoryview:
    """Reads the whole file at ``path`` and returns a ``memoryview`` of its
    bytes, in memory iolab allocated and Python owns from then on (no copy
    between the read and you).

    ``technique="auto"`` reads it the fastest way this machine's profile
    knows (O_DIRECT io_uring when the file is not cached, parallel copies
    when it is); any other technique reads it with one request of a
    :class:`Reader`. ``numpy.frombuffer(view, dtype)`` wraps it without a
    copy; ``bytes(view)`` copies it.

    Raises ``FileNotFoundError``, ``PermissionError``, ``IsADirectoryError``
    and other ``OSError``\\ s, ``ValueError`` for an unknown technique."""

def read_into(
    path: _Path, buffer: _Writable, offset: int = 0, *, technique: str = "auto"
) -> int:
    """Reads ``path`` from file offset ``offset`` into ``buffer`` (any
    writable, C-contiguous buffer: ``bytearray``, ``memoryview``, a NumPy
    array, a torch CPU tensor's ``.numpy()``) without a copy, until the
    buffer is full or the file ends; returns the bytes read."""

@final
class Reader:
    """A file opened for reading at offsets with one technique (``"auto"``
    decides per request from this machine's profile).

    Use it from many threads at once: every read releases the GIL and no
    read waits for another. As a context manager, leaving the ``with`` block
    closes the file.

    Raises ``FileNotFoundError``, ``PermissionError``, ``IsADirectoryError``
    (and other ``OSError``\\ s) when the file cannot be opened, ``ValueError``
    for an unknown technique."""

    def __new__(cls, path: _Path, *, technique: str = "auto") -> Self: ...
    def __len__(self) -> int:
        """Length of the file when it was opened, bytes."""
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
        /,
    ) -> bool: ...
    @property
    def path(self) -> pathlib.Path:
        """The path it was opened with."""
    @property
    def technique(self) -> str:
        """The technique, as iolab names it (``pread`` is named ``stream``)."""
    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
    def close(self) -> None:
        """Closes the file; reads in flight on other threads finish first."""
    def read_at(self, offset: int, n: int) -> bytes:
        """Reads ``n`` bytes at ``offset`` (fewer where the file ends;
        ``b""`` at or past the end), as ``os.pread`` does."""
    def read_into(self, offset: int, buffer: _Writable) -> int:
        """Reads into ``buffer`` (any writable, C-contiguous buffer) from
        file offset ``offset`` without a copy; returns the bytes read (fewer
        than the buffer holds only where the file ends)."""
    def read_many(
        self,
        requests: Sequence[tuple[int, int]] | Any,
        out: _Writable | None = None,
    ) -> list[bytes] | list[int]:
        """Reads a batch: ``requests`` is a sequence of ``(offset, length)``
        pairs or an integer array of shape (N, 2). All are handed to the
        reader at once (io_uring keeps many in flight where the policy
        chooses it). Returns a list of ``bytes``, one per request in order
        (shorter where the file ends); with ``out``, fills that one writable
        buffer with the results back to back and returns the list of
        counts."""

def profile() -> dict[str, Any]:
    """The profile ``technique="auto"`` decides with in this process: the one
    :func:`tune` or ``iolab tune`` wrote (at ``$IOLAB_PROFILE``, else
    ``~/.config/iolab/profile.json``), or the built-in defaults (with a
    :class:`ProfileWarning`) when there is none."""

def tune(
    dir: _Path = ".",
    *,
    quick: bool = False,
    out: _Path | None = None,
    overwrite: bool = False,
    progress: Callable[[str], object] | None = None,
) -> dict[str, Any]:
    """Measures the storage holding ``dir`` (a test file of 1 GiB, 256 MiB
    with ``quick=True``, made there and removed), writes the profile to
    ``out`` (default ``$IOLAB_PROFILE``, else ``~/.config/iolab/profile.json``;
    a file that is not an iolab profile is replaced only with
    ``overwrite=True``), makes it the profile of this process and returns
    it. About five minutes (one with ``quick=True``); ``progress`` is called
    with one line per step; Ctrl-C stops it (``KeyboardInterrupt``)."""

def _panic_for_test(detached: bool = False) -> None:
    """Panics inside the native module (with the GIL released when
    ``detached``): the tests show a panic becomes an exception."""

@final
class Tensor:
    """One tensor of a checkpoint :func:`iolab.safetensors.load` loaded: its
    bytes stay where the load put them (host or GPU memory), and any array
    library borrows them without a copy through DLPack
    (``torch.from_dlpack(t)``, ``cupy.from_dlpack(t)``,
    ``numpy.from_dlpack(t)``). The memory lives as long as any tensor or
    array made from it."""

    @property
    def name(self) -> str:
        """The tensor's name in the checkpoint."""
    @property
    def dtype(self) -> str:
        """The element type as safetensors names it (``"BF16"``, ``"F32"``)."""
    @property
    def shape(self) -> tuple[int, ...]:
        """Dimensions, in elements."""
    @property
    def nbytes(self) -> int:
        """Bytes."""
    @property
    def offset(self) -> int:
        """Offset of its first byte in the checkpoint's one allocation."""
    @property
    def device(self) -> str:
        """``"cpu"`` or ``"cuda:N"``."""
    def raw(self) -> Tensor:
        """The same bytes as unsigned integers of the element's width
        (``U16`` for BF16, ``U8`` for the 8-bit floats); packed sub-byte
        types (F4, F6) as bytes, their last dimension counted in bytes. For
        libraries that lack the type."""
    def __dlpack_device__(self) -> tuple[int, int]:
        """``(1, 0)`` for host memory, ``(2, N)`` for CUDA GPU ``N``."""
    def __dlpack__(
        self,
        stream: object = None,
        *,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule of the tensor (``dltensor_versioned`` when
        ``max_version`` asks for DLPack 1.x, else ``dltensor``).
        ``copy=True`` or another device raise ``BufferError``."""

@final
class DeviceMemory:
    """GPU memory holding a loaded checkpoint's tensors: one allocation,
    freed when the last tensor made from it is gone."""

    def __len__(self) -> int:
        """Bytes held."""
    @property
    def device(self) -> int:
        """The GPU's number."""

def _free_staging() -> int:
    """Frees the page-locked staging memory GPU loads keep; the bytes
    freed. :func:`iolab.safetensors.free_staging` is the public face."""

def _load_safetensors(
    path: _Path, device: int | None = None
) -> tuple[
    Buffer | DeviceMemory, list[tuple[str, Tensor]], dict[str, str], dict[str, Any]
]:
    """Reads a checkpoint into host memory (``device=None``) or GPU
    ``device``: the memory, ``(name, Tensor)`` pairs in order, the
    ``__metadata__``, how it was read. :func:`iolab.safetensors.load` is the
    public face."""
