"""``md.Trainer``: metrics averaged over uneven batches, callbacks, logs, exact resume (after an
epoch and mid-epoch), gradient clipping, jit, the model protocols, and NumPy's clear error."""

from __future__ import annotations

import csv
import json
import warnings

import numpy as np
import pytest

import multidev as md
from multidev import nn, plotting, registry
from multidev.nn import functional as F

BK = registry.current()
needs_autograd = pytest.mark.skipif(
    "autograd" not in BK.capabilities, reason=f"{BK.name} adapter lacks capability 'autograd'"
)
N, BATCH = 103, 10  # 11 batches, the last one of 3 samples


def _data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 4)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64) + (X[:, 2] > 1).astype(np.int64)
    return X, y


def _loader(shuffle: bool = True) -> md.data.DataLoader:
    X, y = _data()
    return md.data.DataLoader(md.data.TensorDataset(X, y), BATCH, shuffle=shuffle, generator=7)


def _net(seed: int = 0, dropout: float = 0.0) -> nn.Block:
    md.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, 3))


def _trainer(epochs: int = 3, **kwargs) -> md.Trainer:
    kwargs.setdefault("optimizer", lambda p: md.optim.Adam(p, lr=0.01))
    kwargs.setdefault("metrics", [md.metrics.Accuracy(), md.metrics.TopKAccuracy(2)])
    return md.Trainer(epochs, loss=F.cross_entropy, progress=False, **kwargs)


# ---------------------------------------------------------------- metrics
def test_metrics_weight_samples_not_batches():
    m = md.metrics.Mean()
    m.update(1.0, 10)
    m.update(4.0, 2)
    assert m.compute() == pytest.approx(1.5)
    acc, top2 = md.metrics.Accuracy(), md.metrics.TopKAccuracy(2)
    logits = np.array([[3, 1, 0], [0, 1, 3], [1, 2, 0], [2, 0, 1], [0, 3, 1]], np.float32)
    y = np.array([0, 1, 1, 1, 2])
    for m in (acc, top2):
        m.update(md.asarray(logits[:4]), md.asarray(y[:4]))
        m.update(md.asarray(logits[4:]), md.asarray(y[4:]))
    assert acc.compute() == pytest.approx(2 / 5)  # rows 0 and 2
    assert top2.compute() == pytest.approx(4 / 5)  # row 3 misses
    with pytest.raises(ValueError, match=r"\(N, classes\)"):
        acc.update(md.asarray(logits), md.asarray(y[:3]))


def test_evaluate_averages_over_the_uneven_last_batch():
    """evaluate over 11 batches (the last of 3) equals the loss and accuracy of the whole
    data at once: a plain mean of batch means would not."""
    X, y = _data()
    net = _net()
    result = _trainer().evaluate(net, _loader(shuffle=False))
    with md.no_grad():
        logits = net(md.asarray(X))
        loss = F.cross_entropy(logits, md.asarray(y)).item()
    acc = float((logits.numpy().argmax(-1) == y).mean())
    assert result["loss"] == pytest.approx(loss, rel=1e-5)
    assert result["accuracy"] == pytest.approx(acc)
    batch_means = [
        F.cross_entropy(net(md.asarray(X[i : i + BATCH])), md.asarray(y[i : i + BATCH])).item()
        for i in range(0, N, BATCH)
    ]
    assert abs(np.mean(batch_means) - loss) > 1e-4  # the data makes the difference visible


def test_predict_joins_the_batches():
    X, _ = _data()
    net = _net()
    out = _trainer().predict(net, _loader(shuffle=False))
    with md.no_grad():
        np.testing.assert_allclose(out.numpy(), net(md.asarray(X)).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif("autograd" in BK.capabilities, reason="checks a backend without autograd")
def test_fit_without_autograd_says_so():
    with pytest.raises(md.AutogradError, match="autograd"):
        _trainer().fit(_net(), _loader())


def test_bad_arguments_are_typed_errors():
    with pytest.raises(ValueError, match="precision"):
        md.Trainer(1, precision="64-mixed")
    with pytest.raises(md.UnsupportedOperationError, match="jit=False"):
        md.Trainer(1, precision="16-mixed", jit=True)
    with pytest.raises(ValueError, match="max_epochs"):
        md.Trainer(-1)
    with pytest.raises(TypeError, match="callbacks"):
        md.Trainer(1, callbacks=[object()])
    with pytest.raises(ValueError, match="gradient_clip_val"):
        md.Trainer(1, gradient_clip_val=0)


# ---------------------------------------------------------------- training
def _hand_loop(epochs: int, clip: float | None) -> list[float]:
    """The same training written by hand: per-epoch sample-weighted mean batch loss."""
    net, loader = _net(), _loader()
    opt = md.optim.Adam(net.parameters(), lr=0.01)
    out = []
    for _ in range(epochs):
        total = 0.0
        for X, y in loader:
            with md.autograd.record():
                loss = F.cross_entropy(net(X), y)
            loss.backward()
            if clip is not None:
                nn.utils.clip_grad_norm_(net.parameters(), clip)
            opt.step()
            opt.zero_grad()
            total += loss.item() * X.shape[0]
        out.append(total / N)
    return out


def _hand_mixed_loop(epochs: int, dtype: md.DType, scaled: bool) -> list[float]:
    """The hand-written loop of PyTorch's mixed-precision recipe: autocast around the forward
    pass and loss, and for float16 a GradScaler around backward and step."""
    net, loader = _net(), _loader()
    opt = md.optim.Adam(net.parameters(), lr=0.01)
    scaler = md.amp.GradScaler() if scaled else None
    out = []
    for _ in range(epochs):
        total = 0.0
        for X, y in loader:
            with md.autograd.record(), md.autocast(dtype):
                loss = F.cross_entropy(net(X), y)
                scaled = loss if scaler is None else scaler.scale(loss)  # recorded too
            scaled.backward()
            if scaler is None:
                opt.step()
            else:
                scaler.step(opt)
                scaler.update()
            opt.zero_grad()
            total += loss.item() * X.shape[0]
        out.append(total / N)
    return out


@needs_autograd
@pytest.mark.skipif("bfloat16" not in BK.capabilities, reason=f"{BK.name} has no bfloat16")
@pytest.mark.parametrize("precision", ["bf16-mixed", "16-mixed"])
def test_mixed_precision_fit_equals_the_hand_written_recipe(precision):
    dtype, scaled = (md.bfloat16, False) if precision == "bf16-mixed" else (md.float16, True)
    trainer = _trainer(precision=precision)
    history = trainer.fit(_net(), _loader())
    got = [h["loss"] for h in history]
    np.testing.assert_allclose(got, _hand_mixed_loop(3, dtype, scaled), rtol=1e-5)
    assert got[-1] < got[0]
    assert all(p.dtype == md.float32 for p in trainer.model.parameters())
    assert (trainer.scaler is not None) == scaled


@needs_autograd
@pytest.mark.parametrize("clip", [None, 0.05])
def test_fit_equals_the_hand_written_loop(clip):
    history = _trainer(gradient_clip_val=clip).fit(_net(), _loader())
    got = [h["loss"] for h in history]
    np.testing.assert_allclose(got, _hand_loop(3, clip), rtol=1e-5)
    assert got[-1] < got[0]
    assert all(0.0 <= h["accuracy"] <= h["top2_accuracy"] <= 1.0 for h in history)


@needs_autograd
def test_fit_with_validation_logs_val_values():
    tr = _trainer(2)
    history = tr.fit(_net(), _loader(), val_data=_loader(shuffle=False))
    assert history[-1]["val_loss"] == pytest.approx(
        tr.evaluate(tr.model, _loader(shuffle=False))["loss"]
    )
    assert {"val_accuracy", "val_top2_accuracy", "lr", "epoch"} <= set(history[-1])


class _Lightning(nn.Block):
    """A model that brings its own step and optimiser (PyTorch Lightning's protocol)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = _net()

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch):
        x, y = batch
        out = self(x)
        return {"loss": F.cross_entropy(out, y), "outputs": out}

    def configure_optimizers(self):
        opt = md.optim.Adam(self.parameters(), lr=0.01)
        return opt, md.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)


@needs_autograd
def test_training_step_protocol_with_its_scheduler():
    tr = md.Trainer(3, progress=False, metrics=[md.metrics.Accuracy()])
    history = tr.fit(_Lightning(), _loader())
    assert [h["lr"] for h in history] == pytest.approx([0.01, 0.005, 0.0025])
    assert "accuracy" in history[0]
    assert history[-1]["loss"] < history[0]["loss"]


@needs_autograd
def test_learning_rate_scheduler_per_step():
    sched = md.callbacks.LearningRateScheduler(
        lambda opt: md.optim.lr_scheduler.StepLR(opt, step_size=11, gamma=0.1), interval="step"
    )
    history = _trainer(2, callbacks=[sched]).fit(_net(), _loader())
    # 11 batches an epoch: the step schedule decays once per epoch here
    assert [h["lr"] for h in history] == pytest.approx([0.001, 0.0001])


@needs_autograd
def test_early_stopping_stops_and_restores_best_weights():
    class Worse:
        """Makes the monitored value worse every epoch after the first."""

        def on_epoch_end(self, trainer):
            trainer.logs["score"] = float(trainer.epoch)

    stop = md.callbacks.EarlyStopping("score", patience=1, restore_best_weights=True)
    keep = {}

    class Snapshot:
        def on_epoch_end(self, trainer):
            if trainer.epoch == 0:
                keep.update({k: v.numpy().copy() for k, v in trainer.model.state_dict().items()})

    tr = _trainer(10, callbacks=[Worse(), Snapshot(), stop])
    history = tr.fit(_net(), _loader())
    assert len(history) == 3 and stop.stopped_epoch == 3
    for k, v in tr.model.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), keep[k])
    with pytest.raises(ValueError, match="monitor"):
        _trainer(1, callbacks=[md.callbacks.EarlyStopping()]).fit(_net(), _loader())


@needs_autograd
def test_log_dir_writes_csv_and_jsonl(tmp_path):
    history = _trainer(2, log_dir=tmp_path).fit(_net(), _loader())
    with open(tmp_path / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == len(lines) == 2
    assert [float(r["loss"]) for r in rows] == [h["loss"] for h in history]
    assert lines == history


@needs_autograd
def test_jit_step_equals_eager():
    """SGD with momentum: its state is all Tensors, so every compiler traces the step."""
    sgd = lambda p: md.optim.SGD(p, lr=0.1, momentum=0.9)  # noqa: E731
    eager = _trainer(2, optimizer=sgd).fit(_net(), _loader())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", md.JitWarning)
        jitted = _trainer(2, jit=True, optimizer=sgd).fit(_net(), _loader())
    np.testing.assert_allclose([h["loss"] for h in jitted], [h["loss"] for h in eager], rtol=1e-4)


@needs_autograd
def test_jit_on_a_backend_that_cannot_trace_backward_warns_once_and_runs_eagerly():
    bk = md.registry.current()
    if bk.jit_backward_unsupported is None:
        pytest.skip(f"{bk.name}'s compiler traces backward()")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _trainer(1, jit=True).fit(_net(), _loader())
    found = [str(w.message) for w in caught if issubclass(w.category, md.JitWarning)]
    assert len(found) == 1 and "runs eagerly" in found[0], found


@needs_autograd
def test_device_places_model_and_batches():
    dev = md.devices()[-1]
    tr = _trainer(1, device=dev)
    tr.fit(_net(), _loader())
    assert all(p.device == dev for p in tr.model.parameters())


# ---------------------------------------------------------------- resume
class _StopAt:
    def __init__(self, step: int) -> None:
        self.step = step

    def on_batch_end(self, trainer):
        if trainer.global_step == self.step:
            trainer.should_stop = True


def _resumable(tmp_path, epochs=3, stop=None, resume=None, name="c{step}.ckpt", every=4):
    """A run with dropout, Adam, a per-step schedule and checkpoints every 4 steps."""
    net = _net(dropout=0.3)
    cbs = [
        md.callbacks.ModelCheckpoint(tmp_path / name, every_n_steps=every, every_n_epochs=1),
        md.callbacks.LearningRateScheduler(
            lambda opt: md.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.7), "step"
        ),
    ]
    if stop is not None:
        cbs.append(_StopAt(stop))
    tr = _trainer(epochs, callbacks=cbs)
    return tr.fit(net, _loader(), resume=resume), tr


@needs_autograd
def test_resume_continues_exactly(tmp_path):
    """Stopped after step 15 (mid-epoch 2: a checkpoint at step 12) and resumed, or resumed
    from the end of epoch 1 (step 11): the same per-epoch logs as the uninterrupted run."""
    full, _ = _resumable(tmp_path / "full")
    stopped, tr = _resumable(tmp_path / "stop", stop=15)
    assert len(stopped) == 1 and tr.global_step == 15
    key = ("loss", "accuracy", "top2_accuracy", "lr")
    for ckpt in ("stop/c12.ckpt", "full/c11.ckpt"):
        resumed, tr = _resumable(tmp_path / "again", resume=tmp_path / ckpt)
        assert tr.global_step == 33
        assert len(resumed) == len(full) == 3
        for a, b in zip(resumed, full, strict=True):
            for k in key:
                assert a[k] == pytest.approx(b[k], rel=1e-6, abs=1e-7), (ckpt, a, b)
        for p, q in zip(
            md.load(tmp_path / "full" / "c33.ckpt")["model"].values(),
            tr.model.state_dict().values(),
            strict=True,
        ):
            np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-5, atol=1e-6)


@needs_autograd
def test_resume_from_a_step_checkpoint_at_an_epochs_last_batch(tmp_path):
    """Step 11 is epoch 1's last batch: that checkpoint is saved before the epoch's end; the
    resumed run does that epoch end, then epoch 2, as the uninterrupted run."""
    name = "s{step}-e{epoch}.ckpt"
    full, _ = _resumable(tmp_path / "full", epochs=2, name=name, every=11)
    resumed, tr = _resumable(
        tmp_path / "again", epochs=2, name=name, every=11, resume=tmp_path / "full" / "s11-e0.ckpt"
    )
    assert tr.global_step == 22 and len(resumed) == 2
    for a, b in zip(resumed, full, strict=True):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-6)
        assert a["lr"] == pytest.approx(b["lr"], rel=1e-12)


def test_resume_rejects_other_files(tmp_path):
    if "autograd" not in BK.capabilities:
        pytest.skip(f"{BK.name} adapter lacks capability 'autograd'")
    md.save({"x": md.zeros(2)}, tmp_path / "x.ckpt")
    with pytest.raises(md.CheckpointError, match="Trainer checkpoint"):
        _trainer(1).fit(_net(), _loader(), resume=tmp_path / "x.ckpt")


# ---------------------------------------------------------------- progress, pictures, TensorBoard
@needs_autograd
def test_progress_prints_one_line_per_epoch_or_nothing(capsys):
    _trainer(2).fit(_net(), _loader())
    assert capsys.readouterr().err == ""
    md.Trainer(2, loss=F.cross_entropy, optimizer=lambda p: md.optim.SGD(p, 0.1)).fit(
        _net(), _loader()
    )
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(",")[0] for line in lines] == ["epoch 1/2", "epoch 2/2"]


def _two_runs(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        rows = [{"epoch": e, "loss": 1.0 / e, "val_loss": 1.1 / e} for e in (1, 2, 3)]
        (tmp_path / name / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [str(tmp_path / "a"), str(tmp_path / "b")]


def test_plot_and_cli_overlay_runs(tmp_path, run_python):
    pytest.importorskip("matplotlib")
    runs = _two_runs(tmp_path)
    out = run_python(
        "import sys; from multidev.cli import main; sys.exit(main(sys.argv[1:]))",
        "plot",
        *runs,
        "-o",
        str(tmp_path / "runs.png"),
    )
    assert "wrote" in out.stdout
    assert (tmp_path / "runs.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = run_python(
        "import sys; from multidev.cli import main; sys.exit(main(sys.argv[1:]))",
        "plot",
        str(tmp_path),
        check=False,
    )
    assert bad.returncode == 2 and "metrics.jsonl" in bad.stderr
    if "autograd" in BK.capabilities:
        tr = _trainer(2, log_dir=tmp_path / "run")
        tr.fit(_net(), _loader())
        png = tr.plot()
        assert png == tmp_path / "run" / "training.png" and png.stat().st_size > 1000


def test_missing_extra_names_it(tmp_path):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"multidev\[train\]"):
            plotting.plot_histories({"r": [{"epoch": 1, "loss": 1.0}]}, tmp_path / "p.png")
    else:
        pytest.skip("matplotlib is installed here: the message is checked where it is not")


@needs_autograd
def test_tensorboard_writes_event_files(tmp_path):
    try:
        _trainer(2, callbacks=[md.callbacks.TensorBoard(tmp_path / "tb")]).fit(_net(), _loader())
    except ImportError as e:
        assert "multidev[train]" in str(e)
        pytest.skip(f"no TensorBoard writer here: {e}")
    assert list((tmp_path / "tb").glob("events.out.tfevents.*"))


@needs_autograd
def test_live_plot_redraws_the_figure_after_each_epoch():
    """``md.callbacks.LivePlot`` (added by the Trainer in Jupyter) hands a new figure of the
    history so far to its display hook after every ``every`` epochs; outside a notebook the
    Trainer adds none."""
    pytest.importorskip("matplotlib")
    shown = []

    def hook(fig):
        lines = [ln for ax in fig.axes for ln in ax.get_lines()]
        shown.append(max(len(ln.get_xdata()) for ln in lines))

    live = md.callbacks.LivePlot(display=hook)
    _trainer(3, callbacks=[live]).fit(_net(), _loader())
    assert shown == [1, 2, 3] and live.redraws == 3  # one more epoch in each picture
    every2 = md.callbacks.LivePlot(every=2, display=lambda fig: None)
    _trainer(3, callbacks=[every2]).fit(_net(), _loader())
    assert every2.redraws == 1
    assert not any(isinstance(c, md.callbacks.LivePlot) for c in _trainer(1).callbacks)
    with pytest.raises(ValueError, match="every >= 1"):
        md.callbacks.LivePlot(every=0)
