"""Paddle lowerings of the sequence ops (``multidev.nn.sequence_functional``), the RNN on
Paddle's fused kernel."""

from __future__ import annotations

from typing import Any

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import _C_ops
from paddle.base.dygraph.base import _convert_into_variable

__all__ = ["LOWERINGS"]


_MODES = {"gru": "GRU", "lstm": "LSTM", "rnn_tanh": "RNN_TANH", "rnn_relu": "RNN_RELU"}


_EAGER_DROPOUT_STATE: list[Any] = []


def _dropout_state() -> Any:
    """The kernel's (empty) dropout-state input. Inside a static program (``md.jit``,
    ``md.export``) it is one eager uint8 tensor converted into the program, named
    non-persistable as ``paddle.nn.GRU``'s own (``paddle.jit.save`` then saves nothing for
    it): ``paddle.empty`` admits no uint8 in a program."""
    if paddle.in_dynamic_mode():
        return paddle.empty([0], dtype="uint8")
    if not _EAGER_DROPOUT_STATE:
        from paddle.base.dygraph.base import NON_PERSISTABLE_VAR_NAME_SUFFIX, guard

        with guard():
            state = paddle.empty([0], dtype="uint8")
        state.name = "multidev_rnn.dropout_state" + NON_PERSISTABLE_VAR_NAME_SUFFIX
        state.stop_gradient = True
        _EAGER_DROPOUT_STATE.append(state)
    return _convert_into_variable(_EAGER_DROPOUT_STATE[0])


def _in_program(state: Any) -> Any:
    """An initial state the block made from NumPy (the zeros ``nn.GRU`` starts from) as a
    constant of the static program being built; the kernel takes only program values there."""
    if paddle.in_dynamic_mode() or isinstance(state, paddle.pir.Value):
        return state
    return paddle.assign(np.asarray(state))


def _rnn(mode, x, h0, c0, weights, num_layers, bidirectional):
    """Paddle's fused RNN kernel (the one behind ``paddle.nn.GRU``; cuDNN on GPU): weights as
    all (w_ih, w_hh) per layer and direction, then all biases; gate orders equal PyTorch's.
    Run in training form (``is_test=False``, dropout 0): only that form has a backward."""
    dirs = 2 if bidirectional else 1
    per = len(weights) // (num_layers * dirs)
    groups = [weights[i : i + per] for i in range(0, len(weights), per)]
    flat = [w for g in groups for w in g[:2]]
    if per == 4:
        flat += [b for g in groups for b in g[2:]]
    else:
        flat += [paddle.zeros([g[0].shape[0]], x.dtype) for g in groups for _ in range(2)]
    states = [_in_program(h0)] if c0 is None else [_in_program(h0), _in_program(c0)]
    dropout_state = _dropout_state()
    out, _, state = _C_ops.rnn(
        x,
        states,
        flat,
        None,
        dropout_state,
        0.0,
        bidirectional,
        x.shape[-1],
        weights[1].shape[-1],  # w_hh is (gates * hidden, hidden)
        num_layers,
        _MODES[mode],
        0,
        False,
    )
    return (out, state[0], None) if c0 is None else (out, state[0], state[1])


#: the largest epsilon Paddle's layer_norm kernel accepts
_KERNEL_MAX_EPS = 1e-3


def _layer_norm(x: Any, w: Any, b: Any, eps: float) -> Any:
    """Paddle's fused kernel; for an epsilon above what it accepts (it raises), the same
    normalisation in Paddle's elementwise and reduction kernels."""
    if eps <= _KERNEL_MAX_EPS:
        return F.layer_norm(x, [x.shape[-1]], weight=w, bias=b, epsilon=eps)
    centred = x - x.mean(axis=-1, keepdim=True)
    var = (centred * centred).mean(axis=-1, keepdim=True)
    return centred * paddle.rsqrt(var + eps) * w + b


#: op name -> lowering, passed to this adapter's op_table
LOWERINGS = {
    "embedding": lambda w, idx: F.embedding(idx, w),
    "one_hot": lambda idx, n: F.one_hot(idx, n).astype(paddle.int64),
    "stop_gradient": lambda x: x.detach(),
    "layer_norm": _layer_norm,
    "gelu": lambda x, tanh: F.gelu(x, approximate=tanh),
    "rnn": _rnn,
}
