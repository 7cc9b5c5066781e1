"""Callbacks for ``md.Trainer``: ``ModelCheckpoint``, ``EarlyStopping``,
``LearningRateScheduler``, ``CSVLogger``, ``TensorBoard`` and ``LivePlot``.

The protocol (subclass ``Callback`` or define any of these methods): ``on_fit_start``,
``on_epoch_start``, ``on_batch_end``, ``on_epoch_end``, ``on_fit_end``, each called with the
trainer. What they read there: ``trainer.model``, ``trainer.optimizer``, ``trainer.epoch``
(0-based, the epoch in progress), ``trainer.batch_idx`` (batches done in it),
``trainer.global_step``, ``trainer.logs`` (at ``on_epoch_end``: this epoch's ``loss``,
metrics, ``val_*`` values and ``lr``; at ``on_batch_end``: the batch's ``loss``),
``trainer.history`` (one such dict per epoch). Setting ``trainer.should_stop = True`` stops
training after the current batch (from ``on_batch_end``) or epoch (from ``on_epoch_end``).
A callback with ``state_dict()`` / ``load_state_dict()`` has its state saved in training
checkpoints and restored on resume.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .optim.lr_scheduler import LRScheduler
    from .trainer import Trainer

__all__ = [
    "CSVLogger",
    "Callback",
    "EarlyStopping",
    "LearningRateScheduler",
    "LivePlot",
    "ModelCheckpoint",
    "TensorBoard",
]


class Callback:
    """Base class with every hook of the protocol doing nothing."""

    def on_fit_start(self, trainer: Trainer) -> None: ...
    def on_fit_end(self, trainer: Trainer) -> None: ...
    def on_epoch_start(self, trainer: Trainer) -> None: ...
    def on_epoch_end(self, trainer: Trainer) -> None: ...
    def on_batch_end(self, trainer: Trainer) -> None: ...


def _check_mode(mode: str) -> str:
    if mode not in ("min", "max"):
        raise ValueError(f"Expected mode 'min' or 'max'. Received: {mode!r}")
    return mode


def _monitored(trainer: Trainer, monitor: str, who: str) -> float:
    if monitor not in trainer.logs:
        raise ValueError(
            f"Expected {who} to monitor one of the epoch's logs {sorted(trainer.logs)}. "
            f"Received: monitor={monitor!r}. Pass val_data to fit() for 'val_*' values, or "
            "choose another name."
        )
    return float(trainer.logs[monitor])


def _better(value: float, best: float | None, mode: str, min_delta: float = 0.0) -> bool:
    if math.isnan(value):
        return False
    if best is None:
        return True
    return value < best - min_delta if mode == "min" else value > best + min_delta


class ModelCheckpoint(Callback):
    """Save a training checkpoint (model, optimiser, schedulers, loader position, multidev's
    random state, epoch, history, metric and callback states; one ``md.save`` file) that
    ``trainer.fit(..., resume=path)`` continues exactly, on any backend.

    - ``path``: file name, formatted with ``{epoch}`` (epochs completed) and ``{step}``
      (global step); default ``"last.ckpt"``. A relative path goes under the trainer's
      ``log_dir`` when it has one.
    - ``every_n_epochs`` (default 1) / ``every_n_steps`` (default None: never mid-epoch).
    - ``monitor`` with ``mode`` ("min"/"max") and ``save_best_only``: at epoch ends, save
      only when the monitored log improved. ``best_path``/``best_value``/``last_path`` tell
      what was written.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = "last.ckpt",
        *,
        every_n_epochs: int | None = 1,
        every_n_steps: int | None = None,
        monitor: str | None = None,
        mode: str = "min",
        save_best_only: bool = False,
    ) -> None:
        for name, n in (("every_n_epochs", every_n_epochs), ("every_n_steps", every_n_steps)):
            if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 1):
                raise ValueError(f"Expected {name} to be an int >= 1 or None. Received: {n!r}")
        if save_best_only and monitor is None:
            raise ValueError("Expected monitor= with save_best_only=True. Received: None")
        self.path = str(path)
        self.every_n_epochs = every_n_epochs
        self.every_n_steps = every_n_steps
        self.monitor = monitor
        self.mode = _check_mode(mode)
        self.save_best_only = save_best_only
        self.best_value: float | None = None
        self.best_path: Path | None = None
        self.last_path: Path | None = None

    def _file(self, trainer: Trainer) -> Path:
        p = Path(self.path.format(epoch=trainer.epochs_done, step=trainer.global_step))
        if not p.is_absolute() and trainer.log_dir is not None:
            p = Path(trainer.log_dir) / p
        return p

    def _save(self, trainer: Trainer) -> Path:
        path = self._file(trainer)
        path.parent.mkdir(parents=True, exist_ok=True)
        trainer.save_checkpoint(path)
        self.last_path = path
        return path

    def on_batch_end(self, trainer: Trainer) -> None:
        n = self.every_n_steps
        if n is not None and trainer.global_step % n == 0 and not trainer.at_epoch_end:
            self._save(trainer)

    def on_epoch_end(self, trainer: Trainer) -> None:
        n = self.every_n_epochs
        if self.monitor is not None:
            value = _monitored(trainer, self.monitor, "ModelCheckpoint")
            if _better(value, self.best_value, self.mode):
                self.best_value = value
                self.best_path = self._save(trainer)
                return
            if self.save_best_only:
                return
        if n is not None and trainer.epochs_done % n == 0:
            self._save(trainer)

    def state_dict(self) -> dict[str, Any]:
        return {"best_value": self.best_value}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best_value = state["best_value"]


class EarlyStopping(Callback):
    """Stop when ``monitor`` (default ``"val_loss"``) has not improved by more than
    ``min_delta`` for ``patience`` epochs; ``restore_best_weights`` puts back the model's
    parameters of the best epoch when it stops."""

    def __init__(
        self,
        monitor: str = "val_loss",
        *,
        patience: int = 0,
        min_delta: float = 0.0,
        mode: str = "min",
        restore_best_weights: bool = False,
    ) -> None:
        if not isinstance(patience, int) or isinstance(patience, bool) or patience < 0:
            raise ValueError(f"Expected patience to be an int >= 0. Received: {patience!r}")
        self.monitor = monitor
        self.patience = patience
        self.min_delta = abs(float(min_delta))
        self.mode = _check_mode(mode)
        self.restore_best_weights = restore_best_weights
        self.best: float | None = None
        self.wait = 0
        self.stopped_epoch: int | None = None
        self._best_weights: dict[str, Any] | None = None

    def on_epoch_end(self, trainer: Trainer) -> None:
        value = _monitored(trainer, self.monitor, "EarlyStopping")
        if _better(value, self.best, self.mode, self.min_delta):
            self.best, self.wait = value, 0
            if self.restore_best_weights:
                self._best_weights = {
                    k: v.numpy().copy() for k, v in trainer.model.state_dict().items()
                }
            return
        self.wait += 1
        if self.wait > self.patience:
            trainer.should_stop = True
            self.stopped_epoch = trainer.epochs_done
            if self._best_weights is not None:
                from .creation import asarray

                trainer.model.load_state_dict(
                    {k: asarray(v) for k, v in self._best_weights.items()}
                )

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "wait": self.wait}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best, self.wait = state["best"], int(state["wait"])


class LearningRateScheduler(Callback):
    """Step an ``md.optim.lr_scheduler`` every epoch (``interval="epoch"``) or every batch
    (``"step"``). ``scheduler``: a scheduler, or ``factory(optimizer) -> scheduler`` for an
    optimiser the Trainer builds (``lambda opt: StepLR(opt, 10)``)."""

    def __init__(
        self,
        scheduler: LRScheduler | Callable[[Any], LRScheduler],
        interval: str = "epoch",
    ) -> None:
        from .optim.lr_scheduler import LRScheduler

        if interval not in ("epoch", "step"):
            raise ValueError(f"Expected interval 'epoch' or 'step'. Received: {interval!r}")
        if not isinstance(scheduler, LRScheduler) and not callable(scheduler):
            raise TypeError(
                "Expected an md.optim.lr_scheduler scheduler or a function of the optimiser "
                f"returning one. Received: {type(scheduler).__name__}"
            )
        self.scheduler = scheduler
        self.interval = interval

    def on_fit_start(self, trainer: Trainer) -> None:
        from .optim.lr_scheduler import LRScheduler

        sched = self.scheduler
        if not isinstance(sched, LRScheduler):
            sched = sched(trainer.optimizer)
            if not isinstance(sched, LRScheduler):
                raise TypeError(
                    "Expected the scheduler factory to return an md.optim.lr_scheduler "
                    f"scheduler. Received: {type(sched).__name__}"
                )
            self.scheduler = sched
        trainer.add_scheduler(sched, self.interval)


def _rows(history: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    keys: list[str] = []
    for row in history:
        keys += [k for k in row if k not in keys]
    return keys, history


class CSVLogger(Callback):
    """Write the per-epoch logs (``trainer.history``) to ``filename`` as CSV and, with
    ``jsonl=True``, to the same name with ``.jsonl`` as JSON lines, at every epoch end. A
    relative name goes under the trainer's ``log_dir``. ``multidev plot`` reads these."""

    def __init__(self, filename: str | os.PathLike[str] = "metrics.csv", jsonl: bool = True):
        self.filename = str(filename)
        self.jsonl = jsonl

    def paths(self, trainer: Trainer) -> tuple[Path, Path | None]:
        p = Path(self.filename)
        if not p.is_absolute() and trainer.log_dir is not None:
            p = Path(trainer.log_dir) / p
        return p, (p.with_suffix(".jsonl") if self.jsonl else None)

    def on_epoch_end(self, trainer: Trainer) -> None:
        csv_path, jsonl_path = self.paths(trainer)
        csv_path.parent.mkdir(parents=True, exist_ok=True)
        keys, rows = _rows(trainer.history)
        # the whole history each time: a resumed run rewrites the file as one run
        tmp = csv_path.with_name(csv_path.name + ".tmp")
        with open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=keys)
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, csv_path)
        if jsonl_path is not None:
            tmp = jsonl_path.with_name(jsonl_path.name + ".tmp")
            tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
            os.replace(tmp, jsonl_path)


def _summary_writer(log_dir: str) -> Any:
    """A SummaryWriter (``add_scalar(tag, value, step)``, ``flush``, ``close``) from
    tensorboardX or ``torch.utils.tensorboard`` (which needs the tensorboard package)."""
    errors = []
    for module in ("tensorboardX", "torch.utils.tensorboard"):
        try:
            return __import__(module, fromlist=["SummaryWriter"]).SummaryWriter(log_dir)
        except ImportError as e:
            errors.append(f"{module}: {e}")
    raise ImportError(
        "Expected tensorboardX, or torch with tensorboard, to write TensorBoard event files. "
        f"Received: {'; '.join(errors)}. Install the training extras: "
        "pip install 'multidev[train]' (or pip install tensorboardX)."
    )


class TensorBoard(Callback):
    """Write the per-epoch logs as TensorBoard scalars (event files under ``log_dir``,
    default the trainer's ``log_dir`` + ``/tensorboard``), and the batch loss every
    ``update_freq`` steps when given. Needs tensorboardX or torch's tensorboard writer
    (``multidev[train]``); raises ImportError naming them otherwise."""

    def __init__(
        self, log_dir: str | os.PathLike[str] | None = None, update_freq: int | None = None
    ):
        self.log_dir = None if log_dir is None else str(log_dir)
        self.update_freq = update_freq
        self.writer: Any = None

    def on_fit_start(self, trainer: Trainer) -> None:
        folder = self.log_dir
        if folder is None:
            folder = str(Path(trainer.log_dir or "runs") / "tensorboard")
        self.writer = _summary_writer(folder)

    def on_batch_end(self, trainer: Trainer) -> None:
        n = self.update_freq
        if n and trainer.global_step % n == 0 and "loss" in trainer.logs:
            self.writer.add_scalar("batch/loss", float(trainer.logs["loss"]), trainer.global_step)

    def on_epoch_end(self, trainer: Trainer) -> None:
        for key, value in trainer.logs.items():
            if key != "epoch" and isinstance(value, (int, float)):
                self.writer.add_scalar(f"epoch/{key}", float(value), trainer.epochs_done)
        self.writer.flush()

    def on_fit_end(self, trainer: Trainer) -> None:
        if self.writer is not None:
            self.writer.close()


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (where a figure can be shown and replaced)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class LivePlot(Callback):
    """Redraw the loss and metrics per epoch in place, as d2l's ``ProgressBoard`` does: after
    every ``every`` epochs the figure of ``Trainer.plot`` is drawn again and shown in the
    same output cell. ``md.Trainer`` adds one by itself when it runs in Jupyter and
    matplotlib is installed.

    ``display``: the hook called with each new figure; by default IPython's
    ``display(fig, display_id=True)`` the first time and the returned handle's
    ``update(fig)`` after that (so the picture is replaced, not appended). Needs matplotlib
    (``multidev[train]``)."""

    def __init__(self, every: int = 1, display: Callable[[Any], None] | None = None) -> None:
        if every < 1:
            raise ValueError(f"Expected every >= 1 (epochs). Received: {every!r}")
        self.every = int(every)
        self.display = display
        self.redraws = 0
        self._handle: Any = None

    def _show(self, fig: Any) -> None:
        if self.display is not None:
            self.display(fig)
            return
        from IPython import display

        if self._handle is None:
            self._handle = display.display(fig, display_id=True)
        else:
            self._handle.update(fig)

    def on_epoch_end(self, trainer: Trainer) -> None:
        if (trainer.epoch + 1) % self.every:
            return
        from ._extras import require
        from .plotting import draw_histories

        plt = require("matplotlib.pyplot", "a live plot of training")
        fig = draw_histories({"": trainer.history})
        try:
            self._show(fig)
        finally:
            plt.close(fig)  # shown (or handed to the hook) already; keep no figure open
        self.redraws += 1
