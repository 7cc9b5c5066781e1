"""`multidev launch` writes each line of each worker whole, after that worker's rank prefix:
2 real worker processes (the active backend's launch path: torchrun, or the launcher's own
processes) print many lines of several pieces each, unbuffered, on stdout and stderr at once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_distributed import _launch

import multidev as md
from multidev import distributed as dist

BK = md.get_backend()
LINES = 300

pytestmark = pytest.mark.skipif(
    dist.engine_module(BK) is None, reason=f"{BK} has no distributed engine"
)

# No framework import: the workers only print. Each print writes its pieces one by one
# (the launcher runs workers unbuffered), some lines stop half-way for longer than a reader
# polls (torchrun's reads its files every 0.1 s), the last line has no end, and stderr
# interleaves.
PIECES = f"""
import os, sys, time

rank = os.environ["RANK"]
for i in range({LINES}):
    if i % 50 == 25:
        print("rank", rank, "line", i, end=" ", flush=True)
        time.sleep(0.3)
        print("a" * (i % 7), "end")
        continue
    print("rank", rank, "line", i, "a" * (i % 7), "end", sep=" ")
    if i % 10 == 0:
        print("rank", rank, "err", i, "end", file=sys.stderr)
sys.stdout.write("rank " + rank + " last end")
"""

LINE = re.compile(r"^\[rank (\d)\] rank (\d) (line|err) (\d+) (a*) ?end$")
LAST = re.compile(r"^\[rank (\d)\] rank (\d) last end$")


def test_every_worker_line_arrives_whole_after_its_rank(tmp_path: Path) -> None:
    script = tmp_path / "pieces.py"
    script.write_text(PIECES)
    res = _launch([str(script)])  # 2 workers, the active backend's engine
    assert res.returncode == 0, res.stdout + res.stderr
    seen: dict[tuple[str, str], list[int]] = {}
    last = []
    for line in res.stdout.splitlines():
        if not line.startswith("[rank "):
            continue  # the framework launcher's own messages (MXNet's scheduler, torchrun)
        m, end = LINE.match(line), LAST.match(line)
        assert m or end, f"a cut or mixed line: {line!r}"
        if end:
            assert end[1] == end[2], line
            last.append(end[1])
            continue
        assert m[1] == m[2], f"a line under another rank's prefix: {line!r}"
        i = int(m[4])
        if m[3] == "line":
            assert m[5] == "a" * (i % 7), line
        seen.setdefault((m[1], m[3]), []).append(i)
    assert sorted(last) == ["0", "1"]
    for rank in ("0", "1"):
        assert seen[(rank, "line")] == list(range(LINES))  # every line, in order
        assert seen[(rank, "err")] == list(range(0, LINES, 10))
