"""A rank that raises or hangs ends the whole `multidev launch` job, on every engine: 2 real
worker processes on 127.0.0.1 run all-reduces until rank 1 fails on purpose; the launcher
must exit 1 (stopping the other rank) well within the subprocess timeout. The hang is bounded
by the collective timeout, set short here through MULTIDEV_DIST_TIMEOUT (Paddle's gloo keeps
its own 30 s). Before, an MXNet rank that raised never exited (its kvstore waited at exit for
the others) and a hung rank hung the MXNet job."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_distributed import ROOT, RUN_TIMEOUT, _env

import multidev as md
from multidev import distributed as dist

BK = md.get_backend()
pytestmark = pytest.mark.skipif(
    dist.engine_module(BK) is None, reason=f"{BK} has no distributed engine"
)

#: the collective timeout of the hang test (seconds)
HANG_TIMEOUT = 5

FAILING = """
import os, signal, sys, time
import multidev as md
from multidev import distributed as dist

dist.init_process_group()
t = md.ones((4,))
for step in range(100000):
    if step == 3 and dist.get_rank() == 1:
        print("rank 1 fails now:", sys.argv[1], flush=True)
        if sys.argv[1] == "raise":
            raise RuntimeError("rank 1 raised on purpose")
        if sys.argv[1] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(100000)
    dist.all_reduce(t)
    t = md.ones((4,))
"""


def run(tmp_path: Path, mode: str, *options: str) -> subprocess.CompletedProcess:
    """`multidev launch --nproc-per-node 2 [options] FAILING mode`, its output captured."""
    script = tmp_path / "failing.py"
    script.write_text(FAILING)
    env = _env()
    env["MULTIDEV_DIST_TIMEOUT"] = str(HANG_TIMEOUT)
    cmd = [sys.executable, "-m", "multidev", "launch", "--nproc-per-node", "2", *options]
    return subprocess.run(
        [*cmd, str(script), mode],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )


@pytest.mark.parametrize("mode", ["raise", "hang"])
def test_a_rank_that_raises_or_hangs_ends_the_job(tmp_path: Path, mode: str) -> None:
    res = run(tmp_path, mode)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert f"rank 1 fails now: {mode}" in out
    if mode == "raise":
        assert "RuntimeError: rank 1 raised on purpose" in out


def test_a_timeout_that_is_not_a_positive_number_is_a_clear_error(monkeypatch) -> None:
    monkeypatch.setenv("MULTIDEV_DIST_TIMEOUT", "soon")
    with pytest.raises(dist.DistributedError, match=r"MULTIDEV_DIST_TIMEOUT\. Received: 'soon'"):
        dist.init_process_group()
    monkeypatch.delenv("MULTIDEV_DIST_TIMEOUT")
    for bad in (0, -1.0, float("inf"), "60", True):
        with pytest.raises(ValueError, match="Expected timeout= a number of seconds > 0"):
            dist.init_process_group(timeout=bad)
    assert not dist.is_initialized()
