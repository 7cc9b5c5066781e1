"""The d2l book's helper library, written once on multidev: ``from multidev import d2l``.

The book (d2l.ai) builds its later chapters on a few classes it defines itself:
:class:`HyperParameters`, :class:`ProgressBoard`, :class:`Module` (with ``training_step``,
``validation_step``, ``configure_optimizers`` and ``plot``), :class:`DataModule`,
:class:`Trainer`, :class:`Classifier`, :class:`SGD`, the synthetic regression data, the text
pipeline (:class:`Vocab`, :class:`TimeMachine`) and the encoder-decoder classes. It writes them
four times, once per framework. These behave as the book documents them and run on every
multidev backend, so book code written against ``from d2l import torch as d2l`` runs with
``from multidev import d2l`` after replacing ``torch`` with ``md``.

Plots need matplotlib (``pip install 'multidev[train]'``); without it a board still records its
points (``board.points``), so training never depends on it. Data sets are read from local
files (the book downloads them): see :class:`TimeMachine` and :class:`FashionMNIST`.
"""

from __future__ import annotations

import collections
import inspect
import math
import os
import re
import time
from collections.abc import Iterable, Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any

import numpy as np

from . import autograd
from . import nn as _nn
from .callbacks import in_notebook
from .creation import asarray, zeros
from .data import DataLoader, TensorDataset
from .device import Device, try_all_gpus, try_gpu
from .dtypes import float32
from .nn import functional as F
from .optim import SGD as _TorchSGD
from .optim import Adam as _Adam

__all__ = [
    "SGD",
    "Accumulator",
    "Classifier",
    "DataModule",
    "Decoder",
    "Encoder",
    "EncoderDecoder",
    "FashionMNIST",
    "HyperParameters",
    "LinearRegression",
    "LinearRegressionScratch",
    "Module",
    "ProgressBoard",
    "Resized",
    "Seq2Seq",
    "SyntheticRegressionData",
    "TimeMachine",
    "Timer",
    "Trainer",
    "Vocab",
    "accuracy",
    "add_to_class",
    "plot",
    "set_axes",
    "set_figsize",
    "show_heatmaps",
    "show_list_len_pair_hist",
    "try_all_gpus",
    "try_gpu",
    "use_svg_display",
]


def add_to_class(Class: type) -> Any:
    """A decorator that adds the decorated function to ``Class`` as a method under its own
    name (the book's way of writing a class across several cells)."""

    def wrapper(obj: Any) -> Any:
        setattr(Class, obj.__name__, obj)
        return obj

    return wrapper


class HyperParameters:
    """``save_hyperparameters()`` stores the calling ``__init__``'s arguments as attributes
    (``self.lr = lr`` for each), except those named in ``ignore``; ``self.hparams`` keeps
    them as a dict."""

    def save_hyperparameters(self, ignore: Iterable[str] = ()) -> None:
        frame = inspect.currentframe()
        assert frame is not None and frame.f_back is not None
        local = frame.f_back.f_locals
        skip = {*ignore, "self"}
        self.hparams = {k: v for k, v in local.items() if k not in skip and not k.startswith("_")}
        for k, v in self.hparams.items():
            setattr(self, k, v)

    if TYPE_CHECKING:  # the attributes save_hyperparameters() sets, for the type checker

        def __getattr__(self, name: str) -> Any: ...


class ProgressBoard(HyperParameters):
    """Points of named curves drawn against x (epochs), averaged over every ``every_n`` calls
    of :meth:`draw` as the book's board does. With matplotlib and ``display=True`` the figure
    is redrawn in place inside Jupyter; :meth:`save` writes it as a picture anywhere."""

    xlabel: str | None
    xlim: Sequence[float] | None
    fig: Any

    def __init__(
        self,
        xlabel: str | None = None,
        ylabel: str | None = None,
        xlim: Sequence[float] | None = None,
        ylim: Sequence[float] | None = None,
        xscale: str = "linear",
        yscale: str = "linear",
        ls: Sequence[str] = ("-", "--", "-.", ":"),
        colors: Sequence[str] = ("C0", "C1", "C2", "C3"),
        fig: Any = None,
        axes: Any = None,
        figsize: tuple[float, float] = (3.5, 2.5),
        display: bool = True,
    ) -> None:
        self.save_hyperparameters()
        self.raw_points: dict[str, list[tuple[float, float]]] = collections.OrderedDict()
        self.points: dict[str, list[tuple[float, float]]] = collections.OrderedDict()

    def draw(self, x: float, y: Any, label: str, every_n: int = 1) -> None:
        """Add the point (x, y) to curve ``label``; every ``every_n`` points are averaged into
        one plotted point."""
        y = float(y.item()) if hasattr(y, "item") else float(y)
        raw = self.raw_points.setdefault(label, [])
        points = self.points.setdefault(label, [])
        raw.append((float(x), y))
        if len(raw) != every_n:
            return
        points.append((sum(p[0] for p in raw) / every_n, sum(p[1] for p in raw) / every_n))
        raw.clear()
        if self.display and in_notebook():
            self._render(show=True)

    def _render(self, show: bool = False) -> Any:
        plt = _pyplot()
        if self.fig is None:
            self.fig = plt.figure(figsize=self.figsize)
        axes = self.axes if self.axes is not None else self.fig.gca()
        axes.cla()
        for (label, pts), ls, color in zip(
            self.points.items(), _cycle(self.ls), _cycle(self.colors), strict=False
        ):
            axes.plot(
                [p[0] for p in pts], [p[1] for p in pts], linestyle=ls, color=color, label=label
            )
        axes.set_xlabel(self.xlabel or "epoch")
        if self.ylabel:
            axes.set_ylabel(self.ylabel)
        axes.set_xscale(self.xscale)
        axes.set_yscale(self.yscale)
        if self.xlim:
            axes.set_xlim(self.xlim)
        if self.ylim:
            axes.set_ylim(self.ylim)
        axes.legend()
        if show:
            from IPython import display

            display.display(self.fig)
            display.clear_output(wait=True)
        return self.fig

    def save(self, path: str | os.PathLike) -> None:
        """Write the curves drawn so far as a picture (PNG, SVG, … by the suffix)."""
        self._render().savefig(path, bbox_inches="tight")


def _cycle(items: Sequence[str]) -> Iterable[str]:
    while True:
        yield from items


def _pyplot() -> Any:
    try:
        import matplotlib

        if not in_notebook():
            matplotlib.use("Agg")
        from matplotlib import pyplot as plt
    except ImportError:
        raise ImportError(
            "d2l's plots (ProgressBoard, d2l.plot, d2l.plt) need matplotlib: pip install 'multidev[train]'"
        ) from None
    return plt


def __getattr__(name: str) -> Any:
    """``d2l.plt``: matplotlib's pyplot, imported when first used (as the book's module has it)."""
    if name == "plt":
        return _pyplot()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def use_svg_display() -> None:
    """Show figures as SVG in Jupyter; outside a notebook there is nothing to switch."""
    if in_notebook():
        from matplotlib_inline import backend_inline

        backend_inline.set_matplotlib_formats("svg")


def set_figsize(figsize: tuple[float, float] = (3.5, 2.5)) -> None:
    """The size, in inches, of the figures drawn from now on."""
    use_svg_display()
    _pyplot().rcParams["figure.figsize"] = figsize


def set_axes(
    axes: Any,
    xlabel: str | None,
    ylabel: str | None,
    xlim: Any,
    ylim: Any,
    xscale: str,
    yscale: str,
    legend: Sequence[str] | None,
) -> None:
    """Labels, limits, scales, legend and grid of one matplotlib ``Axes``."""
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_xscale(xscale)
    axes.set_yscale(yscale)
    axes.set_xlim(xlim)
    axes.set_ylim(ylim)
    if legend:
        axes.legend(legend)
    axes.grid()


def _as_points(x: Any) -> Any:
    """A tensor as a NumPy array (matplotlib reads neither a framework's tensors nor md's)."""
    return x.numpy() if hasattr(x, "numpy") else x


def plot(
    X: Any,
    Y: Any = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    legend: Sequence[str] | None = None,
    xlim: Any = None,
    ylim: Any = None,
    xscale: str = "linear",
    yscale: str = "linear",
    fmts: Sequence[str] = ("-", "m--", "g-.", "r:"),
    figsize: tuple[float, float] = (3.5, 2.5),
    axes: Any = None,
) -> None:
    """Curves on one ``Axes`` (the current one unless ``axes``): ``plot(Y)`` draws each curve
    of ``Y`` against its index, ``plot(X, Y)`` against ``X``; a single 1-D tensor, array or
    list of numbers is one curve, and one ``X`` serves every curve of ``Y``."""

    def one_curve(v: Any) -> bool:
        if hasattr(v, "ndim"):
            return v.ndim == 1
        return isinstance(v, list) and not (v and hasattr(v[0], "__len__"))

    xs = [X] if one_curve(X) else list(X)
    if Y is None:
        xs, ys = [[]] * len(xs), xs
    else:
        ys = [Y] if one_curve(Y) else list(Y)
    if len(xs) != len(ys):
        xs = xs * len(ys)
    set_figsize(figsize)
    if axes is None:
        axes = _pyplot().gca()
    axes.cla()
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        fmt = fmts[i % len(fmts)]  # the book stops after its four formats; the curves go on
        if len(x):
            axes.plot(_as_points(x), _as_points(y), fmt)
        else:
            axes.plot(_as_points(y), fmt)
    set_axes(axes, xlabel, ylabel, xlim, ylim, xscale, yscale, legend)


def show_heatmaps(
    matrices: Any,
    xlabel: str,
    ylabel: str,
    titles: Sequence[str] | None = None,
    figsize: tuple[float, float] = (2.5, 2.5),
    cmap: str = "Reds",
) -> None:
    """A grid of heat maps, one per matrix of ``matrices`` (rows, columns, height, width), such
    as attention weights, with one colour bar."""
    use_svg_display()
    values = np.asarray(_as_points(matrices))
    if values.ndim != 4:
        raise ValueError(
            "Expected matrices of shape (rows, columns, height, width). "
            f"Received: shape {values.shape}. Add the missing leading axes, e.g. "
            "X.reshape((1, 1, *X.shape)) for one matrix."
        )
    rows, cols = values.shape[:2]
    fig, axes = _pyplot().subplots(
        rows, cols, figsize=figsize, sharex=True, sharey=True, squeeze=False
    )
    image = None
    for i in range(rows):
        for j in range(cols):
            ax = axes[i, j]
            image = ax.imshow(values[i, j], cmap=cmap)
            if i == rows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel)
            if titles:
                ax.set_title(titles[j])
    fig.colorbar(image, ax=axes, shrink=0.6)


def show_list_len_pair_hist(
    legend: Sequence[str], xlabel: str, ylabel: str, xlist: Sequence, ylist: Sequence
) -> None:
    """Histograms of the lengths of paired sequences (source and target sentences), the
    second hatched."""
    set_figsize()
    plt = _pyplot()
    _, _, patches = plt.hist([[len(seq) for seq in xlist], [len(seq) for seq in ylist]])
    plt.xlabel(xlabel)
    plt.ylabel(ylabel)
    for patch in patches[1].patches:
        patch.set_hatch("/")
    plt.legend(legend)


class Module(_nn.Module, HyperParameters):
    """A block that knows its loss, how to train and validate on a batch, and its optimiser.
    The last element of a batch is the target; the others are the model's inputs."""

    def __init__(self, plot_train_per_epoch: int = 2, plot_valid_per_epoch: int = 1) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.board = ProgressBoard()

    def loss(self, y_hat: Any, y: Any) -> Any:
        raise NotImplementedError

    def forward(self, X: Any) -> Any:
        if not hasattr(self, "net"):
            raise NotImplementedError("Define self.net or override forward()")
        return self.net(X)

    def plot(self, key: str, value: Any, train: bool) -> None:
        """Draw ``value`` on the board at the current fraction of an epoch (training) or at
        the epoch's end (validation)."""
        if not hasattr(self, "trainer"):
            raise RuntimeError(
                "Expected the module to be trained by d2l.Trainer before plot(). Received: a "
                "module without a trainer. Call trainer.fit(model, data)."
            )
        self.board.xlabel = "epoch"
        if train:
            x = self.trainer.train_batch_idx / self.trainer.num_train_batches
            n = self.trainer.num_train_batches / self.plot_train_per_epoch
        else:
            x = self.trainer.epoch + 1
            n = self.trainer.num_val_batches / self.plot_valid_per_epoch
        value = value.detach() if hasattr(value, "detach") else value
        self.board.draw(x, value, ("train_" if train else "val_") + key, every_n=max(1, int(n)))

    def training_step(self, batch: Sequence[Any]) -> Any:
        loss = self.loss(self(*batch[:-1]), batch[-1])
        self.plot("loss", loss, train=True)
        return loss

    def validation_step(self, batch: Sequence[Any]) -> None:
        loss = self.loss(self(*batch[:-1]), batch[-1])
        self.plot("loss", loss, train=False)

    def configure_optimizers(self) -> Any:
        return _TorchSGD(self.parameters(), lr=self.lr)

    def apply_init(self, inputs: Sequence[Any], init: Any = None) -> None:
        """Run a forward pass on ``inputs`` (lazy layers take their shapes), then apply
        ``init`` to every block of ``self.net``."""
        self.forward(*inputs)
        if init is not None:
            self.net.apply(init)


class DataModule(HyperParameters):
    """Data as loaders: subclasses define ``get_dataloader(train)``."""

    def __init__(self, root: str = "../data", num_workers: int = 0) -> None:
        self.save_hyperparameters()

    def get_dataloader(self, train: bool) -> Any:
        raise NotImplementedError

    def train_dataloader(self) -> Any:
        return self.get_dataloader(train=True)

    def val_dataloader(self) -> Any:
        return self.get_dataloader(train=False)

    def get_tensorloader(
        self, tensors: Sequence[Any], train: bool, indices: Any = slice(0, None)
    ) -> Any:
        """A loader over ``tensors[i][indices]``, shuffled when ``train``."""
        tensors = tuple(a[indices] for a in tensors)
        return DataLoader(TensorDataset(*tensors), self.batch_size, shuffle=train)


class Trainer(HyperParameters):
    """The book's training loop: ``fit(model, data)`` runs ``max_epochs`` epochs of
    ``model.training_step`` (then backward, optional clipping and the optimiser's step) and,
    when the data has validation batches, ``model.validation_step`` without gradients.
    ``num_gpus`` GPUs are used where the backend has them (one: the first)."""

    def __init__(self, max_epochs: int, num_gpus: int = 0, gradient_clip_val: float = 0) -> None:
        self.save_hyperparameters()
        self.gpus = [try_gpu(i) for i in range(min(num_gpus, _num_gpus()))]
        self.gpus = [g for g in self.gpus if g.type == "gpu"]

    def prepare_data(self, data: DataModule) -> None:
        self.train_dataloader = data.train_dataloader()
        self.val_dataloader = data.val_dataloader()
        self.num_train_batches = len(self.train_dataloader)
        self.num_val_batches = len(self.val_dataloader) if self.val_dataloader is not None else 0

    def prepare_model(self, model: Module) -> None:
        model.trainer = self
        model.board.xlim = [0, self.max_epochs]
        if self.gpus:
            model.to(self.gpus[0])
        self.model = model

    def fit(self, model: Module, data: DataModule) -> None:
        self.prepare_data(data)
        self.prepare_model(model)
        self.optim = model.configure_optimizers()
        self.epoch = 0
        self.train_batch_idx = 0
        self.val_batch_idx = 0
        for epoch in range(self.max_epochs):
            self.epoch = epoch
            self.fit_epoch()

    def prepare_batch(self, batch: Sequence[Any]) -> Sequence[Any]:
        if self.gpus:
            batch = [a.to(self.gpus[0]) for a in batch]
        return batch

    def fit_epoch(self) -> None:
        self.model.train()
        for batch in self.train_dataloader:
            with autograd.record():  # a no-op where ops record by themselves
                loss = self.model.training_step(self.prepare_batch(batch))
            self.optim.zero_grad()
            loss.backward()
            with autograd.no_grad():
                if self.gradient_clip_val > 0:
                    self.clip_gradients(self.gradient_clip_val, self.model)
                self.optim.step()
            self.train_batch_idx += 1
        if self.val_dataloader is None:
            return
        self.model.eval()
        for batch in self.val_dataloader:
            with autograd.no_grad():
                self.model.validation_step(self.prepare_batch(batch))
            self.val_batch_idx += 1

    def clip_gradients(self, grad_clip_val: float, model: Module) -> None:
        """Scale every gradient by ``grad_clip_val / norm`` when their joint L2 norm exceeds
        ``grad_clip_val``."""
        grads = [p.grad for p in model.parameters() if p.requires_grad and p.grad is not None]
        norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
        if norm > grad_clip_val:
            for g in grads:
                g[:] *= grad_clip_val / norm


def _num_gpus() -> int:
    from .device import num_gpus

    return num_gpus()


class SyntheticRegressionData(DataModule):
    """``y = X w + b + noise`` with standard-normal features: ``num_train`` training and
    ``num_val`` validation examples."""

    def __init__(
        self,
        w: Any,
        b: float,
        noise: float = 0.01,
        num_train: int = 1000,
        num_val: int = 1000,
        batch_size: int = 32,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        from .creation import randn

        n = num_train + num_val
        w = asarray(w)
        self.X = randn(n, w.shape[0])
        noise_ = randn(n, 1) * noise
        self.y = self.X @ w.reshape((-1, 1)) + b + noise_

    def get_dataloader(self, train: bool) -> Any:
        i = slice(0, self.num_train) if train else slice(self.num_train, None)
        return self.get_tensorloader((self.X, self.y), train, i)


class LinearRegressionScratch(Module):
    """``X w + b`` with ``w`` drawn from N(0, sigma²) and ``b`` zero, the squared loss halved
    and averaged, trained by the book's own :class:`SGD`."""

    def __init__(self, num_inputs: int, lr: float, sigma: float = 0.01) -> None:
        super().__init__()
        self.save_hyperparameters()
        from .creation import randn

        self.w = _nn.Parameter(randn(num_inputs, 1) * sigma)
        self.b = _nn.Parameter(zeros(1))

    def forward(self, X: Any) -> Any:
        return X @ self.w + self.b

    def loss(self, y_hat: Any, y: Any) -> Any:
        return ((y_hat - y) ** 2 / 2).mean()

    def configure_optimizers(self) -> Any:
        return SGD([self.w, self.b], self.lr)


class LinearRegression(Module):
    """``nn.LazyLinear(1)`` initialised from N(0, 0.01²) with a zero bias, mean squared loss,
    ``md.optim.SGD``."""

    def __init__(self, lr: float) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = _nn.LazyLinear(1)
        _nn.init.normal_(self.net.weight, 0, 0.01)
        _nn.init.zeros_(self.net.bias)

    def loss(self, y_hat: Any, y: Any) -> Any:
        return F.mse_loss(y_hat, y)

    def configure_optimizers(self) -> Any:
        return _TorchSGD(self.parameters(), lr=self.lr)

    def get_w_b(self) -> tuple[Any, Any]:
        return self.net.weight.data, self.net.bias.data


class SGD(HyperParameters):
    """Minibatch stochastic gradient descent written out: ``param -= lr * param.grad``."""

    def __init__(self, params: Sequence[Any], lr: float) -> None:
        self.save_hyperparameters()

    def step(self) -> None:
        with autograd.no_grad():
            for param in self.params:
                param -= self.lr * param.grad

    def zero_grad(self) -> None:
        for param in self.params:
            if param.grad is not None:
                param.grad = None


class Classifier(Module):
    """A module whose output is class logits: cross-entropy loss and accuracy, both drawn on
    the board at validation."""

    def validation_step(self, batch: Sequence[Any]) -> None:
        Y_hat = self(*batch[:-1])
        self.plot("loss", self.loss(Y_hat, batch[-1]), train=False)
        self.plot("acc", self.accuracy(Y_hat, batch[-1]), train=False)

    def accuracy(self, Y_hat: Any, Y: Any, averaged: bool = True) -> Any:
        """The fraction of rows whose largest logit is the target (per row if not
        ``averaged``)."""
        Y_hat = Y_hat.reshape((-1, Y_hat.shape[-1]))
        preds = Y_hat.argmax(axis=1).astype(Y.dtype)
        compare = (preds == Y.reshape(-1)).astype(float32)
        return compare.mean() if averaged else compare

    def loss(self, Y_hat: Any, Y: Any, averaged: bool = True) -> Any:
        Y_hat = Y_hat.reshape((-1, Y_hat.shape[-1]))
        Y = Y.reshape((-1,))
        return F.cross_entropy(Y_hat, Y, reduction="mean" if averaged else "none")

    def layer_summary(self, X_shape: Sequence[int]) -> None:
        """Print each layer's output shape for an input of ``X_shape``."""
        from .creation import randn

        X = randn(*X_shape)
        for layer in self.net:
            X = layer(X)
            print(type(layer).__name__, "output shape:\t", X.shape)


def accuracy(y_hat: Any, y: Any) -> float:
    """The number of correct predictions (``y_hat``: logits per row, or labels)."""
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    return float((y_hat.astype(y.dtype) == y).astype(y.dtype).sum())


class Accumulator:
    """Running sums of ``n`` quantities."""

    def __init__(self, n: int) -> None:
        self.data = [0.0] * n

    def add(self, *args: Any) -> None:
        self.data = [a + float(b) for a, b in zip(self.data, args, strict=True)]

    def reset(self) -> None:
        self.data = [0.0] * len(self.data)

    def __getitem__(self, idx: int) -> float:
        return self.data[idx]


class Timer:
    """Wall-clock times of several runs: ``start()``, ``stop()``, ``avg()``, ``sum()``,
    ``cumsum()``."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.start()

    def start(self) -> None:
        self.tik = time.perf_counter()

    def stop(self) -> float:
        self.times.append(time.perf_counter() - self.tik)
        return self.times[-1]

    def avg(self) -> float:
        return sum(self.times) / len(self.times)

    def sum(self) -> float:
        return sum(self.times)

    def cumsum(self) -> list[float]:
        return np.cumsum(self.times).tolist()


# ---------------------------------------------------------------- text


class Vocab:
    """Tokens to indices: the unknown token ``'<unk>'``, the reserved tokens and every token
    seen at least ``min_freq`` times, sorted (the book's order); a 2-D list of tokens is
    flattened first. ``vocab[token]`` (or a list of them) gives indices, unknown tokens the
    index of ``'<unk>'``; ``to_tokens`` goes back; ``token_freqs`` lists (token, count) by
    decreasing count."""

    def __init__(
        self,
        tokens: Sequence[Any] = (),
        min_freq: int = 0,
        reserved_tokens: Sequence[str] = (),
    ) -> None:
        tokens = list(tokens)
        if tokens and isinstance(tokens[0], list):
            tokens = [token for line in tokens for token in line]
        counter = collections.Counter(tokens)
        self.token_freqs = sorted(counter.items(), key=lambda x: x[1], reverse=True)
        self.idx_to_token = sorted(
            set(["<unk>", *reserved_tokens, *(t for t, f in self.token_freqs if f >= min_freq)])
        )
        self.token_to_idx = {token: idx for idx, token in enumerate(self.idx_to_token)}

    def __len__(self) -> int:
        return len(self.idx_to_token)

    def __getitem__(self, tokens: Any) -> Any:
        if not isinstance(tokens, list | tuple):
            return self.token_to_idx.get(tokens, self.unk)
        return [self.__getitem__(token) for token in tokens]

    def to_tokens(self, indices: Any) -> Any:
        if hasattr(indices, "__len__") and len(indices) > 1:
            return [self.idx_to_token[int(index)] for index in indices]
        return self.idx_to_token[int(indices[0] if hasattr(indices, "__len__") else indices)]

    @property
    def unk(self) -> int:
        return self.token_to_idx["<unk>"]


class TimeMachine(DataModule):
    """H. G. Wells' *The Time Machine* as characters: letters lower-cased, everything else a
    space. Read from ``root/timemachine.txt`` (the book downloads it; here it is a local file:
    put the text there, or pass ``text=``). ``X`` and ``Y`` are the subsequences of
    ``num_steps`` characters and the same shifted by one; the first ``num_train`` are for
    training, the next ``num_val`` for validation."""

    def __init__(
        self,
        batch_size: int,
        num_steps: int,
        num_train: int = 10000,
        num_val: int = 5000,
        root: str = "../data",
        text: str | None = None,
    ) -> None:
        super().__init__(root=root)
        self.save_hyperparameters(ignore=["text"])
        raw = self._download() if text is None else text
        corpus, self.vocab = self.build(raw)
        windows = np.lib.stride_tricks.sliding_window_view(np.asarray(corpus), num_steps + 1)
        array = asarray(np.ascontiguousarray(windows))
        self.X, self.Y = array[:, :-1], array[:, 1:]

    def _download(self) -> str:
        path = os.path.join(self.root, "timemachine.txt")
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"Expected the text of The Time Machine at {path!r}. Received: no such file. "
                "Save it there (Project Gutenberg, ebook 35), or pass text= or root=."
            )
        with open(path, encoding="utf-8") as f:
            return f.read()

    def _preprocess(self, text: str) -> str:
        return re.sub("[^A-Za-z]+", " ", text).lower()

    def _tokenize(self, text: str) -> list[str]:
        return list(text)

    def build(self, raw_text: str, vocab: Vocab | None = None) -> tuple[list[int], Vocab]:
        tokens = self._tokenize(self._preprocess(raw_text))
        if vocab is None:
            vocab = Vocab(tokens)
        return [vocab[token] for token in tokens], vocab

    def get_dataloader(self, train: bool) -> Any:
        idx = (
            slice(0, self.num_train)
            if train
            else slice(self.num_train, self.num_train + self.num_val)
        )
        return self.get_tensorloader([self.X, self.Y], train, idx)


def _resampling(n_in: int, n_out: int) -> np.ndarray:
    """The (n_out, n_in) weights of PIL's bilinear resampling (what torchvision's ``Resize``
    applies to the book's images): a triangle filter centred on each output pixel, widened by
    the scale where the image shrinks, each row summing to 1."""
    scale = n_in / n_out
    support = max(scale, 1.0)
    centres = (np.arange(n_out) + 0.5) * scale
    w = np.clip(1 - np.abs(np.arange(n_in)[None, :] + 0.5 - centres[:, None]) / support, 0, None)
    return (w / w.sum(axis=1, keepdims=True)).astype(np.float32)


class Resized(TensorDataset):
    """A dataset of ``(image (C, H, W), label)`` with its images resized to ``size`` (height,
    width) as torchvision's ``Resize`` and ``ToTensor`` do with the book's 8-bit images: PIL's
    bilinear resampling, values rounded to 1/255. Each batch is resized at once, by two
    matrix products."""

    def __init__(self, data: TensorDataset, size: tuple[int, int]) -> None:
        self.data = data
        self.size = size
        h, w = data._host_batch(np.zeros(1, dtype=np.int64))[0].shape[-2:]
        self._rows, self._cols = _resampling(h, size[0]), _resampling(w, size[1]).T

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int) -> tuple[Any, ...]:
        return tuple(asarray(a[0]) for a in self._host_batch(np.asarray([index])))

    def _host_batch(self, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        images, *rest = self.data._host_batch(indices)
        out = self._rows @ images.astype(np.float32) @ self._cols
        return (np.round(out * 255).clip(0, 255) / np.float32(255)).astype(np.float32), *rest


class FashionMNIST(DataModule):
    """Fashion-MNIST as (N, 1, 28, 28) float32 images in [0, 1] and int64 labels, read from
    its IDX files under ``root`` (see ``md.data.datasets.FashionMNIST``)."""

    text_labels = (
        "t-shirt",
        "trouser",
        "pullover",
        "dress",
        "coat",
        "sandal",
        "shirt",
        "sneaker",
        "bag",
        "ankle boot",
    )

    #: the IDX reader (``md.data.datasets.FashionMNIST`` when None)
    dataset: Any = None

    def __init__(
        self,
        batch_size: int = 64,
        resize: tuple[int, int] = (28, 28),
        root: str = "../data",
        download: bool = False,
        base_url: str | None = None,
    ) -> None:
        """``download=True`` fetches missing files from ``base_url`` (the data set's own
        mirror by default) and checks their SHA-256, as ``md.data.datasets.FashionMNIST``."""
        super().__init__(root=root)
        self.save_hyperparameters()
        size = (resize, resize) if isinstance(resize, int) else tuple(resize)
        if len(size) != 2 or not all(isinstance(n, int) and n > 0 for n in size):
            raise ValueError(
                f"Expected resize=(height, width) of positive ints, or one int. Received: "
                f"{resize!r}"
            )
        reader = self.dataset or import_module(".data.datasets", __package__).FashionMNIST
        self.train = reader(root, train=True, download=download, base_url=base_url)
        self.val = reader(root, train=False, download=download, base_url=base_url)
        if size != (28, 28):
            self.train, self.val = Resized(self.train, size), Resized(self.val, size)

    def text_labels_of(self, indices: Iterable[Any]) -> list[str]:
        return [self.text_labels[int(i)] for i in indices]

    def get_dataloader(self, train: bool) -> Any:
        data = self.train if train else self.val
        return DataLoader(data, self.batch_size, shuffle=train, num_workers=self.num_workers)


# ---------------------------------------------------------------- encoder-decoder


class Encoder(_nn.Module):
    """The encoder of an encoder-decoder: ``forward(X, *args)`` gives its outputs."""

    def forward(self, X: Any, *args: Any) -> Any:
        raise NotImplementedError


class Decoder(_nn.Module):
    """The decoder: ``init_state(enc_all_outputs, *args)`` gives its first state,
    ``forward(X, state)`` its outputs and next state."""

    def init_state(self, enc_all_outputs: Any, *args: Any) -> Any:
        raise NotImplementedError

    def forward(self, X: Any, state: Any) -> Any:
        raise NotImplementedError


class EncoderDecoder(Classifier):
    """An encoder feeding a decoder; its output is the decoder's first return value."""

    def __init__(self, encoder: Encoder, decoder: Decoder) -> None:
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, enc_X: Any, dec_X: Any, *args: Any) -> Any:  # type: ignore[override]
        enc_all_outputs = self.encoder(enc_X, *args)
        dec_state = self.decoder.init_state(enc_all_outputs, *args)
        return self.decoder(dec_X, dec_state)[0]

    def predict_step(
        self,
        batch: Sequence[Any],
        device: Device,
        num_steps: int,
        save_attention_weights: bool = False,
    ) -> Any:
        """Greedy decoding of ``num_steps`` tokens from each source of ``batch`` (src,
        tgt, src_valid_len, label), starting from the target's first token."""
        batch = [a.to(device) for a in batch]
        src, tgt, src_valid_len, _ = batch
        enc_all_outputs = self.encoder(src, src_valid_len)
        dec_state = self.decoder.init_state(enc_all_outputs, src_valid_len)
        outputs, attention_weights = [tgt[:, 0:1]], []
        for _ in range(num_steps):
            Y, dec_state = self.decoder(outputs[-1], dec_state)
            outputs.append(Y.argmax(axis=2))
            if save_attention_weights:
                attention_weights.append(self.decoder.attention_weights)
        from .ops import concat

        return concat(outputs[1:], axis=1), attention_weights


class Seq2Seq(EncoderDecoder):
    """An encoder-decoder trained with the cross-entropy of the non-padding target tokens
    (``tgt_pad``: the padding token's index) and Adam."""

    def __init__(self, encoder: Encoder, decoder: Decoder, tgt_pad: int, lr: float) -> None:
        super().__init__(encoder, decoder)
        self.save_hyperparameters()

    def validation_step(self, batch: Sequence[Any]) -> None:
        Y_hat = self(*batch[:-1])
        self.plot("loss", self.loss(Y_hat, batch[-1]), train=False)

    def configure_optimizers(self) -> Any:
        return _Adam(self.parameters(), lr=self.lr)

    def loss(self, Y_hat: Any, Y: Any, averaged: bool = True) -> Any:
        per_token = super().loss(Y_hat, Y, averaged=False)
        mask = (Y.reshape(-1) != self.tgt_pad).astype(float32)
        return (per_token * mask).sum() / mask.sum()
