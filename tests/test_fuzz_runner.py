"""The fuzz runner's clock: a worker starved of CPU by a busy machine is not taken for a hung
one, because the runner reads the worker's CPU seconds, which grow with work and not with
waiting."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from multidev.testing import fuzz


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="no /proc: wall-clock seconds")
def test_cpu_seconds_grow_with_work_and_not_with_waiting():
    before = fuzz._cpu_seconds(os.getpid())
    t0 = time.process_time()
    while time.process_time() - t0 < 0.3:
        pass
    after = fuzz._cpu_seconds(os.getpid())
    assert before is not None and after is not None
    assert 0.2 <= after - before <= 5.0
    time.sleep(0.3)
    later = fuzz._cpu_seconds(os.getpid())
    assert later is not None and later - after < 0.2


def test_cpu_seconds_of_a_process_that_is_gone_are_unknown():
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert fuzz._cpu_seconds(proc.pid) is None
