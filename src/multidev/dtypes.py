"""multidev's dtypes, their NumPy equivalents and PyTorch's promotion rules."""

from __future__ import annotations

import numpy as np

__all__ = [
    "DType",
    "bfloat16",
    "bool",
    "complex64",
    "complex128",
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "result_type",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]

_builtin_bool = bool


class DType:
    """A framework-neutral dtype: ``md.float32`` and friends. Interned, compared by identity."""

    __slots__ = ("itemsize", "kind", "name", "rank")
    name: str
    kind: str
    itemsize: int
    rank: int

    def __init__(self, name: str, kind: str, itemsize: int, rank: int):
        object.__setattr__(self, "name", name)
        # "b" bool, "u"/"i" integer, "f" real floating, "c" complex floating
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "itemsize", itemsize)
        object.__setattr__(self, "rank", rank)

    def __setattr__(self, key, value):
        raise AttributeError("multidev dtypes are immutable")

    def __repr__(self) -> str:
        return f"multidev.{self.name}"

    __str__ = __repr__

    def __reduce__(self):
        return (from_name, (self.name,))

    @property
    def is_floating_point(self) -> _builtin_bool:
        return self.kind == "f"

    @property
    def is_complex(self) -> _builtin_bool:
        return self.kind == "c"

    @property
    def numpy(self) -> np.dtype:
        """The NumPy dtype with the same bits (``ml_dtypes.bfloat16`` for bfloat16)."""
        return to_numpy_dtype(self)


bool = DType("bool", "b", 1, 0)
uint8 = DType("uint8", "u", 1, 1)
int8 = DType("int8", "i", 1, 1)
int16 = DType("int16", "i", 2, 2)
int32 = DType("int32", "i", 4, 3)
int64 = DType("int64", "i", 8, 4)
float16 = DType("float16", "f", 2, 5)
bfloat16 = DType("bfloat16", "f", 2, 5)
float32 = DType("float32", "f", 4, 6)
float64 = DType("float64", "f", 8, 7)
complex64 = DType("complex64", "c", 8, 8)
complex128 = DType("complex128", "c", 16, 9)
uint16 = DType("uint16", "u", 2, 2)
uint32 = DType("uint32", "u", 4, 3)
uint64 = DType("uint64", "u", 8, 4)

ALL: tuple[DType, ...] = (
    bool,
    uint8,
    int8,
    int16,
    int32,
    int64,
    float16,
    bfloat16,
    float32,
    float64,
)
#: the complex dtypes: a capability ("complex") of the backends whose framework has them, so
#: outside ``ALL`` (the dtypes every portable checkpoint and conformance table covers)
COMPLEX: tuple[DType, ...] = (complex64, complex128)
#: the Array API's wider unsigned integers: outside ``ALL`` too, as Paddle and MXNet lack them
#: (the backends that hold them list them in their ``dtypes.NATIVE``)
UNSIGNED: tuple[DType, ...] = (uint16, uint32, uint64)
#: every multidev dtype
EVERY: tuple[DType, ...] = ALL + COMPLEX + UNSIGNED
_BY_NAME = {d.name: d for d in EVERY}

_np_cache: dict[DType, np.dtype] = {}
_from_np_cache: dict[np.dtype, DType] = {}


def from_name(name: str) -> DType:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise TypeError(
            f"Expected a dtype name among {sorted(_BY_NAME)}. Received: {name!r}"
        ) from None


def _bfloat16_numpy() -> np.dtype:
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def to_numpy_dtype(dt: DType) -> np.dtype:
    """NumPy dtype of ``dt``; bfloat16 comes from ml_dtypes."""
    try:
        return _np_cache[dt]
    except KeyError:
        pass
    npdt = _bfloat16_numpy() if dt is bfloat16 else np.dtype(dt.name)
    _np_cache[dt] = npdt
    _from_np_cache[npdt] = dt
    return npdt


def from_numpy_dtype(npdt) -> DType:
    """md dtype of a NumPy dtype; a TypeError names the supported ones for anything else."""
    npdt = np.dtype(npdt)
    try:
        return _from_np_cache[npdt]
    except KeyError:
        pass
    if npdt.name in _BY_NAME and npdt.name != "bfloat16":
        dt = _BY_NAME[npdt.name]
    elif npdt.name == "bfloat16":
        dt = bfloat16
    else:
        raise TypeError(
            f"Expected one of multidev's dtypes ({', '.join(d.name for d in EVERY)}). "
            f"Received: NumPy dtype {npdt}. Cast it first, e.g. with .astype('float32')."
        )
    _from_np_cache[npdt] = dt
    return dt


def as_dtype(obj) -> DType:
    """Accept an md dtype, its name, or a NumPy dtype-like."""
    if isinstance(obj, DType):
        return obj
    if isinstance(obj, str) and obj in _BY_NAME:
        return _BY_NAME[obj]
    if obj is float:
        return float32
    if obj is int:
        return int64
    if obj is _builtin_bool:
        return bool
    if obj is complex:
        return complex64
    try:
        return from_numpy_dtype(obj)
    except TypeError:
        raise
    except Exception:
        raise TypeError(
            f"Expected a multidev dtype such as md.float32. Received: {obj!r}"
        ) from None


#: the real floating dtype of each complex one's parts, and back
_REAL_PART = {complex64: float32, complex128: float64}
_COMPLEX_OF = {float32: complex64, float64: complex128}


def real_dtype(dt: DType) -> DType:
    """The dtype of a complex dtype's real and imaginary parts (``dt`` itself if real)."""
    return _REAL_PART.get(dt, dt)


def complex_dtype(dt: DType) -> DType:
    """The complex dtype holding a real dtype's values (complex64 below float64)."""
    if dt.kind == "c":
        return dt
    return complex128 if dt is float64 else complex64


def _promote(a: DType, b: DType) -> DType:
    if a is b:
        return a
    if a.kind == "c" or b.kind == "c":
        # the Array API's table: the complex dtype whose parts hold both operands' precision
        parts = _promote(real_dtype(a), real_dtype(b))
        return complex_dtype(parts if parts.kind == "f" else float32)
    if a.kind == "f" or b.kind == "f":
        if a.kind == "f" and b.kind == "f":
            if {a, b} == {float16, bfloat16}:
                return float32
            return a if a.rank > b.rank else b
        return a if a.kind == "f" else b
    if a.kind == "b":
        return b
    if b.kind == "b":
        return a
    if a.kind == b.kind:
        return a if a.itemsize >= b.itemsize else b
    # one signed, one unsigned: the smallest signed type that holds both (none for uint64)
    u, s = (a, b) if a.kind == "u" else (b, a)
    if s.itemsize > u.itemsize:
        return s
    if u.itemsize == 8:
        raise _no_common_integer(a, b)
    return {1: int16, 2: int32, 4: int64}[u.itemsize]


def _no_common_integer(a: DType, b: DType) -> TypeError:
    return TypeError(
        f"Expected dtypes with a common integer dtype. Received: {a.name} and {b.name}; no "
        "integer dtype holds every value of both uint64 and a signed integer. Cast one of "
        "them first, e.g. md.astype(x, md.int64) or md.astype(x, md.uint64)."
    )


#: every pair's result dtype, but the pairs of uint64 and a signed integer (``result_type``
#: raises for those)
_PROMOTE = {
    (a, b): _promote(a, b)
    for a in EVERY
    for b in EVERY
    if not ({a.kind, b.kind} == {"u", "i"} and uint64 in (a, b))
}


def result_type(a: DType, b: DType) -> DType:
    """PyTorch's ``promote_types`` (bool < integers < real floating < complex floating) with
    the Array API's unsigned integers; TypeError for uint64 and a signed integer, which no
    integer dtype holds both of."""
    try:
        return _PROMOTE[a, b]
    except KeyError:
        raise _no_common_integer(a, b) from None


def scalar_result_type(dt: DType, value) -> DType:
    """Dtype of ``tensor op python_scalar``: the scalar only lifts the category (as in PyTorch)."""
    t = type(value)
    if t is complex:
        return complex_dtype(dt if dt.kind in "fc" else float32)
    if t is float and dt.kind not in "fc":
        return float32
    if t is int and dt.kind == "b":
        return int64
    return dt


def default_for(value) -> DType:
    """Default dtype of a Python scalar or nested list's leaves."""
    if isinstance(value, _builtin_bool):
        return bool
    if isinstance(value, int):
        return int64
    if isinstance(value, complex):
        return complex64
    return float32
