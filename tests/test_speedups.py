"""The optional C accelerator ``multidev._speedups``: the per-backend Tensor classes get C fast
paths in their operator slots. Nothing a user sees may change: every result (class, backend,
device, dtype, values) and every error (type and message) is the same with the extension and
with ``MULTIDEV_SPEEDUPS=0``; reference counts stay exact; results pickle, copy, hash, weakly
reference and are tracked by the garbage collector as before; the Python operators stay in
the class dict (torch.compile inlines them)."""

from __future__ import annotations

import copy
import gc
import json
import os
import pickle
import shutil
import sys
import sysconfig
import tracemalloc
import types
import weakref

import numpy as np
import pytest

import multidev as md
from multidev import dispatch

_A = np.array([1.5, -2.0, 3.0, 0.0], dtype=np.float32)
_B = np.array([0.5, 4.0, 3.0, 2.0], dtype=np.float32)


def _compiler() -> str | None:
    """The C compiler setuptools would use (sysconfig's CC), where it is on PATH."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()
    return shutil.which(cc[0]) if cc else None


def _expected() -> str | None:
    """Why the extension must be importable here, or None where it may be absent: asked for
    with MULTIDEV_SPEEDUPS=1, or a CI run (CI set) on a machine with a C compiler, where
    ``pip install .`` builds it (setup.py skips it only where compiling fails)."""
    if os.environ.get("MULTIDEV_SPEEDUPS") == "1":
        return "MULTIDEV_SPEEDUPS=1 asks for it"
    ci = os.environ.get("CI", "").lower()
    if ci not in ("", "0", "false") and _compiler() is not None:
        return f"CI is set and a C compiler is on PATH ({_compiler()})"
    return None


active = pytest.mark.skipif(
    dispatch.SPEEDUPS is None,
    reason="multidev._speedups is not built here or MULTIDEV_SPEEDUPS=0 (pure Python operators)",
)


def test_the_extension_is_built_where_it_is_expected():
    why = _expected()
    if why is None:
        pytest.skip("neither MULTIDEV_SPEEDUPS=1 nor a CI run with a C compiler")
    assert os.environ.get("MULTIDEV_SPEEDUPS") != "0", "MULTIDEV_SPEEDUPS=0 contradicts: " + why
    try:
        from multidev import _speedups
    except ImportError as e:
        pytest.fail(
            f"multidev._speedups was expected ({why}) but does not import ({e}). Build it with "
            "`python setup.py build_ext --inplace` (sources) or reinstall with `pip install .`."
        )
    assert dispatch.SPEEDUPS is _speedups
    x = md.asarray(_A)
    assert "__add__" in _speedups.installed(type(x))


@active
def test_every_operator_of_the_backend_class_has_its_fast_path_and_keeps_its_python_function():
    x = md.asarray(_A)
    cls = type(x)
    bound = {k for k, v in vars(md.Tensor).items() if getattr(v, "binary_op", None)}
    assert set(dispatch.SPEEDUPS.installed(cls)) == bound
    for name in bound:
        assert isinstance(vars(cls)[name], types.FunctionType)  # what torch.compile inlines


@active
def test_results_are_new_tensors_of_the_class_that_gc_and_weakrefs_see():
    x, y = md.asarray(_A), md.asarray(_B)
    for r in (x + y, x / y, x < y, x @ y):
        assert type(r) is type(x) and r is not x and r is not y
        assert gc.is_tracked(r)
        assert weakref.ref(r)() is r
        assert hash(r) != hash(x) and {r: 1}[r] == 1
        for c in (copy.copy(r), copy.deepcopy(r)):
            np.testing.assert_array_equal(np.asarray(c.numpy()), np.asarray(r.numpy()))
    r = x + y
    ref = weakref.ref(r)
    del r
    gc.collect()
    assert ref() is None
    try:
        back = pickle.loads(pickle.dumps(x + y))
    except TypeError:  # an adapter holding locks or native places does not pickle
        return
    np.testing.assert_allclose(np.asarray(back.numpy()), _A + _B, rtol=1e-6)


def _counts(objs: list) -> list[int]:
    return [sys.getrefcount(o) for o in objs]


def _assert_counts_kept(objs: list, run) -> None:
    """``run(n)`` repeats its operations n times: 500 more leave every count in objs as it was."""
    run(50)
    gc.collect()  # garbage of earlier tests may hold shared objects (the adapter, md.bool)
    before = _counts(objs)
    run(500)
    gc.collect()
    assert _counts(objs) == before


def test_reference_counts_are_exact_on_every_path():
    x, y = md.asarray(_A), md.asarray(_B)
    z = md.asarray(_B[:3])
    i = md.asarray(_B.astype(np.int32))
    objs = [x, y, i, x._native, y._native, x._dtype, x._dev, x._bk, md.bool, i._dtype]

    def run(n: int) -> None:
        for _ in range(n):
            x + y, x * y, x < y, x == y, x / y  # fast paths
            x + 2, 2 - x, x + i, i / i, x + _B  # the Python operators
            try:
                x + z  # the native op raises inside the fast path
            except Exception:
                pass

    _assert_counts_kept(objs, run)


def test_many_operators_leave_no_memory_behind():
    x, y = md.asarray(_A), md.asarray(_B)
    for _ in range(200):
        x + y, x < y
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(200):
            x + y, x < y
        gc.collect()
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(20000):
            x + y, x < y
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, f"{grown} bytes kept after 40,000 operators"


# the same cases run in two fresh interpreters, with the extension and without
_CASES = r"""
import json, operator, sys
import numpy as np
import multidev as md
from multidev import dispatch, nn

A = np.array([1.5, -2.0, 3.0, 0.0], dtype=np.float32)
B = np.array([0.5, 4.0, 3.0, 2.0], dtype=np.float32)
OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
       operator.mod, operator.pow, operator.matmul, operator.and_, operator.or_,
       operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge]
DTYPES = ["float32", "float64", "float16", "int32", "int64", "uint8", "bool"]
out = []

def describe(fn):
    try:  # (MXNet raises a kernel's error when the values are read)
        r = fn()
        if isinstance(r, md.Tensor):
            return ["tensor", type(r).__qualname__, type(r) is dispatch.tensor_class(r._bk),
                    r.backend, str(r.device), str(r.dtype), repr(np.asarray(r.numpy()).tolist())]
        return ["other", type(r).__name__, repr(r)]
    except Exception as e:
        return ["error", type(e).__name__, str(e)]

def case(label, fn):
    out.append([label, describe(fn)])

def tensor(arr, dt):
    try:
        return md.asarray(arr, dtype=dt)
    except Exception:
        return None

xs = {dt: tensor(A, dt) for dt in DTYPES}
ys = {dt: tensor(B, dt) for dt in DTYPES}
for op in OPS:
    n = op.__name__
    for d1, x in xs.items():
        if x is None:
            continue
        for d2, y in ys.items():
            if y is not None:
                case(f"{n} {d1} {d2}", lambda: op(x, y))
        # (@ with a 0-d operand or a scalar is an error whose message, on Paddle, quotes
        # uninitialised memory: not compared)
        for s in (2, 2.5, True) if op is not operator.matmul else ():
            case(f"{n} {d1} {s!r}", lambda: op(x, s))
            case(f"{n} {s!r} {d1}", lambda: op(s, x))
    x, y = xs["float32"], ys["float32"]
    plain = md.Tensor(y.native, y._bk, y.device, y.dtype)
    p = nn.Parameter(md.asarray(B))
    sub_cls = type("Sub", (type(x),), {"__slots__": ()})
    sub = object.__new__(sub_cls)
    sub._native, sub._bk, sub._dev, sub._dtype = y._native, y._bk, y._dev, y._dtype
    bare = object.__new__(type(x))
    half = object.__new__(type(x))
    half._dtype, half._dev = x._dtype, x._dev
    others = {"plain": plain, "parameter": p, "subclass": sub, "numpy": B, "list": B.tolist(),
              "0-d": md.asarray(np.float32(2.0)), "short": md.asarray(B[:3]),
              "str": "a", "None": None, "bare": bare, "half-made": half}
    if x.backend != "numpy":
        others["numpy backend"] = y.to_backend("numpy")
    devices = md.devices()
    if len(devices) > 1:
        others["other device"] = y.to(devices[1])
    for k, v in others.items():
        if op is operator.matmul and k == "0-d":
            continue
        case(f"{n} x {k}", lambda: op(x, v))
        case(f"{n} {k} x", lambda: op(v, x))
    if op is not operator.matmul:
        case(f"{n} 0-d 0-d", lambda: op(others["0-d"], others["0-d"]))
case("pow modulus", lambda: pow(xs["float32"], ys["float32"], 2))
print(json.dumps({"speedups": dispatch.SPEEDUPS is not None, "cases": out}))
"""


def _run_cases(run_python, flag: str) -> dict:
    env = {"MULTIDEV_SPEEDUPS": flag, "MULTIDEV_BACKEND": md.get_backend()}
    return json.loads(run_python(_CASES, **env).stdout.strip().splitlines()[-1])


@active
def test_results_and_errors_are_the_same_with_and_without_the_extension(run_python):
    fast = _run_cases(run_python, "1")
    slow = _run_cases(run_python, "0")
    assert fast["speedups"] and not slow["speedups"]
    assert len(fast["cases"]) == len(slow["cases"]) > 1000
    differ = [(a, b[1]) for a, b in zip(fast["cases"], slow["cases"], strict=True) if a != b]
    assert not differ, f"{len(differ)} cases differ, e.g. {differ[:3]}"
    kinds = {c[1][0] for c in fast["cases"]}
    assert {"tensor", "error"} <= kinds  # results and errors were both compared


def test_an_unknown_flag_value_is_refused_at_import(run_python):
    out = run_python("import multidev", check=False, MULTIDEV_SPEEDUPS="yes")
    assert out.returncode != 0
    assert "ValueError: Expected MULTIDEV_SPEEDUPS to be 0" in out.stderr
    assert "Received: 'yes'" in out.stderr


def test_multidev_speedups_0_leaves_the_python_operators(run_python):
    code = """
        import multidev as md
        from multidev import dispatch
        x = md.asarray([1.0, 2.0])
        assert dispatch.SPEEDUPS is None
        try:
            from multidev import _speedups
        except ImportError:
            pass
        else:
            assert _speedups.installed(type(x)) == (), _speedups.installed(type(x))
        assert (x + x).tolist() == [2.0, 4.0]
    """
    run_python(code, MULTIDEV_SPEEDUPS="0", MULTIDEV_BACKEND=md.get_backend())


@active
def test_install_refuses_what_is_not_a_tensor_class():
    sp = dispatch.SPEEDUPS
    with pytest.raises(
        TypeError, match=r"Expected a class made by multidev\.dispatch\.tensor_class"
    ):
        sp.install(int, md.Tensor, md.bool, {})
    cls = type("Tensor", (md.Tensor,), {"__slots__": ()})
    with pytest.raises(ValueError, match="Expected an operator name"):
        sp.install(cls, md.Tensor, md.bool, {"__foo__": ({}, False, frozenset())})
    with pytest.raises(TypeError, match=r"Expected \(fns: dict, is_cmp: bool, scoped\)"):
        sp.install(cls, md.Tensor, md.bool, {"__add__": ([], False, frozenset())})
    assert sp.installed(cls) == ()


@active
def test_a_native_op_that_rebinds_the_operands_slots_is_safe():
    """The fast path holds the operands' dtype and device across the native call (which runs
    Python code) and reads the backend after it, as the Python operator does."""
    x = md.asarray(_A)
    cls = type("Tensor", (md.Tensor,), {"__slots__": ()})
    probe = md.DType("probe", "f", 4, 0)  # held by the operands and the op table only
    a, b = object.__new__(cls), object.__new__(cls)
    for t in (a, b):
        t._native, t._bk, t._dev, t._dtype = x._native, x._bk, x._dev, probe
    table = {probe: None}

    def native_add(p, q):
        table.clear()
        a._dtype = b._dtype = md.float32  # the last references to probe but the fast path's
        a._bk = "read after the op"
        gc.collect()
        return p

    table[probe] = native_add
    fast = {"__add__": (table, False, frozenset())}
    assert dispatch.SPEEDUPS.install(cls, md.Tensor, md.bool, fast)
    del probe
    r = a + b
    assert type(r) is cls and r._native is x._native
    assert r._dtype.name == "probe" and r._bk == "read after the op" and r._dev is x._dev

    def drop_backend(p, q):
        del a._bk
        return p

    a._bk, b._dtype = x._bk, md.float32
    table[md.float32] = drop_backend
    with pytest.raises(AttributeError, match="_bk"):
        a + b


@active
def test_exact_result_keeps_results_of_the_class_and_converts_the_others():
    calls = []

    def fn(*args, **kwargs):
        calls.append((args, kwargs))
        return args[0]

    exact = dispatch.SPEEDUPS.exact_result(fn, np.ndarray, np.asarray)
    assert exact.fn is fn and exact.cls is np.ndarray and exact.convert is np.asarray
    assert "exact_result of" in repr(exact)
    arr = np.ones(2, np.float32)
    assert exact(arr, 1) is arr  # an ndarray: returned as is
    scalar = np.float32(2.5)
    out = exact(scalar, k=3)  # a NumPy scalar: converted, once
    assert type(out) is np.ndarray and out.shape == () and out.dtype == np.float32
    assert out == 2.5
    view = arr.view(np.recarray)  # a subclass is not the exact class: converted too
    assert type(exact(view)) is np.ndarray
    assert calls == [((arr, 1), {}), ((scalar,), {"k": 3}), ((view,), {})]

    def fails(*args):
        raise ZeroDivisionError("from the op")

    with pytest.raises(ZeroDivisionError, match="from the op"):
        dispatch.SPEEDUPS.exact_result(fails, np.ndarray, np.asarray)(arr)

    def refuse(r):
        raise ValueError(f"refused {r!r}")

    with pytest.raises(ValueError, match="refused 7"):
        dispatch.SPEEDUPS.exact_result(lambda: 7, np.ndarray, refuse)()


@active
def test_exact_result_refuses_what_is_not_callable_or_a_class():
    make = dispatch.SPEEDUPS.exact_result
    with pytest.raises(TypeError, match=r"Expected exact_result.*callables.*Received: fn=3"):
        make(3, np.ndarray, np.asarray)
    with pytest.raises(TypeError, match=r"Expected exact_result.*convert=None"):
        make(np.add, np.ndarray, None)
    with pytest.raises(TypeError, match="type"):
        make(np.add, "ndarray", np.asarray)
    with pytest.raises(TypeError, match="positional arguments"):
        make(np.add, np.ndarray, convert=np.asarray)


@active
def test_exact_result_keeps_reference_counts_exact():
    arr = np.ones(1, np.float32)
    scalar = np.float32(1.0)
    exact = dispatch.SPEEDUPS.exact_result(lambda a: a, np.ndarray, np.asarray)
    failing = dispatch.SPEEDUPS.exact_result(lambda a: a, np.ndarray, np.sqrt.__call__)
    objs = [arr, scalar, exact, failing]

    def run(n: int) -> None:
        for _ in range(n):
            exact(arr), exact(scalar)
            try:
                failing("not a number")
            except TypeError:
                pass

    _assert_counts_kept(objs, run)


def test_numpy_binary_ops_return_arrays_for_0d_operands():
    """NumPy's ufuncs return scalars for 0-d results; the NumPy adapter's binary ops (the C
    ``exact_result`` where the extension is active) return 0-d arrays, as every other op."""
    if md.get_backend() != "numpy":
        pytest.skip("the NumPy adapter's op table")
    ops = md.registry.load("numpy").ops
    a, b = np.asarray(np.float32(1.5)), np.asarray(np.float32(2.0))
    for name in ("add", "multiply", "less", "divide", "pow", "logical_and"):
        out = getattr(ops, name)(a, b)
        assert type(out) is np.ndarray and out.shape == (), name
    vec = np.ones(3, np.float32)
    out = ops.add(vec, vec)
    assert type(out) is np.ndarray and out.tolist() == [2.0, 2.0, 2.0]
    if dispatch.SPEEDUPS is not None and np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        assert type(ops.add) is dispatch.SPEEDUPS.exact_result


@active
def test_freed_results_release_their_weak_references_and_parts():
    """Results freed by the class's C dealloc (and reused by later operators) clear their weak
    references (callbacks run once) and give back what they held."""
    x, y = md.asarray(_A), md.asarray(_B)
    cls = type(x)
    objs = [cls, x._native, y._native, x._dtype, x._dev, x._bk]
    for _ in range(100):
        x + y
    before = _counts(objs)
    called = []
    for _ in range(300):
        r = x + y
        assert type(r) is cls and gc.is_tracked(r)
        ref = weakref.ref(r, called.append)
        del r
        assert ref() is None
        r = x + y  # (typically the memory just freed)
        assert weakref.ref(r)() is r
        np.testing.assert_allclose(np.asarray(r.numpy()), _A + _B, rtol=1e-6)
        del r
    assert len(called) == 300
    gc.collect()
    assert _counts(objs) == before


@active
def test_subclasses_of_the_backend_class_are_freed_as_before():
    """A Python subclass of the backend class (own slots, a __dict__, a __del__) is freed by
    its own dealloc and then the backend class's: its finalizer runs once, its dict, slots and
    weak references are released."""
    x = md.asarray(_A)
    deleted = []

    class Held:
        pass

    sub_cls = type(
        "Sub",
        (type(x),),
        {"__slots__": ("extra", "__dict__"), "__del__": lambda self: deleted.append(1)},
    )
    objs = [sub_cls, x._native, x._dtype, x._dev, x._bk]
    before = _counts(objs)
    refs, called = [], []
    for _ in range(50):
        t = object.__new__(sub_cls)
        t._native, t._bk, t._dev, t._dtype = x._native, x._bk, x._dev, x._dtype
        t.extra, t.attr = Held(), Held()
        refs += [weakref.ref(t.extra), weakref.ref(t.attr), weakref.ref(t, called.append)]
        del t
    gc.collect()
    assert len(deleted) == 50 and len(called) == 50
    assert all(r() is None for r in refs)
    assert _counts(objs) == before


@active
def test_a_finalizer_on_an_installed_class_runs_for_every_result():
    """A finalized tensor is never reused: every result of the fast path is finalized."""
    x = md.asarray(_A)
    cls = type("Tensor", (md.Tensor,), {"__slots__": ()})
    fast = {"__add__": ({md.float32: x._bk.ops.add}, False, frozenset())}
    assert dispatch.SPEEDUPS.install(cls, md.Tensor, md.bool, fast)
    a = object.__new__(cls)
    a._native, a._bk, a._dev, a._dtype = x._native, x._bk, x._dev, x._dtype
    finalized = []
    cls.__del__ = lambda self: finalized.append(self._dtype)  # type: ignore[attr-defined]
    for _ in range(40):
        r = a + a
        assert type(r) is cls
        del r
    assert len(finalized) == 40 and all(d is md.float32 for d in finalized)
