"""Train ``multidev.examples.train_digits`` (md.Trainer, LeNet-style CNN, scikit-learn's
digits) on several backends and check that they agree.

``python -m multidev.testing.digits_compare run --out FILE.json`` (once per backend, in its
own environment) trains it with one seed, in float64 and in float32, and records the
per-epoch training losses, the test accuracy and the seconds per epoch. ``… check A.json
B.json …`` fails unless every backend's float64 per-epoch losses agree with the first file's
within ``--rtol`` (default 1e-4) relative and every test accuracy (float64 and float32) is at
least ``--min-accuracy`` (default ``train_digits.THRESHOLD``). The float32 losses' difference
and the seconds per epoch are printed (never checked).

``… plain --out FILE.json`` (in the torch environment) trains the same network, data split,
batch size, optimiser and schedule written in plain PyTorch (``torch.nn``, ``torch.optim``, a
``torch.utils.data.DataLoader``), and ``check --plain FILE.json`` prints its seconds per epoch
and accuracy beside the backends': what multidev costs over the code it replaces. Its batches
are drawn by torch's own sampler, so its losses are not compared.

Why float64 for the agreement: in float32 the backends' correct kernels differ by rounding
(1e-7 relative), and 10 epochs of Adam amplify that: the per-epoch losses agree within 1e-6
for three epochs, then drift apart by 1e-2 (measured: torch and paddle on one side,
TensorFlow and MXNet on the other), while every backend still reaches the same accuracy.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .. import registry

__all__ = ["check", "main", "plain_torch", "run"]


def run(seed: int = 0) -> dict[str, Any]:
    """The active backend's runs in float64 and float32: losses, test accuracy, seconds per
    epoch."""
    from ..examples import train_digits

    out: dict[str, Any] = {"backend": registry.get_backend(), "seed": seed}
    for dtype in ("float64", "float32"):
        result = train_digits.train(seed, progress=False, dtype=dtype)
        history = result["history"]
        out[dtype] = {
            "losses": [h["loss"] for h in history],
            "accuracy": result["test"]["accuracy"],
            "seconds": [h["time_s"] for h in history],
        }
    return out


def plain_torch(seed: int = 0) -> dict[str, Any]:
    """``train_digits`` in float32 written in plain PyTorch: losses, test accuracy, seconds per
    epoch (the training loop with its running loss and accuracy, as ``md.Trainer`` times it)."""
    import time

    import numpy as np
    import torch
    from sklearn.datasets import load_digits

    from ..data.datasets import Digits
    from ..examples import train_digits as td

    bunch = load_digits()
    images = torch.from_numpy((np.asarray(bunch.images, dtype=np.float32) / 16)[:, None])
    labels = torch.from_numpy(np.asarray(bunch.target, dtype=np.int64))
    order = torch.from_numpy(np.random.default_rng(Digits.SPLIT_SEED).permutation(len(labels)))
    train_idx, test_idx = order[: Digits.TRAIN_SIZE], order[Digits.TRAIN_SIZE :]
    torch.manual_seed(seed)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(images[train_idx], labels[train_idx]),
        batch_size=td.BATCH_SIZE,
        shuffle=True,
    )
    nn = torch.nn
    net = nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 64), nn.ReLU(), nn.Linear(64, 10),
    )  # fmt: skip
    opt = torch.optim.Adam(net.parameters(), lr=td.LR)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=td.EPOCHS)
    losses, seconds = [], []
    for _ in range(td.EPOCHS):
        started = time.perf_counter()
        net.train()
        total, correct, seen = torch.zeros(()), torch.zeros(()), 0
        for X, y in loader:
            out = net(X)
            loss = nn.functional.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                total += loss.detach() * len(y)
                correct += (out.argmax(1) == y).sum()
            seen += len(y)
        losses.append(float(total) / seen)
        seconds.append(time.perf_counter() - started)
        sched.step()
    net.eval()
    with torch.no_grad():
        accuracy = float((net(images[test_idx]).argmax(1) == labels[test_idx]).float().mean())
    return {
        "backend": "plain torch",
        "float32": {"losses": losses, "accuracy": accuracy, "seconds": seconds},
    }


def _relative(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0.0 else abs(a - b) / scale


def check(
    results: list[dict[str, Any]], rtol: float = 1e-4, min_accuracy: float | None = None
) -> tuple[list[str], list[str]]:
    """(problems, report lines) for the runs of several backends."""
    from ..examples.train_digits import THRESHOLD

    floor = THRESHOLD if min_accuracy is None else min_accuracy
    problems: list[str] = []
    lines: list[str] = []
    if not results:
        return ["no results"], lines
    for dtype, tol in (("float64", rtol), ("float32", float("inf"))):
        runs = [{"backend": r["backend"], **r[dtype]} for r in results]
        p, ls = _check(runs, tol, floor)
        problems += [f"{x} ({dtype})" for x in p]
        lines += [f"{dtype}: {x}" for x in ls]
    return problems, lines


def _check(results: list[dict[str, Any]], rtol: float, floor: float) -> tuple[list[str], list[str]]:
    problems: list[str] = []
    lines: list[str] = []
    ref = results[0]
    for r in results:
        secs = sum(r["seconds"]) / len(r["seconds"])
        worst = 0.0
        if len(r["losses"]) != len(ref["losses"]):
            problems.append(
                f"{r['backend']}: {len(r['losses'])} epochs, {ref['backend']} has {len(ref['losses'])}"
            )
        else:
            worst = max(_relative(a, b) for a, b in zip(ref["losses"], r["losses"], strict=True))
        lines.append(
            f"{r['backend']:>10}: test accuracy {r['accuracy']:.4f}, largest relative loss "
            f"difference from {ref['backend']} {worst:.2e}, {secs:.2f} s/epoch"
        )
        if worst > rtol:
            problems.append(
                f"{r['backend']}: per-epoch losses {r['losses']} differ from {ref['backend']}'s "
                f"{ref['losses']} by {worst:.3g} relative (> {rtol})"
            )
        if r["accuracy"] < floor:
            problems.append(f"{r['backend']}: test accuracy {r['accuracy']:.4f} < {floor}")
    return problems, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m multidev.testing.digits_compare")
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="train on the active backend")
    p_run.add_argument("--out", required=True, type=Path)
    p_run.add_argument("--seed", type=int, default=0)
    p_check = sub.add_parser("check", help="compare the runs of several backends")
    p_check.add_argument("files", nargs="+", type=Path)
    p_check.add_argument("--rtol", type=float, default=1e-4)
    p_check.add_argument("--min-accuracy", type=float, default=None)
    p_check.add_argument("--plain", type=Path, help="plain PyTorch's run, printed beside")
    p_plain = sub.add_parser("plain", help="train the same network in plain PyTorch")
    p_plain.add_argument("--out", required=True, type=Path)
    p_plain.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command in ("run", "plain"):
        args.out.parent.mkdir(parents=True, exist_ok=True)
        result = run(args.seed) if args.command == "run" else plain_torch(args.seed)
        args.out.write_text(json.dumps(result, indent=2))
        print(f"wrote {args.out}")
        return 0
    results = [json.loads(f.read_text()) for f in args.files]
    problems, lines = check(results, args.rtol, args.min_accuracy)
    print(f"train_digits with md.Trainer on {', '.join(r['backend'] for r in results)}")
    for line in lines:
        print("  " + line)
    if args.plain is not None:
        plain = json.loads(args.plain.read_text())["float32"]
        secs = sum(plain["seconds"]) / len(plain["seconds"])
        print(
            f"  float32: {'plain torch':>10}: test accuracy {plain['accuracy']:.4f}, "
            f"{secs:.2f} s/epoch (the same network, data and schedule in plain PyTorch)"
        )
    for p in problems:
        print("FAILED: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
