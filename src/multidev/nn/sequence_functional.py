"""Functional ops for sequence models: ``embedding``, ``one_hot``, ``layer_norm``, ``gelu``,
``scaled_dot_product_attention`` and the RNN/GRU/LSTM sequence kernel.

Each calls the adapter's own op (the framework's kernel) where the adapter's op table has it;
the rules (shapes, masks, dropout from multidev's host generator, errors) are written here once.
Where an adapter has no fused kernel for an op, it is composed here from multidev ops, which
are each one framework kernel (the RNN: one loop over time steps, never over elements).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import amp as _amp
from .. import dtypes as _dt
from .. import ops
from ..array_api import finfo
from ..dispatch import as_tensor as _tensor
from ..dispatch import call as _call
from ..dispatch import check_same as _check_same
from ..dispatch import floating as _floating
from ..dispatch import new_tensor as _new_tensor
from ..dispatch import on as _on
from ..dispatch import wrap as _wrap
from ..errors import ShapeError
from ..random import dropout_mask
from ..tensors import Tensor
from ..tracing import tracing

__all__ = [
    "RNN_MODES",
    "embedding",
    "gelu",
    "layer_norm",
    "one_hot",
    "rms_norm",
    "rnn",
    "scaled_dot_product_attention",
]

#: mode -> gates per hidden unit (rows of weight_ih_l0 = gates * hidden_size)
RNN_MODES = {"rnn_tanh": 1, "rnn_relu": 1, "gru": 3, "lstm": 4}


def _native_op(x: Tensor, name: str) -> Any:
    return getattr(x._bk.ops, name, None)


def _same_float(first: Tensor, *ts: Tensor | None) -> None:
    for t in ts:
        if t is None:
            continue
        _check_same(first, t)
        if t._dtype is not first._dtype:
            raise TypeError(
                f"Expected tensors of one floating dtype. Received: {first._dtype} and "
                f"{t._dtype}. Convert them with .to(dtype) first."
            )


def _host(arr: np.ndarray, like: Tensor) -> Tensor:
    """A host array as a Tensor on ``like``'s backend and device, in ``like``'s dtype."""
    bk, dev = like._bk, like._dev
    arr = arr.astype(like._dtype.numpy, copy=False)
    return _new_tensor(_on(bk, dev, bk.from_numpy, arr, dev), bk, dev, like._dtype)


def _op(x: Tensor, name: str, *args: Any) -> Tensor:
    """The adapter's op ``name`` on x (and native ``args``), same dtype."""
    return _wrap(x, _call(x, name, x._native, *args), x._dtype)


def _linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """x @ w.T + b through the adapter's fused ``linear`` where it has one."""
    if getattr(x._bk.ops, "linear", None) is not None:
        return _op(x, "linear", w._native, None if b is None else b._native)
    y = ops.matmul(x, ops.transpose(w, 0, 1))
    return y if b is None else y + b


def _dropout(x: Tensor, p: float) -> Tensor:
    """Inverted dropout with the host generator's mask (as ``nn.functional.dropout``)."""
    return x * _host(dropout_mask(x.shape, p, x._dtype.numpy), x)


# ---------------------------------------------------------------- embedding / one_hot


def _int_indices(x: Any, like: Tensor, what: str) -> Tensor:
    x = _tensor(x, like)
    if x._dtype.kind not in "iu":
        raise TypeError(f"Expected integer indices for {what}. Received: dtype {x._dtype}")
    return x


def embedding(input: Any, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """Rows of ``weight`` (num_embeddings, embedding_dim) picked by the integer ``input``.

    The output has shape ``input.shape + (embedding_dim,)``. Rows at ``padding_idx`` get no
    gradient. Raises IndexError for indices outside [0, num_embeddings).
    """
    idx = _int_indices(input, weight, "embedding")
    _check_same(weight, idx)
    if weight.ndim != 2:
        raise ValueError(
            f"Expected a 2-D weight (num_embeddings, embedding_dim). Received: {weight.shape}"
        )
    n = weight.shape[0]
    if idx.size and not tracing():  # a traced graph holds no host read of its values
        lo, hi = int(ops.min(idx).item()), int(ops.max(idx).item())
        if lo < 0 or hi >= n:
            raise IndexError(
                f"Expected indices in [0, {n}) for an embedding of {n} rows. Received: indices "
                f"in [{lo}, {hi}]"
            )
    if idx._dtype is not _dt.int64:
        idx = ops.astype(idx, _dt.int64)
    w = weight
    if padding_idx is not None:
        keep = np.ones((n, 1), dtype=weight._dtype.numpy)
        keep[padding_idx % n] = 0
        k = _host(keep, weight)
        w = weight * k + _stop(weight) * (1 - k)
    out = _call(w, "embedding", w._native, idx._native)
    return _wrap(w, out, w._dtype)


def _stop(x: Tensor) -> Tensor:
    """``x`` without a gradient path (the adapter's ``stop_gradient``)."""
    return _wrap(x, _call(x, "stop_gradient", x._native), x._dtype)


def one_hot(tensor: Any, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding with a new last axis of ``num_classes`` (max + 1 when -1)."""
    idx = _tensor(tensor)
    if idx._dtype.kind not in "iu":
        raise TypeError(f"Expected integer class indices for one_hot. Received: {idx._dtype}")
    lo = int(ops.min(idx).item()) if idx.size else 0
    hi = int(ops.max(idx).item()) if idx.size else -1
    if num_classes == -1:
        num_classes = hi + 1
    if lo < 0 or hi >= num_classes:
        raise ValueError(
            f"Expected class indices in [0, {num_classes}). Received: indices in [{lo}, {hi}]"
        )
    if idx._dtype is not _dt.int64:
        idx = ops.astype(idx, _dt.int64)
    return _wrap(idx, _call(idx, "one_hot", idx._native, int(num_classes)), _dt.int64)


# ---------------------------------------------------------------- layer_norm / gelu


def rms_norm(
    input: Any,
    normalized_shape: Sequence[int] | int,
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    """``x / sqrt(mean(x ** 2) + eps)`` over the last ``len(normalized_shape)`` axes, then
    scaled by ``weight`` (of shape ``normalized_shape``), as ``torch.nn.functional.rms_norm``;
    ``eps`` None is the machine epsilon of the input's dtype."""
    x = _floating(_tensor(input))
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or x.ndim < k or tuple(x.shape[x.ndim - k :]) != shape:
        raise ValueError(
            f"Expected input whose last dimensions are normalized_shape={shape}. Received: "
            f"input of shape {x.shape}"
        )
    if weight is not None and tuple(weight.shape) != shape:
        raise ValueError(f"Expected weight of shape {shape}. Received: {weight.shape}")
    if eps is None:
        eps = finfo(x.dtype).eps
    axes = tuple(range(x.ndim - k, x.ndim))
    y = x / ops.sqrt(ops.mean(x * x, axis=axes, keepdims=True) + eps)
    return y if weight is None else y * weight


def layer_norm(
    input: Any,
    normalized_shape: Sequence[int] | int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over the last ``len(normalized_shape)`` axes (biased variance), then scale by
    ``weight`` and shift by ``bias`` (each of shape ``normalized_shape``)."""
    if _amp.ACTIVE:
        input, weight, bias = _amp.cast("layer_norm", input, weight, bias)
    x = _floating(_tensor(input))
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or tuple(x.shape[x.ndim - k :]) != shape or x.ndim < k:
        raise ValueError(
            f"Expected input whose last dimensions are normalized_shape={shape}. Received: "
            f"input of shape {x.shape}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise ValueError(f"Expected {name} of shape {shape}. Received: {t.shape}")
    _same_float(x, weight, bias)
    n = math.prod(shape)
    lead = x.shape[: x.ndim - k]
    x2 = ops.reshape(x, (*lead, n)) if k != 1 else x
    bk = x._bk
    w = ops.reshape(weight, (n,)) if weight is not None else _host(np.ones(n), x)
    b = ops.reshape(bias, (n,)) if bias is not None else _host(np.zeros(n), x)
    out = _on(bk, x._dev, bk.ops.layer_norm, x2._native, w._native, b._native, float(eps))
    y = _new_tensor(out, bk, x._dev, x._dtype)
    return ops.reshape(y, x.shape) if k != 1 else y


def gelu(input: Any, approximate: str = "none") -> Tensor:
    """x * Φ(x) (``approximate="none"``, with erf) or its tanh approximation (``"tanh"``)."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"Expected approximate 'none' or 'tanh'. Received: {approximate!r}")
    x = _floating(_tensor(input))
    return _wrap(x, _call(x, "gelu", x._native, approximate == "tanh"), x._dtype)


# ---------------------------------------------------------------- attention


def _additive_mask(q: Tensor, s: int, attn_mask: Any, is_causal: bool) -> Tensor | None:
    """One float mask added to the scores (0 where attended, -inf where not), or None."""
    L = q.shape[-2]
    add = None
    if is_causal:
        if attn_mask is not None:
            raise ValueError("Expected either attn_mask or is_causal=True. Received: both")
        add = np.where(np.tril(np.ones((L, s), dtype=bool)), 0.0, -np.inf).astype(q._dtype.numpy)
        return _host(add, q)
    if attn_mask is None:
        return None
    m = _tensor(attn_mask, q)
    _check_same(q, m)
    if m._dtype is _dt.bool:
        zeros = _host(np.zeros(()), q)
        ninf = _host(np.full((), -np.inf), q)
        return ops.where(m, zeros, ninf)
    if m._dtype is not q._dtype:
        m = ops.astype(m, q._dtype)
    return m


def scaled_dot_product_attention(
    query: Any,
    key: Any,
    value: Any,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
) -> Tensor:
    """softmax(query @ key.T * scale + mask) @ value over the last two axes.

    ``attn_mask``: bool (True = take part in attention) or float (added to the scores),
    broadcastable to (..., L, S). ``is_causal``: mask out keys after each query. ``dropout_p``
    drops attention weights with multidev's host generator (same elements on every backend);
    pass 0 in evaluation. ``scale`` defaults to 1/sqrt(E).
    """
    if _amp.ACTIVE and _amp.autocast_dtype() is not None:
        query, key, value, attn_mask = _amp.cast(
            "scaled_dot_product_attention", query, key, value, attn_mask
        )
        with _amp.autocast(enabled=False):  # one op, as in PyTorch: its softmax stays low
            return scaled_dot_product_attention(
                query, key, value, attn_mask, dropout_p, is_causal, scale
            )
    q = _floating(_tensor(query))
    k, v = _tensor(key, q), _tensor(value, q)
    _same_float(q, k, v)
    if q.ndim < 2 or k.ndim != q.ndim or v.ndim != q.ndim or q.shape[-1] != k.shape[-1]:
        raise ValueError(
            "Expected query (..., L, E), key (..., S, E) and value (..., S, Ev). Received: "
            f"{q.shape}, {k.shape}, {v.shape}"
        )
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"Expected a dropout probability in [0, 1]. Received: {dropout_p}")
    sc = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    mask = _additive_mask(q, k.shape[-2], attn_mask, is_causal)
    try:
        return _attention(q, k, v, mask, dropout_p, sc)
    except Exception as e:
        _check_attention_shapes(q, k, v, mask, e)
        raise


def _check_attention_shapes(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, e: Exception
) -> None:
    """Called where attention failed with ``e``: ShapeError where key and value disagree on S,
    the batch dimensions do not broadcast or the mask does not broadcast to (..., L, S)."""
    shapes = (q.shape, k.shape, v.shape) + (() if mask is None else (mask.shape,))
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        ok = k.shape[-2] == v.shape[-2]
        if mask is not None:
            np.broadcast_shapes(mask.shape, (*batch, q.shape[-2], k.shape[-2]))
    except ValueError:
        ok = False
    if not ok:
        raise ShapeError(
            "Expected query (..., L, E), key (..., S, E), value (..., S, Ev) with batch "
            "dimensions that broadcast, and a mask that broadcasts to (..., L, S) for "
            f"scaled_dot_product_attention. Received: {', '.join(map(str, shapes))}",
            op="scaled_dot_product_attention",
            shapes=shapes,
        ) from e


def _attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout_p: float, sc: float
) -> Tensor:
    fused = _native_op(q, "scaled_dot_product_attention")
    if fused is not None and dropout_p == 0.0:
        bk = q._bk
        out = _on(
            bk,
            q._dev,
            fused,
            q._native,
            k._native,
            v._native,
            None if mask is None else mask._native,
            sc,
        )
        return _new_tensor(out, bk, q._dev, q._dtype)
    return attention_weights_and_output(q, k, v, mask, dropout_p, sc)[1]


def attention_weights_and_output(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout_p: float, scale: float
) -> tuple[Tensor, Tensor]:
    """(attention weights, output) from matmul and softmax kernels; the weights returned are
    those applied, after dropout, as PyTorch's ``MultiheadAttention`` returns them."""
    scores = ops.matmul(q, ops.transpose(k, -2, -1)) * scale
    if mask is not None:
        scores = scores + mask
    w = _op(scores, "softmax", scores.ndim - 1)
    if dropout_p > 0.0:
        w = _dropout(w, dropout_p)
    return w, ops.matmul(w, v)


# ---------------------------------------------------------------- recurrent


def _cell_loop(
    mode: str,
    x: Tensor,
    h: Tensor,
    c: Tensor | None,
    w: Sequence[Tensor],
    reverse: bool,
) -> tuple[Tensor, Tensor, Tensor | None]:
    """One layer, one direction, time-major x (T, N, I): (outputs (T, N, H), h_T, c_T)."""
    w_ih, w_hh = w[0], w[1]
    b_ih, b_hh = (w[2], w[3]) if len(w) >= 4 else (None, None)
    w_hr = w[-1] if mode == "lstm" and len(w) in (3, 5) else None  # LSTM projection
    H = w_ih.shape[0] // RNN_MODES[mode]
    gi = _linear(x, w_ih, b_ih)  # all time steps in one kernel
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    outs = []
    for t in steps:
        gh = _linear(h, w_hh, b_hh)
        g = gi[t]
        if mode == "gru":
            r = _op(g[:, :H] + gh[:, :H], "sigmoid")
            z = _op(g[:, H : 2 * H] + gh[:, H : 2 * H], "sigmoid")
            n = _op(g[:, 2 * H :] + r * gh[:, 2 * H :], "tanh")
            h = n + z * (h - n)
        elif mode == "lstm":
            a = g + gh
            i, f = _op(a[:, :H], "sigmoid"), _op(a[:, H : 2 * H], "sigmoid")
            cand, o = _op(a[:, 2 * H : 3 * H], "tanh"), _op(a[:, 3 * H :], "sigmoid")
            c = f * c + i * cand
            h = o * _op(c, "tanh")
            if w_hr is not None:
                h = _linear(h, w_hr, None)
        elif mode == "rnn_tanh":
            h = _op(g + gh, "tanh")
        else:
            h = _op(g + gh, "relu")
        outs.append(h)
    if reverse:
        outs.reverse()
    return ops.stack(outs, axis=0), h, c


def _rnn_composed(mode, x, h0, c0, weights, num_layers, bidirectional):
    dirs = 2 if bidirectional else 1
    per = len(weights) // (num_layers * dirs)
    hs, cs = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            i = layer * dirs + d
            w = weights[i * per : (i + 1) * per]
            y, h, c = _cell_loop(mode, x, h0[i], None if c0 is None else c0[i], w, reverse=d == 1)
            outs.append(y)
            hs.append(h)
            cs.append(c)
        x = outs[0] if dirs == 1 else ops.concat(outs, axis=-1)
    return x, ops.stack(hs, axis=0), None if c0 is None else ops.stack(cs, axis=0)


def _rnn_layers(mode, x, h0, c0, weights, num_layers, bidirectional):
    """The adapter's fused kernel for the whole stack, else the composed loop. An LSTM with
    a projection (h smaller than c) needs the optional ``rnn_projected`` kernel."""
    projected = c0 is not None and h0.shape[-1] != c0.shape[-1]
    fused = _native_op(x, "rnn_projected" if projected else "rnn")
    if fused is None:
        return _rnn_composed(mode, x, h0, c0, weights, num_layers, bidirectional)
    bk = x._bk
    y, h, c = _on(
        bk,
        x._dev,
        fused,
        mode,
        x._native,
        h0._native,
        None if c0 is None else c0._native,
        [w._native for w in weights],
        num_layers,
        bidirectional,
    )
    dev, dt = x._dev, x._dtype
    return (
        _new_tensor(y, bk, dev, dt),
        _new_tensor(h, bk, dev, dt),
        None if c is None else _new_tensor(c, bk, dev, dt),
    )


def rnn(
    mode: str,
    input: Any,
    hx: Any,
    weights: Sequence[Tensor],
    num_layers: int = 1,
    bidirectional: bool = False,
    batch_first: bool = False,
    dropout: float = 0.0,
    training: bool = False,
) -> tuple[Tensor, Tensor, Tensor | None]:
    """Run a multi-layer Elman RNN, GRU or LSTM (``mode`` in ``RNN_MODES``) over a sequence.

    ``input``: (T, N, I), or (N, T, I) when ``batch_first``; ``hx``: h0 of shape
    (num_layers * directions, N, H), or (h0, c0) for ``"lstm"``; ``weights``: per layer and
    direction ``w_ih, w_hh[, b_ih, b_hh][, w_hr]`` in PyTorch's layout and gate order (GRU
    r, z, n; LSTM i, f, g, o); ``w_hr`` (P, H), an LSTM's projection, makes h of size P. ``dropout`` applies to each layer's output but the last, in training
    only, with multidev's host generator. Returns (output, h_n, c_n or None).
    """
    if mode not in RNN_MODES:
        raise ValueError(f"Expected mode in {sorted(RNN_MODES)}. Received: {mode!r}")
    x = _floating(_tensor(input))
    if x.ndim != 3:
        raise ValueError(
            "Expected a 3-D input (seq_len, batch, input_size) or, with batch_first, (batch, "
            f"seq_len, input_size). Received: shape {x.shape}"
        )
    if mode == "lstm":
        if not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise TypeError("Expected hx=(h0, c0) for an LSTM. Received: " + type(hx).__name__)
        h0, c0 = _tensor(hx[0], x), _tensor(hx[1], x)
    else:
        h0, c0 = _tensor(hx, x), None
    _same_float(x, h0, c0, *weights)
    if batch_first:
        x = ops.transpose(x, 0, 1)
    if dropout > 0.0 and training and num_layers > 1:
        dirs = 2 if bidirectional else 1
        per = len(weights) // (num_layers * dirs)
        hs, cs = [], []
        for layer in range(num_layers):
            s = slice(layer * dirs, (layer + 1) * dirs)
            x, h, c = _rnn_layers(
                mode,
                x,
                h0[s],
                None if c0 is None else c0[s],
                weights[layer * dirs * per : (layer + 1) * dirs * per],
                1,
                bidirectional,
            )
            hs.append(h)
            cs.append(c)
            if layer < num_layers - 1:
                x = _dropout(x, dropout)
        h_n = ops.concat(hs, axis=0)
        c_n = None if c0 is None else ops.concat(cs, axis=0)
    else:
        x, h_n, c_n = _rnn_layers(mode, x, h0, c0, list(weights), num_layers, bidirectional)
    if batch_first:
        x = ops.transpose(x, 0, 1)
    return x, h_n, c_n
