"""``RNN``, ``GRU`` and ``LSTM``: multi-layer, optionally bidirectional recurrent layers with
PyTorch's arguments, parameter names (``weight_ih_l0``, ``bias_hh_l1_reverse``, ...), shapes,
gate order, default initialisation and printing."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import ops
from ..creation import asarray
from ..dispatch import as_tensor
from ..errors import ShapeError
from ..random import host_uniform
from ..tensors import Tensor
from . import sequence_functional as SF
from .module import Block
from .parameter import Parameter

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]


class RNNBase(Block):
    """The shared recurrent layer; ``mode`` is one of ``sequence_functional.RNN_MODES``.

    Initialised as in PyTorch: every weight and bias from U(-1/sqrt(hidden_size),
    1/sqrt(hidden_size)), drawn in parameter order from multidev's host generator.
    """

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        for name, v in (
            ("input_size", input_size),
            ("hidden_size", hidden_size),
            ("num_layers", num_layers),
        ):
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"Expected a positive int for {name}. Received: {v!r}")
        if not isinstance(dropout, (int, float)) or not 0.0 <= dropout <= 1.0:
            raise ValueError(f"Expected a dropout probability in [0, 1]. Received: {dropout!r}")
        if not isinstance(proj_size, int) or isinstance(proj_size, bool) or proj_size < 0:
            raise ValueError(f"Expected a non-negative int for proj_size. Received: {proj_size!r}")
        if proj_size and mode != "lstm":
            raise ValueError(
                f"Expected proj_size=0: projections exist for LSTM only, not {mode}. "
                f"Received: proj_size={proj_size}"
            )
        if proj_size >= hidden_size:
            raise ValueError(
                f"Expected proj_size smaller than hidden_size. Received: proj_size={proj_size}, "
                f"hidden_size={hidden_size}"
            )
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gates = SF.RNN_MODES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        stdv = 1.0 / math.sqrt(hidden_size)
        out_size = proj_size or hidden_size  # the size of h: the projection's, if any
        names = []
        for layer in range(num_layers):
            layer_in = input_size if layer == 0 else out_size * dirs
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
                shapes: list[tuple[str, tuple[int, ...]]] = [
                    ("weight_ih", (gates, layer_in)),
                    ("weight_hh", (gates, out_size)),
                ]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                if proj_size:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                for base, shape in shapes:
                    values = host_uniform(shape, -stdv, stdv)
                    self.register_parameter(
                        base + sfx, Parameter(asarray(values, dtype=dtype, device=device))
                    )
                    names.append(base + sfx)
        self._flat_weights_names = names

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """Per layer and direction: [weight_ih, weight_hh(, bias_ih, bias_hh)(, weight_hr)]."""
        per = (4 if self.bias else 2) + (1 if self.proj_size else 0)
        ws = [getattr(self, n) for n in self._flat_weights_names]
        return [ws[i : i + per] for i in range(0, len(ws), per)]

    def _zeros_state(self, x: Tensor, batch: int, size: int) -> Tensor:
        dirs = 2 if self.bidirectional else 1
        shape = (self.num_layers * dirs, batch, size)
        return as_tensor(np.zeros(shape, dtype=x._dtype.numpy), x)

    def _check_state(self, hx: Any, batch: int, unbatched: bool) -> None:
        """ShapeError for an initial state of the wrong shape (each framework's kernel would
        refuse it with its own error, or compute with the wrong sizes)."""
        pair = isinstance(hx, (tuple, list))
        if pair != (self.mode == "lstm") or (pair and len(hx) != 2):
            return  # not (h0, c0) for an LSTM, or a pair for the others: SF.rnn's TypeError
        states = tuple(hx) if pair else (hx,)
        lead = self.num_layers * (2 if self.bidirectional else 1)
        sizes = [self.proj_size or self.hidden_size]
        if self.mode == "lstm":
            sizes.append(self.hidden_size)
        want = tuple((lead, batch, s) for s in sizes)
        got = tuple(as_tensor(h).shape for h in states)
        if got != want:
            shown = tuple((w[0], w[2]) if unbatched else w for w in want)
            received = tuple((g[0], *g[2:]) if unbatched and len(g) > 1 else g for g in got)
            name = type(self).__name__
            raise ShapeError(
                f"Expected an initial state of shape{'s' if len(shown) > 1 else ''} "
                f"{' and '.join(map(str, shown))} (num_layers * directions, "
                f"{'' if unbatched else 'batch, '}size) for {name}. Received: "
                f"{' and '.join(map(str, received)) or 'no tensors'}.",
                op=name,
                shapes=received,
            )

    def forward(self, input: Any, hx: Any = None) -> tuple[Tensor, Any]:
        x = as_tensor(input)
        unbatched = x.ndim == 2
        if x.ndim not in (2, 3):
            raise ValueError(
                f"Expected a 2-D (unbatched) or 3-D input for {type(self).__name__}. "
                f"Received: shape {x.shape}"
            )
        if unbatched:
            x = ops.expand_dims(x, 1)
            if hx is not None:
                hx = (
                    tuple(ops.expand_dims(as_tensor(h), 1) for h in hx)
                    if isinstance(hx, (tuple, list))
                    else ops.expand_dims(as_tensor(hx), 1)
                )
        elif self.batch_first:
            x = ops.transpose(x, 0, 1)
        if x.shape[-1] != self.input_size:
            raise ValueError(
                f"Expected input with input_size={self.input_size} features in its last axis. "
                f"Received: shape {as_tensor(input).shape}"
            )
        if hx is not None:
            self._check_state(hx, x.shape[1], unbatched)
        if hx is None:
            h0 = self._zeros_state(x, x.shape[1], self.proj_size or self.hidden_size)
            if self.mode != "lstm":
                hx = h0
            else:
                hx = (
                    h0,
                    self._zeros_state(x, x.shape[1], self.hidden_size) if self.proj_size else h0,
                )
        weights = [getattr(self, n) for n in self._flat_weights_names]
        y, h, c = SF.rnn(
            self.mode,
            x,
            hx,
            weights,
            self.num_layers,
            self.bidirectional,
            False,
            self.dropout,
            self.training,
        )
        if unbatched:
            y, h = ops.squeeze(y, 1), ops.squeeze(h, 1)
            c = None if c is None else ops.squeeze(c, 1)
        elif self.batch_first:
            y = ops.transpose(y, 0, 1)
        return (y, (h, c)) if self.mode == "lstm" else (y, h)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or ReLU)."""

    def __init__(self, *args: Any, nonlinearity: str = "tanh", **kwargs: Any) -> None:
        if len(args) > 3:
            nonlinearity, args = args[3], args[:3] + args[4:]
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Expected nonlinearity 'tanh' or 'relu'. Received: {nonlinearity!r}")
        super().__init__("rnn_" + nonlinearity, *args, **kwargs)
        self.nonlinearity = nonlinearity


class GRU(RNNBase):
    """Gated recurrent unit, PyTorch's formulation (gates r, z, n)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("gru", *args, **kwargs)


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o); returns (output, (h_n, c_n))."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("lstm", *args, **kwargs)


class RNNCellBase(Block):
    """One step of an Elman RNN, GRU or LSTM cell (``mode`` in ``sequence_functional.RNN_MODES``)
    with PyTorch's parameters ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh`` (gate order
    and U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) initialisation as its layers'), run by the
    framework's recurrent kernel on a sequence of one step."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        for name, v in (("input_size", input_size), ("hidden_size", hidden_size)):
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"Expected a positive int for {name}. Received: {v!r}")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        gates = SF.RNN_MODES[mode] * hidden_size
        stdv = 1.0 / math.sqrt(hidden_size)
        shapes: list[tuple[str, tuple[int, ...]]] = [
            ("weight_ih", (gates, input_size)),
            ("weight_hh", (gates, hidden_size)),
        ]
        if bias:
            shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
        for name, shape in shapes:
            values = host_uniform(shape, -stdv, stdv)
            self.register_parameter(name, Parameter(asarray(values, dtype=dtype, device=device)))
        self._names = [name for name, _ in shapes]

    def _step(self, input: Any, hx: Any) -> tuple[Tensor, Tensor | None]:
        """The new (h, c) (c None but for an LSTM) after one step from ``hx``."""
        x = as_tensor(input)
        name = type(self).__name__
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ValueError(
                f"Expected a 1-D (input_size,) or 2-D (batch, input_size) input with "
                f"input_size={self.input_size} for {name}. Received: shape {x.shape}"
            )
        unbatched = x.ndim == 1
        if unbatched:
            x = x[None]
        lstm = self.mode == "lstm"
        if hx is None:
            shape = (self.hidden_size,) if unbatched else (x.shape[0], self.hidden_size)
            zeros = as_tensor(np.zeros(shape, x._dtype.numpy), x)
            states = [zeros, zeros] if lstm else [zeros]
        else:
            states = [as_tensor(h, x) for h in (hx if lstm else (hx,))]
        want = (self.hidden_size,) if unbatched else (x.shape[0], self.hidden_size)
        if any(s.shape != want for s in states):
            raise ShapeError(
                f"Expected hidden state{'s' if lstm else ''} of shape {want} for {name}. "
                f"Received: {' and '.join(str(s.shape) for s in states)}",
                op=name,
                shapes=tuple(s.shape for s in states),
            )
        states = [ops.reshape(s, (1, x.shape[0], self.hidden_size)) for s in states]
        hx_in: Any = tuple(states) if lstm else states[0]
        weights = [getattr(self, n) for n in self._names]
        _, h, c = SF.rnn(self.mode, x[None], hx_in, weights, 1, False)
        h = h[0, 0] if unbatched else h[0]
        if c is not None:
            c = c[0, 0] if unbatched else c[0]
        return h, c

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.mode == "rnn_relu":
            s += ", nonlinearity=relu"
        return s


class RNNCell(RNNCellBase):
    """``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or ReLU)."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Expected nonlinearity 'tanh' or 'relu'. Received: {nonlinearity!r}")
        super().__init__("rnn_" + nonlinearity, input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Any, hx: Any = None) -> Tensor:
        return self._step(input, hx)[0]


class GRUCell(RNNCellBase):
    """One GRU step (gates r, z, n), as ``torch.nn.GRUCell``."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__("gru", input_size, hidden_size, bias, device, dtype)

    def forward(self, input: Any, hx: Any = None) -> Tensor:
        return self._step(input, hx)[0]


class LSTMCell(RNNCellBase):
    """One LSTM step (gates i, f, g, o): ``(h', c')`` from ``(h, c)``, as
    ``torch.nn.LSTMCell``."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__("lstm", input_size, hidden_size, bias, device, dtype)

    def forward(self, input: Any, hx: Any = None) -> tuple[Tensor, Tensor]:
        h, c = self._step(input, hx)
        assert c is not None
        return h, c
