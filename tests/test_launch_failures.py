"""A rank that raises or hangs, or a node that dies, ends the whole `multidev launch` job on
every engine, with a summary of the first failure; `--max-restarts`, `--log-dir` and `--tee`.
Real worker processes on 127.0.0.1 run all-reduces until one fails on purpose; the launcher
must exit 1 (stopping the others) well within the subprocess timeout. A hang is bounded by
the collective timeout, set short here through MULTIDEV_DIST_TIMEOUT (Paddle's gloo keeps
its own 30 s). Before, an MXNet rank that raised never exited (its kvstore waited at exit for
the others), a hung rank hung the MXNet job, and a failure on one TensorFlow node never
reached the other node's launcher. Every process a test started is killed at its end."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_distributed import ROOT, RUN_TIMEOUT, _env

import multidev as md
from multidev import distributed as dist
from multidev.distributed.launch import free_port

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
from multidev.distributed.env import detect

if sys.argv[1] == "hang_early" and detect(os.environ).rank == 1:
    print("rank 1 fails now: hang_early", flush=True)
    time.sleep(100000)  # never reaches init_process_group
dist.init_process_group()
pids = os.environ.get("FAILING_PIDS")
if pids:
    with open(os.path.join(pids, str(dist.get_rank())), "w") as f:
        f.write(str(os.getpid()))
t = md.ones((4,))
for step in range(100000):
    if step == 3 and dist.get_rank() == 1 and sys.argv[1] != "run":
        print("rank 1 fails now:", sys.argv[1], flush=True)
        if sys.argv[1] == "raise":
            raise RuntimeError("rank 1 raised on purpose")
        if sys.argv[1] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if sys.argv[1] == "exit":
            sys.exit(3)
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


def _launch_script(script: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "multidev", "launch", "--nproc-per-node", "2"]
    cmd += ["--stop-timeout", "2", str(script), *args]
    return subprocess.run(
        cmd, env=_env(), cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT
    )


@pytest.mark.parametrize("mode", ["raise", "exit", "hang", "hang_early"])
def test_a_rank_that_raises_or_hangs_ends_the_job(tmp_path: Path, mode: str) -> None:
    """exit: rank 1 calls sys.exit(3), named with its code (on MXNet and JAX, whose shutdown
    waits for the others, the rank waiting for it was named first, with code 1);
    hang_early: rank 1 hangs before init_process_group, so rank 0 waits for it there."""
    res = run(tmp_path, mode)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert f"rank 1 fails now: {mode}" in out
    summary = out[out.index("multidev launch: the job failed") :]
    if mode == "raise":  # torch's gloo threads may abort the interpreter's exit (SIGABRT)
        assert re.search(
            r"first failure: rank 1 \(node 0\) (exited with code 1|was killed by signal \w+)\.",
            summary,
        ), out
        assert "RuntimeError: rank 1 raised on purpose" in summary, out
    elif mode == "exit":
        assert re.search(
            r"first failure: rank 1 \(node 0\) (exited with code 3|was killed by signal \w+)\.",
            summary,
        ), out
    elif mode == "hang":  # the rank that waited for it in an all-reduce ends first
        assert "first failure: rank 0 (node 0) exited with code 1." in summary, out
    else:  # rank 0 waited in init_process_group: the engine's bound or multidev's ends it
        assert re.search(
            r"first failure: rank 0 \(node 0\) (exited with code 1|was killed by signal \w+)\.",
            summary,
        ), out


BARRIERS = """
import sys, time
from multidev import distributed as dist

dist.init_process_group(timeout=4)
if dist.get_rank() == 0:
    time.sleep(2)  # the others wait for it: within the timeout
dist.barrier()
print("rank", dist.get_rank(), "passed the first barrier", flush=True)
if dist.get_rank() == 0:
    time.sleep(60)  # never reaches the second
else:
    with open(sys.argv[1], "w") as f:
        f.write(str(time.time()))  # when it starts to wait
dist.barrier()
"""


def test_a_barrier_waits_for_a_slow_rank_and_gives_up_after_the_timeout(tmp_path: Path) -> None:
    """The group's timeout (4 s here) bounds a barrier both ways: a rank 2 s late is waited
    for, one that never comes ends the job within the timeout (Paddle's gloo barrier would
    give up after its own 30 s whatever the timeout: multidev's counts in Paddle's store)."""
    script, waiting = tmp_path / "barriers.py", tmp_path / "waiting"
    script.write_text(BARRIERS)
    res = _launch_script(script, str(waiting))
    waited = time.time() - float(waiting.read_text())
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    for rank in (0, 1):
        assert f"rank {rank} passed the first barrier" in out, out
    assert "first failure: rank 1 (node 0)" in out, out
    assert waited < 20, out  # the timeout and the teardown, not 30 s or rank 0's 60 s


def _kill_recorded(pids: Path) -> None:
    for path in pids.iterdir():
        try:
            os.kill(int(path.read_text() or 0), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def test_a_node_that_dies_ends_the_job_on_the_other_node(tmp_path: Path) -> None:
    """Two nodes on loopback, a worker each; node 1's launcher is SIGKILLed while the workers
    run all-reduces (its machine went down): node 0's launcher stops its worker and names
    node 1 in its summary, whatever the engine does about the lost rank."""
    script = tmp_path / "failing.py"
    script.write_text(FAILING)
    pids = tmp_path / "pids"
    pids.mkdir()
    env = {**_env(), "MULTIDEV_DIST_TIMEOUT": "60", "FAILING_PIDS": str(pids)}
    cmd = [sys.executable, "-m", "multidev", "launch", "--nproc-per-node", "1", "--nnodes", "2"]
    cmd += ["--master-port", str(free_port()), "--rdzv-timeout", "120"]
    nodes = [
        subprocess.Popen(
            [*cmd, "--node-rank", str(rank), str(script), "run"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE if rank == 0 else subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        for rank in (1, 0)
    ][::-1]
    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        while len(list(pids.iterdir())) < 2:  # both workers joined the group
            assert all(n.poll() is None for n in nodes), "a launcher ended early"
            assert time.monotonic() < deadline, "the workers did not start in time"
            time.sleep(0.2)
        os.kill(nodes[1].pid, signal.SIGKILL)
        out, _ = nodes[0].communicate(timeout=RUN_TIMEOUT)
        assert nodes[0].returncode == 1, out
        assert "first failure: the launcher (node 1) ended without a word" in out, out
    finally:
        _kill_recorded(pids)
        for n in nodes:
            if n.poll() is None:
                os.killpg(n.pid, signal.SIGKILL)
            n.communicate()


RESUMING = """
import os, sys, time
from pathlib import Path
import multidev as md
from multidev import distributed as dist

rank, attempt = os.environ["RANK"], int(os.environ["MULTIDEV_RESTART_COUNT"])
# torchrun's elastic agent restarts torch's workers: its count is multidev's
assert os.environ.get("TORCHELASTIC_RESTART_COUNT", str(attempt)) == str(attempt)
dist.init_process_group()  # every attempt meets again
total = dist.all_reduce(md.ones((1,)))
checkpoint = Path(sys.argv[1], rank)
start = int(checkpoint.read_text()) if checkpoint.exists() else 0
print(f"attempt {attempt} starts at step {start} with {int(total.item())} ranks", flush=True)
checkpoint.write_text(str(start + 5))  # five steps trained, saved
if attempt == 0 and rank == "1":
    while not Path(sys.argv[1], "0").exists():  # rank 0 has saved its checkpoint
        time.sleep(0.05)
    raise RuntimeError("rank 1 fails on its first attempt")
print(f"attempt {attempt} done at step {start + 5}", flush=True)
"""


def test_the_group_restarts_from_its_checkpoint_with_a_log_file_per_rank(tmp_path: Path) -> None:
    """`--max-restarts 1 --log-dir DIR --tee`: rank 1 fails on the first attempt, the whole
    group starts again (MULTIDEV_RESTART_COUNT=1) from each rank's checkpoint and succeeds;
    each rank's file holds both attempts, and the console shows the workers' lines too."""
    script = tmp_path / "resuming.py"
    script.write_text(RESUMING)
    logs = tmp_path / "logs"
    cmd = [sys.executable, "-m", "multidev", "launch", "--nproc-per-node", "2"]
    cmd += ["--max-restarts", "1", "--log-dir", str(logs), "--tee", "--stop-timeout", "2"]
    res = subprocess.run(
        [*cmd, str(script), str(tmp_path)],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    # torch's gloo threads may abort the interpreter's exit (SIGABRT) after the raise
    assert re.search(
        r"first failure: rank 1 \(node 0\) (exited with code 1|was killed by signal \w+)\.", out
    ), out
    assert "restarting the workers (restart 1 of 1)" in out, out
    assert "[rank 1] attempt 1 done at step 10" in out, out  # --tee
    for rank in (0, 1):
        text = (logs / f"rank_{rank}.log").read_text()
        assert "multidev launch: restart 1 of 1" in text, text
        assert "attempt 1 starts at step 5 with 2 ranks\nattempt 1 done at step 10" in text, text
    assert "RuntimeError: rank 1 fails on its first attempt" in (logs / "rank_1.log").read_text()


def test_a_timeout_that_is_not_a_positive_number_is_a_clear_error(monkeypatch) -> None:
    monkeypatch.setenv("MULTIDEV_DIST_TIMEOUT", "soon")
    with pytest.raises(dist.DistributedError, match=r"MULTIDEV_DIST_TIMEOUT\. Received: 'soon'"):
        dist.init_process_group()
    monkeypatch.delenv("MULTIDEV_DIST_TIMEOUT")
    for bad in (0, -1.0, float("inf"), "60", True):
        with pytest.raises(ValueError, match="Expected timeout= a number of seconds > 0"):
            dist.init_process_group(timeout=bad)
    assert not dist.is_initialized()


STARTING = """
from multidev import distributed as dist

dist.init_process_group()
"""


@pytest.mark.parametrize("how", ["launch", "init"])
def test_a_port_in_use_is_an_error_that_names_it(tmp_path: Path, how: str) -> None:
    """Another program listens on the port: `multidev launch --master-port P` says so before
    starting anything; rank 0 of a script started by another launcher (RANK, WORLD_SIZE,
    MASTER_PORT) says so before waiting for the other ranks, where the engine listens there
    itself (TensorFlow's worker port, Paddle's and torch's store; MXNet's scheduler is the
    launcher's)."""
    import socket

    if how == "init" and BK == "mxnet":
        pytest.skip("MXNet's workers connect to a scheduler that `multidev launch` starts")
    script = tmp_path / "starting.py"
    script.write_text(STARTING)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        env = _env()
        if how == "launch":
            cmd = ["-m", "multidev", "launch", "--nproc-per-node", "2", "--master-port", str(port)]
        else:
            cmd = []
            env.update(RANK="0", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
            env["MULTIDEV_DIST_TIMEOUT"] = "20"
        res = subprocess.run(
            [sys.executable, *cmd, str(script)],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert str(port) in out and ("in use" in out or "EADDRINUSE" in out), out


WAITING = """
import os, sys, time
from multidev import distributed as dist

dist.init_process_group()
with open(os.path.join(sys.argv[1], str(dist.get_rank())), "w") as f:
    f.write(str(os.getpid()))
time.sleep(600)
"""


@pytest.mark.skipif(BK != "tensorflow", reason="TensorFlow's coordination service took SIGTERM")
def test_sigterm_ends_tensorflow_workers_without_waiting_for_sigkill(tmp_path: Path) -> None:
    """SIGTERM to the launcher stops workers that joined a TensorFlow process group: the
    preemption notifier of TensorFlow's coordination service used to take SIGTERM and only
    log it, so the launcher waited out --stop-timeout (here 600 s, past the test's bound)
    before its SIGKILL."""
    script = tmp_path / "waiting.py"
    script.write_text(WAITING)
    pids = tmp_path / "pids"
    pids.mkdir()
    cmd = [sys.executable, "-m", "multidev", "launch", "--nproc-per-node", "2"]
    launcher = subprocess.Popen(
        [*cmd, "--stop-timeout", "600", str(script), str(pids)],
        env=_env(),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        while len(list(pids.iterdir())) < 2:
            assert launcher.poll() is None, "the launcher ended early"
            assert time.monotonic() < deadline, "the workers did not start in time"
            time.sleep(0.2)
        time.sleep(0.5)  # the pid files are written whole
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(RUN_TIMEOUT) == 128 + signal.SIGTERM
    finally:
        _kill_recorded(pids)
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait()
