"""`multidev launch` stopped by a signal stops its workers: they run in sessions of their own
(so that a failing one can be stopped with its children), which a SIGTERM sent to the launcher
alone, by a job scheduler or a timeout, does not reach."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import multidev as md
from multidev.distributed import engine_module

BK = md.get_backend()
pytestmark = pytest.mark.skipif(engine_module(BK) is None, reason=f"{BK} has no distributed engine")

WORKER = """
import os, sys, time
from pathlib import Path
Path(sys.argv[1], os.environ["RANK"]).write_text(str(os.getpid()))
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_the_launcher_stops_every_worker(tmp_path: Path, sig: signal.Signals):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    pids = tmp_path / "pids"
    pids.mkdir()
    launcher = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from multidev.cli import main; raise SystemExit(main())",
            "launch",
            "--nproc-per-node",
            "2",
            str(script),
            str(pids),
        ],
        env=dict(os.environ, MULTIDEV_BACKEND=BK),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while len(list(pids.iterdir())) < 2:
            assert launcher.poll() is None, f"the launcher ended early ({launcher.returncode})"
            assert time.monotonic() < deadline, "the workers did not start within 120 s"
            time.sleep(0.2)
        workers = [int(p.read_text()) for p in pids.iterdir()]
        launcher.send_signal(sig)
        assert launcher.wait(60) == 128 + sig
        assert not [pid for pid in workers if _alive(pid)], "workers outlived their launcher"
    finally:
        launcher.kill()
        launcher.wait()
