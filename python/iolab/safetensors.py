"""Safetensors checkpoints, loaded the fastest way this machine allows.

:func:`load` checks every header first, then reads all the tensor data into
ONE allocation — host memory, or GPU memory with ``device="cuda:N"`` — in
large transfers with the GIL released (O_DIRECT io_uring when the file is
not cached, parallel copies out of the page cache when it is; the shards of
a sharded checkpoint in parallel). Every tensor it returns is a view of that
allocation, without a copy, and keeps it alive.

It is a drop-in for ``safetensors.numpy.load_file`` and
``safetensors.torch.load_file``: the same names in the same order, with the
same shapes, dtypes and bytes::

    import iolab.safetensors

    arrays = iolab.safetensors.load("model.safetensors")            # NumPy
    tensors = iolab.safetensors.load("model/", framework="torch")    # torch, CPU
    tensors = iolab.safetensors.load("model/", framework="torch", device="cuda:0")

NumPy has no bfloat16 or 8-bit float types: tensors of those come back as
``uint16``/``uint8`` views of the same bytes, and the returned mapping's
``dtypes`` names every tensor's real type (``arrays.dtypes["w"] == "BF16"``).
PyTorch gets the real types through DLPack. Neither PyTorch nor CuPy is a
dependency of iolab: each is imported only when asked for.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal

from ._native import DeviceMemory, Tensor, _free_staging, _load_safetensors

if TYPE_CHECKING:
    from ._native import Buffer

__all__ = ["DeviceMemory", "Tensor", "Tensors", "free_staging", "load"]

#: The safetensors types NumPy (and CuPy) have, as NumPy type strings.
_NUMPY = {
    "BOOL": "|b1",
    "U8": "|u1",
    "I8": "|i1",
    "U16": "<u2",
    "I16": "<i2",
    "F16": "<f2",
    "U32": "<u4",
    "I32": "<i4",
    "F32": "<f4",
    "C64": "<c8",
    "U64": "<u8",
    "I64": "<i8",
    "F64": "<f8",
}

#: The safetensors types as torch names them (as safetensors.torch does).
_TORCH = {
    "BOOL": "bool",
    "U8": "uint8",
    "I8": "int8",
    "U16": "uint16",
    "I16": "int16",
    "F16": "float16",
    "BF16": "bfloat16",
    "U32": "uint32",
    "I32": "int32",
    "F32": "float32",
    "C64": "complex64",
    "U64": "uint64",
    "I64": "int64",
    "F64": "float64",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E4M3FNUZ": "float8_e4m3fnuz",
    "F8_E5M2": "float8_e5m2",
    "F8_E5M2FNUZ": "float8_e5m2fnuz",
    "F8_E8M0": "float8_e8m0fnu",
    "F4": "float4_e2m1fn_x2",
}

#: Types every torch that reads DLPack takes by their DLPack codes.
_TORCH_DLPACK_ALWAYS = {"BOOL", "U8", "I8", "I16", "F16", "BF16", "I32", "F32", "C64", "I64", "F64"}

_FRAMEWORKS = {
    "numpy": "numpy",
    "np": "numpy",
    "torch": "torch",
    "pt": "torch",
    "pytorch": "torch",
    "cupy": "cupy",
    "dlpack": "dlpack",
}

Framework = Literal["numpy", "np", "torch", "pt", "cupy", "dlpack"]


class Tensors(dict):  # type: ignore[type-arg]
    """What :func:`load` returns: a ``dict`` of tensor name to array (or
    tensor), in the file's order, with what the arrays cannot say.

    Attributes:
        dtypes: every tensor's element type as safetensors names it
            (``"BF16"``, ``"F8_E4M3"``, ``"F32"``, ...): the real type of an
            array NumPy holds as ``uint16``/``uint8``.
        metadata: the file's ``__metadata__`` (the first shard's when
            sharded), as ``safe_open(...).metadata()`` gives it.
        device: ``"cpu"`` or ``"cuda:N"``, where the tensors are.
        memory: the one allocation every tensor views (an
            :class:`iolab.Buffer`, or a :class:`DeviceMemory`).
        stats: how the data was read: ``technique`` (``"ring"``: O_DIRECT
            io_uring, for data not in the page cache; ``"threads"``:
            parallel copies out of it), ``bytes``, ``seconds`` and
            ``gb_per_s`` (wall time), ``read_s``/``copy_s``/``wait_s``
            (summed over the ``threads``), ``chunk``, ``depth``,
            ``direct``, ``pinned``.
    """

    dtypes: dict[str, str]
    metadata: dict[str, str]
    device: str
    memory: Buffer | DeviceMemory | None
    stats: dict[str, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.dtypes = {}
        self.metadata = {}
        self.device = "cpu"
        self.memory = None
        self.stats = {}


def load(
    path: str | os.PathLike[str],
    *,
    framework: Framework = "numpy",
    device: str | int = "cpu",
) -> Tensors:
    """Loads the checkpoint at ``path`` — a ``.safetensors`` file, a sharded
    checkpoint's index (``model.safetensors.index.json``), or a directory
    holding either — and returns its tensors by name, in the file's order
    (shard by shard when sharded).

    Args:
        framework: ``"numpy"`` (``"np"``) for NumPy arrays; ``"torch"``
            (``"pt"``) for PyTorch tensors; ``"cupy"`` for CuPy arrays (GPU
            only); ``"dlpack"`` for :class:`Tensor` objects, which any
            library takes with its ``from_dlpack``.
        device: ``"cpu"``; ``"cuda:N"`` (or ``N``, or a ``torch.device``)
            to read the data straight into GPU ``N``'s memory through pinned
            staging buffers; ``"cuda"`` for the framework's current GPU.

    Every array is a view of one allocation and keeps it alive: the memory
    is freed when the last of them is gone. Dtypes NumPy (or CuPy) lacks
    (BF16, the 8-bit floats) come back as ``uint16``/``uint8`` views of the
    same bytes, packed sub-byte types (F4, F6) as ``uint8`` with the last
    dimension counted in bytes; PyTorch gets every type it has, through
    DLPack (as a ``.view`` of ``uint8`` where its DLPack cannot name the
    type). ``Tensors.dtypes`` names each tensor's real type.

    Raises:
        ValueError: a malformed checkpoint (the message names the file, the
            tensor and what is wrong), a bad ``framework`` or ``device``, or a
            GPU number the machine does not have.
        OSError: the file cannot be read (``FileNotFoundError``, ...).
        MemoryError: the data does not fit in host or GPU memory.
        RuntimeError: no NVIDIA driver or GPU for ``device="cuda:N"``.
        ImportError: the framework asked for is not installed.
    """
    fw = _FRAMEWORKS.get(framework if isinstance(framework, str) else "")
    if fw is None:
        raise ValueError(
            f"framework must be 'numpy', 'torch', 'cupy' or 'dlpack', not {framework!r}"
        )
    gpu = _gpu(device)
    if gpu is not None and fw == "numpy":
        raise ValueError(
            f"NumPy arrays live in host memory, so device={device!r} cannot be "
            "loaded as NumPy arrays: use framework='torch' or 'cupy' (or "
            "'dlpack'), or device='cpu'"
        )
    if gpu is None and fw == "cupy":
        raise ValueError(
            "CuPy arrays live in GPU memory: use device='cuda:N' with "
            "framework='cupy', or framework='numpy' for host memory"
        )
    lib = _import(fw)
    if gpu == "current":
        gpu = _current_gpu(fw, lib)
    memory, tensors, metadata, stats = _load_safetensors(path, gpu)
    out = Tensors()
    out.metadata = metadata
    out.stats = stats
    out.device = "cpu" if gpu is None else f"cuda:{gpu}"
    out.memory = memory
    out.dtypes = {name: t.dtype for name, t in tensors}
    if fw == "numpy":
        out.update(_numpy(lib, memory, tensors))
    elif fw == "torch":
        convert = _TorchConverter(lib)
        out.update((name, convert(t)) for name, t in tensors)
    elif fw == "cupy":
        out.update((name, lib.from_dlpack(_numpy_typed(t))) for name, t in tensors)
    else:
        out.update(tensors)
    return out


def free_staging() -> int:
    """Frees the page-locked host memory that loads into a GPU keep for the
    next load, and returns how many bytes that was.

    Locking host memory for the GPU's copies costs about as much as the
    copies themselves, so after a load to ``device="cuda:N"`` its staging
    buffers (192 MiB at most) stay locked for the next one, as KvikIO's and
    PyTorch's pinned pools do. Call this when the process has finished
    loading and wants that memory back; a later load locks anew.
    """
    return _free_staging()


def _gpu(device: object) -> int | Literal["current"] | None:
    """``None`` for host memory, the GPU number, or ``"current"``."""
    if isinstance(device, int) and not isinstance(device, bool):
        if device < 0:
            raise ValueError(f"a GPU number is 0 or more, not {device}")
        return device
    s = str(device).strip().lower()
    if s == "cpu":
        return None
    if s == "cuda":
        return "current"
    if s.startswith("cuda:") and s[5:].isdigit():
        return int(s[5:])
    raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or a GPU number N, not {device!r}")


def _import(fw: str) -> Any:
    """The framework's module (imported only now), or an ImportError
    saying what to install."""
    if fw == "dlpack":
        return None
    try:
        return __import__(fw)
    except ImportError as e:
        pip = {"numpy": "numpy", "torch": "torch", "cupy": "cupy-cuda12x"}[fw]
        raise ImportError(
            f"framework={fw!r} needs {fw}, which cannot be imported ({e}); "
            f"install it (pip install {pip}) or choose another framework"
        ) from e


def _current_gpu(fw: str, lib: Any) -> int:
    """The framework's current GPU, for ``device="cuda"``."""
    if fw == "torch":
        return int(lib.cuda.current_device())
    if fw == "cupy":
        return int(lib.cuda.Device().id)
    return 0


def _numpy_typed(t: Tensor) -> Tensor:
    """``t``, or its raw view when NumPy/CuPy lack its type."""
    return t if t.dtype in _NUMPY else t.raw()


def _numpy(np: Any, memory: Any, tensors: list[tuple[str, Tensor]]) -> list[tuple[str, Any]]:
    """Arrays viewing ``memory`` (each holds it through the memoryview)."""
    view = memoryview(memory)
    dtypes = {k: np.dtype(v) for k, v in _NUMPY.items()}
    out = []
    for name, t in tensors:
        t = _numpy_typed(t)
        dt = dtypes[t.dtype]
        a = np.frombuffer(view, dtype=dt, count=t.nbytes // dt.itemsize, offset=t.offset)
        out.append((name, a.reshape(t.shape)))
    return out


class _TorchConverter:
    """Tensors to torch through DLPack, each type the way this torch takes
    it (learnt once per type): by its DLPack code, or as a ``.view`` of
    ``uint8`` where this torch's DLPack cannot name it, or raw where this
    torch has no such type."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.by_code: dict[str, bool] = {}

    def __call__(self, t: Tensor) -> Any:
        torch = self.torch
        name = _TORCH.get(t.dtype)
        target = getattr(torch, name, None) if name else None
        if target is None:
            return torch.from_dlpack(t.raw())
        if self.by_code.get(t.dtype, True):
            try:
                x = torch.from_dlpack(t)
                self.by_code[t.dtype] = True
                return x
            except (BufferError, RuntimeError, TypeError, ValueError):
                if t.dtype in _TORCH_DLPACK_ALWAYS or self.by_code.get(t.dtype):
                    raise
                self.by_code[t.dtype] = False
        return torch.from_dlpack(t.raw()).view(target)
