"""Training that stops and resumes anywhere, on any backend: the MLP classifier of
``mlp_classifier`` trained from an ``md.data.DataLoader`` with Adam, a ``OneCycleLR``
schedule and gradient clipping, with a training checkpoint that holds everything the run
needs (model, optimiser, scheduler, multidev's random state, the loader's position, the epoch
and the losses so far) in one ``md.save`` file.

Because multidev's random streams and checkpoints are the same on every backend, a run
stopped on one framework continues on another exactly as if it had never stopped (within
float32 rounding): ``python examples/resume_training.py --stop-after 2 --save run.ckpt`` with
``MULTIDEV_BACKEND=torch``, then ``--resume run.ckpt`` with ``MULTIDEV_BACKEND=paddle``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import multidev as md
from multidev import nn
from multidev.nn import functional as F

from .mlp_classifier import MLP, NUM_CLASSES, NUM_HIDDEN, NUM_INPUTS, accuracy, synthetic_data

EPOCHS = 4
BATCH_SIZE = 50
MAX_LR = 0.02
MAX_GRAD_NORM = 5.0
#: the final full-data loss must be below this (chance level is log(3) = 1.0986)
THRESHOLD = 0.2


def save_training_checkpoint(
    path: str | Path,
    *,
    model: nn.Block,
    optimizer: md.optim.Optimizer,
    scheduler: Any = None,
    loader: md.data.DataLoader | None = None,
    epoch: int,
    **extra: Any,
) -> None:
    """Write the whole training state to ``path`` with one ``md.save``: the model's and the
    optimiser's state dicts, the scheduler's and the loader's (if given), multidev's random
    state, ``epoch`` (epochs completed) and any ``extra`` plain values (e.g. the losses)."""
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "rng": md.random.get_state(),
        "epoch": epoch,
        "backend": md.get_backend(),
        **extra,
    }
    if scheduler is not None:
        state["scheduler"] = scheduler.state_dict()
    if loader is not None:
        state["loader"] = loader.state_dict()
    md.save(state, path)


def load_training_checkpoint(
    path: str | Path,
    *,
    model: nn.Block,
    optimizer: md.optim.Optimizer,
    scheduler: Any = None,
    loader: md.data.DataLoader | None = None,
) -> dict[str, Any]:
    """Restore what ``save_training_checkpoint`` wrote, on the active backend (whichever saved
    it), into objects built as for the original run; returns the whole checkpoint dict (its
    ``"epoch"``, extras, ``"backend"`` that saved it). Raises ``md.CheckpointError`` for a
    damaged file and ``md.StateDictError`` for a different model or optimiser."""
    state = md.load(path)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(state["scheduler"])
    if loader is not None:
        loader.load_state_dict(state["loader"])
    md.random.set_state(state["rng"])
    return state


def _progress(batches: Iterable[Any], enabled: bool, desc: str) -> Iterable[Any]:
    """``batches`` with a tqdm progress bar when asked for and tqdm is installed."""
    if not enabled:
        return batches
    try:
        from tqdm import tqdm
    except ImportError:
        return batches
    return tqdm(batches, desc=desc, leave=False)


def build(seed: int = 0) -> dict[str, Any]:
    """The run's data, model, optimiser, schedule and loader, from ``seed``."""
    md.manual_seed(seed)
    X, labels = synthetic_data(600)
    net = MLP(NUM_INPUTS, NUM_HIDDEN, NUM_CLASSES, dropout=0.2)
    loader = md.data.DataLoader(md.data.TensorDataset(X, labels), BATCH_SIZE, shuffle=True)
    opt = md.optim.Adam(net.parameters(), lr=MAX_LR)
    sched = md.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=MAX_LR, epochs=EPOCHS, steps_per_epoch=len(loader)
    )
    return {"X": X, "labels": labels, "net": net, "opt": opt, "sched": sched, "loader": loader}


def train(
    seed: int = 0,
    epochs: int = EPOCHS,
    resume: str | Path | None = None,
    checkpoints: Mapping[tuple[int, int], str | Path] | None = None,
    log: Callable[[str], None] = print,
    progress: bool = False,
) -> list[float]:
    """Train up to ``epochs`` epochs, from scratch or from the checkpoint ``resume``; returns
    the full-data loss (dropout off) after each epoch, those before the checkpoint included.

    ``checkpoints`` maps positions ``(epochs completed, batches into the next epoch)`` to
    files: ``{(2, 0): "a.ckpt", (2, 5): "b.ckpt"}`` saves after epoch 2 and 5 batches later.
    """
    run = build(seed)
    net, opt, sched, loader = run["net"], run["opt"], run["sched"], run["loader"]
    checkpoints = dict(checkpoints or {})
    losses: list[float] = []
    start = 0
    if resume is not None:
        state = load_training_checkpoint(
            resume, model=net, optimizer=opt, scheduler=sched, loader=loader
        )
        start, losses = state["epoch"], list(state["losses"])
        log(f"resumed from {resume} (saved on {state['backend']} after epoch {start})")

    def save(epoch: int, batch: int) -> None:
        path = checkpoints.get((epoch, batch))
        if path is not None:
            save_training_checkpoint(
                path,
                model=net,
                optimizer=opt,
                scheduler=sched,
                loader=loader,
                epoch=epoch,
                losses=losses,
            )

    for epoch in range(start, epochs):
        net.train()
        for X, y in _progress(loader, progress, f"epoch {epoch + 1}"):
            with md.autograd.record():
                loss = F.cross_entropy(net(X), y)
            loss.backward()
            nn.utils.clip_grad_norm_(net.parameters(), MAX_GRAD_NORM)
            opt.step()
            opt.zero_grad()
            sched.step()
            position = loader.state_dict()["batch"]
            if position:
                save(epoch, position)
        net.eval()
        with md.no_grad():
            logits = net(run["X"])
            losses.append(F.cross_entropy(logits, run["labels"]).item())
        log(
            f"epoch {epoch + 1}, loss {losses[-1]:.6f}, "
            f"train acc {accuracy(logits, run['labels']):.3f}, lr {sched.get_last_lr()[0]:.5f}"
        )
        save(epoch + 1, 0)
    return losses


def main(argv: list[str] | None = None) -> int:
    """Command line: train, optionally stopping early with a checkpoint or resuming from one.
    Exits 1 if a completed run's final loss is not below ``THRESHOLD``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stop-after", type=int, default=EPOCHS, help="epochs to run up to")
    parser.add_argument("--save", type=Path, help="checkpoint written after --stop-after")
    parser.add_argument("--resume", type=Path, help="checkpoint to continue from")
    parser.add_argument("--progress", action="store_true", help="tqdm progress bars")
    args = parser.parse_args(argv)
    saves = {(args.stop_after, 0): args.save} if args.save else {}
    losses = train(args.seed, args.stop_after, args.resume, saves, progress=args.progress)
    if args.stop_after < EPOCHS:
        return 0
    ok = losses[-1] < THRESHOLD
    print(f"final loss {losses[-1]:.6f} {'<' if ok else '>='} threshold {THRESHOLD}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
