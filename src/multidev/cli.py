"""``multidev info | conformance | demo | plot | launch``."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from . import registry


def _version(name: str) -> str | None:
    for dist in registry.framework(name).distributions:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def info(args: argparse.Namespace) -> int:
    """One screen: every registered backend, installed or not, with version, devices, capabilities."""
    active = registry.get_backend()
    print(f"multidev {metadata.version('multidev')} · Python {sys.version.split()[0]}")
    print(f"active backend: {active} (chosen by {registry.chosen_by()})")
    print()
    print(f"{'backend':<11} {'installed':<10} {'version':<10} {'devices':<22} capabilities")
    for name in registry.registered_backends():
        if not registry.framework_installed(name):
            print(f"{name:<11} {'no':<10} {'-':<10} {'-':<22} {registry.install_hint(name)}")
            continue
        try:
            bk = registry.load(name)
            devs = ", ".join(str(d) for d in bk.devices())
            caps = ", ".join(sorted(bk.capabilities)) or "-"
            ver = bk.version()
        except Exception as e:  # a broken install is reported, not fatal
            devs, caps, ver = "-", f"cannot load: {e}", _version(name) or "?"
        print(f"{name:<11} {'yes':<10} {ver:<10} {devs:<22} {caps}")
    return 0


def _run_suite(name: str, json_path: Path, pytest_args: list[str]) -> int:
    from .testing import suite_path

    env = dict(os.environ, MULTIDEV_BACKEND=name)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(suite_path()),
        "-p",
        "no:cacheprovider",
        "-p",
        "multidev.testing.plugin",
        "-q",
        f"--conformance-json={json_path}",
        *pytest_args,
    ]
    return subprocess.call(cmd, env=env)


def conformance(args: argparse.Namespace) -> int:
    """Run the suite for one or all installed backends (each in its own process), or merge runs."""
    from .testing import report

    out = Path(args.out)
    results, status = [], 0
    if args.merge:
        results = [json.loads(Path(p).read_text()) for p in args.merge]
    else:
        names = (
            registry.available_backends() if args.all else [args.backend or registry.get_backend()]
        )
        with tempfile.TemporaryDirectory() as tmp:
            for name in names:
                path = Path(tmp) / f"{name}.json"
                rc = _run_suite(name, path, args.pytest_args)
                status = status or rc
                if path.exists():
                    results.append(json.loads(path.read_text()))
                else:
                    status = status or 1
    merged = report.merge(results)
    md_path, json_path = report.write(merged, out)
    print()
    print(report.to_markdown(merged))
    print(f"saved {md_path} and {json_path}")
    failed = any(c["failed"] for b in merged["backends"].values() for c in b.values())
    return 1 if failed else status


def demo(args: argparse.Namespace) -> int:
    if args.which == "train":
        from .examples import train_digits

        return train_digits.main(args.demo_args)
    from . import demo as _demo

    return _demo.main() or 0


def plot(args: argparse.Namespace) -> int:
    """Overlay the loss and metrics of several run folders (``Trainer(log_dir=...)``)."""
    from .plotting import plot_runs

    try:
        path = plot_runs(args.run_dirs, args.out)
    except (FileNotFoundError, ImportError, ValueError) as e:
        print(f"multidev plot: {e}", file=sys.stderr)
        return 2
    print(f"wrote {path}")
    return 0


def launch(args: argparse.Namespace) -> int:
    """Start the workers of a data-parallel job (see ``multidev.distributed.launch``); a
    usage error is argparse's one line and exit code 2, before anything starts."""
    from .distributed.group import DistributedError
    from .distributed.launch import check_arguments
    from .distributed.launch import launch as _launch

    try:
        check_arguments(
            [args.script],
            nproc_per_node=args.nproc_per_node,
            nnodes=args.nnodes,
            node_rank=args.node_rank,
            master_addr=args.master_addr,
            master_port=args.master_port,
            stop_timeout=args.stop_timeout,
            max_restarts=args.max_restarts,
            log_dir=args.log_dir,
            rdzv_timeout=args.rdzv_timeout,
        )
    except ValueError as e:
        args.parser.error(str(e))
    try:
        return _launch(
            [args.script, *args.script_args],
            nproc_per_node=args.nproc_per_node,
            nnodes=args.nnodes,
            node_rank=args.node_rank,
            master_addr=args.master_addr,
            master_port=args.master_port,
            backend=args.backend,
            stop_timeout=args.stop_timeout,
            max_restarts=args.max_restarts,
            log_dir=args.log_dir,
            tee=args.tee,
            rdzv_timeout=args.rdzv_timeout,
        )
    except DistributedError as e:  # the nodes did not meet, a port is taken: one line
        print(f"multidev launch: {e}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="multidev",
        description="Model code written once, run on PyTorch, TensorFlow, PaddlePaddle, MXNet "
        "or the NumPy reference backend. MULTIDEV_BACKEND names the backend.",
        epilog="Run 'multidev COMMAND --help' for a command's options.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="backends, versions, devices, capabilities").set_defaults(fn=info)
    c = sub.add_parser("conformance", help="run the conformance suite and print the matrix")
    g = c.add_mutually_exclusive_group()
    g.add_argument("--backend", help="backend to test (default: the active one)")
    g.add_argument("--all", action="store_true", help="every installed backend")
    g.add_argument("--merge", nargs="+", metavar="JSON", help="merge saved per-backend results")
    c.add_argument("--out", default="conformance-report", help="folder for the .md and .json")
    c.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    c.set_defaults(fn=conformance)
    de = sub.add_parser(
        "demo",
        help="the d2l chapter tour on the active backend ('demo train': md.Trainer on digits)",
    )
    de.add_argument("which", nargs="?", choices=["tour", "train"], default="tour")
    de.add_argument("demo_args", nargs=argparse.REMAINDER, help="options of 'demo train'")
    de.set_defaults(fn=demo)
    pl = sub.add_parser(
        "plot",
        help="overlay training runs (loss and metrics per epoch) in one PNG",
        description="Read metrics.jsonl (or metrics.csv) of each RUN_DIR, as Trainer(log_dir=) "
        "writes them, and draw one panel per quantity with a line per run (the folder's name).",
    )
    pl.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run folders")
    pl.add_argument("-o", "--out", default="runs.png", help="PNG to write (default runs.png)")
    pl.set_defaults(fn=plot)
    la = sub.add_parser(
        "launch",
        help="run a script as N worker processes per machine (md.distributed)",
        description="Run SCRIPT as --nproc-per-node workers of this machine, through the "
        "backend's own launcher where it has one; lines are prefixed with the rank; exits 1 "
        "(stopping the others, on every node) when a worker fails, with a summary of the first "
        "failure. SIGINT/SIGTERM/SIGHUP stop every worker (SIGKILL after --stop-timeout) and "
        "exit 128 + the signal. Usage errors exit 2.",
    )
    la.add_argument("--nproc-per-node", type=int, default=1, help="workers on this machine")
    la.add_argument("--nnodes", type=int, default=1, help="machines in the job")
    la.add_argument("--node-rank", type=int, default=0, help="this machine's index")
    la.add_argument("--master-addr", default="127.0.0.1", help="address of node 0")
    la.add_argument("--master-port", type=int, default=0, help="port on node 0 (0: a free one)")
    la.add_argument("--backend", help="backend to run (default: MULTIDEV_BACKEND)")
    la.add_argument(
        "--stop-timeout",
        type=float,
        default=10.0,
        help="seconds between SIGTERM and SIGKILL when stopping the workers",
    )
    la.add_argument(
        "--max-restarts",
        type=int,
        default=0,
        help="start the whole group again after a failure, up to N times (workers read the "
        "attempt in MULTIDEV_RESTART_COUNT and resume from their checkpoint; torch on one "
        "machine: through torchrun's elastic agent)",
    )
    la.add_argument(
        "--log-dir",
        help="keep one log file per rank here (rank_<r>.log); the console then shows only the "
        "launcher's lines unless --tee",
    )
    la.add_argument(
        "--tee", action="store_true", help="with --log-dir, write worker lines to the console too"
    )
    la.add_argument(
        "--rdzv-timeout",
        type=float,
        default=300.0,
        help="seconds the nodes' launchers wait for each other before an error naming the "
        "missing nodes (default 300)",
    )
    la.add_argument("script", help="the training script")
    la.add_argument("script_args", nargs=argparse.REMAINDER, help="its arguments")
    la.set_defaults(fn=launch, parser=la)
    args = p.parse_args(argv)
    try:
        return args.fn(args)
    except KeyboardInterrupt:  # before a command installs its own handling: no traceback
        return 130


if __name__ == "__main__":
    sys.exit(main())
