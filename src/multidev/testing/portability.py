"""Cross-backend checkpoint portability: every backend reads what every backend wrote.

python -m multidev.testing.portability write DIR
    the active backend writes DIR/<backend>/*.safetensors (every dtype it supports with
    NaN payloads, -0.0, infinities and subnormals; 0-d, zero-size, transposed and sliced
    tensors; nested lists/tuples/dicts; a tied pair; a state dict; an optimiser state dict
    with plain Python values and int keys) and a manifest.json
    with the expected values (hex of the raw bytes)
python -m multidev.testing.portability check DIR [--out FILE.json]
    the active backend loads every backend's files and compares them bit for bit with
    the manifests; exits non-zero on any failure
python -m multidev.testing.portability matrix DIR [--strict]
    merges the check results into a writer x reader matrix, printed and saved as
    DIR/matrix.md and DIR/matrix.json; exits non-zero on any failure (with --strict, also
    on any cell that was not run)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import struct
import sys
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

import multidev as md
from multidev import checkpoint, registry
from multidev import dtypes as _dt

__all__ = ["BACKENDS", "check", "matrix", "sample_values", "special_bits", "write"]

BACKENDS = ("numpy", "torch", "tensorflow", "paddle", "mxnet", "jax")
MANIFEST = "manifest.json"
_CHECK_KIND = "multidev-portability-check"

_SPECIAL_BITS = {
    "float16": [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7D01, 0xFE37, 0x0001, 0x03FF, 0x7BFF],
    "bfloat16": [0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFC5, 0x0001, 0x007F, 0x7F7F],
    "float32": [
        0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000,
        0x7F800001, 0xFFC12345, 0x00000001, 0x007FFFFF, 0x7F7FFFFF,
    ],
    "float64": [
        0x0000000000000000, 0x8000000000000000, 0x7FF0000000000000, 0xFFF0000000000000,
        0x7FF8000000000000, 0x7FF0000000000001, 0xFFF8DEADBEEF0123, 0x0000000000000001,
        0x000FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF,
    ],
}  # fmt: skip


def _uint(itemsize: int) -> np.dtype:
    return np.dtype(f"<u{itemsize}")


def special_bits(dt: _dt.DType) -> np.ndarray:
    """Edge values of ``dt`` as a host array: for floats ±0, ±inf, quiet and signalling NaNs
    with payloads, subnormals and the largest finite value; for integers min, max, 0, ±1."""
    if dt.kind == "f":
        return np.array(_SPECIAL_BITS[dt.name], dtype=_uint(dt.itemsize)).view(dt.numpy)
    if dt.kind == "b":
        return np.array([False, True, True, False])
    info = np.iinfo(dt.numpy)
    vals = [info.min, info.max, 0, 1] + ([-1] if dt.kind == "i" else [])
    return np.array(vals, dtype=dt.numpy)


def sample_values(dt: _dt.DType, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """A host array of ``shape`` whose raw bits are random (so floats include NaN payloads),
    starting with the special values of ``dt``."""
    n = int(np.prod(shape, dtype=np.int64))
    rng = np.random.default_rng(seed)
    if dt.kind == "b":
        flat = rng.integers(0, 2, n, dtype=np.uint8).astype(np.bool_)
    else:
        bits = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8)
        flat = bits.view(dt.numpy).copy()
    special = special_bits(dt)[:n]
    flat[: len(special)] = special
    return flat.reshape(shape)


def _hex(arr: np.ndarray) -> str:
    return np.ascontiguousarray(arr).reshape(-1).view(np.uint8).tobytes().hex()


# ------------------------------------------------------------------------------ write


class _Expect:
    """Builds the object to save and, beside it, its expected tree for the manifest."""

    def __init__(self) -> None:
        self._ids: dict[int, int] = {}

    def leaf(self, t: md.Tensor, host: np.ndarray) -> tuple[md.Tensor, dict]:
        tid = self._ids.setdefault(id(t), len(self._ids))
        host = np.asarray(host)
        spec = {
            "dtype": t.dtype.name,
            "shape": list(host.shape),
            "hex": _hex(host),
            "id": tid,
        }
        return t, {"tensor": spec}


_PLAIN_TYPES = {"int": int, "float": float, "bool": bool, "str": str, "none": type(None)}


def _plain(obj: Any) -> dict:
    """The manifest leaf of a plain Python value: its type and value (a float's bits in hex)."""
    kind = next(k for k, t in _PLAIN_TYPES.items() if type(obj) is t)
    value = struct.pack(">d", obj).hex() if kind == "float" else obj
    return {"plain": {"type": kind, "value": value}}


def _tree(obj: Any, expected_of: dict[int, dict]) -> dict:
    """The manifest tree of a saved object whose leaves' expectations are in ``expected_of``."""
    if isinstance(obj, md.Tensor):
        return expected_of[id(obj)]
    if type(obj) in _PLAIN_TYPES.values():
        return _plain(obj)
    if isinstance(obj, Mapping):
        kind = "ordered_dict" if isinstance(obj, OrderedDict) else "dict"
        return {kind: [[k, _tree(v, expected_of)] for k, v in obj.items()]}
    kind = "list" if isinstance(obj, list) else "tuple"
    return {kind: [_tree(v, expected_of) for v in obj]}


def _dtype_file(dt: _dt.DType, seed: int, ex: _Expect, exp: dict[int, dict]) -> dict:
    def put(t: md.Tensor, host: np.ndarray) -> md.Tensor:
        t, spec = ex.leaf(t, host)
        exp[id(t)] = spec
        return t

    values = sample_values(dt, (64,), seed)
    matrix = sample_values(dt, (3, 5), seed + 1)
    nd = sample_values(dt, (2, 3, 1, 2), seed + 2)
    scalar = sample_values(dt, (), seed + 3)
    m = md.asarray(matrix)
    return {
        "values": put(md.asarray(values), values),
        "scalar": put(md.asarray(scalar), scalar),
        "empty": put(md.asarray(np.zeros((0, 3), dtype=dt.numpy)), np.zeros((0, 3), dt.numpy)),
        "matrix": put(m, matrix),
        "transposed": put(md.permute_dims(m, (1, 0)), matrix.T),
        "sliced": put(m[::2, 1:], matrix[::2, 1:]),
        "nd": put(md.asarray(nd), nd),
    }


def _state_dict(seed: int) -> tuple[Mapping, str]:
    """A real ``net.state_dict()`` when multidev.nn has blocks, else a state-dict-like one."""
    nn = md.nn
    if hasattr(nn, "Sequential") and hasattr(nn, "Linear"):
        md.manual_seed(seed)
        net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        return net.state_dict(), "nn.Sequential.state_dict()"
    sd = OrderedDict()
    for i, (name, shape) in enumerate(
        [("0.weight", (8, 4)), ("0.bias", (8,)), ("2.weight", (1, 8)), ("2.bias", (1,))]
    ):
        sd[name] = md.asarray(sample_values(md.float32, shape, seed + i))
    return sd, "OrderedDict of float32 tensors"


def _optimizer_state(t: Any) -> dict:
    """An Adam ``state_dict()`` in PyTorch's layout (int keys, plain values) beside a
    scheduler's, with edge floats (NaN payload, -0.0, infinities) and big ints."""
    nan_payload = struct.unpack(">d", bytes.fromhex("7ff80000deadbeef"))[0]
    return {
        "state": {
            0: {"step": t(md.float32, (), 9), "exp_avg": t(md.float32, (2, 3), 10)},
            1: {"step": 7, "exp_avg": t(md.float32, (3,), 11)},
        },
        "param_groups": [
            {
                "lr": 0.001,
                "betas": (0.9, 0.999),
                "eps": 1e-08,
                "weight_decay": 0,
                "amsgrad": False,
                "foreach": None,
                "name": "Ünïcode 模",
                "params": [0, 1],
            }
        ],
        "scheduler": {"last_epoch": -1, "base_lrs": [0.001], "gamma": 0.1},
        "edge": [-0.0, math.inf, -math.inf, nan_payload, 5e-324, 2**100, -(2**63), ""],
        "0": "a str key beside the int key 0",
        0: "an int key",
    }


def write(folder: str | os.PathLike) -> Path:
    """Write the active backend's portability files and manifest into ``folder/<backend>``."""
    bk = registry.current()
    out = Path(folder) / bk.name
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, dict] = {}

    def emit(name: str, obj: Any, exp: dict[int, dict], note: str = "") -> None:
        md.save(obj, out / name)
        dts = sorted({leaf["tensor"]["dtype"] for leaf in _leaves(_tree(obj, exp))})
        files[name] = {"dtypes": dts, "expected": _tree(obj, exp), "note": note}

    for i, dt in enumerate(_dt.ALL):
        if checkpoint.lacks_dtype(bk, dt):
            continue
        ex = _Expect()
        exp: dict[int, dict] = {}
        emit(f"dtype_{dt.name}.safetensors", _dtype_file(dt, 1000 + 10 * i, ex, exp), exp)

    ex, exp = _Expect(), {}

    def t(dt: _dt.DType, shape: tuple[int, ...], seed: int) -> md.Tensor:
        host = sample_values(dt, shape, seed)
        tensor, spec = ex.leaf(md.asarray(host), host)
        exp[id(tensor)] = spec
        return tensor

    a, b, c, d = (
        t(md.float32, (2, 3), 1),
        t(md.int64, (4,), 2),
        t(md.float32, (), 3),
        t(md.uint8, (3, 1), 4),
    )
    nested = {
        "list": [a, b, (c, d)],
        "tuple": (a, [b]),
        "dict": {"z": c, "a": {"inner": d}, "dotted.key": b},
        "empty_list": [],
        "empty_dict": {},
        "empty_tuple": (),
    }
    emit("nested.safetensors", nested, exp)

    w, other = t(md.float32, (3, 3), 5), t(md.float32, (3, 3), 6)
    emit("tied.safetensors", [w, other, w, {"again": w}], exp)

    x = t(md.float32, (4,), 7)
    emit("tensor.safetensors", x, exp)

    sd, note = _state_dict(8)
    sd_exp = {}
    for v in sd.values():
        _, spec = ex.leaf(v, np.asarray(v.numpy()))
        sd_exp[id(v)] = spec
    emit("state_dict.safetensors", sd, sd_exp, note)

    emit("optimizer_state.safetensors", _optimizer_state(t), exp)

    manifest = {"backend": bk.name, "version": bk.version(), "files": files}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return out


def _leaves(tree: dict):
    ((kind, value),) = tree.items()
    if kind == "tensor":
        yield tree
    elif kind == "plain":
        return
    elif kind in ("list", "tuple"):
        for v in value:
            yield from _leaves(v)
    else:
        for _, v in value:
            yield from _leaves(v)


# ------------------------------------------------------------------------------ check


def _compare(obj: Any, tree: dict, where: str, ids: dict[int, Any], errors: list[str]) -> None:
    ((kind, value),) = tree.items()
    if kind == "tensor":
        if not isinstance(obj, md.Tensor):
            errors.append(f"{where}: expected a Tensor, got {type(obj).__name__}")
            return
        seen = ids.setdefault(value["id"], obj)
        if seen is not obj:
            errors.append(f"{where}: expected the same (tied) Tensor object as its twin")
        if obj.dtype.name != value["dtype"]:
            errors.append(f"{where}: dtype {obj.dtype.name}, expected {value['dtype']}")
        if list(obj.shape) != value["shape"]:
            errors.append(f"{where}: shape {list(obj.shape)}, expected {value['shape']}")
        elif _hex(np.asarray(obj.numpy())) != value["hex"]:
            errors.append(f"{where}: values differ from the writer's bits")
        return
    if kind == "plain":
        want = _PLAIN_TYPES[value["type"]]
        if type(obj) is not want:
            errors.append(f"{where}: expected {want.__name__}, got {type(obj).__name__}")
        elif _plain(obj)["plain"]["value"] != value["value"]:
            errors.append(f"{where}: {obj!r:.80} differs from the writer's value")
        return
    types = {"list": list, "tuple": tuple, "dict": dict, "ordered_dict": OrderedDict}
    if type(obj) is not types[kind]:
        errors.append(f"{where}: expected {types[kind].__name__}, got {type(obj).__name__}")
        return
    if kind in ("list", "tuple"):
        if len(obj) != len(value):
            errors.append(f"{where}: length {len(obj)}, expected {len(value)}")
            return
        for i, (o, v) in enumerate(zip(obj, value, strict=True)):
            _compare(o, v, f"{where}[{i}]", ids, errors)
        return
    keys = [k for k, _ in value]
    if [(type(k), k) for k in obj] != [(type(k), k) for k in keys]:
        errors.append(f"{where}: keys {list(obj)}, expected {keys} (in this order)")
        return
    for k, v in value:
        _compare(obj[k], v, f"{where}[{k!r}]", ids, errors)


def _check_file(path: Path, spec: dict, bk: Any) -> tuple[str, str]:
    """('ok' | 'skipped' | 'failed', reason) for one file on the active backend."""
    lacking = [n for n in spec["dtypes"] if checkpoint.lacks_dtype(bk, _dt.from_name(n))]
    if lacking:
        try:
            md.load(path)
        except md.CheckpointError as e:
            if lacking[0] in e.reason and bk.name in e.reason:
                return "skipped", f"{bk.name} has no {', '.join(lacking)}"
            return "failed", f"unclear error for an unsupported dtype: {e.reason}"
        return "failed", f"loaded although {bk.name} lacks {', '.join(lacking)}"
    try:
        obj = md.load(path)
    except Exception as e:
        return "failed", f"{type(e).__name__}: {e}"
    errors: list[str] = []
    _compare(obj, spec["expected"], "obj", {}, errors)
    if errors:
        return "failed", "; ".join(errors[:5]) + (" …" if len(errors) > 5 else "")
    return "ok", ""


def check(folder: str | os.PathLike) -> dict:
    """Load every backend's files in ``folder`` on the active backend; the results as a dict."""
    bk = registry.current()
    results: dict[str, dict] = {}
    for sub in sorted(Path(folder).iterdir()):
        manifest_path = sub / MANIFEST
        if not manifest_path.is_file():
            continue
        manifest = json.loads(manifest_path.read_text())
        res: dict[str, Any] = {"ok": [], "skipped": [], "failed": []}
        for name, spec in manifest["files"].items():
            status, reason = _check_file(sub / name, spec, bk)
            res[status].append({"file": name, "reason": reason} if reason else {"file": name})
        res["status"] = "failed" if res["failed"] else "ok"
        results[manifest["backend"]] = res
    return {"kind": _CHECK_KIND, "reader": bk.name, "version": bk.version(), "writers": results}


# ------------------------------------------------------------------------------ matrix


def _cell(res: dict | None) -> str:
    if res is None:
        return "not run"
    if res["status"] == "failed":
        return f"FAILED ({len(res['failed'])})"
    n = len(res["ok"])
    if res["skipped"]:
        return f"ok {n} files, {len(res['skipped'])} skipped"
    return f"ok {n} files"


def matrix(folder: str | os.PathLike) -> dict:
    """Merge the check results in ``folder`` into a writer x reader matrix (dict)."""
    checks: dict[str, dict] = {}
    for p in sorted(Path(folder).glob("*.json")):
        try:
            data = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("kind") == _CHECK_KIND:
            checks[data["reader"]] = data
    writers = set(BACKENDS)
    for data in checks.values():
        writers |= set(data["writers"])
    order = list(BACKENDS) + sorted(writers - set(BACKENDS))
    readers = order[:]
    cells = {w: {r: checks.get(r, {}).get("writers", {}).get(w) for r in readers} for w in order}
    total = len(order) * len(readers)
    passed = sum(1 for w in order for r in readers if (cells[w][r] or {}).get("status") == "ok")
    failed = sum(1 for w in order for r in readers if (cells[w][r] or {}).get("status") == "failed")
    return {
        "writers": order,
        "readers": readers,
        "cells": cells,
        "passed": passed,
        "failed": failed,
        "total": total,
    }


def render(m: dict) -> str:
    """The matrix as Markdown: rows are writers, columns readers, then every failure and skip."""
    lines = [
        "# Checkpoint portability (rows: writer, columns: reader)",
        "",
        "| writer \\ reader | " + " | ".join(m["readers"]) + " |",
        "|---" * (len(m["readers"]) + 1) + "|",
    ]
    for w in m["writers"]:
        lines.append(f"| {w} | " + " | ".join(_cell(m["cells"][w][r]) for r in m["readers"]) + " |")
    lines += ["", f"{m['passed']}/{m['total']} bit-exact, {m['failed']} failed."]
    notes = []
    for w in m["writers"]:
        for r in m["readers"]:
            res = m["cells"][w][r]
            for status in ("failed", "skipped"):
                for item in (res or {}).get(status, []):
                    notes.append(f"- {w} -> {r}: {status} {item['file']}: {item.get('reason', '')}")
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m multidev.testing.portability")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("write", help="write the active backend's files into DIR/<backend>/")
    p.add_argument("dir")
    p = sub.add_parser("check", help="load every backend's files in DIR on the active backend")
    p.add_argument("dir")
    p.add_argument("--out", help="result JSON (default: DIR/check-<backend>.json)")
    p = sub.add_parser("matrix", help="merge the check results into DIR/matrix.md and .json")
    p.add_argument("dir")
    p.add_argument("--strict", action="store_true", help="fail when a cell was not run")
    args = parser.parse_args(argv)

    if args.command == "write":
        out = write(args.dir)
        print(
            f"{registry.get_backend()}: wrote {len(list(out.glob('*.safetensors')))} files to {out}"
        )
        return 0
    if args.command == "check":
        result = check(args.dir)
        out = Path(args.out or Path(args.dir) / f"check-{result['reader']}.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1))
        bad = False
        for writer, res in result["writers"].items():
            print(f"{writer} -> {result['reader']}: {_cell(res)}")
            for item in res["failed"]:
                print(f"    FAILED {item['file']}: {item['reason']}")
                bad = True
        return 1 if bad else 0
    m = matrix(args.dir)
    text = render(m)
    Path(args.dir, "matrix.md").write_text(text)
    Path(args.dir, "matrix.json").write_text(json.dumps(m, indent=1))
    print(text, end="")
    missing = m["total"] - m["passed"] - m["failed"]
    return 1 if m["failed"] or (args.strict and missing) else 0


if __name__ == "__main__":
    sys.exit(main())
