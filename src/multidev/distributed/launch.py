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
seconds) and the launcher returns 1 with a summary of the first failure: the rank, its node,
its exit code or signal, and the last lines of its output (torchrun's own report names the
rank for torch). With ``max_restarts`` the whole group is started again after a failure, up
to that many times, each worker told the attempt in ``MULTIDEV_RESTART_COUNT`` (0 first) so
that it resumes from its last checkpoint; on one machine torchrun's elastic agent restarts
torch's workers, the same way. ``log_dir`` keeps one file per rank
(``rank_<r>.log``, MXNet's ``scheduler.log`` and ``server.log``, torchrun's own
``launcher.log``), appended to by every attempt; the console then shows only the launcher's
own lines unless ``tee``.

On several machines (``nnodes > 1``) the launchers first meet at node 0's
``master_addr:master_port`` (within ``rdzv_timeout`` seconds, else an error naming the nodes
that did not come) and keep those connections open while the workers run: a node whose
workers fail, or whose launcher ends, tells node 0, which tells every other node, and each
stops its workers at once; every launcher's summary names the first failure and its node.
Stopping reaches every
process the launcher started and all their descendants, in whatever process group or session
they run (torchrun starts its workers in sessions of their own): the process tree is read from
``/proc`` before the SIGTERM and again before the SIGKILL. SIGTERM, SIGHUP and SIGINT to the
launcher stop the workers the same way and end it with 128 + the signal (130 for SIGINT);
further signals during that teardown are ignored, so that it always completes.
"""

from __future__ import annotations

import collections
import errno
import glob
import json
import math
import os
import re
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

__all__ = [
    "MAX_NPROC_PER_NODE",
    "Failure",
    "Proc",
    "check_arguments",
    "check_port",
    "free_port",
    "launch",
    "node_addresses",
]

#: the most worker processes one node may start (a typo such as 100000 is refused, not planned)
MAX_NPROC_PER_NODE = 1024
#: the most restarts of the group (a typo such as 1000000 is refused)
MAX_RESTARTS = 1000
#: lines of each process's output kept for the failure summary
TAIL_LINES = 20
#: the environment variable that tells each worker which attempt it runs (0: the first)
RESTART_ENV = "MULTIDEV_RESTART_COUNT"


def check_arguments(
    argv: Sequence[str],
    nproc_per_node: int,
    nnodes: int = 1,
    node_rank: int = 0,
    master_addr: str = "127.0.0.1",
    master_port: int = 0,
    stop_timeout: float = 10.0,
    script_must_exist: bool = True,
    max_restarts: int = 0,
    log_dir: str | None = None,
    rdzv_timeout: float = 300.0,
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
        # only node 0 must resolve it now: another node's meeting retries until
        # --rdzv-timeout (node 0's name may appear later, as a Kubernetes pod's DNS record)
        if node_rank == 0 or not isinstance(master_addr, str) or not master_addr:
            socket.getaddrinfo(master_addr, None, socket.AF_INET)
    except (OSError, UnicodeError, ValueError) as e:
        raise ValueError(
            f"expected --master-addr to be an IPv4 address or a host name that resolves, "
            f"received {master_addr!r} ({e})"
        ) from None
    if not isinstance(stop_timeout, (int, float)) or not 0 <= stop_timeout <= 3600:
        raise ValueError(f"expected --stop-timeout in [0, 3600] seconds, received {stop_timeout!r}")
    if not _int(max_restarts) or not 0 <= max_restarts <= MAX_RESTARTS:
        raise ValueError(
            f"expected --max-restarts in [0, {MAX_RESTARTS}], received {max_restarts!r}"
        )
    if not isinstance(rdzv_timeout, (int, float)) or not 0 < rdzv_timeout <= 86400:
        raise ValueError(
            f"expected --rdzv-timeout in (0, 86400] seconds, received {rdzv_timeout!r}"
        )
    if log_dir is not None and (
        not log_dir or (os.path.exists(log_dir) and not os.path.isdir(log_dir))
    ):
        raise ValueError(
            f"expected --log-dir to be a folder (made if missing), received {log_dir!r}"
        )
    if not argv:
        raise ValueError("expected a script to run, received none")
    if script_must_exist and not os.path.isfile(argv[0]):
        raise ValueError(f"expected the script to be a file, received {argv[0]!r} (no such file)")


def free_port(addr: str = "127.0.0.1") -> int:
    """A TCP port on ``addr`` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((addr, 0))
        return int(s.getsockname()[1])


def check_port(port: int, what: str) -> None:
    """Raise DistributedError naming ``port`` when a process of this machine already listens
    on it, before a framework fails on it with an error that does not name it (Paddle's libuv
    abort, TensorFlow's "Could not start gRPC server"). Other bind errors are left to the
    framework."""
    from .group import DistributedError

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # as the frameworks do: a port whose last connections are in TIME_WAIT is free
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", port))
            s.listen(1)
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                return
            raise DistributedError(
                f"Expected port {port} of this machine to be free for {what}. Received: "
                f"{e.strerror} (another process listens on it: an earlier job still running?). "
                "Choose another --master-port (MASTER_PORT), or stop that process."
            ) from None


class _Link:
    """One connection between two nodes' launchers: JSON objects, one a line."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.file = sock.makefile("rb")
        self.lock = threading.Lock()

    def send(self, obj: Any) -> None:
        data = (json.dumps(obj) + "\n").encode()
        with self.lock:
            self.sock.sendall(data)

    def recv(self, timeout: float | None) -> Any:
        """The next object; ValueError at the end of the stream or on a foreign line."""
        self.sock.settimeout(timeout)
        line = self.file.readline()
        if not line:
            raise ValueError("the connection was closed")
        return json.loads(line)

    def keep_open(self) -> None:
        """Blocking reads from now on, and a machine that vanishes noticed within about 25 s
        (TCP keepalive; a launcher that ends closes its side at once)."""
        self.sock.settimeout(None)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for name, value in (("TCP_KEEPIDLE", 10), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 3)):
            if hasattr(socket, name):
                self.sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)

    def close(self) -> None:
        # shut down first: a thread blocked reading the link gets its end (and lets go of the
        # file's lock, which closing the file waits for)
        for closing in (lambda: self.sock.shutdown(socket.SHUT_RDWR), self.sock.close):
            try:
                closing()
            except OSError:
                pass
        self.file.close()


#: what a launcher sends first, so that node 0 tells its own kind from a foreign connection
_HELLO = "multidev-launch"
#: seconds a connection has to say who it is (node 0) or answer (the others)
_GREETING_TIMEOUT = 5.0


class _Deadline(Exception):
    """The nodes' meeting ran out of time."""


def _meet(
    nnodes: int, node_rank: int, master_addr: str, master_port: int, timeout: float
) -> tuple[list[str], dict[int, _Link]]:
    """Every node's address, in node order, and the links to the other launchers that stay
    open while the workers run (node 0: one to each other node; the others: one to node 0).
    Node 0 listens on ``master_addr:master_port`` until every node has said who it is, then
    tells each the whole list. Raises DistributedError naming the nodes that did not come
    within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Deadline
        return remaining

    if node_rank == 0:
        return _gather(nnodes, master_addr, master_port, timeout, left)
    return _join(nnodes, node_rank, master_addr, master_port, timeout, left)


def _meeting_error(text: str) -> Exception:
    from .group import DistributedError

    return DistributedError(
        f"{text} Start `multidev launch` on every node with the same --nnodes, --master-addr "
        "and --master-port, each with its own --node-rank, and let that port through (or "
        "raise --rdzv-timeout)."
    )


def _gather(
    nnodes: int, master_addr: str, master_port: int, timeout: float, left: Callable[[], float]
) -> tuple[list[str], dict[int, _Link]]:
    from .group import DistributedError

    addrs: dict[int, str] = {0: master_addr}
    links: dict[int, _Link] = {}
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            server.bind((master_addr, master_port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                check_port(master_port, "the launchers' meeting (--master-port)")
            raise DistributedError(
                f"Expected to listen on {master_addr}:{master_port} (--master-addr, "
                f"--master-port) on node 0. Received: {e}. Give node 0's own address."
            ) from None
        server.listen(nnodes + 4)
        try:
            while len(addrs) < nnodes:
                server.settimeout(left())
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    continue  # left() decides
                link = _Link(conn)
                try:  # a connection that does not say who it is in time is not a launcher
                    hello = link.recv(min(_GREETING_TIMEOUT, left()))
                    node, addr = int(hello["node"]), str(hello["addr"])
                    if hello.get("hello") != _HELLO or not 0 < node < nnodes or node in addrs:
                        raise ValueError(f"an unexpected greeting {hello!r}")
                    link.send({"hello": _HELLO})
                except (OSError, ValueError, KeyError, TypeError, AttributeError):
                    link.close()
                    continue
                addrs[node], links[node] = addr, link
            order = [addrs[r] for r in range(nnodes)]
            for link in links.values():
                link.send({"nodes": order})
        except (_Deadline, OSError) as e:
            for link in links.values():
                link.close()
            missing = ", ".join(str(r) for r in range(nnodes) if r not in addrs)
            came = ", ".join(str(r) for r in sorted(addrs))
            why = f"{timeout:g} s passed" if isinstance(e, _Deadline) else str(e)
            raise _meeting_error(
                f"Expected the launchers of all {nnodes} nodes at {master_addr}:{master_port} "
                f"within {timeout:g} s (--rdzv-timeout). Received: nodes {came} ({why}); "
                f"missing: node {missing}."
            ) from None
    for link in links.values():
        link.keep_open()
    return order, links


def _join(
    nnodes: int,
    node_rank: int,
    master_addr: str,
    master_port: int,
    timeout: float,
    left: Callable[[], float],
) -> tuple[list[str], dict[int, _Link]]:
    from .group import DistributedError

    problem = "no answer"
    try:
        while True:  # until node 0's launcher answers
            try:
                conn = socket.create_connection(
                    (master_addr, master_port), timeout=min(_GREETING_TIMEOUT, left())
                )
            except OSError as e:  # node 0 not listening yet
                problem = str(e) or type(e).__name__
                time.sleep(min(0.5, left()))
                continue
            link = _Link(conn)
            try:
                mine = str(conn.getsockname()[0])
                link.send({"hello": _HELLO, "node": node_rank, "addr": mine})
                if link.recv(min(_GREETING_TIMEOUT, left())).get("hello") != _HELLO:
                    raise ValueError("an answer that is not node 0's launcher")
                break
            except (OSError, ValueError, TypeError, AttributeError) as e:
                # another program on that port (the previous attempt's store, say): again
                link.close()
                problem = f"a listener on that port that is not node 0's launcher ({e})"
                time.sleep(min(0.5, left()))
    except _Deadline:
        raise _meeting_error(
            f"Expected node 0's launcher at {master_addr}:{master_port} within {timeout:g} s "
            f"(--rdzv-timeout; node {node_rank} of {nnodes} here). Received: {problem}; "
            "missing: node 0."
        ) from None
    try:
        order = [str(a) for a in link.recv(left())["nodes"]]
    except (_Deadline, OSError, ValueError, KeyError, TypeError):
        link.close()
        raise _meeting_error(
            f"Expected the launchers of all {nnodes} nodes at {master_addr}:{master_port} "
            f"within {timeout:g} s (--rdzv-timeout; node {node_rank} here). Received: node "
            "0's launcher answered, but not every node came (node 0's error names them)."
        ) from None
    if len(order) != nnodes:
        link.close()
        raise DistributedError(
            f"Expected {nnodes} nodes (--nnodes) as node 0 counts them. Received: "
            f"{len(order)} from node 0. Give every node the same --nnodes."
        )
    link.keep_open()
    return order, {0: link}


#: the addresses the launcher of this process agreed with the other nodes for the attempt
#: it is starting: (nnodes, node_rank, master_addr, master_port) -> addresses
_agreed: dict[tuple[int, int, str, int], list[str]] = {}


def node_addresses(
    nnodes: int, node_rank: int, master_addr: str, master_port: int, timeout: float = 300.0
) -> list[str]:
    """The address of every node of the job, in node order, agreed before any worker starts
    (for engines that must list every worker: TensorFlow's ``TF_CONFIG``): what ``launch``
    agreed with the other nodes for this attempt, else a meeting of the nodes' launchers at
    node 0's ``master_addr:master_port``, where node 0 is ``master_addr``. Raises
    DistributedError naming the nodes that did not come within ``timeout`` seconds."""
    if nnodes == 1:
        return [master_addr]
    known = _agreed.get((nnodes, node_rank, master_addr, master_port))
    if known is not None:
        return list(known)
    order, links = _meet(nnodes, node_rank, master_addr, master_port, timeout)
    for link in links.values():
        link.close()
    return order


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
    #: the restarts a framework launcher makes itself
    restarts: int = 0

    @property
    def name(self) -> str:
        """What its lines are filed under: ``rank 1``, ``scheduler``; empty for a framework
        launcher's own output."""
        return self.label.strip().strip("[]")


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


@dataclass
class Failure:
    """The first failure of an attempt: who (``rank 1``, ``scheduler``, ``the launcher``), on
    which node, how it ended, and the last lines of its output."""

    who: str
    node: int
    how: str
    lines: list[str] = field(default_factory=list)

    def headline(self) -> str:
        return f"{self.who} (node {self.node}) {self.how}"

    def summary(self) -> str:
        text = f"multidev launch: the job failed; first failure: {self.headline()}."
        if self.lines:
            n = len(self.lines)
            text += f"\nmultidev launch: the last {n} line{'s' if n != 1 else ''} of {self.who}:"
            text += "".join(f"\n  {line}" for line in self.lines)
        return text + "\n"

    def to_json(self) -> dict[str, Any]:
        return {"who": self.who, "node": self.node, "how": self.how, "lines": self.lines}

    @classmethod
    def from_json(cls, obj: Any) -> Failure:
        return cls(str(obj["who"]), int(obj["node"]), str(obj["how"]), list(obj["lines"]))


class _Output:
    """Where the processes' lines go: the console (``[rank 1] `` before each line) and, with a
    log folder, one file per process name (``rank_1.log``); the last ``TAIL_LINES`` of each
    name are kept for the failure summary. Each call writes whole lines, none cut by
    another's."""

    def __init__(self, out: IO[str], log_dir: str | None, console: bool) -> None:
        self.out = out
        self.log_dir = log_dir
        self.console = console
        self.lock = threading.Lock()
        self.tails: dict[str, collections.deque[str]] = {}
        self.files: dict[str, IO[str]] = {}

    def lines(self, name: str, raw: list[bytes]) -> None:
        """Write the lines (without their ends) of the process called ``name`` (``rank 1``;
        empty: a framework launcher's own output)."""
        text = [line.decode(errors="replace") for line in raw]
        prefix = f"[{name}] " if name else ""
        with self.lock:
            tail = self.tails.get(name)
            if tail is None:  # a framework launcher's report of a failure may be longer
                tail = self.tails[name] = collections.deque(maxlen=TAIL_LINES if name else 200)
            tail.extend(text)
            if self.console:
                self.out.write("".join(f"{prefix}{line}\n" for line in text))
                self.out.flush()
            if self.log_dir is not None:
                f = self.files.get(name)
                if f is None:
                    path = os.path.join(
                        self.log_dir, f"{(name or 'launcher').replace(' ', '_')}.log"
                    )
                    f = self.files[name] = open(path, "a", encoding="utf-8")  # noqa: SIM115
                f.write("".join(f"{line}\n" for line in text))
                f.flush()

    def note(self, text: str) -> None:
        """A line of the launcher's own (always on the console; in every open log file)."""
        with self.lock:
            self.out.write(text if text.endswith("\n") else text + "\n")
            self.out.flush()

    def mark(self, text: str) -> None:
        """A line in every log file (where an attempt starts)."""
        with self.lock:
            for f in self.files.values():
                f.write(text + "\n")
                f.flush()

    def tail(self, name: str) -> list[str]:
        with self.lock:
            return list(self.tails.get(name, ()))

    def close(self) -> None:
        with self.lock:
            for f in self.files.values():
                f.close()
            self.files.clear()


def _pump(stream: IO[bytes], name: str, output: _Output) -> None:
    """Copy one stream of one process, a whole line at a time (``readline`` waits for the
    line's end, or the stream's)."""
    for raw in iter(stream.readline, b""):
        output.lines(name, [raw.rstrip(b"\n")])
    stream.close()


class _LogTail:
    """The output a framework launcher's workers write into files (torchrun ``--redirects``),
    followed as the files grow and written out a whole line at a time with the rank's name:
    a line is written once its end has arrived, or at the end of the run. Where the framework
    launcher restarts its workers (``proc.restarts``), each new attempt's folder is announced
    as ``launch`` announces its own restarts: the summary of the failure before it, then a
    line in every log file."""

    def __init__(self, proc: Proc, output: _Output, node: int) -> None:
        self.logs = proc.logs
        self.first_rank = proc.first_rank
        self.restarts = proc.restarts
        self.node = node
        self.output = output
        self.attempt = 0
        #: path -> (open file, process name, the start of a line whose end has not arrived)
        self.files: dict[str, tuple[IO[bytes], str, bytearray]] = {}
        #: the files of the attempts before this one, read to their end
        self.read: set[str] = set()
        #: the workers (pids) whose failure has been summarised
        self.reported: set[str] = set()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._follow, daemon=True)
        self.thread.start()

    def _scan(self) -> None:
        pattern = os.path.join(glob.escape(self.logs), "*", "attempt_*", "*", "std*.log")
        found = []
        for path in glob.glob(pattern):
            local = os.path.basename(os.path.dirname(path))
            number = os.path.basename(os.path.dirname(os.path.dirname(path)))[len("attempt_") :]
            new = path not in self.files and path not in self.read
            if new and local.isdigit() and number.isdigit():
                found.append((int(number), path, f"rank {self.first_rank + int(local)}"))
        for attempt, path, name in sorted(found):
            if attempt > self.attempt:
                self._restarted(attempt)
            self.files[path] = (open(path, "rb"), name, bytearray())  # noqa: SIM115

    def _restarted(self, attempt: int) -> None:
        """The framework launcher has started attempt ``attempt``: the previous attempt's
        lines are written out, its failure summarised (torchrun's line "failed (exitcode: 1)
        local_rank: 1 ...", logged before it stops the other workers), the restart marked."""
        self._read(final=True)
        for path, (f, _, _) in self.files.items():
            f.close()
            self.read.add(path)
        self.files.clear()
        self.attempt = attempt
        failure = None
        deadline = time.monotonic() + 1.0
        while failure is None and time.monotonic() < deadline:
            for code, local, pid in _WORKER_FAILED.findall("\n".join(self.output.tail(""))):
                if pid not in self.reported:
                    self.reported.add(pid)
                    who = f"rank {self.first_rank + int(local)}"
                    failure = Failure(who, self.node, _describe(int(code)), self.output.tail(who))
                    break
            if failure is None:
                time.sleep(0.05)
        if failure is not None:
            self.output.note(failure.summary())
        n = self.restarts
        self.output.note(f"multidev launch: restarting the workers (restart {attempt} of {n}).")
        self.output.mark(f"multidev launch: restart {attempt} of {n}")

    def _read(self, final: bool) -> None:
        for f, name, pending in self.files.values():
            pending += f.read()
            lines = bytes(pending).split(b"\n")
            rest = lines.pop()  # after the last line end: the start of a line to come
            if final and rest:  # the run has ended: the line will not get its end
                lines.append(rest)
                rest = b""
            if lines:
                self.output.lines(name, lines)
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
    restarts: int = 0,
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
            restarts=restarts,
        )
        first = node_rank * nproc_per_node
        return [Proc("", cmd, logs=log_dir, first_rank=first, restarts=restarts)]
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
    max_restarts: int = 0,
    log_dir: str | None = None,
    tee: bool = False,
    rdzv_timeout: float = 300.0,
) -> int:
    """Run ``argv`` (a script and its arguments) as ``nproc_per_node`` workers of this node;
    return 0 when every worker (of every node) succeeds, else 1 after stopping the others
    and writing a summary of the first failure; with ``max_restarts`` the whole group starts
    again after a failure, up to that many times (``MULTIDEV_RESTART_COUNT`` tells each
    worker the attempt). ``master_port`` 0 picks a free port (single machine only).
    ``backend`` defaults to the active one (``MULTIDEV_BACKEND``). ``log_dir``: one file per
    rank, kept; the workers' lines then reach ``out`` only with ``tee``. ``rdzv_timeout``:
    seconds the nodes' launchers wait for each other. Raises ValueError for arguments it
    cannot run with, DistributedError when the nodes do not all meet or a port is taken."""
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
            max_restarts=max_restarts,
            log_dir=log_dir,
            rdzv_timeout=rdzv_timeout,
        )
    except ValueError as e:
        msg = str(e)
        raise ValueError(msg[0].upper() + msg[1:] + ".") from None
    name = backend or registry.get_backend()
    engine = engine_module(name)
    if engine is None:
        raise no_engine(name)
    if log_dir is not None:
        os.makedirs(log_dir, exist_ok=True)
    output = _Output(out, log_dir, console=log_dir is None or tee)
    # torchrun restarts one node's workers itself (its elastic agent); across nodes every
    # node's launcher restarts together, which torchrun's static rendezvous cannot do (the
    # other nodes' agents restart only once their own workers have failed, each counting
    # its attempts alone)
    inside = max_restarts if engine.framework_launcher is not None and nnodes == 1 else 0
    job = _Job(
        engine,
        list(argv),
        nproc_per_node,
        nnodes,
        node_rank,
        master_addr,
        stop_timeout,
        rdzv_timeout,
        output,
        inside,
    )
    try:
        with _stopped_by_signals():
            for attempt in range(max_restarts - inside + 1):
                if attempt:
                    output.mark(f"multidev launch: restart {attempt} of {max_restarts}")
                env = dict(
                    os.environ,
                    MULTIDEV_BACKEND=name,
                    PYTHONUNBUFFERED="1",
                    **{RESTART_ENV: str(attempt)},
                )
                failure = job.attempt(master_port, env)
                if failure is None:
                    return 0
                output.note(failure.summary())
                if attempt < max_restarts:
                    output.note(
                        f"multidev launch: restarting the workers (restart {attempt + 1} of "
                        f"{max_restarts})."
                    )
            return 1
    finally:
        output.close()


@dataclass
class _Job:
    """What stays the same from one attempt of the group to the next."""

    engine: Any
    argv: list[str]
    nproc_per_node: int
    nnodes: int
    node_rank: int
    master_addr: str
    stop_timeout: float
    rdzv_timeout: float
    output: _Output
    #: the restarts the framework launcher makes itself (torchrun's elastic agent)
    restarts: int = 0

    def attempt(self, master_port: int, env: dict[str, str]) -> Failure | None:
        """Start the group (after the nodes' meeting), watch it, stop it; the first failure,
        or None when every worker succeeded."""
        port = master_port or free_port(self.master_addr)
        key = (self.nnodes, self.node_rank, self.master_addr, port)
        peers = None
        if self.nnodes > 1:
            order, links = _meet(
                self.nnodes, self.node_rank, self.master_addr, port, self.rdzv_timeout
            )
            _agreed[key] = order
            peers = _Peers(self.node_rank, links)
        elif master_port:  # a port the user chose: say so if it is taken, whatever the engine
            check_port(port, "rank 0 (--master-port)")
        try:
            with tempfile.TemporaryDirectory(prefix="multidev-launch-") as logs:
                plan = _plan(
                    self.engine,
                    self.nproc_per_node,
                    self.nnodes,
                    self.node_rank,
                    self.master_addr,
                    port,
                    self.argv,
                    logs,
                    self.restarts,
                )
                return _run(plan, env, self.stop_timeout, self.output, self.node_rank, peers)
        finally:
            _agreed.pop(key, None)
            if peers is not None:
                peers.close()


class _Peers:
    """The links to the other nodes' launchers while the workers run (node 0: to every other
    node; the others: to node 0). A node reports its first failure (``report``) or its
    success (``finished``); node 0 passes the first failure it learns to every other node;
    a link that ends without a success is a failure of that node."""

    def __init__(self, node: int, links: dict[int, _Link]) -> None:
        self.node = node
        self.links = links
        self.lock = threading.Lock()
        #: the first failure this node learned of, its own or another node's
        self.failure: Failure | None = None
        #: the nodes that reported success (node 0)
        self.done: set[int] = set()
        self.succeeded = False
        self.closed = False
        for peer, link in links.items():
            threading.Thread(target=self._read, args=(peer, link), daemon=True).start()

    def _read(self, peer: int, link: _Link) -> None:
        try:
            while True:
                msg = link.recv(None)
                if "failed" in msg:
                    self._learn(Failure.from_json(msg["failed"]), peer)
                elif "done" in msg:
                    with self.lock:
                        self.done.add(peer)
        except (OSError, ValueError, KeyError, TypeError):
            pass
        with self.lock:
            quiet = self.closed or peer in self.done or (self.succeeded and self.node != 0)
        if not quiet:
            how = "ended without a word (its launcher was killed, or its machine stopped)"
            self._learn(Failure("the launcher", peer, how), peer)

    def _learn(self, failure: Failure, source: int) -> None:
        with self.lock:
            if self.failure is not None:
                return
            self.failure = failure
        if self.node == 0:  # node 0 tells every other node
            self._send({"failed": failure.to_json()}, skip=source)

    def _send(self, msg: Any, skip: int = -1) -> None:
        for peer, link in self.links.items():
            if peer != skip:
                try:
                    link.send(msg)
                except OSError:
                    continue

    def report(self, failure: Failure) -> None:
        """This node's failure, to node 0 (node 0: to every node)."""
        with self.lock:
            if self.failure is None:
                self.failure = failure
        self._send({"failed": failure.to_json()})

    def finished(self) -> None:
        """This node's workers all succeeded."""
        with self.lock:
            self.succeeded = True
        if self.node != 0:
            self._send({"done": self.node})

    def all_done(self) -> bool:
        with self.lock:
            return self.node != 0 or self.done >= set(self.links)

    def close(self) -> None:
        with self.lock:
            self.closed = True
        for link in self.links.values():
            link.close()


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
    output: _Output,
    node: int = 0,
    peers: _Peers | None = None,
) -> Failure | None:
    """Start ``plan``'s processes, watch them, and stop every one that still runs on the way
    out, whatever the way out is; the first failure (this node's or, through ``peers``,
    another's), or None."""
    running: list[tuple[Proc, subprocess.Popen]] = []
    pumps: dict[int, list[threading.Thread]] = {}
    tails: list[_LogTail] = []
    failed: tuple[Proc, subprocess.Popen] | None = None
    failure: Failure | None = None
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
                tails.append(_LogTail(proc, output, node))
            for stream in (popen.stdout, popen.stderr):
                t = threading.Thread(target=_pump, args=(stream, proc.name, output), daemon=True)
                t.start()
                pumps.setdefault(popen.pid, []).append(t)
        result = _watch(running, stop_timeout, output, peers)
        if isinstance(result, Failure):
            failure = result
        elif result is not None:
            failed = result
            for t in pumps[failed[1].pid]:  # its last lines (torchrun's report) first
                t.join(2.0)
            failure = _failure_of(*failed, node, output)
            output.note(f"multidev launch: {failure.headline()}; stopping the other processes.")
            if peers is not None:
                peers.report(failure)
    except SystemExit as e:
        if peers is not None:
            how = _describe(128 - int(e.code or 0)) if isinstance(e.code, int) else "stopped"
            peers.report(Failure("the launcher", node, how.replace("was killed", "was stopped")))
        raise
    finally:
        _stop_all([popen for _, popen in running], stop_timeout)
        for threads in pumps.values():
            for t in threads:
                t.join(stop_timeout)
        for tail in tails:
            tail.finish(stop_timeout)
    if failed is not None:  # again, with every line now written
        failure = _failure_of(*failed, node, output)
    return failure


#: torchrun's line for a worker that failed, before it restarts or stops the others
_WORKER_FAILED = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)")
#: torchrun's report of the first failure: the global rank and its exit code
_ROOT_CAUSE = re.compile(r"Root Cause.*?\brank\s*:\s*(\d+).*?\bexitcode\s*:\s*(-?\d+)", re.S)


def _failure_of(proc: Proc, popen: subprocess.Popen, node: int, output: _Output) -> Failure:
    """The failure of ``popen``: its rank, how it ended, its last lines. A framework launcher
    (torchrun) ends with code 1 whichever worker failed: its report names the worker."""
    if proc.logs:
        found = _ROOT_CAUSE.search("\n".join(output.tail(proc.name)))
        if found:
            who = f"rank {found[1]}"
            return Failure(who, node, _describe(int(found[2])), output.tail(who))
    who = proc.name or "the framework launcher"
    return Failure(who, node, _describe(popen.returncode), output.tail(proc.name))


def _watch(
    running: list[tuple[Proc, subprocess.Popen]],
    stop_timeout: float,
    output: _Output,
    peers: _Peers | None,
) -> tuple[Proc, subprocess.Popen] | Failure | None:
    """Wait until a process of this node fails (returned), another node fails (its
    failure), or every worker of every node has succeeded (None)."""
    workers = [(p, q) for p, q in running if p.worker]
    reported = False
    # when each process ended, taken by a thread that waits for it: a rank that fails ends
    # the others' collectives, and two exits within one poll are ordered by these times
    ended: dict[int, float] = {}

    def reap(q: subprocess.Popen) -> None:
        q.wait()
        ended[q.pid] = time.monotonic()

    for _, q in running:
        threading.Thread(target=reap, args=(q,), daemon=True).start()
    while True:
        failed = [(p, q) for p, q in running if q.poll() not in (None, 0)]
        if failed:
            time.sleep(0.05)  # the waiting threads' times of the exits just seen
            return min(failed, key=lambda pq: ended.get(pq[1].pid, math.inf))
        if peers is not None and peers.failure is not None:
            output.note(
                f"multidev launch: {peers.failure.headline()}; stopping this node's processes."
            )
            return peers.failure
        if all(q.poll() == 0 for _, q in workers):
            if peers is not None and not reported:
                peers.finished()
                reported = True
            if peers is None or peers.all_done():
                helpers = [q for p, q in running if not p.worker]
                deadline = time.monotonic() + stop_timeout
                for q in helpers:
                    try:
                        q.wait(max(0.0, deadline - time.monotonic()))
                    except subprocess.TimeoutExpired:
                        break
                return None
        time.sleep(0.1)
