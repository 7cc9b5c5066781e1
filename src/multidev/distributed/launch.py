"""``multidev launch``: start one worker process per device, on this machine, for one node of
the job, through the framework's own launcher where it has one (torchrun) or with the
environment its engine reads (``RANK``/``WORLD_SIZE``/``MASTER_*`` plus ``TF_CONFIG``,
``PADDLE_*``, MXNet's ``DMLC_*`` with its scheduler and server processes).

Each line a worker writes reaches the launcher's output whole, prefixed with its rank
(``[rank 1] ...``), however the worker wrote it (an unbuffered ``print`` of several pieces, a
line without its end yet): the launcher reads each stream of each worker on its own and
writes complete lines only. torchrun's workers write into files (``--redirects=3``), which
the launcher follows the same way.
When a worker fails the others are stopped (SIGTERM, then SIGKILL after ``stop_timeout``
seconds) and the launcher returns 1, naming the rank and how it ended. Stopping reaches every
process the launcher started and all their descendants, in whatever process group or session
they run (torchrun starts its workers in sessions of their own): the process tree is read from
``/proc`` before the SIGTERM and again before the SIGKILL. SIGTERM, SIGHUP and SIGINT to the
launcher stop the workers the same way and end it with 128 + the signal (130 for SIGINT);
further signals during that teardown are ignored, so that it always completes.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any

from .. import registry

__all__ = ["MAX_NPROC_PER_NODE", "Proc", "check_arguments", "free_port", "launch", "node_addresses"]

#: the most worker processes one node may start (a typo such as 100000 is refused, not planned)
MAX_NPROC_PER_NODE = 1024


def check_arguments(
    argv: Sequence[str],
    nproc_per_node: int,
    nnodes: int = 1,
    node_rank: int = 0,
    master_addr: str = "127.0.0.1",
    master_port: int = 0,
    stop_timeout: float = 10.0,
    script_must_exist: bool = True,
) -> None:
    """Raise ValueError (one line: what was expected, what was received) for arguments
    ``launch`` cannot run with; nothing is started. ``script_must_exist``: the script must be
    an existing file (``multidev launch`` checks it; ``launch()`` leaves it to the workers)."""

    def _int(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    if not _int(nproc_per_node) or not 1 <= nproc_per_node <= MAX_NPROC_PER_NODE:
        raise ValueError(
            f"expected --nproc-per-node in [1, {MAX_NPROC_PER_NODE}], received {nproc_per_node!r}"
        )
    if not _int(nnodes) or nnodes < 1:
        raise ValueError(f"expected --nnodes >= 1, received {nnodes!r}")
    if not _int(node_rank) or not 0 <= node_rank < nnodes:
        raise ValueError(
            f"expected --node-rank in [0, {nnodes - 1}] (--nnodes {nnodes}), received {node_rank!r}"
        )
    if not _int(master_port) or not 0 <= master_port <= 65535:
        raise ValueError(
            f"expected --master-port in [0, 65535] (0: a free one), received {master_port!r}"
        )
    if master_port == 0 and nnodes > 1:
        raise ValueError(
            "expected --master-port with --nnodes > 1 (every node must use the same one), "
            "received none"
        )
    try:
        socket.getaddrinfo(master_addr, None, socket.AF_INET)
    except (OSError, UnicodeError, ValueError) as e:
        raise ValueError(
            f"expected --master-addr to be an IPv4 address or a host name that resolves, "
            f"received {master_addr!r} ({e})"
        ) from None
    if not isinstance(stop_timeout, (int, float)) or not 0 <= stop_timeout <= 3600:
        raise ValueError(f"expected --stop-timeout in [0, 3600] seconds, received {stop_timeout!r}")
    if not argv:
        raise ValueError("expected a script to run, received none")
    if script_must_exist and not os.path.isfile(argv[0]):
        raise ValueError(f"expected the script to be a file, received {argv[0]!r} (no such file)")


def free_port(addr: str = "127.0.0.1") -> int:
    """A TCP port on ``addr`` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((addr, 0))
        return int(s.getsockname()[1])


def _own_address(master_addr: str, master_port: int) -> str:
    """The address of this machine on the route to ``master_addr`` (what the others reach)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((master_addr, master_port))
        return str(s.getsockname()[0])


def node_addresses(
    nnodes: int, node_rank: int, master_addr: str, master_port: int, timeout: float = 300.0
) -> list[str]:
    """The address of every node of the job, in node order, agreed before any worker starts
    (for engines that must list every worker: TensorFlow's ``TF_CONFIG``). Node 0's launcher
    listens on ``master_addr:master_port`` until the others have said where they are, then
    tells each of them the whole list; node 0 is ``master_addr``. Raises DistributedError
    when the nodes have not all met within ``timeout`` seconds."""
    from .group import DistributedError

    if nnodes == 1:
        return [master_addr]
    deadline = time.monotonic() + timeout

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"{timeout:g} s passed")
        return remaining

    try:
        if node_rank == 0:
            return _gather_addresses(nnodes, master_addr, master_port, left)
        return _send_address(node_rank, master_addr, master_port, left)
    except (OSError, ValueError) as e:
        raise DistributedError(
            f"Expected the launchers of all {nnodes} nodes to meet at {master_addr}:"
            f"{master_port} within {timeout:g} s (node {node_rank} here). Received: {e}. Start "
            "`multidev launch` on every node with the same --nnodes, --master-addr and "
            "--master-port, each with its own --node-rank, and let that port through."
        ) from e


def _gather_addresses(
    nnodes: int, master_addr: str, master_port: int, left: Callable[[], float]
) -> list[str]:
    addrs: dict[int, str] = {0: master_addr}
    conns: list[socket.socket] = []
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((master_addr, master_port))
        server.listen(nnodes)
        try:
            while len(addrs) < nnodes:
                server.settimeout(left())
                conn, _ = server.accept()
                conns.append(conn)
                conn.settimeout(left())
                rank, addr = json.loads(conn.makefile().readline())
                if not 0 < int(rank) < nnodes or int(rank) in addrs:
                    raise ValueError(f"a second node {rank}, or one outside [1, {nnodes})")
                addrs[int(rank)] = str(addr)
            order = [addrs[r] for r in range(nnodes)]
            for conn in conns:
                conn.sendall((json.dumps(order) + "\n").encode())
            for conn in conns:  # the others close first: no TIME_WAIT on node 0's port
                conn.settimeout(left())
                conn.recv(1)
        finally:
            for conn in conns:
                conn.close()
    return order


def _send_address(
    node_rank: int, master_addr: str, master_port: int, left: Callable[[], float]
) -> list[str]:
    while True:
        try:
            conn = socket.create_connection((master_addr, master_port), timeout=left())
            break
        except ConnectionRefusedError:  # node 0 not listening yet
            time.sleep(min(0.5, left()))
    with conn:
        conn.settimeout(left())
        mine = _own_address(master_addr, master_port)
        conn.sendall((json.dumps([node_rank, mine]) + "\n").encode())
        return [str(a) for a in json.loads(conn.makefile().readline())]


@dataclass
class Proc:
    """A process to start: its output prefix, command, extra environment, and whether the job
    needs it to succeed (workers) or only to serve (MXNet's scheduler and server)."""

    label: str
    cmd: list[str]
    env: dict[str, str] = field(default_factory=dict)
    worker: bool = True
    #: where a framework launcher writes its workers' output: torchrun's log folder
    #: ``<logs>/<run>/attempt_<n>/<local rank>/{stdout,stderr}.log`` (empty: none)
    logs: str = ""
    #: the rank of its workers' local rank 0
    first_rank: int = 0


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _write_lines(lines: list[bytes], prefix: str, out: IO[str], lock: threading.Lock) -> None:
    """Write whole lines (without their ends), each after ``prefix``, none cut by another."""
    text = "".join(f"{prefix}{line.decode(errors='replace')}\n" for line in lines)
    with lock:
        out.write(text)
        out.flush()


def _pump(stream: IO[bytes], prefix: str, out: IO[str], lock: threading.Lock) -> None:
    """Copy one stream of one process, a whole line at a time (``readline`` waits for the
    line's end, or the stream's)."""
    for raw in iter(stream.readline, b""):
        _write_lines([raw.rstrip(b"\n")], prefix, out, lock)
    stream.close()


class _LogTail:
    """The output a framework launcher's workers write into files (torchrun ``--redirects``),
    followed as the files grow and written out a whole line at a time with the rank's prefix:
    a line is written once its end has arrived, or at the end of the run."""

    def __init__(self, logs: str, first_rank: int, out: IO[str], lock: threading.Lock) -> None:
        self.logs = logs
        self.first_rank = first_rank
        self.out = out
        self.lock = lock
        #: path -> (open file, prefix, the start of a line whose end has not arrived)
        self.files: dict[str, tuple[IO[bytes], str, bytearray]] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._follow, daemon=True)
        self.thread.start()

    def _scan(self) -> None:
        pattern = os.path.join(glob.escape(self.logs), "*", "attempt_*", "*", "std*.log")
        for path in sorted(glob.glob(pattern)):
            local = os.path.basename(os.path.dirname(path))
            if path in self.files or not local.isdigit():
                continue
            prefix = f"[rank {self.first_rank + int(local)}] "
            self.files[path] = (open(path, "rb"), prefix, bytearray())  # noqa: SIM115

    def _read(self, final: bool) -> None:
        for f, prefix, pending in self.files.values():
            pending += f.read()
            lines = bytes(pending).split(b"\n")
            rest = lines.pop()  # after the last line end: the start of a line to come
            if final and rest:  # the run has ended: the line will not get its end
                lines.append(rest)
                rest = b""
            if lines:
                _write_lines(lines, prefix, self.out, self.lock)
            pending[:] = rest

    def _follow(self) -> None:
        try:
            while not self.done.wait(0.05):
                self._scan()
                self._read(final=False)
            self._scan()
            self._read(final=True)
        finally:
            for f, _, _ in self.files.values():
                f.close()

    def finish(self, timeout: float) -> None:
        """Write what remains (the processes have ended) and stop following."""
        self.done.set()
        self.thread.join(timeout)


def _descendants(roots: Sequence[int]) -> set[int]:
    """``roots`` and every process below them, from ``/proc`` (empty where there is none)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # the fields after the command name (in parentheses, which may hold spaces)
        fields = stat[stat.rfind(b")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: set[int] = set()
    todo = [r for r in roots if r > 0]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return found


def _signal_all(pids: set[int], sig: int) -> None:
    """Send ``sig`` to each process and to each group one of them leads (never ours)."""
    own = os.getpgrp()
    for pid in pids:
        try:
            if os.getpgid(pid) == pid != own:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            continue


def _stop_all(popens: Sequence[subprocess.Popen], timeout: float) -> None:
    """SIGTERM every process of ``popens`` and every descendant of theirs (each in its own
    group or session, as torchrun's workers are), then SIGKILL whatever of them is left after
    ``timeout`` seconds, and reap ``popens``."""
    live = [p for p in popens if p.poll() is None]
    tree = _descendants([p.pid for p in popens]) - {p.pid for p in popens if p.poll() is not None}
    if not tree:
        return
    _signal_all(tree, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tree |= _descendants([p.pid for p in live if p.poll() is None])
        if all(p.poll() is not None for p in live) and not _any_alive(tree - {p.pid for p in live}):
            return
        time.sleep(0.05)
    tree |= _descendants([p.pid for p in live if p.poll() is None])
    _signal_all({pid for pid in tree if _is_alive(pid)}, signal.SIGKILL)
    for p in live:
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not refused
            pass


def _is_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        try:
            os.kill(pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def _any_alive(pids: set[int]) -> bool:
    return any(_is_alive(pid) for pid in pids)


def _plan(
    engine: Any,
    nproc_per_node: int,
    nnodes: int,
    node_rank: int,
    master_addr: str,
    master_port: int,
    argv: list[str],
    log_dir: str,
) -> list[Proc]:
    fw = engine.framework_launcher
    if fw is not None:
        cmd = fw(
            nproc_per_node=nproc_per_node,
            nnodes=nnodes,
            node_rank=node_rank,
            master_addr=master_addr,
            master_port=master_port,
            log_dir=log_dir,
            argv=argv,
        )
        return [Proc("", cmd, logs=log_dir, first_rank=node_rank * nproc_per_node)]
    world = nproc_per_node * nnodes
    extra = engine.worker_envs
    envs = (
        extra(
            nproc_per_node=nproc_per_node,
            nnodes=nnodes,
            node_rank=node_rank,
            master_addr=master_addr,
            master_port=master_port,
        )
        if extra is not None
        else [{} for _ in range(nproc_per_node)]
    )
    helpers = engine.helper_processes
    procs = (
        helpers(
            nnodes=nnodes,
            node_rank=node_rank,
            world_size=world,
            master_addr=master_addr,
            master_port=master_port,
        )
        if helpers is not None
        else []
    )
    for local in range(nproc_per_node):
        rank = node_rank * nproc_per_node + local
        env = {
            "RANK": str(rank),
            "LOCAL_RANK": str(local),
            "WORLD_SIZE": str(world),
            "LOCAL_WORLD_SIZE": str(nproc_per_node),
            "MASTER_ADDR": master_addr,
            "MASTER_PORT": str(master_port),
            **envs[local],
        }
        procs.append(Proc(f"[rank {rank}] ", [sys.executable, "-u", *argv], env))
    return procs


def launch(
    argv: Sequence[str],
    nproc_per_node: int,
    nnodes: int = 1,
    node_rank: int = 0,
    master_addr: str = "127.0.0.1",
    master_port: int = 0,
    backend: str | None = None,
    stop_timeout: float = 10.0,
    out: IO[str] | None = None,
) -> int:
    """Run ``argv`` (a script and its arguments) as ``nproc_per_node`` workers of this node;
    return 0 when every worker succeeds, else 1 after stopping the others. ``master_port``
    0 picks a free port (single machine only). ``backend`` defaults to the active one
    (``MULTIDEV_BACKEND``)."""
    from . import engine_module, no_engine

    out = sys.stdout if out is None else out
    try:
        check_arguments(
            argv,
            nproc_per_node,
            nnodes,
            node_rank,
            master_addr,
            master_port,
            stop_timeout,
            script_must_exist=False,
        )
    except ValueError as e:
        msg = str(e)
        raise ValueError(msg[0].upper() + msg[1:] + ".") from None
    if master_port == 0:
        master_port = free_port(master_addr)
    name = backend or registry.get_backend()
    engine = engine_module(name)
    if engine is None:
        raise no_engine(name)
    lock = threading.Lock()
    base = dict(os.environ, MULTIDEV_BACKEND=name, PYTHONUNBUFFERED="1")
    with tempfile.TemporaryDirectory(prefix="multidev-launch-") as log_dir:
        plan = _plan(
            engine, nproc_per_node, nnodes, node_rank, master_addr, master_port, list(argv), log_dir
        )
        with _stopped_by_signals():
            return _run(plan, base, stop_timeout, out, lock)


@contextmanager
def _stopped_by_signals() -> Iterator[None]:
    """SIGTERM, SIGHUP and SIGINT to the launcher raise SystemExit (128 + the signal) while it
    runs, so that it stops its workers (they run in sessions of their own, which a signal to
    the launcher's group does not reach) instead of dying and leaving them running, and ends
    without a traceback. Only the first one does: the ones that come during the teardown it
    starts are ignored, so that the teardown completes. Only in the main thread, where Python
    can take signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping = False

    def _exit(signum: int, _frame: Any) -> None:
        nonlocal stopping
        if stopping:
            return
        stopping = True
        raise SystemExit(128 + signum)

    previous = {
        sig: signal.signal(sig, _exit) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(
    plan: list[Proc],
    base: dict[str, str],
    stop_timeout: float,
    out: IO[str],
    lock: threading.Lock,
) -> int:
    """Start ``plan``'s processes, watch them, and stop every one that still runs on the way
    out, whatever the way out is."""
    running: list[tuple[Proc, subprocess.Popen]] = []
    pumps: list[threading.Thread] = []
    tails: list[_LogTail] = []
    try:
        for proc in plan:
            popen = subprocess.Popen(
                proc.cmd,
                env={**base, **proc.env},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,  # a pipe each: a line of one never cuts the other's
                start_new_session=True,
            )
            running.append((proc, popen))
            if proc.logs:
                tails.append(_LogTail(proc.logs, proc.first_rank, out, lock))
            for stream in (popen.stdout, popen.stderr):
                t = threading.Thread(
                    target=_pump, args=(stream, proc.label, out, lock), daemon=True
                )
                t.start()
                pumps.append(t)
        return _watch(running, stop_timeout, out, lock)
    finally:
        _stop_all([popen for _, popen in running], stop_timeout)
        for t in pumps:
            t.join(stop_timeout)
        for tail in tails:
            tail.finish(stop_timeout)


def _watch(
    running: list[tuple[Proc, subprocess.Popen]],
    stop_timeout: float,
    out: IO[str],
    lock: threading.Lock,
) -> int:
    workers = [(p, q) for p, q in running if p.worker]
    while True:
        failed = [(p, q) for p, q in running if q.poll() not in (None, 0)]
        if failed:
            proc, popen = failed[0]
            who = proc.label.strip() or "the framework launcher"
            with lock:
                out.write(
                    f"multidev launch: {who} {_describe(popen.returncode)}; "
                    "stopping the other processes.\n"
                )
                out.flush()
            return 1
        if all(q.poll() == 0 for _, q in workers):
            helpers = [q for p, q in running if not p.worker]
            deadline = time.monotonic() + stop_timeout
            for q in helpers:
                try:
                    q.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    break
            return 0
        time.sleep(0.1)
