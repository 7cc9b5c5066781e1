"""The safetensors file layout, read and written directly.

A file is an 8-byte little-endian header length ``N``, ``N`` bytes of UTF-8 JSON (padded
with spaces to a multiple of 8), then the tensors' raw little-endian bytes back to back.
The JSON maps each tensor name to ``{"dtype", "shape", "data_offsets": [begin, end]}``,
offsets counted from the first byte after the header; ``"__metadata__"`` maps strings to
strings. Every check here runs on the header alone, before any tensor memory is allocated.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from typing import Any

import numpy as np

from . import dtypes as _dt
from .errors import CheckpointError

__all__ = [
    "CODE",
    "ENTRY_COST",
    "HEADER_ALLOWANCE",
    "HEADER_PER_DATA_BYTE",
    "MAX_HEADER",
    "METADATA",
    "Budget",
    "Entry",
    "encode_header",
    "header_length",
    "item_cost",
    "json_cost",
    "loads",
    "nbytes_of",
    "parse_header",
    "read_exact",
    "read_into",
    "readonly_bytes",
    "sniff",
    "text_cost",
]

#: The largest header accepted (the safetensors package's own limit).
MAX_HEADER = 100_000_000
METADATA = "__metadata__"

_TO_MD = {
    "BOOL": _dt.bool,
    "U8": _dt.uint8,
    "U16": _dt.uint16,
    "U32": _dt.uint32,
    "U64": _dt.uint64,
    "I8": _dt.int8,
    "I16": _dt.int16,
    "I32": _dt.int32,
    "I64": _dt.int64,
    "F16": _dt.float16,
    "BF16": _dt.bfloat16,
    "F32": _dt.float32,
    "F64": _dt.float64,
    "C64": _dt.complex64,
}
CODE = {dt: code for code, dt in _TO_MD.items()}
_LENGTH = struct.Struct("<Q")

#: Memory a header may need to parse, whatever the file holds (bytes) ...
HEADER_ALLOWANCE = 64 << 20
#: ... plus this many bytes per byte of tensor data in the file.
HEADER_PER_DATA_BYTE = 4
#: Upper bounds of what parsing JSON costs: per byte of text (the bytes, the decoded text,
#: string values; up to 4 bytes per character), and per value, key or separator (the object
#: and its slot in a container; an empty list or dict takes 56 to 64 bytes).
_TEXT_COST = 10
_ITEM_COST = 64
#: What each tensor entry costs beyond its JSON: its host array, native tensor and wrapper.
ENTRY_COST = 4096


def text_cost(n: int) -> int:
    """Memory (bytes) that reading, decoding and parsing ``n`` bytes of JSON text takes
    for the text itself and its string values."""
    return _TEXT_COST * n


def item_cost(text: bytes | str) -> int:
    """Memory (bytes) that ``json.loads(text)`` takes at most for its values and containers.
    Counts the marks that start or separate values (quotes, commas, colons, brackets)
    without allocating, inside strings too: an over-estimate, never an under-estimate."""
    if isinstance(text, str):
        quotes, *others = (text.count(m) for m in '",:[{')
    else:
        quotes, *others = (text.count(m) for m in (b'"', b",", b":", b"[", b"{"))
    items = 1 + (quotes + 1) // 2 + sum(others)
    return _ITEM_COST * items


def json_cost(text: bytes | str) -> int:
    """An upper bound, in bytes, of the memory ``json.loads(text)`` needs."""
    return text_cost(len(text)) + item_cost(text)


class Budget:
    """The memory a file's header and structure may take to parse: ``HEADER_ALLOWANCE`` plus
    ``HEADER_PER_DATA_BYTE`` per byte of tensor data, so that loading needs at most a small
    multiple of the bytes it returns plus a fixed allowance, whatever the header holds."""

    def __init__(self, data_len: int, path) -> None:
        self.data_len = data_len
        self.total = HEADER_ALLOWANCE + HEADER_PER_DATA_BYTE * max(data_len, 0)
        self.left = self.total
        self.path = path

    def spend(self, cost: int, what: str) -> None:
        """Take ``cost`` bytes, or raise CheckpointError if the budget does not hold them."""
        if cost > self.left:
            raise CheckpointError(
                self.path,
                f"the {what} would need about {cost} bytes of memory to parse; a file whose "
                f"tensors hold {self.data_len} bytes may use at most {self.total} "
                f"({HEADER_ALLOWANCE} + {HEADER_PER_DATA_BYTE} per data byte) for its header. "
                "It describes too many tensors, values or containers for the data it holds.",
            )
        self.left -= cost


class Entry:
    """One tensor of a file: name, dtype, shape and its byte range in the data section."""

    __slots__ = ("begin", "dtype", "end", "name", "shape")

    def __init__(self, name: str, dtype: _dt.DType, shape: tuple[int, ...], begin: int, end: int):
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.begin = begin
        self.end = end

    @property
    def nbytes(self) -> int:
        return self.end - self.begin


def nbytes_of(dtype: _dt.DType, shape: Iterable[int]) -> int:
    n = dtype.itemsize
    for s in shape:
        n *= s
    return n


# ------------------------------------------------------------------------------ writing


def encode_header(metadata: dict[str, str], entries: list[Entry]) -> bytes:
    """The 8-byte length and the JSON header (metadata first, in the given order), padded."""
    header: dict[str, Any] = {METADATA: metadata} if metadata else {}
    for e in entries:
        header[e.name] = {
            "dtype": CODE[e.dtype],
            "shape": list(e.shape),
            "data_offsets": [e.begin, e.end],
        }
    raw = json.dumps(header, separators=(",", ":")).encode("ascii")
    raw += b" " * (-len(raw) % 8)
    return _LENGTH.pack(len(raw)) + raw


def readonly_bytes(arr: np.ndarray) -> np.ndarray:
    """A read-only flat uint8 view of a C-contiguous array (what the CRC and the writer take)."""
    flat = arr.reshape(-1).view(np.uint8)
    if flat.flags.writeable:
        flat = flat.view()
        flat.flags.writeable = False
    return flat


# ------------------------------------------------------------------------------ reading


def _fill(f, view: memoryview) -> int:
    """Read into ``view`` until it is full or the file ends; the number of bytes read."""
    done, n = 0, len(view)
    while done < n:
        got = f.readinto(view[done:])
        if not got:
            break
        done += got
    return done


def read_exact(f, n: int, path, what: str) -> bytes:
    """Exactly ``n`` bytes from ``f``, or CheckpointError if the file ends first."""
    buf = bytearray(n)
    got = _fill(f, memoryview(buf))
    if got != n:
        raise CheckpointError(
            path, f"the file ended inside the {what} (expected {n} bytes, got {got})"
        )
    return bytes(buf)


def read_into(f, buf: np.ndarray, path, name: str) -> None:
    """Fill the uint8 array ``buf`` from ``f``, or CheckpointError if the file ends first."""
    got = _fill(f, memoryview(buf))
    if got != len(buf):
        raise CheckpointError(
            path,
            f"the file ended inside tensor {name!r} ({got} of {len(buf)} bytes read); "
            "it was truncated or changed while being read",
        )


def sniff(head: bytes) -> str | None:
    """What a file that is not safetensors looks like, from its first bytes."""
    if head.startswith(b"PK\x03\x04"):
        return "a zip archive (torch.save writes these; they hold pickled code)"
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "a Python pickle"
    if head.startswith(b"\x93NUMPY"):
        return "a NumPy .npy file"
    if head.startswith(b"\x89HDF"):
        return "an HDF5 file"
    return None


def header_length(head: bytes, size: int, path) -> int:
    """The header length from the file's first bytes (at least 9 where the file has them),
    checked against the file size; pickles and archives are named as such."""
    if size == 0:
        raise CheckpointError(
            path, "Expected a safetensors checkpoint. Received: an empty file (0 bytes)."
        )
    if size < 8:
        raise CheckpointError(
            path,
            f"Expected a safetensors checkpoint of at least 8 bytes. Received: {size} bytes "
            "(the file is truncated).",
        )
    (n,) = _LENGTH.unpack(head[:8])
    bad = n > size - 8 or n > MAX_HEADER or n < 2
    if bad or head[8:9] != b"{":
        kind = sniff(head)
        if kind is not None:
            raise CheckpointError(
                path,
                f"Expected a safetensors checkpoint. Received: {kind}. multidev never unpickles; "
                "load it with its own tool and save the tensors with md.save.",
            )
        if n > size - 8:
            raise CheckpointError(
                path,
                f"the header length ({n} bytes) is larger than the rest of the file "
                f"({size - 8} bytes): the file is truncated or not a safetensors file",
            )
        if n > MAX_HEADER:
            raise CheckpointError(
                path, f"the header length ({n} bytes) exceeds the limit of {MAX_HEADER} bytes"
            )
        if n < 2:
            raise CheckpointError(path, f"the header length ({n} bytes) is too small for a header")
    return n


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Duplicate(k)
        out[k] = v
    return out


class _Duplicate(Exception):
    pass


def loads(text: str | bytes, path, what: str, budget: Budget | None = None) -> Any:
    """JSON with duplicate keys rejected; any parse failure becomes CheckpointError. With a
    ``budget``, its parse cost is taken from it first (CheckpointError if it does not fit)."""
    if budget is not None:
        budget.spend(json_cost(text), what)
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except _Duplicate as e:
        raise CheckpointError(path, f"the {what} holds the key {e.args[0]!r} twice") from None
    except RecursionError:
        raise CheckpointError(path, f"the {what} is nested too deeply") from None
    except (ValueError, TypeError) as e:
        raise CheckpointError(path, f"the {what} is not valid JSON ({e})") from None


def _int(v: Any) -> bool:
    return type(v) is int and v >= 0


def parse_header(
    raw: bytes, data_len: int, path, budget: Budget | None = None
) -> tuple[dict[str, str] | None, list[Entry]]:
    """Metadata and entries (in header order) of a header, with every consistency check:
    its parse cost within ``budget`` (checked before decoding), field types, known dtypes,
    sizes matching shapes, and tensors tiling the data section exactly (no overlap, no hole,
    nothing past its end). The text's own cost (``text_cost``) is the caller's to take, before
    it reads the header."""
    if budget is not None:
        budget.spend(item_cost(raw), "header")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CheckpointError(path, f"the header is not UTF-8 text ({e.reason})") from None
    header = loads(text, path, "header")
    if type(header) is not dict:
        raise CheckpointError(
            path, f"Expected a JSON object as header. Received: {type(header).__name__}"
        )
    metadata = header.pop(METADATA, None)
    if metadata is not None and (
        type(metadata) is not dict or not all(type(v) is str for v in metadata.values())
    ):
        raise CheckpointError(path, "Expected __metadata__ to map strings to strings")
    if budget is not None:
        budget.spend(ENTRY_COST * len(header), "tensor entries")
    entries = [_entry(name, info, path) for name, info in header.items()]
    _check_tiling(entries, data_len, path)
    return metadata, entries


def _entry(name: str, info: Any, path) -> Entry:
    if type(info) is not dict:
        raise CheckpointError(
            path,
            f"tensor {name!r}: Expected an object with dtype, shape, "
            f"data_offsets. Received: {type(info).__name__}",
        )
    code, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    dt = _TO_MD.get(code) if type(code) is str else None
    if dt is None:
        raise CheckpointError(
            path,
            f"tensor {name!r}: Expected a dtype among {', '.join(_TO_MD)}. Received: {code!r}",
        )
    if type(shape) is not list or not all(_int(s) for s in shape):
        raise CheckpointError(
            path, f"tensor {name!r}: Expected a shape of non-negative ints. Received: {shape!r}"
        )
    if type(offsets) is not list or len(offsets) != 2 or not all(_int(o) for o in offsets):
        raise CheckpointError(
            path,
            f"tensor {name!r}: Expected data_offsets [begin, end] of non-negative ints. "
            f"Received: {offsets!r}",
        )
    begin, end = offsets
    if end < begin:
        raise CheckpointError(
            path, f"tensor {name!r}: data_offsets end before they begin ({begin}, {end})"
        )
    need = nbytes_of(dt, shape)
    if end - begin != need:
        raise CheckpointError(
            path,
            f"tensor {name!r}: a {code} tensor of shape {tuple(shape)} takes {need} bytes, "
            f"but its data_offsets span {end - begin}",
        )
    return Entry(name, dt, tuple(shape), begin, end)


def _check_tiling(entries: list[Entry], data_len: int, path) -> None:
    pos = 0
    for e in sorted(entries, key=lambda e: (e.begin, e.end)):
        if e.begin < pos:
            raise CheckpointError(
                path, f"tensor {e.name!r} overlaps the tensor before it (offset {e.begin} < {pos})"
            )
        if e.begin > pos:
            raise CheckpointError(
                path, f"the data section has a hole of {e.begin - pos} bytes before {e.name!r}"
            )
        pos = e.end
    if pos != data_len:
        raise CheckpointError(
            path,
            f"the tensors cover {pos} bytes but the data section holds {data_len} bytes: "
            + ("the file is truncated" if pos > data_len else "it has trailing bytes"),
        )
