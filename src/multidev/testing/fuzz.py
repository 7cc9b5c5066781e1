"""A structured fuzzer for ``md.load``: every case must end in success or ``md.CheckpointError``,
within a time limit and a memory limit, checked in a worker subprocess.

python -m multidev.testing.fuzz run [--cases 5000] [--seed 0] [--first 0] [--time-limit 5]
        [--memory-mb 200]
    runs the cases (``--first I --cases 1`` reruns case I alone) on the active backend (``MULTIDEV_BACKEND``) in a worker process, which
    reports each case's outcome, time (the worker's CPU seconds, so that a busy machine
    does not count against a case; its wall-clock time is reported beside) and peak memory (tracemalloc's peak, and how far the
    worker's peak resident set rose above its resident set before the case); a case that hangs is killed and counted. Exits non-zero on any
    exception other than md.CheckpointError, any case over the time limit and any case over
    the memory limit, naming the cases.
python -m multidev.testing.fuzz case --seed S --index I --out FILE
    writes the file of one case, to reproduce it.

Cases start from real checkpoints written by ``md.save`` on the active backend (several
dtypes, 0-d and zero-size tensors, nested and tied structures, plain values, int keys) and a
plain safetensors file, then apply one to three mutations: of the header (shapes, offsets,
dtypes, nesting, entry and reference counts, the structure and the metadata; the header is
re-encoded, and resealed with its checksum most of the time so that the deeper checks run)
and of the bytes (flips, truncations, insertions, the length field). Case ``I`` of seed
``S`` is always the same file.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import selectors
import struct
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import google_crc32c
import numpy as np

__all__ = ["Result", "base_files", "make_case", "run", "summarize"]

_PREFIX = b'{"__metadata__":{"header_crc32c":"'
_CODES = ["BOOL", "U8", "I8", "I16", "I32", "I64", "F16", "BF16", "F32", "F64"]
_ODD_CODES = ["F8_E4M3", "C64", "U16", "", "f32", 5, None, ["F32"]]
_ITEMSIZE = {"BOOL": 1, "U8": 1, "I8": 1, "I16": 2, "I32": 4, "I64": 8, "F16": 2, "BF16": 2,
             "F32": 4, "F64": 8}  # fmt: skip
_DATA_CAP = 1 << 20
_DEEP = re.compile(r'"@@deep:([ld]+)@@"')
Result = dict[str, Any]


# ------------------------------------------------------------------------------ base files


def base_files(folder: Path) -> list[bytes]:
    """Checkpoints written by md.save on the active backend, and a plain safetensors file."""
    import multidev as md
    from multidev import checkpoint, registry
    from multidev import dtypes as _dt
    from multidev.testing.portability import sample_values

    bk = registry.current()
    dts = [dt for dt in _dt.ALL if not checkpoint.lacks_dtype(bk, dt)]
    tensors = {dt.name: md.asarray(sample_values(dt, (2, 3), i)) for i, dt in enumerate(dts)}
    w = md.asarray(sample_values(md.float32, (3, 2), 7))
    objects = [
        tensors,
        {
            "w": w,
            "tied": [w, (w, md.zeros((0, 4)))],
            "scalar": md.asarray(np.float32(2.5)),
            "deep": [[[{"x": md.arange(4)}]]],
        },
        {
            "state": {0: {"step": 3, "exp_avg": md.ones(3)}, 1: {"step": md.asarray(2.0)}},
            "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1], "f": None}],
            "name": "é模",
        },
        md.arange(6),
    ]
    out = []
    for i, obj in enumerate(objects):
        md.save(obj, folder / f"base{i}")
        out.append((folder / f"base{i}").read_bytes())
    data = np.arange(12, dtype=np.float32).tobytes() + np.arange(3, dtype=np.int64).tobytes()
    header = {
        "a": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]},
        "b": {"dtype": "I64", "shape": [3], "data_offsets": [48, 72]},
        "__metadata__": {"format": "pt"},
    }
    out.append(_encode(header, data))
    return out


# ------------------------------------------------------------------------------ file layout


def _split(data: bytes) -> tuple[OrderedDict | None, bytes]:
    if len(data) < 8:
        return None, data
    (n,) = struct.unpack("<Q", data[:8])
    try:
        header = json.loads(data[8 : 8 + n], object_pairs_hook=OrderedDict)
    except (ValueError, RecursionError):
        return None, data
    return (header if isinstance(header, OrderedDict) else None), data[8 + n :]


def _encode(header: Any, data: bytes, *, seal: bool = True) -> bytes:
    raw = _DEEP.sub(_expand, json.dumps(header, separators=(",", ":"))).encode()
    raw += b" " * (-len(raw) % 8)
    if seal and raw.startswith(_PREFIX):
        k = len(_PREFIX)
        raw = raw[:k] + b"%08x" % google_crc32c.value(raw[k + 8 :]) + raw[k + 8 :]
    return struct.pack("<Q", len(raw)) + raw + data


def _entries(header: OrderedDict) -> list[str]:
    return [k for k, v in header.items() if k != "__metadata__" and isinstance(v, dict)]


def _relayout(header: OrderedDict, data: bytes, rng: np.random.Generator) -> bytes:
    """Offsets recomputed from dtypes and shapes so that the header is consistent, the data
    section refilled to match (random bytes), unless that would exceed a small cap."""
    pos = 0
    for name in _entries(header):
        e = header[name]
        size = _ITEMSIZE.get(e.get("dtype"), 0) if isinstance(e.get("dtype"), str) else 0
        shape = e.get("shape")
        if not isinstance(shape, list) or not all(type(s) is int and s >= 0 for s in shape):
            return data
        for s in shape:
            size *= s
        if size > _DATA_CAP:
            return data
        e["data_offsets"] = [pos, pos + size]
        pos += size
    if pos > _DATA_CAP:
        return data
    fresh = rng.integers(0, 2, pos, dtype=np.uint8).tobytes()
    return data[:pos] + fresh[len(data[:pos]) :]


# ------------------------------------------------------------------------------ mutations


def _deep(rng: np.random.Generator) -> str:
    """A placeholder for JSON nested ``depth`` levels deep (lists and objects), expanded by
    ``_encode`` (json.dumps itself cannot write what is nested that deep)."""
    depth = int(rng.choice([10, 99, 100, 101, 500, 5000]))
    return "@@deep:" + "".join("l" if b else "d" for b in rng.integers(0, 2, depth)) + "@@"


def _expand(match: re.Match) -> str:
    pattern = match.group(1)
    opens = "".join("[" if c == "l" else '{"k":' for c in pattern)
    closes = "".join("]" if c == "l" else "}" for c in reversed(pattern))
    return opens + "[]" + closes


def _odd_shape(rng: np.random.Generator) -> Any:
    choices: list[Callable[[], Any]] = [
        lambda: [],
        lambda: [0],
        lambda: [2**63],
        lambda: [2**64],
        lambda: [0, 2**63 - 1],
        lambda: [0, 2**62, 2**62],
        lambda: [2**33, 0],
        lambda: [2**31, 0],
        lambda: [1] * int(rng.choice([9, 10, 32, 33, 64, 65, 300])),
        lambda: [int(x) for x in rng.integers(0, 5, int(rng.integers(1, 6)))],
        lambda: [-1],
        lambda: [1.5],
        lambda: ["2"],
        lambda: [True],
        lambda: [None],
        lambda: 3,
        lambda: [[1]],
        lambda: [10**40],
    ]
    return choices[int(rng.integers(len(choices)))]()


def _mutate_header(header: OrderedDict, data: bytes, rng: np.random.Generator) -> bytes:
    """One structured change of the header; the result re-encoded (resealed most of the time)."""
    names = _entries(header)
    meta = header.get("__metadata__")
    kind = int(rng.integers(9))
    consistent = rng.random() < 0.5
    if kind == 0 and names:  # shapes
        header[names[int(rng.integers(len(names)))]]["shape"] = _odd_shape(rng)
    elif kind == 1 and names:  # offsets
        e = header[names[int(rng.integers(len(names)))]]
        offsets = e.get("data_offsets")
        # an earlier mutation of the same case may have left anything here (a string, floats)
        if (
            isinstance(offsets, list)
            and len(offsets) >= 2
            and all(type(v) is int for v in offsets[:2])
        ):
            b, end = offsets[:2]
        else:
            b, end = 0, 0
        e["data_offsets"] = [
            [end, b],
            [b + int(rng.integers(-9, 9)), end],
            [b, end + int(rng.integers(-9, 9))],
            [b, 2**64],
            [-1, end],
            [b, end, end],
            [float(b), end],
            "0,8",
        ][int(rng.integers(8))]
        consistent = False
    elif kind == 2 and names:  # dtypes
        pool = _CODES + _ODD_CODES
        header[names[int(rng.integers(len(names)))]]["dtype"] = pool[int(rng.integers(len(pool)))]
    elif kind == 3:  # nesting in the header
        where = names[int(rng.integers(len(names)))] if names and rng.random() < 0.5 else "x"
        header[where] = _deep(rng)
        consistent = False
    elif kind == 4:  # counts: many (zero-size) entries
        count = int(rng.choice([10, 100, 1000, 20_000], p=[0.4, 0.3, 0.25, 0.05]))
        for i in range(count):
            header[f"z{i}"] = {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}
        consistent = True
    elif kind == 5 and isinstance(meta, dict):  # structure nodes
        meta["structure"] = _odd_structure(meta.get("structure", ""), names, rng)
        consistent = False
    elif kind == 6 and isinstance(meta, dict):  # metadata values
        key = ["format", "format_version", "crc32c", "backend", "structure"][int(rng.integers(5))]
        meta[key] = ["", "2", "3", "-1", "1e5", "٣", "{}", "[]", "null", "multidev"][
            int(rng.integers(10))
        ]
        consistent = False
    elif kind == 7 and names:  # an entry's fields
        e = header[names[int(rng.integers(len(names)))]]
        field = ["dtype", "shape", "data_offsets"][int(rng.integers(3))]
        if rng.random() < 0.5:
            e.pop(field, None)
        else:
            e["extra"] = _deep(rng) if rng.random() < 0.2 else 1
        consistent = False
    elif kind == 8 and names:  # an entry renamed or duplicated in the structure
        old = names[int(rng.integers(len(names)))]
        header[old + "#x" if rng.random() < 0.5 else "__metadata__x"] = header.pop(old)
        consistent = False
    if consistent:
        data = _relayout(header, data, rng)
    return _encode(header, data, seal=rng.random() < 0.85)


def _odd_structure(text: str, names: list[str], rng: np.random.Generator) -> str:
    name = names[0] if names else "t"
    ref = {"tensor": name}
    options: list[Callable[[], Any]] = [
        lambda: {"list": [ref] * int(rng.choice([10, 10_000, 200_000], p=[0.6, 0.3, 0.1]))},
        lambda: {"set": [ref]},
        lambda: {"tensor": "missing"},
        lambda: {"tensor": 5},
        lambda: {"list": ref},
        lambda: {"dict": [[1.5, ref]]},
        lambda: {"dict": [["k", ref], ["k", ref]]},
        lambda: {"dict": [[True, ref]]},
        lambda: {"float": "xyz"},
        lambda: {"int": "1"},
        lambda: {"int": 10**2000},
        lambda: {"none": 1},
        lambda: {"list": [ref, {"bool": 1}]},
        lambda: {"list": [ref], "tuple": []},
        lambda: _deep_structure(int(rng.choice([99, 100, 101, 150])), ref),
        lambda: {"list": [{"list": []}] * int(rng.choice([10, 50_000], p=[0.8, 0.2]))},
        lambda: [ref],
        lambda: None,
    ]
    value = options[int(rng.integers(len(options)))]()
    if rng.random() < 0.1:
        return text[: int(rng.integers(len(text) + 1))]
    return json.dumps(value)


def _deep_structure(depth: int, leaf: Any) -> Any:
    node = leaf
    for _ in range(depth):
        node = {"list": [node]}
    return node


def _mutate_bytes(data: bytes, rng: np.random.Generator) -> bytes:
    """One change of the raw bytes: flips, a truncation, an insertion or the length field."""
    buf = bytearray(data)
    kind = int(rng.integers(5))
    if kind == 0 and buf:
        for _ in range(int(rng.integers(1, 9))):
            i = int(rng.integers(len(buf)))
            buf[i] ^= 1 << int(rng.integers(8))
        return bytes(buf)
    if kind == 1:
        return bytes(buf[: int(rng.integers(len(buf) + 1))])
    if kind == 2:
        i = int(rng.integers(len(buf) + 1))
        return bytes(buf[:i]) + rng.bytes(int(rng.integers(1, 17))) + bytes(buf[i:])
    if kind == 3 and len(buf) > 8:
        i = int(rng.integers(8, len(buf)))
        return bytes(buf[:i]) + bytes(buf[i + int(rng.integers(1, 17)) :])
    (n,) = struct.unpack("<Q", bytes(buf[:8])) if len(buf) >= 8 else (0,)
    new = [0, 1, n - 8, n + 8, len(buf), 2**63, 2**64 - 1, 100_000_001][int(rng.integers(8))]
    return struct.pack("<Q", max(0, min(new, 2**64 - 1))) + bytes(buf[8:])


def make_case(bases: list[bytes], seed: int, index: int) -> bytes:
    """The file of case ``index`` of ``seed``: a base file with one to three mutations."""
    rng = np.random.default_rng([seed, index])
    data = bases[int(rng.integers(len(bases)))]
    for _ in range(int(rng.integers(1, 4))):
        header, rest = _split(data)
        if header is not None and rng.random() < 0.7:
            data = _mutate_header(header, rest, rng)
        else:
            data = _mutate_bytes(data, rng)
    return data


# ------------------------------------------------------------------------------ worker


def _reset_peak() -> bool:
    """Reset the kernel's record of this process's peak resident set (Linux: ``clear_refs``
    5); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_resident() -> int:
    """The peak resident set (bytes) since the last ``_reset_peak``, else since start."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _resident() -> int:
    """The worker's resident set now (bytes)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    except OSError:
        return _peak_resident()


def _worker(seed: int, start: int, count: int) -> None:
    """Run cases start..start+count-1, one JSON line per case on stdout (flushed)."""
    import multidev as md

    with tempfile.TemporaryDirectory(prefix="multidev-fuzz-") as tmp:
        folder = Path(tmp)
        bases = base_files(folder)
        path = folder / "case"
        for data in bases:  # warm up every path once
            path.write_bytes(data)
            md.load(path)
        tracemalloc.start()
        for index in range(start, start + count):
            path.write_bytes(make_case(bases, seed, index))
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            # the peak is per case: a framework's import (paddle's) can leave the lifetime peak
            # far above the resident set, which would charge every case the difference
            rss0 = _resident() if _reset_peak() else _peak_resident()
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                got = md.load(path)
                outcome = "ok"
            except md.CheckpointError:
                got, outcome = None, "CheckpointError"
            except Exception as e:
                got, outcome = None, f"{type(e).__name__}: {str(e)[:200]}"
            seconds, wall = time.process_time() - c0, time.perf_counter() - t0
            peak = tracemalloc.get_traced_memory()[1] - base
            del got
            rss = max(0, _peak_resident() - rss0)
            line = {"index": index, "outcome": outcome, "seconds": seconds, "wall": wall,
                    "peak": peak, "rss": rss}  # fmt: skip
            sys.stdout.write(json.dumps(line) + "\n")
            sys.stdout.flush()


# ------------------------------------------------------------------------------ runner


def _cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user and system) that process ``pid`` has used; None without ``/proc``."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def run(
    cases: int,
    seed: int = 0,
    time_limit: float = 5.0,
    memory_limit: int = 200 << 20,
    start_timeout: float = 300.0,
    first: int = 0,
) -> list[Result]:
    """Run ``cases`` cases (indices ``first`` to ``first + cases - 1``) in worker subprocesses of
    the active backend; a case that uses ``max(60, 10 * time_limit)`` CPU seconds (or, where the
    worker's CPU time cannot be read, wall-clock seconds), or sits 5 times that long on the
    wall clock, is killed (outcome ``"hang"``) and the worker restarted after it: on a busy
    machine a worker waiting for a CPU is not taken for a hung one. Returns one result per
    case; ``summarize`` judges them against the limits."""
    results: list[Result] = []
    index, end = first, first + cases
    hard = max(60.0, 10 * time_limit)
    while index < end:
        cmd = [sys.executable, "-m", "multidev.testing.fuzz", "worker", "--seed", str(seed),
               "--start", str(index), "--count", str(end - index)]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        started = index
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + start_timeout
        waited_since, cpu_mark = time.monotonic(), 0.0
        while index < end:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                cpu = _cpu_seconds(proc.pid)
                now = time.monotonic()
                if cpu is not None and cpu - cpu_mark < hard and now - waited_since < 5 * hard:
                    deadline = now + hard  # starved of CPU by other work, not hung
                    continue
                proc.kill()
                results.append({"index": index, "outcome": "hang", "seconds": hard, "peak": 0,
                                "rss": 0})  # fmt: skip
                index += 1
                break
            line = proc.stdout.readline()
            if not line:
                proc.wait()
                err = (proc.stderr.read() if proc.stderr else "")[-2000:]
                if started == index:
                    raise RuntimeError(f"the fuzz worker failed before its first case:\n{err}")
                results.append({"index": index, "outcome": f"worker died: {err}",
                                "seconds": 0.0, "peak": 0, "rss": 0})  # fmt: skip
                index += 1
                break
            result = json.loads(line)
            results.append(result)
            index = result["index"] + 1
            waited_since = time.monotonic()
            deadline = waited_since + hard
            cpu_mark = _cpu_seconds(proc.pid) or 0.0
        sel.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    return results


def summarize(results: list[Result], time_limit: float, memory_limit: int) -> dict:
    """Counts of outcomes, the slowest and largest cases, and every case that failed: an
    exception other than md.CheckpointError, a hang, or a limit exceeded."""
    failures = []
    for r in results:
        why = []
        if r["outcome"] not in ("ok", "CheckpointError"):
            why.append(r["outcome"])
        if r["seconds"] > time_limit:
            why.append(f"{r['seconds']:.2f} s")
        if max(r["peak"], r["rss"]) > memory_limit:
            why.append(f"{max(r['peak'], r['rss']) / 2**20:.0f} MiB")
        if why:
            failures.append({"index": r["index"], "why": "; ".join(why)})
    counts: dict[str, int] = {}
    for r in results:
        key = r["outcome"] if r["outcome"] in ("ok", "CheckpointError") else "other"
        counts[key] = counts.get(key, 0) + 1
    return {
        "cases": len(results),
        "outcomes": counts,
        "max_seconds": max((r["seconds"] for r in results), default=0.0),
        "max_peak_bytes": max((r["peak"] for r in results), default=0),
        "max_rss_growth_bytes": max((r["rss"] for r in results), default=0),
        "failures": failures,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m multidev.testing.fuzz")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run the cases on the active backend and judge them")
    p.add_argument("--cases", type=int, default=5000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--first", type=int, default=0, help="index of the first case (to rerun some)")
    p.add_argument("--time-limit", type=float, default=5.0, help="seconds per case")
    p.add_argument("--memory-mb", type=int, default=200, help="peak MiB per case")
    p.add_argument("--out", help="write the summary as JSON to this file")
    p = sub.add_parser("worker", help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--start", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    p = sub.add_parser("case", help="write the file of one case")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--index", type=int, required=True)
    p.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    if args.command == "worker":
        _worker(args.seed, args.start, args.count)
        return 0
    if args.command == "case":
        with tempfile.TemporaryDirectory() as tmp:
            Path(args.out).write_bytes(make_case(base_files(Path(tmp)), args.seed, args.index))
        return 0
    from multidev import registry

    t0 = time.monotonic()
    results = run(args.cases, args.seed, args.time_limit, args.memory_mb << 20, first=args.first)
    summary = summarize(results, args.time_limit, args.memory_mb << 20)
    summary["backend"] = registry.get_backend()
    summary["seed"] = args.seed
    summary["wall_seconds"] = round(time.monotonic() - t0, 1)
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1))
    print(
        f"{summary['backend']}: {summary['cases']} cases in {summary['wall_seconds']} s, "
        f"outcomes {summary['outcomes']}, slowest {summary['max_seconds']:.3f} s, "
        f"peak {summary['max_peak_bytes'] / 2**20:.1f} MiB (tracemalloc), "
        f"resident growth {summary['max_rss_growth_bytes'] / 2**20:.1f} MiB"
    )
    for f in summary["failures"][:50]:
        print(f"  case {f['index']}: {f['why']}  (reproduce: python -m multidev.testing.fuzz "
              f"case --seed {args.seed} --index {f['index']} --out case.bin)")  # fmt: skip
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] if len(sys.argv) > 1 else None))
