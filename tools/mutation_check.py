"""Mutation check: does the conformance suite notice an adapter op that is 0.1% off, or NaN?

    MULTIDEV_BACKEND=torch python tools/mutation_check.py [--sections ops edges ...]
        [--kinds scale nan] [--ops add exp ...] [--out FILE]

On the active backend, every op of the adapter's op table is wrapped once, before any test runs
(so that code which keeps an op function keeps the wrapper). A baseline run of the chosen
conformance sections records which ops each passing test saw return float32 or float64 values.
Then, for each such op and each kind of mutation, the tests that saw it run again in the same
process with ``-x`` while the op is mutated:

- ``scale``: every float32/float64 result of the op is multiplied by 1.001 (0.1% off);
- ``nan``: the first element of every non-empty float32/float64 result is NaN.

A mutation is killed when a test fails, and survives when they all pass. Ops whose float results
no test saw are listed as not exercised. Prints the table; ``--out`` saves it as JSON. Exits
non-zero when a mutation survives (or the baseline fails).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import multidev as md
from multidev import registry

#: sections fast enough to rerun once per mutation (the jit, gpu, recurrent and checkpoint
#: sections are left out: they compile, need a GPU, or take minutes per run)
DEFAULT_SECTIONS = (
    "backend",
    "tensor",
    "ops",
    "edges",
    "numpy_parity",
    "array_api",
    "torch_fluency",
    "block",
    "parameters",
    "init",
    "autograd",
    "native_interop",
    "attention",
    "conv",
    "norm",
)
KINDS = ("scale", "nan")
_FLOATS = (md.float32, md.float64)


class _State:
    """What the wrappers read (the op to mutate and how) and write (what they saw)."""

    def __init__(self) -> None:
        self.op: str | None = None
        self.kind = "scale"
        self.fired = 0
        self.seen: set[str] = set()


STATE = _State()


def _float_tensors(bk: Any, out: Any) -> bool:
    try:
        return bk.dtype_of(out) in _FLOATS
    except (AttributeError, TypeError):
        return False


def _mutate(bk: Any, x: Any, kind: str) -> Any:
    if kind == "scale":
        STATE.fired += 1
        return x * 1.001
    shape = tuple(bk.shape_of(x))
    if not int(np.prod(shape)):
        return x
    mask = np.zeros(shape, dtype=bk.dtype_of(x).numpy)
    mask.flat[0] = np.nan
    STATE.fired += 1
    return x + bk.from_numpy(mask, bk.device_of(x))


def _visit(bk: Any, name: str, out: Any) -> Any:
    if isinstance(out, (tuple, list)):
        return type(out)(_visit(bk, name, o) for o in out)
    if not _float_tensors(bk, out):
        return out
    STATE.seen.add(name)
    return _mutate(bk, out, STATE.kind) if STATE.op == name else out


def _wrap(bk: Any, name: str, fn: Any) -> Any:
    def op(*args: Any, **kwargs: Any) -> Any:
        return _visit(bk, name, fn(*args, **kwargs))

    op.__name__ = name
    return op


def install(bk: Any) -> list[str]:
    """Wrap every op of ``bk``'s op table (on its instance); the names wrapped."""
    names = [n for n in dir(type(bk.ops)) if not n.startswith("_")]
    for name in names:
        setattr(bk.ops, name, _wrap(bk, name, getattr(bk.ops, name)))
    return names


class _Recorder:
    """pytest plugin: per passing test, the ops it saw return floats; keeps only ``select``."""

    def __init__(self, select: set[str] | None = None) -> None:
        self.select = select
        self.ops: dict[str, set[str]] = {}
        self.failed: list[str] = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Any:
        STATE.seen = set()
        yield

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed:
            self.failed.append(report.nodeid)
        elif report.when == "call" and report.passed:
            self.ops[report.nodeid] = set(STATE.seen)

    def pytest_collection_modifyitems(self, config: Any, items: list[Any]) -> None:
        if self.select is not None:
            keep = [i for i in items if i.nodeid in self.select]
            config.hook.pytest_deselected(items=[i for i in items if i.nodeid not in self.select])
            items[:] = keep


def _pytest(sections: list[str], plugin: _Recorder, extra: list[str]) -> int:
    args = ["--pyargs", *(f"multidev.testing.test_{s}" for s in sections)]
    args += ["-p", "multidev.testing.plugin", "-q", "-p", "no:cacheprovider", "--no-header"]
    return int(pytest.main([*args, "-x", "--tb=no", "-rN", *extra], plugins=[plugin]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/mutation_check.py")
    parser.add_argument("--sections", nargs="+", default=list(DEFAULT_SECTIONS))
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--ops", nargs="+", help="only these ops (default: all)")
    parser.add_argument("--out", help="write the table as JSON to this file")
    args = parser.parse_args(argv)

    bk = registry.current()
    names = install(bk)
    t0 = time.monotonic()
    baseline = _Recorder()
    _pytest(args.sections, baseline, [])
    if baseline.failed:
        print(f"baseline failed: {baseline.failed[:10]}; fix these first", file=sys.stderr)
        return 2
    by_op: dict[str, set[str]] = {}
    for nodeid, ops in baseline.ops.items():
        for name in ops:
            by_op.setdefault(name, set()).add(nodeid)
    table: dict[str, dict[str, Any]] = {}
    for name in args.ops or names:
        tests = by_op.get(name)
        if not tests:
            table[name] = {"tests": 0, **{k: "no test saw a float result" for k in args.kinds}}
            continue
        row: dict[str, Any] = {"tests": len(tests)}
        for kind in args.kinds:
            STATE.op, STATE.kind, STATE.fired = name, kind, 0
            rec = _Recorder(select=tests)
            with contextlib.redirect_stdout(io.StringIO()):
                _pytest(args.sections, rec, [])
            STATE.op = None
            if rec.failed:
                row[kind] = f"killed by {rec.failed[0]}"
            elif not STATE.fired:
                row[kind] = "not exercised (no non-empty float result)"
            else:
                row[kind] = "SURVIVED"
        table[name] = row
        print(f"{name}: {row}", file=sys.stderr, flush=True)
    survived = sorted(n for n, r in table.items() if "SURVIVED" in r.values())
    summary = {
        "backend": bk.name,
        "sections": args.sections,
        "kinds": args.kinds,
        "seconds": round(time.monotonic() - t0, 1),
        "table": table,
        "survived": survived,
        "not_exercised": sorted(n for n, r in table.items() if not r["tests"]),
    }
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1))
    print(f"\n{bk.name}: {len(table)} ops, sections {' '.join(args.sections)}")
    for name, row in table.items():
        cells = "; ".join(f"{k}: {row[k]}" for k in args.kinds)
        print(f"  {name:22s} {row['tests']:4d} tests  {cells}")
    print(f"survived: {survived or 'none'}")
    print(f"not exercised: {summary['not_exercised'] or 'none'}")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
