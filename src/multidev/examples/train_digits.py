"""Train a LeNet-style CNN on scikit-learn's bundled digits with ``md.Trainer`` on the active
backend: a progress bar per epoch, per-epoch logs in ``RUN_DIR/metrics.{csv,jsonl}``, the
plot ``RUN_DIR/training.png`` and the test accuracy (``multidev demo train``).

``multidev plot runs/digits-*`` overlays the runs of several backends.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import multidev as md
from multidev import nn
from multidev.nn import functional as F

__all__ = ["THRESHOLD", "lenet", "main", "train"]

EPOCHS = 10
BATCH_SIZE = 32
LR = 0.01
#: test accuracy a run must reach
THRESHOLD = 0.97


def lenet() -> nn.Block:
    """LeNet's shape for 8x8 images: two conv/pool stages, then two dense layers."""
    return nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 64), nn.ReLU(), nn.Linear(64, 10),
    )  # fmt: skip


def train(
    seed: int = 0,
    epochs: int = EPOCHS,
    log_dir: str | Path | None = None,
    progress: bool = True,
    dtype: str = "float32",
    **trainer_args: Any,
) -> dict[str, Any]:
    """Train from ``seed`` (in ``dtype``: "float32" or "float64"); returns ``{"history":
    per-epoch logs, "test": evaluate's dict, "trainer": the Trainer}``."""
    md.manual_seed(seed)
    train_set = md.data.datasets.Digits(train=True, dtype=dtype)
    test_set = md.data.datasets.Digits(train=False, dtype=dtype)
    loader = md.data.DataLoader(train_set, BATCH_SIZE, shuffle=True, generator=seed)
    test_loader = md.data.DataLoader(test_set, 100)
    net = lenet()
    if dtype == "float64":
        net.to(md.float64)
    trainer = md.Trainer(
        epochs,
        progress=progress,
        log_dir=log_dir,
        loss=F.cross_entropy,
        optimizer=lambda params: md.optim.Adam(params, lr=LR),
        metrics=[md.metrics.Accuracy()],
        callbacks=[
            # a cosine decay to 0 over the run: the last epochs settle instead of jumping
            md.callbacks.LearningRateScheduler(
                lambda opt: md.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
            )
        ],
        **trainer_args,
    )
    history = trainer.fit(net, loader, val_data=test_loader)
    return {"history": history, "test": trainer.evaluate(net, test_loader), "trainer": trainer}


def main(argv: list[str] | None = None) -> int:
    """Command line; exits 1 when the test accuracy is below ``THRESHOLD``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--log-dir", type=Path, help="default runs/digits-<backend>")
    parser.add_argument("--no-progress", action="store_true", help="no bar, no epoch lines")
    parser.add_argument("--no-plot", action="store_true", help="do not draw training.png")
    args = parser.parse_args(argv)
    log_dir = args.log_dir or Path("runs") / f"digits-{md.get_backend()}"
    run = train(args.seed, args.epochs, log_dir, progress=not args.no_progress)
    acc = run["test"]["accuracy"]
    print(f"{md.get_backend()}: test accuracy {acc:.4f}, logs in {log_dir}")
    if not args.no_plot:
        try:
            print(f"plot: {run['trainer'].plot()}")
        except ImportError as e:
            print(f"no plot: {e}")
    return 0 if acc >= THRESHOLD else 1


if __name__ == "__main__":
    raise SystemExit(main())
