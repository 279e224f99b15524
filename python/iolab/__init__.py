"""Read files the fastest way this machine allows.

``iolab`` is the Python face of iolab's reading library (written in Rust):

- :func:`read` reads a whole file into memory iolab allocates and returns a
  ``memoryview`` of it; :func:`read_into` reads into a buffer you own
  (``bytearray``, NumPy array, ...). Neither copies between the read and you.
- :class:`Reader` reads at offsets, one request or a batch of them
  (:meth:`Reader.read_many`, all handed to the kernel at once), from any
  number of threads.
- ``technique`` names how: ``"auto"`` (decided per request from this
  machine's profile), ``"pread"``/``"stream"``, ``"buffered[:4m]"``,
  ``"mapped"``, ``"direct"``, ``"uring[:32]"``, ``"thesis"``.
- :func:`tune` measures this machine's storage into the profile ``"auto"``
  decides with; :func:`profile` shows the profile in force.
- :func:`iolab.safetensors.load` loads a safetensors checkpoint into host or
  GPU memory as NumPy arrays or PyTorch tensors (zero-copy views of one
  allocation), a drop-in for ``safetensors``' ``load_file``.

Every read releases the GIL. Errors are ``OSError`` and its subclasses
(``FileNotFoundError``, ``PermissionError``, ``IsADirectoryError``) with the
kernel's errno, and ``ValueError`` for a bad technique or request.
Warnings about the profile are :class:`ProfileWarning`\\ s.
"""

from ._native import (
    Buffer,
    ProfileWarning,
    Reader,
    __version__,
    profile,
    read,
    read_into,
    tune,
)
from . import safetensors

__all__ = [
    "Buffer",
    "ProfileWarning",
    "Reader",
    "__version__",
    "profile",
    "read",
    "read_into",
    "safetensors",
    "tune",
]
