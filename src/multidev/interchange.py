"""Weights the frameworks wrote themselves, read without running any of their code.

``md.load_native(path)`` reads PyTorch ``.pt``/``.pth`` (``torch.save``'s zip archive), Keras 3
``.weights.h5``, Paddle ``.pdparams`` and MXNet ``.params`` files on every backend, with no
framework installed: the two pickle-based formats go through an unpickler that admits only the
few names a weights file holds (dicts, lists, numbers, strings, NumPy arrays, torch's tensor
rebuild functions, each replaced by code of multidev's own) and refuses everything else with
``md.CheckpointError`` before it runs. Every size a file claims is checked against the bytes it
has before anything is allocated.

What comes back is a :class:`NativeStateDict`: multidev's (PyTorch's) key names where the name
alone decides them (Paddle's ``_mean``/``_variance``, MXNet's ``gamma``/``beta`` and RNN names),
and ``load_state_dict`` finishes what only the model can decide: Paddle's and Keras' ``(in, out)``
Linear weights are transposed, Keras' HWIO kernels become OIHW, and Keras layers are matched to
the model's by type and creation order.
"""

from __future__ import annotations

import io
import os
import pickle
import re
import struct
import zipfile
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import CheckpointError

__all__ = ["FORMATS", "NativeStateDict", "load_native"]

#: file suffix -> framework whose format it is
FORMATS = {
    ".pt": "torch",
    ".pth": "torch",
    ".weights.h5": "keras",
    ".h5": "keras",
    ".pdparams": "paddle",
    ".params": "mxnet",
}
#: the largest pickle stream (torch's data.pkl) read into memory: names and structure only
_MAX_PICKLE_INDEX = 256 * 2**20


class NativeStateDict(OrderedDict):
    """A state dict read from another framework's file: ``{name: Tensor}`` (or nested values for
    an optimiser's state), with ``framework`` naming the writer. Its layout differences that only
    the model can resolve are resolved by ``Block.load_state_dict`` through :meth:`for_model`."""

    framework: str = ""

    def for_model(self, model: Any) -> OrderedDict[str, Any]:
        """This state dict in ``model``'s names and layouts."""
        if self.framework == "keras":
            return _keras_for_model(self, model)
        out: OrderedDict[str, Any] = OrderedDict(self)
        from .nn import Linear

        own = model.state_dict(keep_vars=True)
        if self.framework == "paddle":
            _paddle_for_model(out, own)
        for name, module in model.named_modules():
            prefix = f"{name}." if name else ""
            key = prefix + "weight"
            if self.framework == "paddle" and isinstance(module, Linear) and key in out:
                out[key] = _transpose(out[key], (1, 0))
        # Paddle, MXNet and Keras keep no batch count: the model's own stays
        for key, value in own.items():
            if key.endswith("num_batches_tracked") and key not in out and self.framework != "torch":
                out[key] = value
        return out


def _bad(path: str, reason: str) -> CheckpointError:
    return CheckpointError(path, reason)


# ----------------------------------------------------------------------------- restricted pickle

_NUMERIC_KINDS = "biufc"


def _numeric_dtype(path: str, spec: Any) -> np.dtype:
    try:
        dt = np.dtype(spec)
    except TypeError:
        raise _bad(path, f"an array dtype {spec!r} that is not a NumPy dtype") from None
    if dt.kind not in _NUMERIC_KINDS or dt.fields is not None or dt.subdtype is not None:
        raise _bad(path, f"an array of dtype {dt}: only numbers and bools are weights")
    return dt


def _shape(path: str, shape: Any) -> tuple[int, ...]:
    if not isinstance(shape, tuple) or not all(type(n) is int and 0 <= n < 2**62 for n in shape):
        raise _bad(path, f"an array shape {shape!r} that is not a tuple of sizes")
    return shape


class _DType:
    """``numpy.dtype`` as a pickle rebuilds it: the name, then the byte order by BUILD."""

    def __init__(self, path: str, name: Any, *_: Any) -> None:
        self.path, self.dtype = path, _numeric_dtype(path, name)

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) > 1 and state[1] in ("<", ">", "|", "="):
            self.dtype = self.dtype.newbyteorder(state[1])


class _Array:
    """``numpy.core.multiarray._reconstruct(ndarray, ...)`` then BUILD with NumPy's state
    ``(version, shape, dtype, fortran, raw bytes)``: the array, from the raw bytes only."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.array: np.ndarray | None = None

    def __setstate__(self, state: Any) -> None:
        if not (isinstance(state, tuple) and len(state) == 5 and isinstance(state[2], _DType)):
            raise _bad(self.path, "an array whose pickled state is not NumPy's")
        _, shape, dt, fortran, raw = state
        shape, dtype = _shape(self.path, shape), dt.dtype
        if not isinstance(raw, bytes | bytearray):
            raise _bad(self.path, "an array whose data is not raw bytes")
        need = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if len(raw) != need:
            raise _bad(self.path, f"an array of shape {shape} {dtype} with {len(raw)} bytes")
        flat = np.frombuffer(raw, dtype=dtype)
        arr = flat.reshape(shape[::-1]).T if fortran else flat.reshape(shape)
        self.array = np.array(arr, dtype=dtype.newbyteorder("="), order="C")


class _StorageType:
    def __init__(self, dtype: np.dtype) -> None:
        self.dtype = dtype


#: torch's storage classes as ``torch.save`` names them -> NumPy dtype
_TORCH_STORAGES = {
    "DoubleStorage": np.float64,
    "FloatStorage": np.float32,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
    "ComplexFloatStorage": np.complex64,
    "ComplexDoubleStorage": np.complex128,
}


#: what unpickling a truncated or corrupted stream raises
_DAMAGED = (
    pickle.UnpicklingError,
    EOFError,
    ValueError,
    TypeError,
    IndexError,
    KeyError,
    AttributeError,
    OverflowError,
    MemoryError,
    RecursionError,
)


class _Restricted(pickle.Unpickler):
    """An unpickler that resolves only the names in ``allowed`` (module, name) -> callable of
    multidev's; any other global raises CheckpointError before it is looked up."""

    def __init__(
        self,
        data: bytes,
        path: str,
        allowed: dict[tuple[str, str], Any],
        storage: Callable[[Any], Any] | None = None,
    ) -> None:
        super().__init__(io.BytesIO(data))
        self.path, self.allowed, self.storage = path, allowed, storage

    def find_class(self, module: str, name: str) -> Any:
        found = self.allowed.get((module, name))
        if found is None:
            raise _bad(
                self.path,
                f"the pickle names {module}.{name}, which a weights file never needs; "
                "refused without running it",
            )
        return found

    def load_checked(self) -> Any:
        """``load()``, with the errors of a damaged pickle as CheckpointError."""
        try:
            return self.load()
        except CheckpointError:
            raise
        except _DAMAGED as e:
            raise _bad(self.path, f"a damaged pickle ({type(e).__name__}: {e})") from None

    def persistent_load(self, pid: Any) -> Any:
        if self.storage is None:
            raise _bad(self.path, "a pickle with external references outside torch's archive")
        return self.storage(pid)


def _numpy_names(path: str) -> dict[tuple[str, str], Any]:
    def reconstruct(cls: Any, *_: Any) -> _Array:
        if cls is not _NDARRAY:
            raise _bad(path, "an array of a class other than numpy.ndarray")
        return _Array(path)

    def scalar(dt: Any, raw: Any = b"") -> Any:
        if (
            not isinstance(dt, _DType)
            or not isinstance(raw, bytes)
            or (len(raw) != dt.dtype.itemsize)
        ):
            raise _bad(path, "a NumPy scalar whose pickled state is not NumPy's")
        return np.frombuffer(raw, dtype=dt.dtype)[0]

    names: dict[tuple[str, str], Any] = {
        ("collections", "OrderedDict"): OrderedDict,
        ("numpy", "ndarray"): _NDARRAY,
        ("numpy", "dtype"): lambda *a: _DType(path, *a),
    }
    for module in ("numpy.core.multiarray", "numpy._core.multiarray"):
        names[module, "_reconstruct"] = reconstruct
        names[module, "scalar"] = scalar
    return names


_NDARRAY = object()  # stands for numpy.ndarray inside the restricted unpickler


def _unwrap(value: Any) -> Any:
    """Replace the unpickler's stand-ins (_Array) by the arrays they hold, recursively."""
    if isinstance(value, _Array):
        if value.array is None:
            raise CheckpointError(value.path, "an array without data")
        return value.array
    if isinstance(value, dict):
        out = type(value)() if type(value) in (dict, OrderedDict) else {}
        for k, v in value.items():
            if not isinstance(k, str | int):
                raise CheckpointError("", f"a dict key of type {type(k).__name__}")
            out[k] = _unwrap(v)
        return out
    if isinstance(value, list | tuple):
        return type(value)(_unwrap(v) for v in value)
    if value is None or isinstance(value, bool | int | float | str | np.ndarray | np.generic):
        return value
    raise CheckpointError("", f"a value of type {type(value).__name__}")


def _check_plain(path: str, value: Any) -> Any:
    try:
        return _unwrap(value)
    except CheckpointError as e:
        raise _bad(path, e.reason) from None


def _read_paddle(path: str) -> Any:
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(b"\x80"):
        raise _bad(path, "not a pickle (Paddle's .pdparams is one); the file starts otherwise")
    obj = _Restricted(data, path, _numpy_names(path)).load_checked()
    obj = _check_plain(path, obj)
    if isinstance(obj, dict):
        obj.pop("StructuredToParameterName@@", None)
    return obj


def _read_torch(path: str) -> Any:
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        with open(path, "rb") as f:
            head = f.read(2)
        hint = (
            "torch's legacy (pre-1.6) pickle format, which cannot be read without running it; "
            "re-save it with torch.save's default zip format"
            if head.startswith(b"\x80")
            else "not a zip archive (torch.save writes one)"
        )
        raise _bad(path, hint) from None
    with archive:
        pkl = [n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
        if len(pkl) != 1:
            raise _bad(path, "a zip archive without torch's data.pkl")
        root = pkl[0][: -len("data.pkl")]
        info = archive.getinfo(pkl[0])
        if info.file_size > _MAX_PICKLE_INDEX:
            raise _bad(path, f"a data.pkl of {info.file_size} bytes (at most {_MAX_PICKLE_INDEX})")
        byteorder = "little"
        if root + "byteorder" in archive.namelist():
            byteorder = archive.read(root + "byteorder").decode("ascii", "replace").strip()
            if byteorder not in ("little", "big"):
                raise _bad(path, f"a byteorder {byteorder!r}")
        storages: dict[str, np.ndarray] = {}

        def storage(pid: Any) -> Any:
            if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
                raise _bad(path, f"a persistent reference {pid!r:.80} that is not a storage")
            kind, key, _, numel = pid[1:]
            if (
                not isinstance(kind, _StorageType)
                or not isinstance(key, str)
                or type(numel) is not int
                or numel < 0
            ):
                raise _bad(path, "a storage reference of the wrong form")
            if key not in storages:
                name = f"{root}data/{key}"
                try:
                    entry = archive.getinfo(name)
                except KeyError:
                    raise _bad(path, f"no entry {name} for storage {key}") from None
                dtype = np.dtype(kind.dtype).newbyteorder("<" if byteorder == "little" else ">")
                need = numel * dtype.itemsize
                if entry.file_size != need:
                    raise _bad(path, f"storage {key} of {entry.file_size} bytes, expected {need}")
                with archive.open(entry) as f:
                    raw = f.read(need + 1)
                if len(raw) != need:
                    raise _bad(path, f"storage {key} of {len(raw)} bytes, expected {need}")
                storages[key] = np.frombuffer(raw, dtype=dtype)
            return storages[key]

        def rebuild(data: Any, offset: Any, size: Any, stride: Any, *_: Any) -> Any:
            if not isinstance(data, np.ndarray):
                raise _bad(path, "a tensor whose storage is not one of the archive's")
            size, stride = _shape(path, tuple(size)), _shape(path, tuple(stride))
            if type(offset) is not int or offset < 0 or len(size) != len(stride):
                raise _bad(path, "a tensor with a bad offset or stride")
            last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True) if n)
            if 0 not in size and last >= data.size:
                raise _bad(path, f"a tensor reaching element {last} of a storage of {data.size}")
            if 0 in size:
                return np.zeros(size, dtype=data.dtype.newbyteorder("="))
            view = np.lib.stride_tricks.as_strided(
                data[offset:],
                shape=size,
                strides=tuple(s * data.itemsize for s in stride),
                writeable=False,
            )
            return np.array(view, dtype=data.dtype.newbyteorder("="), order="C")

        allowed: dict[tuple[str, str], Any] = {
            ("collections", "OrderedDict"): OrderedDict,
            ("torch._utils", "_rebuild_tensor_v2"): rebuild,
            ("torch._utils", "_rebuild_parameter"): lambda data, *_: data,
            ("torch._utils", "_rebuild_parameter_with_state"): lambda data, *_: data,
            ("torch", "Size"): tuple,
        }
        for name, dt in _TORCH_STORAGES.items():
            allowed["torch", name] = _StorageType(np.dtype(dt))
        try:
            import ml_dtypes

            allowed["torch", "BFloat16Storage"] = _StorageType(np.dtype(ml_dtypes.bfloat16))
        except ImportError:  # pragma: no cover - ml_dtypes is a dependency
            pass
        unpickler = _Restricted(archive.read(pkl[0]), path, allowed, storage)
        obj = unpickler.load_checked()
    return _check_plain(path, obj)


# ----------------------------------------------------------------------------- MXNet .params

_MX_LIST_MAGIC = 0x112
_MX_ARRAY_MAGICS = (0xF993FAC9, 0xF993FACA)  # V2 (legacy shapes), V3 (NumPy shapes)
_MX_DTYPES = {
    0: np.float32,
    1: np.float64,
    2: np.float16,
    3: np.uint8,
    4: np.int32,
    5: np.int8,
    6: np.int64,
    7: np.bool_,
}


def _read_mxnet(path: str) -> Any:
    with open(path, "rb") as f:
        data = f.read()
    pos = 0

    def take(fmt: str) -> tuple:
        nonlocal pos
        size = struct.calcsize(fmt)
        if pos + size > len(data):
            raise _bad(path, f"truncated at byte {pos} (expected {size} more)")
        out = struct.unpack_from(fmt, data, pos)
        pos += size
        return out

    magic, _ = take("<QQ")
    if magic != _MX_LIST_MAGIC:
        raise _bad(
            path, f"not an MXNet NDArray file (magic {magic:#x}, expected {_MX_LIST_MAGIC:#x})"
        )
    (count,) = take("<Q")
    if count > len(data) // 16:
        raise _bad(path, f"{count} arrays claimed in {len(data)} bytes")
    arrays = []
    for i in range(count):
        array_magic, stype = take("<Ii")
        if array_magic not in _MX_ARRAY_MAGICS:
            raise _bad(
                path,
                f"array {i} in an NDArray format this reader does not know "
                f"(magic {array_magic:#x}); re-save it with MXNet 1.x",
            )
        if stype != 0:
            raise _bad(path, f"array {i} is sparse (storage type {stype}); save it dense")
        (ndim,) = take("<i")
        if not 0 <= ndim <= 32:
            raise _bad(path, f"array {i} with {ndim} dimensions")
        shape = take(f"<{ndim}q")
        if any(n < 0 for n in shape):
            raise _bad(path, f"array {i} of shape {shape}")
        if ndim == 0 and array_magic == _MX_ARRAY_MAGICS[0]:  # legacy: 0-d means empty
            arrays.append(np.zeros((0,), np.float32))
            continue
        take("<ii")  # the context it was on
        (flag,) = take("<i")
        if flag not in _MX_DTYPES:
            raise _bad(path, f"array {i} of MXNet dtype code {flag}, which has no NumPy twin here")
        dtype = np.dtype(_MX_DTYPES[flag]).newbyteorder("<")
        need = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if need > len(data) - pos:
            raise _bad(
                path, f"array {i} of shape {shape} needs {need} bytes; {len(data) - pos} left"
            )
        arr = np.frombuffer(data, dtype=dtype, count=need // dtype.itemsize, offset=pos)
        pos += need
        arrays.append(arr.reshape(shape).astype(dtype.newbyteorder("="), copy=True))
    (nnames,) = take("<Q")
    if nnames not in (0, count):
        raise _bad(path, f"{nnames} names for {count} arrays")
    names = []
    for _ in range(nnames):
        (length,) = take("<Q")
        if length > len(data) - pos:
            raise _bad(path, f"a name of {length} bytes with {len(data) - pos} left")
        names.append(data[pos : pos + length].decode("utf-8", "replace"))
        pos += length
    if not names:
        return arrays
    return OrderedDict(zip(names, arrays, strict=True))


def _mxnet_key(key: str) -> str:
    key = re.sub(r"^(arg|aux):", "", key)
    # Gluon 1.x saves a (unidirectional) RNN layer's weights under its unfused cells' names
    key = re.sub(r"(^|\.)_unfused\.(\d+)\.(i2h|h2h)_(weight|bias)$", r"\1l\2_\3_\4", key)
    head, _, last = key.rpartition(".")
    last = {
        "gamma": "weight",
        "beta": "bias",
        "moving_mean": "running_mean",
        "moving_var": "running_var",
    }.get(last, last)
    m = re.fullmatch(r"([lr])(\d+)_(i2h|h2h)_(weight|bias)", last)
    if m:
        side, layer, kind, what = m.groups()
        last = f"{what}_{'ih' if kind == 'i2h' else 'hh'}_l{layer}" + (
            "_reverse" if side == "r" else ""
        )
    return f"{head}.{last}" if head else last


def _paddle_for_model(out: OrderedDict[str, Any], own: dict[str, Any]) -> None:
    """Paddle's layouts that differ from multidev's beyond one key's name, resolved in place:
    its RNNs store each weight twice (``weight_ih_l0`` and the cell's ``0.cell.weight_ih``, one
    tensor): the copy multidev lacks goes; its attention has separate (in, out) ``q_proj``,
    ``k_proj`` and ``v_proj`` Linears where multidev (as PyTorch) has one (out, in)
    ``in_proj_weight``: they are transposed and stacked in q, k, v order."""
    from .ops import concat

    for key in [k for k in out if k not in own]:
        m = re.fullmatch(r"(.*?)(\d+)\.cell\.(weight|bias)_(ih|hh)", key)
        if m and f"{m[1]}{m[3]}_{m[4]}_l{m[2]}" in out:
            del out[key]
    for key in [k for k in own if k.endswith("in_proj_weight")]:
        head = key[: -len("in_proj_weight")]
        parts = [f"{head}{p}_proj.weight" for p in "qkv"]
        if key in out or not all(p in out for p in parts):
            continue
        out[key] = concat([_transpose(out.pop(p), (1, 0)) for p in parts], axis=0)
        biases = [f"{head}{p}_proj.bias" for p in "qkv"]
        if all(b in out for b in biases):
            out[f"{head}in_proj_bias"] = concat([out.pop(b) for b in biases], axis=0)


def _paddle_key(key: str) -> str:
    head, _, last = key.rpartition(".")
    last = {"_mean": "running_mean", "_variance": "running_var"}.get(last, last)
    return f"{head}.{last}" if head else last


# ----------------------------------------------------------------------------- Keras .weights.h5

#: Keras layer kind (its default name without the counter) -> multidev block class name
_KERAS_KINDS = {
    "dense": "Linear",
    "conv2d": "Conv2d",
    "conv1d": "Conv1d",
    "batch_normalization": "BatchNorm",
    "layer_normalization": "LayerNorm",
    "embedding": "Embedding",
}


def _read_keras(path: str) -> Any:
    try:
        import h5py
    except ImportError:
        raise ImportError(
            "Reading Keras .weights.h5 files needs h5py: pip install 'multidev[interchange]'"
        ) from None
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise _bad(path, f"not an HDF5 file ({e})") from None
    out: OrderedDict[str, Any] = OrderedDict()
    with f:

        def visit(name: str, obj: Any) -> None:
            if isinstance(obj, h5py.Dataset):
                # a recurrent layer keeps its weights in its cell: layers/gru/cell/vars/0;
                # an attention layer in its projections: layers/multi_head_attention/
                # query_dense/vars/0, read as multi_head_attention/vars/query_dense/0
                m = re.fullmatch(
                    r"(?:.*/)?layers/([^/]+)/(?:cell/|((?:query|key|value|output)_dense)/)?"
                    r"vars/(\d+)",
                    name,
                )
                if m is None:
                    return
                if obj.dtype.kind not in _NUMERIC_KINDS or obj.size > 2**40:
                    raise _bad(path, f"dataset {name} of dtype {obj.dtype}")
                var = f"{m[2]}/{m[3]}" if m[2] else m[3]
                out[f"{m[1]}/vars/{var}"] = np.asarray(obj[()])

        try:
            f.visititems(visit)
        except (OSError, ValueError, KeyError) as e:
            raise _bad(path, f"a damaged HDF5 file ({e})") from None
    if not out:
        raise _bad(path, "no Keras layer weights (layers/<name>/vars/<i>)")
    return out


def _keras_layers(sd: NativeStateDict) -> dict[str, list[tuple[int, str]]]:
    """Keras layer names grouped by kind, each kind in creation order (its name's counter)."""
    kinds: dict[str, list[tuple[int, str]]] = {}
    for key in sd:
        layer = key.split("/vars/")[0]
        m = re.fullmatch(r"(.+?)(?:_(\d+))?", layer)
        assert m is not None
        kind, number = m[1], int(m[2] or 0)
        entry = (number, layer)
        if entry not in kinds.setdefault(kind, []):
            kinds[kind].append(entry)
    for entries in kinds.values():
        entries.sort()
    return kinds


def _keras_for_model(sd: NativeStateDict, model: Any) -> OrderedDict[str, Any]:
    from .nn import (
        GRU,
        BatchNorm1d,
        BatchNorm2d,
        Conv1d,
        Conv2d,
        Embedding,
        LayerNorm,
        Linear,
        MultiheadAttention,
    )

    kinds = _keras_layers(sd)
    used = dict.fromkeys(kinds, 0)
    order = [
        (Linear, "dense"),
        (Conv2d, "conv2d"),
        (Conv1d, "conv1d"),
        (BatchNorm1d, "batch_normalization"),
        (BatchNorm2d, "batch_normalization"),
        (LayerNorm, "layer_normalization"),
        (Embedding, "embedding"),
        (GRU, "gru"),
        (MultiheadAttention, "multi_head_attention"),
    ]
    out: OrderedDict[str, Any] = OrderedDict()
    own = model.state_dict(keep_vars=True)
    inside: list[str] = []  # attention blocks read whole: their out_proj Linear included
    for name, module in model.named_modules():
        if any(name.startswith(p) for p in inside):
            continue
        kind = next((k for cls, k in order if type(module) is cls or isinstance(module, cls)), None)
        if kind is None:
            continue
        if used.get(kind, 0) >= len(kinds.get(kind, [])):
            raise CheckpointError(
                "",
                f"the model's {type(module).__name__} {name!r} has no Keras '{kind}' layer "
                f"left in the file (it has {len(kinds.get(kind, []))})",
            )
        prefix = f"{name}." if name else ""
        if kind == "gru":  # one Keras GRU layer per layer of multidev's stacked GRU
            if getattr(module, "bidirectional", False):
                raise CheckpointError("", f"the model's GRU {name!r} is bidirectional: a Keras "
                                      "file holds it as a Bidirectional wrapper, not read here")  # fmt: skip
            for i in range(module.num_layers):
                if used[kind] >= len(kinds[kind]):
                    raise CheckpointError(
                        "", f"the model's GRU {name!r} has {module.num_layers} layers; the "
                        f"Keras file has {len(kinds[kind])} GRU layers"
                    )  # fmt: skip
                layer = kinds[kind][used[kind]][1]
                used[kind] += 1
                out.update(_keras_gru(sd, layer, f"{prefix}", i))
            continue
        layer = kinds[kind][used[kind]][1]
        used[kind] += 1
        if kind == "multi_head_attention":
            inside.append(prefix)
            out.update(_keras_attention(sd, layer, prefix))
            continue
        values = [sd[f"{layer}/vars/{i}"] for i in range(4) if f"{layer}/vars/{i}" in sd]
        if kind == "dense":
            names, values[0] = ["weight", "bias"], _transpose(values[0], (1, 0))
        elif kind == "conv2d":
            names, values[0] = ["weight", "bias"], _transpose(values[0], (3, 2, 0, 1))
        elif kind == "conv1d":
            names, values[0] = ["weight", "bias"], _transpose(values[0], (2, 1, 0))
        elif kind == "batch_normalization":
            names = ["weight", "bias", "running_mean", "running_var"]
        elif kind == "layer_normalization":
            names = ["weight", "bias"]
        else:
            names = ["weight"]
        for n, v in zip(names, values, strict=False):
            out[prefix + n] = v
        key = prefix + "num_batches_tracked"
        if key in own:
            out[key] = own[key]
    # a block's own weight (a learned position table) from a custom Keras layer of that name
    # holding one weight: Keras names a layer class Position "position"
    for key in own:
        leaf = key.rpartition(".")[2]
        if key not in out and used.get(leaf) == 0 and len(kinds[leaf]) == 1:
            value = sd.get(f"{kinds[leaf][0][1]}/vars/0")
            if value is not None and f"{kinds[leaf][0][1]}/vars/1" not in sd:
                out[key] = value
                used[leaf] = 1
    left = {k: len(v) - used[k] for k, v in kinds.items() if len(v) > used[k]}
    if left:
        out.update((f"<keras layer {k}>", None) for k in left)  # reported as unexpected keys
    return out


def _keras_attention(sd: NativeStateDict, layer: str, prefix: str) -> dict[str, Any]:
    """A Keras MultiHeadAttention as multidev's (PyTorch's) MultiheadAttention: Keras keeps
    (d, heads, head_dim) query/key/value kernels and a (heads, head_dim, d) output kernel,
    multidev one (3d, d) ``in_proj_weight`` (q, k, v stacked, heads in order) and an (d, d)
    ``out_proj``."""
    from .ops import concat, reshape

    def var(sub: str, i: int) -> Any:
        key = f"{layer}/vars/{sub}_dense/{i}"
        if key not in sd:
            raise CheckpointError(
                "", f"Keras attention layer {layer!r} has no {sub}_dense weight {i} (a layer "
                "without biases, or with key_dim * num_heads != the model's width, is not read)"
            )  # fmt: skip
        return sd[key]

    d = var("query", 0).shape[0]
    out = {
        f"{prefix}in_proj_weight": concat(
            [_transpose(reshape(var(s, 0), (d, -1)), (1, 0)) for s in ("query", "key", "value")],
            axis=0,
        ),
        f"{prefix}in_proj_bias": concat(
            [reshape(var(s, 1), (-1,)) for s in ("query", "key", "value")], axis=0
        ),
        f"{prefix}out_proj.weight": _transpose(reshape(var("output", 0), (-1, d)), (1, 0)),
        f"{prefix}out_proj.bias": var("output", 1),
    }
    return out


def _keras_gru(sd: NativeStateDict, layer: str, prefix: str, index: int) -> dict[str, Any]:
    """One Keras GRU layer as layer ``index`` of multidev's GRU: Keras keeps (in, 3H) kernels
    with the gates in z, r, h order, multidev (as PyTorch) (3H, in) weights in r, z, n order.
    Only ``reset_after=True`` (Keras' default, a (2, 3H) bias: input and recurrent) computes
    what multidev's GRU computes."""
    from .ops import concat

    kernel, recurrent, bias = (sd[f"{layer}/vars/{i}"] for i in range(3))
    if len(bias.shape) != 2:
        raise CheckpointError(
            "",
            f"Keras layer {layer!r} is a GRU with reset_after=False (a bias of shape "
            f"{tuple(bias.shape)}): its candidate state is computed differently from "
            "multidev's (PyTorch's) GRU. Save the Keras model with reset_after=True",
        )
    h = kernel.shape[-1] // 3

    def gates(value: Any) -> Any:  # z, r, h along the last axis -> r, z, n
        return concat([value[..., h : 2 * h], value[..., :h], value[..., 2 * h :]], axis=-1)

    return {
        f"{prefix}weight_ih_l{index}": _transpose(gates(kernel), (1, 0)),
        f"{prefix}weight_hh_l{index}": _transpose(gates(recurrent), (1, 0)),
        f"{prefix}bias_ih_l{index}": gates(bias[0]),
        f"{prefix}bias_hh_l{index}": gates(bias[1]),
    }


def _transpose(value: Any, axes: tuple[int, ...]) -> Any:
    from .ops import permute_dims

    return permute_dims(value, axes)


# ----------------------------------------------------------------------------- the entry point

_READERS: dict[str, Callable[[str], Any]] = {
    "torch": _read_torch,
    "paddle": _read_paddle,
    "mxnet": _read_mxnet,
    "keras": _read_keras,
}
_KEYS: dict[str, Callable[[str], str]] = {"paddle": _paddle_key, "mxnet": _mxnet_key}


def _framework_of(path: str) -> str:
    lower = path.lower()
    for suffix in sorted(FORMATS, key=len, reverse=True):
        if lower.endswith(suffix):
            return FORMATS[suffix]
    raise ValueError(
        f"Expected a weights file named *.pt, *.pth, *.weights.h5, *.pdparams or *.params, or "
        f"framework= one of {sorted(_READERS)}. Received: {path!r}"
    )


def load_native(
    path: str | os.PathLike, framework: str | None = None, *, device: Any = None
) -> Any:
    """Read weights that PyTorch, Keras 3, Paddle or MXNet saved themselves, on any backend.

    ``framework`` (``"torch"``, ``"keras"``, ``"paddle"``, ``"mxnet"``; ``"tensorflow"`` means
    Keras) defaults to the file's suffix (``.pt``/``.pth``, ``.weights.h5``, ``.pdparams``,
    ``.params``). A state dict comes back as a :class:`NativeStateDict` of md.Tensors on
    ``device`` (default: the default device) with multidev's names, ready for
    ``net.load_state_dict``; other structures (an optimiser's ``state_dict()`` saved with
    ``torch.save``) come back as they were, arrays as md.Tensors. Never executes a pickle:
    a file whose pickle names anything but weights, or that is truncated or corrupt, raises
    ``md.CheckpointError``; FileNotFoundError if it is missing.
    """
    from .creation import asarray

    path = os.fspath(path)
    name = {"tensorflow": "keras"}.get(framework or "", framework) or _framework_of(path)
    if name not in _READERS:
        raise ValueError(f"Expected framework one of {sorted(_READERS)}. Received: {framework!r}")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No such weights file: {path!r}")
    raw = _READERS[name](path)
    rename = _KEYS.get(name, lambda k: k)

    def convert(value: Any) -> Any:
        if isinstance(value, np.ndarray | np.generic):
            return asarray(np.asarray(value), device=device)
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(convert(v) for v in value)
        return value

    if (
        isinstance(raw, dict)
        and raw
        and all(
            isinstance(k, str) and isinstance(v, np.ndarray | np.generic) for k, v in raw.items()
        )
    ):
        out = NativeStateDict((rename(k), convert(v)) for k, v in raw.items())
        out.framework = name
        return out
    return convert(raw)
