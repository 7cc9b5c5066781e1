"""Planted bugs in layers, optimisers, schedulers, the loader and DDP: does a test notice each?

    MULTIDEV_BACKEND=torch python tools/source_mutants.py [--only NAME ...] [--out FILE]

Each mutant below replaces one piece of source (which must occur exactly once) with a plausible
bug. For each, the sources and tests (src/, backends/, tests/, examples/) are copied to a
temporary folder, the mutant is applied there (the working tree is never changed), and the
tests named by the mutant run there in a fresh interpreter with that copy first on
``PYTHONPATH`` (worker processes that the tests start import the copy too). A mutant is killed when a test fails
and survives when they all pass. tools/mutation_check.py complements this with op-table
mutations (every op 0.1% off, or NaN). Prints a table; ``--out`` saves it as JSON; exits
non-zero when a mutant survives or the unmutated tests fail.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = ["--pyargs", "multidev.testing", "-p", "multidev.testing.plugin"]
AUTOGRAD = ("torch", "tensorflow", "paddle", "mxnet")


@dataclass(frozen=True)
class Mutant:
    """``old`` (exactly once in ``path``) becomes ``new``; ``tests`` are pytest arguments
    (files under tests/, or ``-k`` filters over the shipped conformance suite)."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    #: the backends whose code path the mutant changes (None: every backend)
    where: tuple[str, ...] | None = None


MUTANTS = (
    Mutant(
        "torch layer_norm ignores eps",
        "backends/multidev_torch/sequence_ops.py",
        "F.layer_norm(x, (x.shape[-1],), w, b, eps)",
        "F.layer_norm(x, (x.shape[-1],), w, b)",
        (*SUITE, "-k", "layer_norm"),
        ("torch",),
    ),
    Mutant(
        "NumPy reference conv pads the wrong side",
        "backends/multidev_numpy/cnn.py",
        "win = _windows(_padded(x, pads), w.shape[2:], stride, dilation)",
        "win = _windows(_padded(x, [p[::-1] for p in pads]), w.shape[2:], stride, dilation)",
        ("tests/test_cnn.py", "-k", "conv2d"),
    ),
    Mutant(
        "embedding padding row keeps its gradient",
        "src/multidev/nn/sequence_functional.py",
        "keep[padding_idx % n] = 0",
        "keep[padding_idx % n] = 1",
        (*SUITE, "-k", "embedding"),
        AUTOGRAD,
    ),
    Mutant(
        "Adam without bias correction of the first moment",
        "src/multidev/optim/optimizer.py",
        "step_size = lr / (1 - beta1**step)",
        "step_size = lr",
        ("tests/test_optim_state.py", "tests/test_training.py", *SUITE, "-k", "adam or Adam"),
        AUTOGRAD,
    ),
    Mutant(
        "StepLR decays one epoch late",
        "src/multidev/optim/lr_scheduler.py",
        "if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:",
        "if self.last_epoch <= 1 or (self.last_epoch - 1) % self.step_size != 0:",
        ("tests/test_lr_scheduler.py", "tests/test_lr_closed_form.py"),
    ),
    Mutant(
        "CosineAnnealingLR ignores eta_min",
        "src/multidev/optim/lr_scheduler.py",
        "t, T, lo = self.last_epoch, self.T_max, self.eta_min",
        "t, T, lo = self.last_epoch, self.T_max, 0.0",
        ("tests/test_lr_scheduler.py", "tests/test_lr_closed_form.py"),
    ),
    Mutant(
        "loader reuses epoch 0's order",
        "src/multidev/data/loader.py",
        "np.random.PCG64([int(g), epoch])",
        "np.random.PCG64([int(g), 0])",
        ("tests/test_data.py", "tests/test_loader_epochs.py"),
    ),
    Mutant(
        "BatchNorm updates running statistics with 1 - momentum",
        "src/multidev/nn/normalization.py",
        "factor = 0.0 if self.momentum is None else self.momentum",
        "factor = 0.0 if self.momentum is None else 1 - self.momentum",
        ("tests/test_batch_norm_running.py", *SUITE, "-k", "norm"),
    ),
    Mutant(
        "torch DDP sums gradients instead of averaging them",
        "backends/multidev_torch/distributed.py",
        "flat.div_(world)",
        "flat.div_(1)",
        ("tests/test_distributed.py", "-k", "half_batches"),
        ("torch",),
    ),
    Mutant(
        "TensorFlow DDP sums gradients instead of averaging them",
        "backends/multidev_tensorflow/distributed.py",
        'self._collective("mean", [tf.convert_to_tensor(x) for x in xs])',
        'self._collective("sum", [tf.convert_to_tensor(x) for x in xs])',
        ("tests/test_distributed.py", "-k", "half_batches"),
        ("tensorflow",),
    ),
    Mutant(
        "MXNet DDP sums gradients instead of averaging them",
        "backends/multidev_mxnet/distributed.py",
        "scale = [repr(1.0 / self.world_size)]",
        "scale = [repr(1.0)]",
        ("tests/test_distributed.py", "-k", "half_batches"),
        ("mxnet",),
    ),
)


def _run(tree: Path, tests: tuple[str, ...], timeout: float) -> tuple[bool, str]:
    env = dict(os.environ)
    paths = [str(tree / "src"), str(tree / "backends"), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-rf", "-p", "no:cacheprovider", *tests]
    try:
        out = subprocess.run(
            cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout:g} s"
    lines = out.stdout.strip().splitlines()
    failed = [line for line in lines if line.startswith("FAILED ")]
    summary = lines[-1] if lines else out.stderr[-300:]
    return out.returncode == 0, "; ".join([summary, *failed])


def check_catalogue() -> list[str]:
    """Every mutant's ``old`` text occurs exactly once in its file (else the catalogue rotted)."""
    problems = []
    for m in MUTANTS:
        count = (ROOT / m.path).read_text(encoding="utf-8").count(m.old)
        if count != 1:
            problems.append(f"{m.name}: {m.old!r} occurs {count} times in {m.path}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/source_mutants.py")
    parser.add_argument("--only", nargs="+", help="run only the mutants with these names")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per test run")
    parser.add_argument("--out", help="write the table as JSON to this file")
    args = parser.parse_args(argv)
    rotted = check_catalogue()
    if rotted:
        print("\n".join(rotted), file=sys.stderr)
        return 2
    backend = os.environ.get("MULTIDEV_BACKEND", "numpy")
    chosen = [
        m
        for m in MUTANTS
        if (not args.only or m.name in args.only) and (m.where is None or backend in m.where)
    ]
    t0 = time.monotonic()
    table: dict[str, str] = {}
    baselines: dict[tuple[str, ...], tuple[bool, str]] = {}
    with tempfile.TemporaryDirectory(prefix="multidev-mutants-") as tmp:
        for m in chosen:
            tree = Path(tmp) / "tree"
            shutil.rmtree(tree, ignore_errors=True)
            for part in ("src", "backends", "tests", "examples"):
                shutil.copytree(ROOT / part, tree / part, ignore=shutil.ignore_patterns("*.pyc"))
            if m.tests not in baselines:
                baselines[m.tests] = _run(tree, m.tests, args.timeout)
                if not baselines[m.tests][0]:
                    # once more before calling the unmutated tests broken: the subprocesses
                    # some of them start can miss a deadline on a loaded machine
                    print(f"baseline failed, rerun: {baselines[m.tests][1]}", file=sys.stderr)
                    baselines[m.tests] = _run(tree, m.tests, args.timeout)
            ok, last = baselines[m.tests]
            if not ok:
                table[m.name] = f"baseline fails: {last}"
                continue
            target = tree / m.path
            target.write_text(target.read_text(encoding="utf-8").replace(m.old, m.new))
            ok, last = _run(tree, m.tests, args.timeout)
            table[m.name] = "SURVIVED" if ok else f"killed ({last})"
            print(f"{m.name}: {table[m.name]}", file=sys.stderr, flush=True)
    survived = [n for n, r in table.items() if r == "SURVIVED"]
    broken = [n for n, r in table.items() if r.startswith("baseline")]
    if args.out:
        Path(args.out).write_text(
            json.dumps(
                {
                    "backend": backend,
                    "seconds": round(time.monotonic() - t0, 1),
                    "table": table,
                    "survived": survived,
                },
                indent=1,
            )
        )
    print(f"\n{backend}: {len(table)} source mutants")
    for name, result in table.items():
        print(f"  {name:55s} {result}")
    print(f"survived: {survived or 'none'}")
    return 1 if survived or broken else 0


if __name__ == "__main__":
    sys.exit(main())
