"""``md.Trainer``: ``fit`` / ``evaluate`` / ``predict`` with metrics, callbacks, progress
bars, logs, plots and exact resume, on every backend.

Two ways to give the model its loss and optimiser (PyTorch Lightning's and Keras's):

- the model defines ``training_step(batch) -> loss`` (or a dict with ``"loss"`` and other
  scalars to log, and optionally ``"outputs"`` for the metrics), ``configure_optimizers()
  -> optimiser | (optimiser, scheduler) | {"optimizer", "lr_scheduler", "interval"}`` and
  optionally ``validation_step(batch)`` (same return values) for ``evaluate``;
- or a plain ``nn.Block`` with ``Trainer(..., loss=F.cross_entropy, optimizer=...)``:
  ``optimizer`` an ``md.optim`` optimiser or ``factory(parameters) -> optimiser``; batches
  are ``(inputs, targets)`` and the loss is ``loss(model(inputs), targets)``.

Metrics (``metrics=[md.metrics.Accuracy()]``) are averaged over samples, so a short last
batch counts by its size. The epoch's training ``loss`` is the sample-weighted mean of the
batch losses (with dropout on and the weights of each batch's step, as Keras reports it).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from . import amp, registry
from . import dtypes as _dt
from . import random as _random
from .autograd import autograd_backends, no_grad, record
from .callbacks import CSVLogger, LivePlot, in_notebook
from .checkpoint import load, save
from .data.loader import DataLoader
from .errors import AutogradError, UnsupportedOperationError
from .metrics import Mean, Metric
from .optim import Optimizer
from .optim.lr_scheduler import LRScheduler
from .tensors import Tensor

#: Trainer(precision=...) -> the autocast used ('32': none)
_PRECISIONS = {"32": "32", "32-true": "32", "bf16-mixed": "bf16", "16-mixed": "16"}

__all__ = ["Trainer"]

#: the checkpoint layout's version (``trainer_format`` in the file)
_FORMAT = 1
_HOOKS = ("on_fit_start", "on_fit_end", "on_epoch_start", "on_epoch_end", "on_batch_end")


def _batch_size(batch: Any) -> int:
    first = batch[0] if isinstance(batch, (tuple, list)) else batch
    if isinstance(first, dict):
        first = next(iter(first.values()))
    shape = getattr(first, "shape", None)
    return int(shape[0]) if shape else 1


def _inputs(batch: Any) -> Any:
    return batch[0] if isinstance(batch, (tuple, list)) else batch


def _split(batch: Any) -> tuple[Any, Any]:
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise ValueError(
            "Expected batches of (inputs, targets) for a model without training_step. "
            f"Received: {type(batch).__name__}"
            + (f" of length {len(batch)}" if isinstance(batch, (tuple, list)) else "")
            + ". Define training_step(batch) on the model for other batch layouts."
        )
    return batch[0], batch[1]


def _to_device(batch: Any, device: Any) -> Any:
    """``batch`` with every Tensor in it (tuples, lists, dicts) moved to ``device``."""
    if isinstance(batch, Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (tuple, list)):
        return type(batch)(_to_device(v, device) for v in batch)
    return batch


def _unpack(result: Any, where: str) -> tuple[Tensor, dict[str, Any], Any]:
    """(loss, other scalars, outputs or None) from a ``*_step`` return value."""
    if isinstance(result, Tensor):
        return result, {}, None
    if isinstance(result, dict) and isinstance(result.get("loss"), Tensor):
        extra = {k: v for k, v in result.items() if k not in ("loss", "outputs")}
        return result["loss"], extra, result.get("outputs")
    raise TypeError(
        f"Expected {where} to return the loss Tensor or a dict with a 'loss' Tensor. "
        f"Received: {type(result).__name__}"
    )


class Trainer:
    """Train, evaluate and predict with any ``nn.Block`` on the active backend.

    - ``max_epochs``: epochs of ``fit``.
    - ``callbacks``: ``md.callbacks`` objects or any object with the protocol's hooks.
    - ``jit``: run each training step through ``md.jit`` (the framework's compiler).
    - ``precision``: ``"32"`` (float32), ``"bf16-mixed"`` (the forward pass and loss under
      ``md.autocast(md.bfloat16)``) or ``"16-mixed"`` (``md.autocast(md.float16)`` with an
      ``md.amp.GradScaler``, whose state the checkpoints keep; not with ``jit=True``, since
      the scaler reads its inf/NaN check back to the host).
    - ``gradient_clip_val``: clip the gradients' joint 2-norm to it
      (``md.nn.utils.clip_grad_norm_``) before each optimiser step.
    - ``device``: where the model and every batch go (default: where they are).
    - ``progress``: a tqdm bar per epoch on a terminal (``multidev[train]``) and one summary
      line per epoch on stderr; in Jupyter (with matplotlib) also a plot of the loss and
      metrics redrawn in place after each epoch (``md.callbacks.LivePlot``); False: silent.
    - ``log_dir``: folder for the logs (``metrics.csv``, ``metrics.jsonl``: a ``CSVLogger``
      is added when none is given), checkpoints with relative paths, and plots.
    - ``loss``, ``optimizer``, ``metrics`` (keyword only): for plain Blocks, see the module.

    After ``fit``: ``history`` (one dict of logs per epoch), ``model``, ``optimizer``.
    """

    def __init__(
        self,
        max_epochs: int,
        callbacks: Sequence[Any] = (),
        jit: bool = False,
        precision: str = "32",
        gradient_clip_val: float | None = None,
        device: Any = None,
        progress: bool = True,
        log_dir: str | os.PathLike[str] | None = None,
        *,
        loss: Callable[[Any, Any], Tensor] | None = None,
        optimizer: Optimizer | Callable[[Any], Optimizer] | None = None,
        metrics: Sequence[Metric] = (),
    ) -> None:
        if not isinstance(max_epochs, int) or isinstance(max_epochs, bool) or max_epochs < 0:
            raise ValueError(f"Expected max_epochs to be an int >= 0. Received: {max_epochs!r}")
        if str(precision) not in _PRECISIONS:
            raise ValueError(
                f"Expected precision one of {sorted(_PRECISIONS)}. Received: {precision!r}."
            )
        if jit and _PRECISIONS[str(precision)] == "16":
            raise UnsupportedOperationError(
                "Expected jit=False with precision='16-mixed'. Received: jit=True. Its "
                "GradScaler reads the inf/NaN check of the gradients back to the host, which "
                "a compiled step cannot hold: use jit=False, or precision='bf16-mixed'."
            )
        if gradient_clip_val is not None and not (float(gradient_clip_val) > 0):
            raise ValueError(
                f"Expected gradient_clip_val > 0 or None. Received: {gradient_clip_val!r}"
            )
        for m in metrics:
            if not isinstance(m, Metric):
                raise TypeError(f"Expected md.metrics objects. Received: {type(m).__name__}")
        for cb in callbacks:
            if not any(hasattr(cb, h) for h in _HOOKS):
                raise TypeError(
                    f"Expected callbacks with some of {', '.join(_HOOKS)}. Received: "
                    f"{type(cb).__name__}"
                )
        self.max_epochs = max_epochs
        self.callbacks: list[Any] = list(callbacks)
        self.jit = bool(jit)
        self.precision = str(precision)
        self.scaler: Any = None
        self.gradient_clip_val = None if gradient_clip_val is None else float(gradient_clip_val)
        self.device = device
        self.progress = bool(progress)
        self.log_dir = None if log_dir is None else Path(log_dir)
        self.loss_fn = loss
        self.optimizer_arg = optimizer
        self.metrics: list[Metric] = list(metrics)
        if self.log_dir is not None and not any(isinstance(c, CSVLogger) for c in callbacks):
            self.callbacks.append(CSVLogger())
        if (
            self.progress
            and in_notebook()
            and importlib.util.find_spec("matplotlib") is not None
            and not any(isinstance(c, LivePlot) for c in callbacks)
        ):
            self.callbacks.append(LivePlot())  # redrawn in place per epoch, as d2l's board
        self.model: Any = None
        self.optimizer: Optimizer | None = None
        self.schedulers: list[tuple[LRScheduler, str]] = []
        self.history: list[dict[str, Any]] = []
        self.logs: dict[str, Any] = {}
        self.epoch = 0
        self.batch_idx = 0
        self.global_step = 0
        self.should_stop = False
        self.at_epoch_end = False
        self.train_data: Any = None
        self._loss_mean = Mean("loss")
        self._extra: dict[str, Mean] = {}

    # ------------------------------------------------------------------ setup
    @property
    def epochs_done(self) -> int:
        """Epochs completed (``epoch + 1`` at ``on_epoch_end``)."""
        return self.epoch + 1 if self.at_epoch_end else self.epoch

    def add_scheduler(self, scheduler: LRScheduler, interval: str = "epoch") -> None:
        """Step ``scheduler`` every ``"epoch"`` or every ``"step"`` (batch) of ``fit``."""
        self.schedulers.append((scheduler, interval))

    def _configure(self, model: Any) -> None:
        self.schedulers = []
        if hasattr(model, "configure_optimizers") and self.optimizer_arg is None:
            got = model.configure_optimizers()
            interval = "epoch"
            sched: Any = None
            if isinstance(got, dict):
                opt, sched = got.get("optimizer"), got.get("lr_scheduler")
                interval = got.get("interval", "epoch")
            elif isinstance(got, (tuple, list)):
                opt, sched = got[0], (got[1] if len(got) > 1 else None)
            else:
                opt = got
            scheds = sched if isinstance(sched, (list, tuple)) else [sched]
            self.schedulers = [(s, interval) for s in scheds if s is not None]
        elif isinstance(self.optimizer_arg, Optimizer):
            opt = self.optimizer_arg
        elif callable(self.optimizer_arg):
            opt = self.optimizer_arg(model.parameters())
        else:
            raise ValueError(
                "Expected an optimiser: Trainer(optimizer=md.optim.SGD(...)) or "
                "optimizer=lambda params: md.optim.Adam(params, 1e-3), or "
                "configure_optimizers() on the model. Received: none"
            )
        if not isinstance(opt, Optimizer):
            raise TypeError(f"Expected an md.optim optimiser. Received: {type(opt).__name__}")
        self.optimizer = opt
        if not hasattr(model, "training_step") and self.loss_fn is None:
            raise ValueError(
                "Expected a loss: Trainer(loss=md.nn.functional.cross_entropy), or "
                "training_step(batch) on the model. Received: none"
            )

    def _hook(self, name: str) -> None:
        for cb in self.callbacks:
            fn = getattr(cb, name, None)
            if fn is not None:
                fn(self)

    def _place(self, batch: Any) -> Any:
        return batch if self.device is None else _to_device(batch, self.device)

    # ------------------------------------------------------------------ steps
    def _make_step(self, model: Any) -> Callable[..., tuple[Any, ...]]:
        opt = self.optimizer
        assert opt is not None  # _configure ran
        clip = self.gradient_clip_val
        loss_fn: Any = self.loss_fn
        custom = hasattr(model, "training_step")
        params = list(model.parameters())
        mixed = _PRECISIONS[self.precision]
        low = {"bf16": _dt.bfloat16, "16": _dt.float16}.get(mixed)
        scaler = self.scaler = amp.GradScaler() if mixed == "16" else None

        def step(*parts: Any) -> tuple[Any, ...]:
            # the batch's tensors as separate arguments: what md.jit flattens best
            batch = parts[0] if len(parts) == 1 and not isinstance(parts[0], Tensor) else parts
            # no autocast context at all in float32: torch.compile mishandles one that is
            # opened inside a compiled step, even disabled
            with record(), amp.autocast(low) if low is not None else contextlib.nullcontext():
                if custom:
                    loss, extra, outputs = _unpack(model.training_step(batch), "training_step")
                else:
                    x, y = _split(batch)
                    outputs = model(x)
                    loss, extra = loss_fn(outputs, y), {}
                scaled = loss if scaler is None else scaler.scale(loss)
            scaled.backward()
            if scaler is not None:
                scaler.unscale_(opt)
            if clip is not None:
                from .nn.utils import clip_grad_norm_

                clip_grad_norm_(params, clip)
            if scaler is None:
                opt.step()
            else:
                scaler.step(opt)
                scaler.update()
            opt.zero_grad()
            return loss.detach(), extra, outputs

        if self.jit:
            bk = params[0]._bk if params else registry.current()
            reason = bk.jit_backward_unsupported
            if reason is not None:
                # the step calls backward(), which this backend's compiler cannot trace: known
                # here, so no trace is begun only to be abandoned at backward()
                import warnings

                from .errors import JitWarning

                warnings.warn(
                    f"Trainer(jit=True): the training step runs eagerly on {bk.name}: {reason}",
                    JitWarning,
                    stacklevel=3,
                )
                return step
            from .jit import jit

            return jit(step)
        return step

    def _eval_batch(self, model: Any, batch: Any) -> tuple[Any, dict[str, Any], Any]:
        if hasattr(model, "validation_step"):
            return _unpack(model.validation_step(batch), "validation_step")
        if hasattr(model, "training_step") and self.loss_fn is None:
            return _unpack(model.training_step(batch), "training_step")
        x, y = _split(batch)
        outputs = model(x)
        loss = self.loss_fn(outputs, y) if self.loss_fn is not None else None
        return loss, {}, outputs

    def _update(self, batch: Any, loss: Any, extra: dict[str, Any], outputs: Any) -> None:
        n = _batch_size(batch)
        if loss is not None:
            self._loss_mean.update(loss, n)
        for k, v in extra.items():
            self._extra.setdefault(k, Mean(k)).update(v, n)
        if outputs is not None and self.metrics and isinstance(batch, (tuple, list)):
            for m in self.metrics:
                m.update(outputs, batch[-1])

    def _reset_metrics(self) -> None:
        self._loss_mean.reset()
        self._extra = {}
        for m in self.metrics:
            m.reset()

    def _values(self, prefix: str = "") -> dict[str, float]:
        out = {}
        if self._loss_mean.count:
            out[prefix + "loss"] = self._loss_mean.compute()
        for k, mean in self._extra.items():
            out[prefix + k] = mean.compute()
        for m in self.metrics:
            if m.count:
                out[prefix + m.name] = m.compute()
        return out

    # ------------------------------------------------------------------ public API
    def fit(
        self,
        model: Any,
        train_data: Iterable[Any],
        val_data: Iterable[Any] | None = None,
        resume: str | os.PathLike[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Train ``model`` on ``train_data`` (an ``md.data.DataLoader`` or any iterable of
        batches, iterated once per epoch) for ``max_epochs``; evaluate on ``val_data`` after
        every epoch (logs ``val_loss``, ``val_<metric>``). ``resume``: a checkpoint written by
        ``ModelCheckpoint`` (or ``save_checkpoint``) on any backend; training continues from
        where it was saved, mid-epoch included, as if it had not stopped. Returns
        ``history``. Raises ``md.AutogradError`` on a backend without autograd (NumPy)."""
        bk = registry.current()
        if "autograd" not in bk.capabilities:
            others = [n for n in autograd_backends() if n != bk.name]
            raise AutogradError(
                f"Expected a backend with autograd for Trainer.fit. Received: {bk.name}, which "
                "computes values only (evaluate and predict work on it). Select one of "
                f"{others or [n for n in registry.registered_backends() if n != bk.name]} with "
                "MULTIDEV_BACKEND."
            )
        self.model = model
        if self.device is not None:
            model.to(self.device)
        self._configure(model)
        self.train_data = train_data
        self.history, self.logs = [], {}
        self.epoch = self.batch_idx = self.global_step = 0
        self.should_stop = self.at_epoch_end = False
        self._reset_metrics()
        step = self._make_step(model)
        self._hook("on_fit_start")
        resumed_mid_epoch = False
        if resume is not None:
            resumed_mid_epoch = self._restore(resume)
        bar_ok = self.progress and sys.stderr.isatty()
        while self.epoch < self.max_epochs and not self.should_stop:
            if not resumed_mid_epoch:
                self.batch_idx = 0
                self._reset_metrics()
                self._hook("on_epoch_start")
            skip = 0
            if resumed_mid_epoch and not isinstance(train_data, DataLoader):
                skip = self.batch_idx  # a plain iterable restarts: skip what was done
            # saved after the epoch's last batch, before its end: only the epoch end is left
            done = (
                resumed_mid_epoch
                and hasattr(train_data, "__len__")
                and self.batch_idx >= len(train_data)  # type: ignore[arg-type]
            )
            resumed_mid_epoch = False
            started = time.perf_counter()
            model.train()
            bar = self._bar(train_data, bar_ok)
            try:
                for i, batch in enumerate(() if done else train_data):
                    if i < skip:
                        continue
                    batch = self._place(batch)
                    loss, extra, outputs = (
                        step(*batch) if isinstance(batch, (tuple, list)) else step(batch)
                    )
                    self._update(batch, loss, extra, outputs)
                    self.batch_idx += 1
                    self.global_step += 1
                    for sched, interval in self.schedulers:
                        if interval == "step":
                            sched.step()
                    self.logs = {"loss": self._loss_mean.compute()}
                    if bar is not None:
                        bar.update(1)
                        bar.set_postfix(self._values(), refresh=False)
                    self._hook("on_batch_end")
                    if self.should_stop:
                        break
            finally:
                if bar is not None:
                    bar.close()
            if self.should_stop:
                break
            logs: dict[str, Any] = {"epoch": self.epoch + 1, **self._values()}
            logs["lr"] = float(self.optimizer.param_groups[0]["lr"])  # type: ignore[union-attr]
            logs["time_s"] = time.perf_counter() - started
            if val_data is not None:
                logs.update(self.evaluate(model, val_data, _prefix="val_"))
                model.train()
            self.logs = logs
            self.history.append(logs)
            for sched, interval in self.schedulers:
                if interval == "epoch":
                    sched.step()
            if self.progress:
                print(self._summary(logs), file=sys.stderr, flush=True)
            self.at_epoch_end = True
            try:
                self._hook("on_epoch_end")
            finally:
                self.at_epoch_end = False
            self.epoch += 1
            self.batch_idx = 0
        self._hook("on_fit_end")
        return self.history

    def evaluate(self, model: Any, data: Iterable[Any], *, _prefix: str = "") -> dict[str, float]:
        """The mean loss (``validation_step`` or the Trainer's ``loss``) and metrics of
        ``model`` over ``data``, sample-weighted, in eval mode without gradients. Works on
        every backend, NumPy included."""
        saved = (self._loss_mean, self._extra, [m.state_dict() for m in self.metrics])
        self._loss_mean, self._extra = Mean("loss"), {}
        for m in self.metrics:
            m.reset()
        was_training = getattr(model, "training", False)
        if self.device is not None:
            model.to(self.device)
        model.eval()
        try:
            with no_grad():
                for batch in data:
                    batch = self._place(batch)
                    loss, extra, outputs = self._eval_batch(model, batch)
                    self._update(batch, loss, extra, outputs)
            return self._values(_prefix)
        finally:
            model.train(was_training)
            self._loss_mean, self._extra = saved[0], saved[1]
            for m, s in zip(self.metrics, saved[2], strict=True):
                m.load_state_dict(s)

    def predict(self, model: Any, data: Iterable[Any]) -> Tensor:
        """``model``'s outputs for every batch of ``data`` (inputs, or ``(inputs, …)``
        tuples whose first entry is taken), joined along the first axis; eval mode, no
        gradients. Works on every backend."""
        from .ops import concat

        was_training = getattr(model, "training", False)
        if self.device is not None:
            model.to(self.device)
        model.eval()
        outs = []
        try:
            with no_grad():
                for batch in data:
                    outs.append(model(_inputs(self._place(batch))))
        finally:
            model.train(was_training)
        if not outs:
            raise ValueError("Expected data with at least one batch. Received: none")
        return concat(outs, axis=0)

    def plot(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Draw the loss and every metric per epoch (training and validation) into a PNG at
        ``path`` (default ``log_dir/training.png``, else ``training.png``); returns the path.
        Needs matplotlib (``multidev[train]``)."""
        from .plotting import plot_histories

        if path is None:
            path = (self.log_dir or Path(".")) / "training.png"
        return plot_histories({"": self.history}, path)

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self, path: str | os.PathLike[str]) -> None:
        """Write everything ``fit(..., resume=path)`` needs into one ``md.save`` file."""
        state: dict[str, Any] = {
            "trainer_format": _FORMAT,
            "backend": registry.get_backend(),
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),  # type: ignore[union-attr]
            "schedulers": [s.state_dict() for s, _ in self.schedulers],
            "scaler": None if self.scaler is None else self.scaler.state_dict(),
            "rng": _random.get_state(),
            "epoch": self.epochs_done,
            "batch_idx": 0 if self.at_epoch_end else self.batch_idx,
            "global_step": self.global_step,
            "history": [dict(h) for h in self.history],
            "metrics": {
                "loss": self._loss_mean.state_dict(),
                "extra": {k: m.state_dict() for k, m in self._extra.items()},
                "user": [m.state_dict() for m in self.metrics],
            },
            "callbacks": {
                str(i): cb.state_dict()
                for i, cb in enumerate(self.callbacks)
                if hasattr(cb, "state_dict")
            },
        }
        loader = getattr(self.train_data, "state_dict", None)
        if isinstance(self.train_data, DataLoader) and loader is not None:
            state["loader"] = loader()
        save(state, path)

    def _restore(self, path: str | os.PathLike[str]) -> bool:
        """Load a checkpoint into the fit in progress; True when it was saved mid-epoch."""
        state = load(path)
        if not isinstance(state, dict) or state.get("trainer_format") != _FORMAT:
            from .errors import CheckpointError

            raise CheckpointError(
                path,
                f"Expected a Trainer checkpoint (format {_FORMAT}, from ModelCheckpoint or "
                "Trainer.save_checkpoint). Received: an md.save file without one",
            )
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])  # type: ignore[union-attr]
        if len(state["schedulers"]) != len(self.schedulers):
            raise ValueError(
                f"Expected {len(state['schedulers'])} learning-rate schedulers as when the "
                f"checkpoint was saved. Received: {len(self.schedulers)}. Build the run as before."
            )
        for (sched, _), s in zip(self.schedulers, state["schedulers"], strict=True):
            sched.load_state_dict(s)
        if self.scaler is not None and state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])
        if "loader" in state and isinstance(self.train_data, DataLoader):
            self.train_data.load_state_dict(state["loader"])
        _random.set_state(state["rng"])
        self.epoch = int(state["epoch"])
        self.batch_idx = int(state["batch_idx"])
        self.global_step = int(state["global_step"])
        self.history = [dict(h) for h in state["history"]]
        self._loss_mean.load_state_dict(state["metrics"]["loss"])
        self._extra = {}
        for k, s in state["metrics"]["extra"].items():
            self._extra[k] = Mean(k)
            self._extra[k].load_state_dict(s)
        for m, s in zip(self.metrics, state["metrics"]["user"], strict=False):
            m.load_state_dict(s)
        for key, s in state["callbacks"].items():
            i = int(key)
            if i < len(self.callbacks) and hasattr(self.callbacks[i], "load_state_dict"):
                self.callbacks[i].load_state_dict(s)
        return self.batch_idx > 0

    # ------------------------------------------------------------------ progress
    def _bar(self, data: Any, enabled: bool) -> Any:
        if not enabled:
            return None
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return None
        total = len(data) if hasattr(data, "__len__") else None
        return tqdm(
            total=total,
            initial=self.batch_idx,
            desc=f"Epoch {self.epoch + 1}/{self.max_epochs}",
            unit="step",
            leave=True,
            dynamic_ncols=True,
        )

    def _summary(self, logs: dict[str, Any]) -> str:
        parts = [f"epoch {logs['epoch']}/{self.max_epochs}"]
        for k, v in logs.items():
            if k not in ("epoch", "time_s") and isinstance(v, float):
                parts.append(f"{k} {v:.4g}")
        parts.append(f"{logs['time_s']:.2f} s")
        return ", ".join(parts)
