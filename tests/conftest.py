"""Fixtures shared by the tests in this folder."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable

import pytest

RunPython = Callable[..., subprocess.CompletedProcess]


def run_python(
    code: str, *args: str, timeout: float = 300, check: bool = True, **env: str
) -> subprocess.CompletedProcess:
    """Run ``code`` (dedented) in a fresh interpreter, so that imports, environment variables
    and the frameworks' runtimes start clean; ``env`` is added to this process's environment
    minus ``MULTIDEV_BACKEND`` (pass it to choose a backend). With ``check``, a non-zero exit
    fails the test with the child's stderr."""
    full = {k: v for k, v in os.environ.items() if k != "MULTIDEV_BACKEND"}
    full.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    full.update(env)
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=timeout,
    )
    if check:
        assert out.returncode == 0, out.stderr
    return out


@pytest.fixture(name="run_python", scope="session")
def run_python_fixture() -> RunPython:
    """``run_python(code, *argv, timeout=300, check=True, **env)``: a fresh interpreter."""
    return run_python


def assert_ranks_match(
    one: str | os.PathLike, two: str | os.PathLike, ranks: int = 2, rtol: float = 1e-6
) -> None:
    """Every rank's ``rank<r>.npz`` under ``two`` holds the arrays of ``one/rank0.npz`` (the
    single-process run) within ``rtol`` relative (norm of the difference over the norm)."""
    import numpy as np

    ref = np.load(os.path.join(one, "rank0.npz"))
    for rank in range(ranks):
        got = np.load(os.path.join(two, f"rank{rank}.npz"))
        assert sorted(got.files) == sorted(ref.files)
        for key in ref.files:
            err = np.linalg.norm(got[key] - ref[key]) / np.linalg.norm(ref[key])
            assert err <= rtol, (rank, key, err)


# ------------------------------------------------------------------ worker crashes under xdist

#: node id -> how many times a worker process died while running it
_CRASHED: dict[str, int] = {}


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: called only where xdist runs
def pytest_handlecrashitem(crashitem: str, report: pytest.TestReport, sched) -> None:
    """A test whose worker process died (a native crash: Paddle's static-graph runtime does,
    rarely and at no fixed test, see docs/development.md) runs once more on a fresh worker,
    and the summary names it; a test that crashes its worker twice fails."""
    _CRASHED[crashitem] = _CRASHED.get(crashitem, 0) + 1
    if _CRASHED[crashitem] == 1:
        sched.mark_test_pending(crashitem)
        report.outcome = "rerun"  # type: ignore[assignment]


def pytest_report_teststatus(report: pytest.TestReport):
    if report.outcome == "rerun":
        return "rerun", "R", ("RERUN", {"yellow": True})
    return None


def pytest_terminal_summary(terminalreporter) -> None:
    if _CRASHED:
        terminalreporter.section("worker crashes", yellow=True)
        for nodeid, times in sorted(_CRASHED.items()):
            verdict = "failed" if times > 1 else "ran again on a fresh worker"
            terminalreporter.line(f"{nodeid}: its worker died {times}x; {verdict}")
