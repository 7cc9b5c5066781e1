"""Activation functions, layers as functions, and losses on md Tensors."""

from __future__ import annotations

from typing import Any

from .. import amp as _amp
from .. import dtypes as _dt
from .. import ops as _ops
from ..dispatch import as_tensor as _tensor
from ..dispatch import call as _call
from ..dispatch import check_same as _check_same
from ..dispatch import floating as _floating
from ..dispatch import new_tensor as _new_tensor
from ..dispatch import on as _on
from ..dispatch import wrap as _wrap
from ..random import dropout_mask
from ..tensors import Tensor

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "batch_norm",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "celu",
    "conv1d",
    "conv2d",
    "conv_transpose2d",
    "cosine_embedding_loss",
    "cosine_similarity",
    "cross_entropy",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "elu",
    "embedding",
    "fold",
    "gaussian_nll_loss",
    "gelu",
    "glu",
    "group_norm",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hinge_embedding_loss",
    "huber_loss",
    "instance_norm",
    "interpolate",
    "kl_div",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "logsigmoid",
    "margin_ranking_loss",
    "max_pool1d",
    "max_pool2d",
    "mish",
    "mse_loss",
    "multilabel_soft_margin_loss",
    "nll_loss",
    "normalize",
    "one_hot",
    "pad",
    "pairwise_distance",
    "pixel_shuffle",
    "pixel_unshuffle",
    "poisson_nll_loss",
    "prelu",
    "relu",
    "relu6",
    "rms_norm",
    "scaled_dot_product_attention",
    "selu",
    "sigmoid",
    "silu",
    "smooth_l1_loss",
    "soft_margin_loss",
    "softmax",
    "softmin",
    "softplus",
    "softsign",
    "tanh",
    "tanhshrink",
    "threshold",
    "triplet_margin_loss",
    "unfold",
]


def tanh(x) -> Tensor:
    """Elementwise hyperbolic tangent."""
    x = _floating(_tensor(x))
    return _wrap(x, _call(x, "tanh", x._native), x._dtype)


def _normalize(name: str, x: Any, dim: int) -> Tensor:
    """``name`` (softmax or log_softmax) of ``x`` along ``dim``; over an empty axis the result is
    empty (of ``x``'s shape) on every backend, without calling a kernel that would reduce nothing."""
    x = _floating(_tensor(x))
    shape = x.shape
    d = _ops._axis(x, dim)
    if not shape:  # a 0-d tensor: its one element as a 1-d tensor (TensorFlow's kernels need one)
        return _normalize(name, x.reshape((1,)), 0).reshape(())
    if not shape[d]:
        return x * 0
    return _wrap(x, _call(x, name, x._native, d), x._dtype)


def softmax(x, dim: int = -1) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim``, computed stably; ``dim`` in ``[-ndim, ndim)`` (a 0-d
    tensor takes 0 or -1); an empty axis gives an empty result. Raises ValueError for another
    ``dim``."""
    if _amp.ACTIVE:
        (x,) = _amp.cast("softmax", x)
    return _normalize("softmax", x, dim)


def softmin(x, dim: int = -1) -> Tensor:
    """``softmax(-x)`` along ``dim``."""
    return softmax(-_tensor(x), dim)


def log_softmax(x, dim: int = -1) -> Tensor:
    """log(softmax(x)) along ``dim``, computed stably; ``dim`` as in ``softmax``."""
    if _amp.ACTIVE:
        (x,) = _amp.cast("log_softmax", x)
    return _normalize("log_softmax", x, dim)


# ---------------------------------------------------------------- linear

#: adapter -> native ``linear(x, weight, bias_or_None)``, found once per adapter
_linear_fns: dict[Any, Any] = {}


def _linear_fn(bk) -> Any:
    """The adapter's own ``linear`` op, else ``x @ w.T + b`` from its matmul and add."""
    fn = getattr(bk.ops, "linear", None)
    if fn is None:
        ops = bk.ops
        matmul, permute_dims, add = ops.matmul, ops.permute_dims, ops.add

        def fn(x, w, b):
            y = matmul(x, permute_dims(w, (1, 0)))
            return y if b is None else add(y, b)

    _linear_fns[bk] = fn
    return fn


def _linear_operands(x: Tensor, weight: Tensor, bias: Tensor | None):
    """Natives of one backend, device and (promoted, floating) dtype, or a clear error."""
    _check_same(x, weight)
    dt = _dt.result_type(x._dtype, weight._dtype)
    if bias is not None:
        _check_same(x, bias)
        dt = _dt.result_type(dt, bias._dtype)
    if dt.kind != "f":
        dt = _dt.float32
    natives: list[Any] = []
    for t in (x, weight, bias):
        if t is None:
            natives.append(None)
        elif t._dtype is dt:
            natives.append(t._native)
        else:
            natives.append(_call(t, "astype", t._native, dt))
    return (*natives, dt)


def _linear_error(x: Tensor, weight: Tensor, bias: Tensor | None) -> ValueError | None:
    wshape = weight.shape
    if len(wshape) != 2:
        return ValueError(
            f"Expected a 2-D weight of shape (out_features, in_features). Received: shape {wshape}"
        )
    xshape = x.shape
    if not xshape or xshape[-1] != wshape[1]:
        return ValueError(
            f"Expected input whose last dimension is in_features={wshape[1]} (weight of shape "
            f"{wshape}). Received: input of shape {xshape}. Check the layer's in_features or "
            "flatten the input first."
        )
    if bias is not None and bias.shape != (wshape[0],):
        return ValueError(
            f"Expected a bias of shape ({wshape[0]},) for a weight of shape {wshape}. "
            f"Received: bias of shape {bias.shape}"
        )
    return None


def linear(x, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias``, with ``weight`` of shape (out_features, in_features).

    Uses the framework's own fused linear op where the adapter provides one.
    """
    if _amp.ACTIVE:
        x, weight, bias = _amp.cast("linear", x, weight, bias)
    if not isinstance(x, Tensor):
        x = _tensor(x, weight)
    bk = x._bk
    dev = x._dev
    dt = x._dtype
    if (
        weight._bk is bk
        and weight._dev is dev
        and weight._dtype is dt
        and dt.kind == "f"
        and (bias is None or (bias._bk is bk and bias._dev is dev and bias._dtype is dt))
    ):
        a, w, b = x._native, weight._native, None if bias is None else bias._native
    else:
        a, w, b, dt = _linear_operands(x, weight, bias)
    fn = _linear_fns.get(bk) or _linear_fn(bk)
    try:
        if bk.scoped_devices and dev in bk.scoped_devices:
            with bk.scope(dev):
                out = fn(a, w, b)
        else:
            out = fn(a, w, b)
    except Exception as e:
        err = _linear_error(x, weight, bias)
        if err is None:
            raise
        raise err from e
    return _new_tensor(out, bk, dev, dt)


# ---------------------------------------------------------------- dropout


def dropout(x, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p).

    The mask comes from multidev's host generator, so a seeded run drops the same elements on
    every backend. Returns ``x`` unchanged when ``training`` is false or ``p`` is 0.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"Expected a dropout probability in [0, 1]. Received: {p}")
    return _drop(_tensor(x), p, training, 0)


def _drop(x: Tensor, p: float, training: bool, spatial: int) -> Tensor:
    """``x`` times inverted-dropout multipliers, one draw per element, or per (sample,
    channel) when the last ``spatial`` dimensions are positions that share it."""
    if not training or p == 0.0:
        return x
    x = _floating(x)
    if p == 1.0:
        return x * 0.0
    shape = x.shape[: x.ndim - spatial] + (1,) * spatial
    mask = dropout_mask(shape, p, x._dtype.numpy)
    bk = x._bk
    return x * _new_tensor(_on(bk, x._dev, bk.from_numpy, mask, x._dev), bk, x._dev, x._dtype)


def _channel_dropout(x: Any, p: float, training: bool, spatial: int, fn: str) -> Tensor:
    """Zero whole channels: one draw per (sample, channel) of an input whose last ``spatial``
    dimensions are positions, batched or not."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"Expected a dropout probability in [0, 1]. Received: {p}")
    x = _tensor(x)
    if x.ndim not in (spatial + 1, spatial + 2):
        raise ValueError(
            f"Expected a {spatial + 1}-D (C, ...) or {spatial + 2}-D (N, C, ...) input for {fn}. "
            f"Received: shape {x.shape}"
        )
    return _drop(x, p, training, spatial)


def dropout1d(x, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each channel of an (N, C, L) or (C, L) input with probability ``p`` and scale the
    rest by 1 / (1 - p)."""
    return _channel_dropout(x, p, training, 1, "dropout1d")


def dropout2d(x, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each channel of an (N, C, H, W) or (C, H, W) input with probability ``p`` and
    scale the rest by 1 / (1 - p)."""
    return _channel_dropout(x, p, training, 2, "dropout2d")


def dropout3d(x, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each channel of an (N, C, D, H, W) or (C, D, H, W) input with probability ``p``
    and scale the rest by 1 / (1 - p)."""
    return _channel_dropout(x, p, training, 3, "dropout3d")


# ---------------------------------------------------------------- losses

from .activations import (  # noqa: E402
    celu,
    cosine_similarity,
    elu,
    glu,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    logsigmoid,
    mish,
    normalize,
    pixel_shuffle,
    pixel_unshuffle,
    prelu,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softplus,
    softsign,
    tanhshrink,
    threshold,
)
from .embedding_losses import (  # noqa: E402
    cosine_embedding_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multilabel_soft_margin_loss,
    pairwise_distance,
    poisson_nll_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from .functional_cnn import (  # noqa: E402
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    batch_norm,
    conv1d,
    conv2d,
    conv_transpose2d,
    fold,
    group_norm,
    instance_norm,
    max_pool1d,
    max_pool2d,
    pad,
    unfold,
)
from .losses import (  # noqa: E402
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from .resample import interpolate  # noqa: E402
from .sequence_functional import (  # noqa: E402
    embedding,
    gelu,
    layer_norm,
    one_hot,
    rms_norm,
    scaled_dot_product_attention,
)
