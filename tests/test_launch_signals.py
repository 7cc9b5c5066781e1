"""`multidev launch` stopped by a signal stops its workers: they run in sessions of their own
(so that a failing one can be stopped with its children), which a SIGTERM sent to the launcher
alone, by a job scheduler or a timeout, does not reach. Workers that ignore SIGTERM are
SIGKILLed after the grace (--stop-timeout), a second signal during that teardown does not cut
it short, SIGINT ends the launcher with 130 and no traceback, and usage errors are one line
and exit code 2 before anything starts. Real worker processes, loopback only; every process a
test started is killed at its end, whether it passed or not."""

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
from multidev.distributed.launch import MAX_NPROC_PER_NODE

BK = md.get_backend()
pytestmark = pytest.mark.skipif(engine_module(BK) is None, reason=f"{BK} has no distributed engine")

CLI = [sys.executable, "-c", "from multidev.cli import main; raise SystemExit(main())"]
WORKER = """
import os, signal, sys, time
from pathlib import Path
if sys.argv[2] == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
Path(sys.argv[1], os.environ["RANK"]).write_text(str(os.getpid()))
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"  # a zombie is dead


class Launcher:
    """`multidev launch` of WORKER in a session of its own; ``close`` kills it and every
    worker that wrote its pid, whatever state the test left them in."""

    def __init__(self, tmp_path: Path, kind: str, *options: str) -> None:
        script = tmp_path / "worker.py"
        script.write_text(WORKER)
        self.pids = tmp_path / "pids"
        self.pids.mkdir()
        self.popen = subprocess.Popen(
            [
                *CLI,
                "launch",
                "--nproc-per-node",
                "2",
                *options,
                str(script),
                str(self.pids),
                kind,
            ],
            env=dict(os.environ, MULTIDEV_BACKEND=BK),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    def workers(self) -> list[int]:
        """The workers' pids, once both have started."""
        deadline = time.monotonic() + 120
        while len(list(self.pids.iterdir())) < 2:
            assert self.popen.poll() is None, f"the launcher ended early ({self.popen.returncode})"
            assert time.monotonic() < deadline, "the workers did not start within 120 s"
            time.sleep(0.2)
        time.sleep(0.5)  # the worker's pid file is written whole
        return [int(p.read_text()) for p in self.pids.iterdir()]

    def close(self) -> None:
        for pid in [int(p.read_text() or 0) for p in self.pids.iterdir()]:
            if pid and _alive(pid):
                os.kill(pid, signal.SIGKILL)
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait()
        self.popen.stderr.close()


@pytest.fixture
def launcher(tmp_path: Path):
    started: list[Launcher] = []

    def start(kind: str, *options: str) -> Launcher:
        started.append(Launcher(tmp_path, kind, *options))
        return started[-1]

    yield start
    for one in started:
        one.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_to_the_launcher_stops_every_worker(launcher, sig: signal.Signals):
    run = launcher("polite")
    workers = run.workers()
    run.popen.send_signal(sig)
    assert run.popen.wait(60) == 128 + sig
    assert not [pid for pid in workers if _alive(pid)], "workers outlived their launcher"
    assert b"Traceback" not in run.popen.stderr.read()


def test_workers_that_ignore_sigterm_are_killed_after_the_grace(launcher):
    run = launcher("stubborn", "--stop-timeout", "2")
    workers = run.workers()
    run.popen.send_signal(signal.SIGTERM)
    assert run.popen.wait(60) == 128 + signal.SIGTERM
    assert not [pid for pid in workers if _alive(pid)], "workers outlived their launcher"


def test_a_second_signal_during_the_teardown_does_not_cut_it_short(launcher):
    run = launcher("stubborn", "--stop-timeout", "3")
    workers = run.workers()
    run.popen.send_signal(signal.SIGTERM)
    time.sleep(0.5)  # the launcher is in its teardown, waiting for the stubborn workers
    run.popen.send_signal(signal.SIGINT)
    run.popen.send_signal(signal.SIGTERM)
    assert run.popen.wait(60) == 128 + signal.SIGTERM
    assert not [pid for pid in workers if _alive(pid)], "workers outlived their launcher"
    assert b"Traceback" not in run.popen.stderr.read()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--nproc-per-node", "0"], "--nproc-per-node in [1, "),
        (["--nproc-per-node", "-3"], "--nproc-per-node in [1, "),
        (["--nproc-per-node", str(MAX_NPROC_PER_NODE + 1)], "--nproc-per-node in [1, "),
        (["--nnodes", "2", "--node-rank", "2", "--master-port", "29500"], "--node-rank in [0, 1]"),
        (["--node-rank", "-1"], "--node-rank in [0, 0]"),
        (["--master-addr", "no such host.invalid"], "--master-addr"),
        (["--master-addr", "300.1.1.1"], "--master-addr"),
        (["--master-port", "70000"], "--master-port in [0, 65535]"),
        (["--master-port", "-1"], "--master-port in [0, 65535]"),
        (["--nnodes", "0"], "--nnodes >= 1"),
        (["--stop-timeout", "-1"], "--stop-timeout"),
        (["--max-restarts", "-1"], "--max-restarts in [0, "),
        (["--rdzv-timeout", "0"], "--rdzv-timeout in (0, 86400]"),
        (["--log-dir", sys.executable], "--log-dir to be a folder"),
        (["MISSING"], "no such file"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2_before_anything_starts(tmp_path, options, message):
    marker = tmp_path / "ran"
    script = tmp_path / "worker.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n")
    target = [str(tmp_path / "missing.py")] if options == ["MISSING"] else [*options, str(script)]
    done = subprocess.run(
        [*CLI, "launch", *target],
        env=dict(os.environ, MULTIDEV_BACKEND=BK),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("multidev launch: error: expected") and message in last, done.stderr
    assert "Traceback" not in done.stderr
    assert not marker.exists()
