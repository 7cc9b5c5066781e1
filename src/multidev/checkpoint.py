"""Checkpoints: ``md.save(obj, path)`` and ``md.load(path, device=None)``.

A checkpoint is a plain safetensors file: any safetensors reader gets its tensors. Its
``__metadata__`` adds what multidev needs to give back exactly what was saved:

- ``header_crc32c``: CRC32C of the header bytes after this value (always the first key),
- ``format`` (``"multidev"``), ``format_version``, ``backend`` (the saving backend),
- ``structure``: the nested lists/tuples/dicts as JSON, leaves naming tensors or holding
  plain Python values (int, float as its IEEE 754 bits, bool, str, None); dict keys are
  strings or ints,
- ``crc32c``: CRC32C of each tensor's bytes.

Every value goes through host NumPy, so any backend reads what any backend wrote, bit for
bit. Writes are atomic (temp file in the same folder, fsync, ``os.replace``, fsync of the
folder). Reads check the header against the file size and every offset, shape and
checksum before trusting it; any defect raises ``md.CheckpointError``. No pickle, ever.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import stat
import struct
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import google_crc32c
import numpy as np

from . import _safetensors as st
from . import dtypes as _dt
from . import registry
from .contract import ArrayLimits
from .device import as_device, check_available, default_device
from .dispatch import new_tensor
from .errors import CheckpointError
from .tensors import Tensor

__all__ = ["FORMAT", "FORMAT_VERSION", "ArrayLimits", "lacks_dtype", "limits_of", "load", "save"]

FORMAT = "multidev"
#: The newest format this module reads. Version 2 added plain Python values and int dict
#: keys to the structure; files without them are still written as version 1.
FORMAT_VERSION = 2
#: Largest plain int (in bits, sign aside) that save writes and load accepts.
MAX_INT_BITS = 4096
#: Deepest nesting of lists/tuples/dicts that save writes and load accepts.
MAX_DEPTH = 100

_CRC_KEY = "header_crc32c"
_PREFIX = b'{"__metadata__":{"' + _CRC_KEY.encode() + b'":"'
_BLANK = "00000000"
_TMP_SUFFIX = ".multidev-tmp"
_WRITE_BUFFER = 1 << 20
_OPTIONAL_DTYPES = frozenset({"bfloat16", "float16", "float64"})
_HEX = frozenset("0123456789abcdef")


_NUMPY_LIMITS = ArrayLimits()


def limits_of(bk: Any) -> ArrayLimits:
    """The array limits of the adapter ``bk``: its ``array_limits`` within NumPy's (every
    loaded tensor passes through a host NumPy array)."""
    own = bk.array_limits
    return ArrayLimits(*(min(a, b) for a, b in zip(own, _NUMPY_LIMITS, strict=True)))


def _crc(buf) -> int:
    return google_crc32c.value(buf)


_lacking: dict[tuple[str, _dt.DType], bool] = {}


def lacks_dtype(bk: Any, dt: _dt.DType) -> bool:
    """Whether the adapter ``bk`` cannot hold ``dt``: an optional dtype (float16, bfloat16,
    float64) missing from its capabilities, or one its ``native_dtype`` refuses."""
    key = (bk.name, dt)
    lacks = _lacking.get(key)
    if lacks is None:
        lacks = dt.name in _OPTIONAL_DTYPES and dt.name not in bk.capabilities
        if not lacks:
            try:
                bk.native_dtype(dt)
            except TypeError:
                lacks = True
        _lacking[key] = lacks
    return lacks


# ====================================================================================== save


def save(obj: Any, path: str | os.PathLike, *, rank: int | None = None) -> None:
    """Write a Tensor, or lists/tuples/dicts nesting Tensors and plain Python values (int,
    float, bool, str, None), to ``path``. Dict keys are str or int, so ``net.state_dict()``
    and an optimiser's or scheduler's ``state_dict()`` save as they are.

    The file is a safetensors file; a tensor that appears twice (tied) is stored once.
    The write is atomic: ``path`` holds either its previous content or the new one, even
    if the process is killed; a replaced file keeps its permission bits. Raises TypeError
    or ValueError (object not saveable, such as a complex128 tensor, which safetensors has
    no code for, or a header too large for its data; no file is touched) or OSError (e.g. a full disk; the previous file is kept, no temp file left).

    ``rank``: in a process group (``md.distributed.init_process_group()``), only that rank
    writes and every rank returns once the file is written (a barrier), so that N processes
    saving the same checkpoint write it once; without a group the process writes.
    """
    if rank is not None:
        from . import distributed
        from .creation import full

        if distributed.is_initialized():
            world = distributed.get_world_size()
            if not 0 <= rank < world:
                raise ValueError(f"Expected rank in [0, {world}). Received: {rank}")
            failure: BaseException | None = None
            if distributed.get_rank() == rank:
                try:
                    save(obj, path)
                except Exception as e:
                    failure = e
            # an all-reduce of the writer's outcome doubles as the barrier: every rank learns
            # that the write failed instead of going on as if the file were there
            flag = full((1,), 1.0 if failure else 0.0, device=distributed.device())
            distributed.all_reduce(flag)
            if failure is not None:
                raise failure
            if flag.item() != 0:
                raise distributed.DistributedError(
                    f"Expected rank {rank} to write {_fspath(path)!r}. Received: a failure on "
                    "that rank (its own error says why); no rank goes on without the file."
                )
            return
    path = _fspath(path)
    plan = _Plan(obj)
    plan.layout()
    if os.path.isdir(path):
        raise IsADirectoryError(
            f"Expected a file path for md.save. Received: {path!r}, a directory"
        )
    folder, base = os.path.split(os.path.abspath(path))
    _remove_stale_temps(folder, base)
    mode = _mode_of(path)
    # the name is chosen before the file is created and the file is created inside the try:
    # a KeyboardInterrupt that lands just after the open still finds the name to unlink
    tmp = _temp_name(folder, base)
    try:
        fd, tmp = _create_temp(folder, base, tmp)
        with os.fdopen(fd, "wb", buffering=_WRITE_BUFFER) as f:
            if mode is not None:
                os.chmod(fd if os.chmod in os.supports_fd else tmp, mode)
            plan.write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_folder(folder)


def _mode_of(path: str) -> int | None:
    """The permission bits of the file a save replaces (None if there is none)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None


def _fspath(path: Any) -> str:
    try:
        p = os.fspath(path)
    except TypeError:
        raise TypeError(
            f"Expected a file path (str or os.PathLike). Received: {type(path).__name__}"
        ) from None
    return os.fsdecode(p)


class _Plan:
    """A validated object to save: its structure and its distinct tensors, in order."""

    def __init__(self, obj: Any) -> None:
        self.tensors: list[tuple[str, Tensor]] = []
        self._names: set[str] = {st.METADATA}
        self._by_native: dict[int, str] = {}
        self._keep: list[Any] = []
        self._open: set[int] = set()
        self.plain = False
        self.structure = self._node(obj, [], "obj", 0)

    def _node(self, obj: Any, parts: list[str], loc: str, depth: int) -> Any:
        if isinstance(obj, Tensor):
            if obj._dtype not in st.CODE:
                raise TypeError(
                    f"Expected tensors of a dtype safetensors stores (complex64 among the "
                    f"complex ones). Received: {obj._dtype.name} at {loc}. Save md.real(x) "
                    "and md.imag(x) (float64) instead, or cast it to complex64."
                )
            native = obj.native
            name = self._by_native.get(id(native))
            if name is None:
                name = self._fresh(".".join(parts) or "tensor")
                self._by_native[id(native)] = name
                self._keep.append(native)
                self.tensors.append((name, obj))
            return {"tensor": name}
        plain = _plain_node(obj, loc)
        if plain is not None:
            self.plain = True
            return plain
        if depth >= MAX_DEPTH:
            raise ValueError(
                f"Expected at most {MAX_DEPTH} levels of nesting. Received: deeper at {loc}"
            )
        if isinstance(obj, (list, tuple, Mapping)):
            if id(obj) in self._open:
                raise ValueError(f"Expected a tree of containers. Received: {loc} contains itself")
            self._open.add(id(obj))
            try:
                return self._container(obj, parts, loc, depth)
            finally:
                self._open.discard(id(obj))
        raise TypeError(
            "Expected a Tensor, a plain int/float/bool/str/None, or lists/tuples/dicts "
            f"(str or int keys) nesting them. Received: {type(obj).__name__} at {loc}. "
            "Convert arrays with md.asarray, and NumPy scalars with int() or float()."
        )

    def _container(self, obj: Any, parts: list[str], loc: str, depth: int) -> Any:
        if isinstance(obj, Mapping):
            items = []
            for k, v in obj.items():
                if type(k) is int:
                    _check_int(k, f"key in {loc}")
                    self.plain = True
                elif type(k) is not str:
                    raise TypeError(
                        f"Expected str or int dictionary keys (as in a state dict). Received: key "
                        f"{k!r:.80} ({type(k).__name__}) in {loc}. Convert the keys with str()."
                    )
                items.append([k, self._node(v, [*parts, str(k)], f"{loc}[{k!r}]", depth + 1)])
            kind = "ordered_dict" if isinstance(obj, OrderedDict) else "dict"
            return {kind: items}
        kind = "list" if isinstance(obj, list) else "tuple"
        return {
            kind: [
                self._node(v, [*parts, str(i)], f"{loc}[{i}]", depth + 1) for i, v in enumerate(obj)
            ]
        }

    def _fresh(self, name: str) -> str:
        out, n = name, 0
        while out in self._names:
            n += 1
            out = f"{name}#{n}"
        self._names.add(out)
        return out

    def _metadata(self, crcs: dict[str, str]) -> dict[str, str]:
        backends = sorted({t.backend for _, t in self.tensors}) or [registry.get_backend()]
        return {
            _CRC_KEY: _BLANK,
            "format": FORMAT,
            "format_version": "2" if self.plain else "1",
            "backend": ",".join(backends),
            "structure": json.dumps(self.structure, separators=(",", ":")),
            "crc32c": json.dumps(crcs, separators=(",", ":")),
        }

    def layout(self) -> None:
        """Place the tensors (widest dtype first) and encode the header with blank checksums;
        ValueError if loading it would exceed the header memory budget of ``md.load``."""
        specs = [(name, t, t.dtype, tuple(t.shape)) for name, t in self.tensors]
        self.order = sorted(range(len(specs)), key=lambda i: -specs[i][2].itemsize)
        self.entries, pos = [], 0
        for i in self.order:
            name, _, dt, shape = specs[i]
            n = st.nbytes_of(dt, shape)
            self.entries.append(st.Entry(name, dt, shape, pos, pos + n))
            pos += n
        self.crcs = dict.fromkeys((e.name for e in self.entries), _BLANK)
        meta = self._metadata(self.crcs)
        self.blank = st.encode_header(meta, self.entries)
        cost = (
            st.ENTRY_COST * len(self.entries)
            + st.json_cost(self.blank[8:])
            + 2 * st.json_cost(meta["structure"])
            + st.json_cost(meta["crc32c"])
        )
        limit = st.HEADER_ALLOWANCE + st.HEADER_PER_DATA_BYTE * pos
        if cost > limit:
            raise ValueError(
                f"Expected a header that md.load can parse within {limit} bytes of memory "
                f"({st.HEADER_ALLOWANCE} + {st.HEADER_PER_DATA_BYTE} per byte of tensor data). "
                f"Received: {len(self.entries)} tensors of {pos} bytes whose header and "
                f"structure need about {cost}. Save fewer, larger tensors (e.g. md.stack "
                "them) or fewer plain values."
            )

    def write(self, f) -> None:
        """Header with blank checksums, then each tensor's bytes, then the final header."""
        specs = [t for _, t in self.tensors]
        entries, order, crcs, blank = self.entries, self.order, self.crcs, self.blank
        f.write(blank)
        for e, i in zip(entries, order, strict=True):
            flat = st.readonly_bytes(_host(specs[i], e))
            crcs[e.name] = f"{_crc(flat):08x}"
            f.write(flat)
        final = _seal(st.encode_header(self._metadata(crcs), entries))
        if len(final) != len(blank):
            raise RuntimeError("checkpoint header changed size while being written")
        f.flush()
        f.seek(0)
        f.write(final)


def _check_int(v: int, loc: str) -> None:
    if v.bit_length() > MAX_INT_BITS:
        raise ValueError(
            f"Expected ints of at most {MAX_INT_BITS} bits. Received: {v.bit_length()} bits "
            f"at {loc}. Save such a number as a str."
        )


def _plain_node(obj: Any, loc: str) -> dict | None:
    """The structure node of a plain Python value (exact types only), else None.
    A float is stored as the hex of its IEEE 754 bits, so NaN payloads and -0.0 survive."""
    kind = type(obj)
    if kind is float:
        return {"float": struct.pack(">d", obj).hex()}
    if kind is int:
        _check_int(obj, loc)
        return {"int": obj}
    if kind is bool:
        return {"bool": obj}
    if kind is str:
        return {"str": obj}
    if obj is None:
        return {"none": None}
    return None


def _seal(header: bytes) -> bytes:
    """Put the header's own CRC32C (of the bytes after the CRC value) into it."""
    start = 8 + len(_PREFIX)
    value = f"{_crc(header[start + 8 :]):08x}".encode()
    return header[:start] + value + header[start + 8 :]


def _host(t: Tensor, e: st.Entry) -> np.ndarray:
    """The tensor's logical values as a C-contiguous host array of the entry's dtype."""
    arr = np.asarray(t.numpy())
    npdt = e.dtype.numpy
    if arr.dtype != npdt:
        arr = arr.astype(npdt)
    if arr.shape != e.shape:
        raise RuntimeError(
            f"Expected the {t.backend} backend to give a host array of shape {e.shape} for "
            f"tensor {e.name!r}. Received: shape {arr.shape}."
        )
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")
    return arr


# ------------------------------------------------------------------------- atomic writes


def _host_tag() -> str:
    return f"{_crc(socket.gethostname().encode()):08x}"


#: Bytes of the target's name kept in its temp files' names (a name may be 255 bytes).
_TEMP_NAME_BYTES = 100
#: Largest pid field the sweep looks at (a C int; larger ones are not ours).
_MAX_PID = 2**31 - 1


def _temp_prefix(base: str) -> str:
    """``.<name>.``, the name cut to ``_TEMP_NAME_BYTES`` bytes on a character boundary."""
    raw = os.fsencode(base)
    if len(raw) > _TEMP_NAME_BYTES:
        base = raw[:_TEMP_NAME_BYTES].decode("utf-8", "ignore")
    return f".{base}."


def _temp_name(folder: str, base: str) -> str:
    """A temp file name beside the target; it records host and pid (see _remove_stale_temps)."""
    name = f"{_temp_prefix(base)}{_host_tag()}.{os.getpid()}.{secrets.token_hex(4)}{_TMP_SUFFIX}"
    return os.path.join(folder, name)


def _create_temp(folder: str, base: str, tmp: str) -> tuple[int, str]:
    """Create ``tmp`` (O_EXCL), or a new name when one exists; the descriptor and the name."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_BINARY", 0)
    while True:
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            tmp = _temp_name(folder, base)


def _remove_stale_temps(folder: str, base: str) -> None:
    """Delete temp files of ``base`` left by killed saves of this host (their pid is gone)."""
    if os.name != "posix":
        return
    prefix, host = _temp_prefix(base), _host_tag()
    try:
        names = [
            e.name
            for e in os.scandir(folder)
            if e.name.startswith(prefix) and e.name.endswith(_TMP_SUFFIX)
        ]
    except OSError:
        return
    for name in names:
        fields = name[len(prefix) : -len(_TMP_SUFFIX)].split(".")
        if len(fields) != 3 or fields[0] != host:
            continue
        pid = fields[1]
        if not (pid.isascii() and pid.isdigit() and len(pid) <= 10 and 0 < int(pid) <= _MAX_PID):
            continue
        if not _alive(int(pid)):
            try:
                os.unlink(os.path.join(folder, name))
            except OSError:
                pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError, ValueError):
        return True
    return True


def _fsync_folder(folder: str) -> None:
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ====================================================================================== load


def load(path: str | os.PathLike, *, device: Any = None) -> Any:
    """Read a checkpoint written by ``md.save`` (on any backend) onto ``device``.

    Returns the saved structure (same containers, order and tied tensors); a plain
    safetensors file from another tool gives a dict of Tensors. ``device`` defaults to
    ``md.default_device()``. Raises ``md.CheckpointError`` for a truncated, corrupted or
    foreign file, or a dtype the active backend lacks; FileNotFoundError if it is missing.
    """
    path = _fspath(path)
    bk = registry.current()
    dev = default_device() if device is None else as_device(device)
    check_available(bk, dev)
    with _open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(16)
        n = st.header_length(head, size, path)
        budget = st.Budget(size - 8 - n, path)
        budget.spend(st.text_cost(n), "header")
        f.seek(8)
        raw = st.read_exact(f, n, path, "header")
        ours = _verify_header(raw, path)
        metadata, entries = st.parse_header(raw, size - 8 - n, path, budget)
        if metadata is not None and metadata.get("format") == FORMAT and not ours:
            raise CheckpointError(
                path, "the multidev header lost its checksum field: the header is corrupted"
            )
        if ours:
            structure, crcs = _our_metadata(metadata, entries, path, budget)
        else:
            structure, crcs = None, None
        limits = limits_of(bk)
        for e in entries:
            _check_representable(e, bk, limits, path)
        _check_memory(entries, path)
        arrays = _read_data(f, entries, crcs, path)
    tensors = {e.name: _to_backend(arrays.pop(e.name), e, bk, dev, path) for e in entries}
    if structure is None:
        return tensors
    return _build(structure, tensors, path, 0)


def _check_representable(e: st.Entry, bk: Any, limits: ArrayLimits, path) -> None:
    """CheckpointError unless the active backend can hold tensor ``e`` (dtype and shape)."""
    if lacks_dtype(bk, e.dtype):
        raise CheckpointError(
            path,
            f"tensor {e.name!r} is {e.dtype.name}, which the {bk.name} backend does not "
            f"support. Load it with a backend that has {e.dtype.name} and cast it "
            "(e.g. to float32) before saving.",
        )
    what = f"tensor {e.name!r} (shape {_short(e.shape)})"
    if len(e.shape) > limits.ndim:
        raise CheckpointError(
            path,
            f"{what} has {len(e.shape)} dimensions; the {bk.name} backend holds at most "
            f"{limits.ndim}. Load it with a backend that has more, and reshape it before saving.",
        )
    elements = 1
    for i, d in enumerate(e.shape):
        if d > limits.dim:
            raise CheckpointError(
                path,
                f"{what} has dimension {i} of size {d}; the {bk.name} backend holds at most "
                f"{limits.dim} per dimension.",
            )
        elements *= d or 1
    if elements > limits.elements or elements * e.dtype.itemsize > _NUMPY_LIMITS.elements:
        raise CheckpointError(
            path,
            f"{what}: its non-zero dimensions multiply to {elements} elements of "
            f"{e.dtype.itemsize} bytes; the {bk.name} backend holds at most {limits.elements} "
            f"elements and {_NUMPY_LIMITS.elements} bytes per array (NumPy's limit), even when "
            "a zero dimension leaves it empty.",
        )


def _short(shape: tuple[int, ...]) -> str:
    text = str(shape)
    return text if len(text) <= 60 else text[:57] + "...)"


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _check_memory(entries: list[st.Entry], path) -> None:
    """CheckpointError if the tensors' bytes exceed this machine's physical memory."""
    total = sum(e.nbytes for e in entries)
    ram = _physical_memory()
    if ram is not None and total > ram:
        raise CheckpointError(
            path,
            f"its {len(entries)} tensors hold {total} bytes; this machine has {ram} bytes of "
            "memory. Load it on a machine with more memory.",
        )


def _to_backend(arr: np.ndarray, e: st.Entry, bk: Any, dev: Any, path) -> Tensor:
    """A host array as a Tensor of the active backend; any framework failure becomes
    CheckpointError (chained to the framework's exception)."""
    try:
        native = bk.from_numpy(arr, dev)
    except Exception as exc:
        raise CheckpointError(
            path,
            f"the {bk.name} backend could not hold tensor {e.name!r} ({e.dtype.name}, shape "
            f"{_short(e.shape)}): {type(exc).__name__}: {str(exc)[:300]}",
        ) from exc
    return new_tensor(native, bk, dev, e.dtype)


class _open_regular:
    """Open a path for reading, refusing anything but a regular file (no FIFO can hang us)."""

    def __init__(self, path: str) -> None:
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        fd = os.open(path, flags)
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
                raise CheckpointError(path, f"Expected a checkpoint file. Received: {kind}")
        except BaseException:
            os.close(fd)
            raise
        self.f = os.fdopen(fd, "rb", buffering=0)

    def __enter__(self):
        return self.f

    def __exit__(self, *exc) -> None:
        self.f.close()


def _verify_header(raw: bytes, path) -> bool:
    """Whether the header is multidev's (starts with its checksum); if so, check the checksum."""
    start = len(_PREFIX)
    if not raw.startswith(_PREFIX) or raw[start + 8 : start + 9] != b'"':
        return False
    stored = raw[start : start + 8].decode("latin-1")
    computed = f"{_crc(raw[start + 8 :]):08x}"
    if stored != computed:
        raise CheckpointError(
            path,
            f"the header fails its CRC32C check (stored {stored}, computed {computed}): "
            "the file is corrupted",
        )
    return True


def _our_metadata(
    metadata: dict[str, str] | None, entries: list[st.Entry], path, budget: st.Budget
):
    """The structure and per-tensor CRCs of a multidev header, checked against the entries."""
    meta = metadata or {}
    if meta.get("format") != FORMAT:
        raise CheckpointError(path, f"Expected format {FORMAT!r}. Received: {meta.get('format')!r}")
    version = meta.get("format_version", "")
    if not (version.isascii() and version.isdigit() and len(version) < 10):
        raise CheckpointError(path, f"Expected a numeric format_version. Received: {version!r}")
    if int(version) > FORMAT_VERSION:
        raise CheckpointError(
            path,
            f"the file uses checkpoint format version {version}; this multidev reads up to "
            f"version {FORMAT_VERSION}. Upgrade multidev to load it.",
        )
    names = {e.name for e in entries}
    crcs = st.loads(meta.get("crc32c", ""), path, "crc32c metadata", budget)
    if (
        type(crcs) is not dict
        or set(crcs) != names
        or not all(type(v) is str and len(v) == 8 and set(v) <= _HEX for v in crcs.values())
    ):
        raise CheckpointError(
            path, "Expected a CRC32C (8 hex digits) in the metadata for every tensor"
        )
    text = meta.get("structure", "")
    budget.spend(st.json_cost(text), "structure metadata (built into the loaded object)")
    structure = st.loads(text, path, "structure metadata", budget)
    used: set[str] = set()
    _build(structure, dict.fromkeys(names), path, 0, used)
    if used != names:
        raise CheckpointError(
            path, f"tensors not referenced by the structure: {sorted(names - used)}"
        )
    return structure, crcs


def _read_data(f, entries: list[st.Entry], crcs: dict[str, str] | None, path):
    """Each tensor's bytes read into a fresh buffer (file order), checked, as a host array."""
    out: dict[str, np.ndarray] = {}
    for e in sorted(entries, key=lambda e: (e.begin, e.end)):
        try:
            buf = np.empty(e.nbytes, dtype=np.uint8)
        except MemoryError:
            raise CheckpointError(
                path, f"tensor {e.name!r} needs {e.nbytes} bytes, more than this process can get"
            ) from None
        st.read_into(f, buf, path, e.name)
        if crcs is not None:
            buf.flags.writeable = False
            computed = f"{_crc(buf):08x}"
            buf.flags.writeable = True
            if computed != crcs[e.name]:
                raise CheckpointError(
                    path,
                    f"tensor {e.name!r} fails its CRC32C check (stored {crcs[e.name]}, "
                    f"computed {computed}): the file is corrupted",
                )
        if e.dtype is _dt.bool and buf.size and buf.max() > 1:
            raise CheckpointError(path, f"bool tensor {e.name!r} holds bytes other than 0 and 1")
        out[e.name] = buf.view(e.dtype.numpy).reshape(e.shape)
    return out


_CONTAINERS = ("tensor", "list", "tuple", "dict", "ordered_dict")
_PLAIN = ("int", "float", "bool", "str", "none")
_NODES = _CONTAINERS + _PLAIN


def _plain_value(kind: str, value: Any, path) -> Any:
    """The Python value of a plain structure node, checked."""
    if kind == "int" and type(value) is int and value.bit_length() <= MAX_INT_BITS:
        return value
    if kind == "float" and type(value) is str and len(value) == 16 and set(value) <= _HEX:
        return struct.unpack(">d", bytes.fromhex(value))[0]
    if kind == "bool" and type(value) is bool:
        return value
    if kind == "str" and type(value) is str:
        return value
    if kind == "none" and value is None:
        return None
    raise CheckpointError(
        path, f"Expected a valid {kind!r} value in the structure. Received: {value!r:.80}"
    )


def _build(node: Any, tensors: dict[str, Any], path, depth: int, used: set | None = None) -> Any:
    """The saved object from its structure JSON (also validates it when ``used`` is given)."""
    if depth > MAX_DEPTH:
        raise CheckpointError(path, f"the structure nests deeper than {MAX_DEPTH} levels")
    if type(node) is not dict or len(node) != 1 or next(iter(node)) not in _NODES:
        raise CheckpointError(
            path, f"Expected structure nodes like {{'tensor': name}}. Received: {node!r:.80}"
        )
    ((kind, value),) = node.items()
    if kind in _PLAIN:
        return _plain_value(kind, value, path)
    if kind == "tensor":
        if type(value) is not str or value not in tensors:
            raise CheckpointError(path, f"the structure names a missing tensor {value!r:.80}")
        if used is not None:
            used.add(value)
        return tensors[value]
    if type(value) is not list:
        raise CheckpointError(path, f"Expected a list in structure node {kind!r}")
    if kind in ("list", "tuple"):
        items = [_build(v, tensors, path, depth + 1, used) for v in value]
        return items if kind == "list" else tuple(items)
    out: dict[str | int, Any] = OrderedDict() if kind == "ordered_dict" else {}
    for pair in value:
        if (
            type(pair) is not list
            or len(pair) != 2
            or type(pair[0]) not in (str, int)
            or (type(pair[0]) is int and pair[0].bit_length() > MAX_INT_BITS)
        ):
            raise CheckpointError(
                path, "Expected [key, node] pairs (str or int keys) in a dict structure node"
            )
        if pair[0] in out:
            raise CheckpointError(path, f"the structure holds the dict key {pair[0]!r} twice")
        out[pair[0]] = _build(pair[1], tensors, path, depth + 1, used)
    return out
