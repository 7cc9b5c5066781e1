"""Cross-backend sessions compare only fresh artifacts.

Each ``tests-<backend>`` nox session calls :func:`start` (which deletes that backend's earlier
stamp and artifacts), writes its artifacts, and, once everything passed, :func:`finish`, which
writes a stamp ``<shared>/runs/<backend>.json``: a run id, the run's start and end times, and a
fingerprint of the sources. :func:`stale` tells a cross-backend session why an artifact cannot
be compared: no completed run, sources changed since, or a file not written during that run.

Standard library only: the noxfile loads this file by path, outside any test environment.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

__all__ = ["KINDS", "artifacts", "fingerprint", "finish", "stale", "start"]

#: cross-backend sessions and what each reads
KINDS = ("conformance", "portability", "reproducibility", "examples", "training", "resume")

#: seconds of slack for file systems whose timestamps are coarser than the clock
_SLACK = 1.0


def fingerprint(root: Path, backend: str) -> str:
    """sha256 over the sources an artifact of ``backend`` depends on: ``src/``, ``backends/``,
    ``pyproject.toml`` and ``constraints/<backend>.txt`` under ``root``."""
    root = Path(root)
    files = [root / "pyproject.toml", root / "constraints" / f"{backend}.txt"]
    for folder in (root / "src", root / "backends"):
        files += sorted(
            f
            for f in folder.rglob("*")
            if f.is_file() and "__pycache__" not in f.parts and not f.name.endswith(".pyc")
        )
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        h.update(f.read_bytes() if f.is_file() else b"<missing>")
        h.update(b"\0")
    return h.hexdigest()


def artifacts(shared: Path, backend: str) -> dict[str, Path]:
    """Per cross-backend session, the file or folder ``tests-<backend>`` writes for it."""
    shared = Path(shared)
    out = {
        "conformance": shared / "conformance" / f"{backend}.json",
        "portability": shared / "portability" / backend,
        "reproducibility": shared / "hashes" / f"{backend}.txt",
        "examples": shared / "examples" / f"{backend}.txt",
        "resume": shared / "resume" / f"{backend}.json",
    }
    if backend != "numpy":
        out["training"] = shared / "training" / f"{backend}.json"
    return out


def _stamp(shared: Path, backend: str) -> Path:
    return Path(shared) / "runs" / f"{backend}.json"


def start(root: Path, shared: Path, backend: str) -> dict[str, Any]:
    """Forget the earlier run of ``backend`` (stamp and artifacts); the new run's record."""
    _stamp(shared, backend).unlink(missing_ok=True)
    for path in artifacts(shared, backend).values():
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    return {
        "backend": backend,
        "run_id": uuid.uuid4().hex,
        "fingerprint": fingerprint(root, backend),
        "started": time.time(),
    }


def finish(shared: Path, run: dict[str, Any]) -> Path:
    """Write the stamp of a run whose artifacts are all written; its path."""
    path = _stamp(shared, run["backend"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**run, "finished": time.time()}, indent=2))
    return path


def stale(root: Path, shared: Path, backend: str, kind: str) -> str | None:
    """Why the ``kind`` artifact of ``backend`` cannot be compared, or None when it is fresh.

    Raises ValueError for an unknown ``kind`` or a backend without that artifact."""
    paths = artifacts(shared, backend)
    if kind not in paths:
        raise ValueError(
            f"Expected one of {sorted(paths)} for {backend}. Received: {kind!r}. Use a "
            "cross-backend session's name."
        )
    stamp = _stamp(shared, backend)
    if not stamp.is_file():
        return f"no completed run of tests-{backend} ({stamp} is missing)"
    run = json.loads(stamp.read_text())
    if run.get("fingerprint") != fingerprint(root, backend):
        return f"the sources changed since run {run.get('run_id')} of tests-{backend}"
    path = paths[kind]
    files = sorted(f for f in path.rglob("*") if f.is_file()) if path.is_dir() else [path]
    if not files or not files[0].exists():
        return f"{path} is missing"
    for f in files:
        if not run["started"] - _SLACK <= f.stat().st_mtime <= run["finished"] + _SLACK:
            return f"{f} was not written by run {run['run_id']} of tests-{backend}"
    return None
