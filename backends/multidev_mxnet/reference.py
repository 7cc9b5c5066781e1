"""The conformance suite's ops written directly in MXNet's NumPy interface (not through
multidev): NumPy arrays in, NumPy arrays out.

Each function runs with MXNet's NumPy semantics on (``mx.util.use_np``), so the module works
whether or not the multidev adapter has been set up. ``log_softmax`` runs MXNet's kernel in
float64 and rounds the result back: in float32 that kernel is only accurate to about 1e-4
relative, short of the suite's tolerance.
"""

from __future__ import annotations

from collections.abc import Callable

import mxnet as mx
import numpy as np
from mxnet import gluon, npx
from mxnet import np as mnp

__all__ = ["OPS"]


def _mx(a) -> mnp.ndarray:
    a = np.asarray(a)
    return mnp.array(a, dtype=a.dtype)


def _out(x) -> np.ndarray:
    return x.asnumpy()


def _binary(fn: Callable) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    return lambda a, b: _out(fn(_mx(a), _mx(b)))


def _unary(fn: Callable) -> Callable[[np.ndarray], np.ndarray]:
    return lambda a: _out(fn(_mx(a)))


def _log_softmax(a, axis):
    x = _mx(a)
    return _out(npx.log_softmax(x.astype(np.float64), axis=axis).astype(x.dtype))


def _linear(x, weight, bias):
    w = _mx(weight)
    if bias is None:
        y = npx.fully_connected(_mx(x), w, num_hidden=w.shape[0], no_bias=True, flatten=False)
    else:
        y = npx.fully_connected(_mx(x), w, _mx(bias), num_hidden=w.shape[0], flatten=False)
    return _out(y)


def _grads(fn, arrays, gy=None) -> tuple[np.ndarray, ...]:
    """Gradients of sum(fn(*arrays) * gy) (of fn(...) itself when gy is None) by mx.autograd."""
    xs = [_mx(a) for a in arrays]
    for x in xs:
        x.attach_grad()
    with mx.autograd.record():
        out = fn(*xs)
    out.backward(None if gy is None else _mx(gy))
    return tuple(_out(x.grad) for x in xs)


def _grad_linear(x, weight, bias, gy):
    def linear(a, w, b):
        return npx.fully_connected(a, w, b, num_hidden=w.shape[0], flatten=False)

    return _grads(linear, (x, weight, bias), gy)


def _grad_mse_loss(input, target):
    return _grads(lambda a, b: mnp.mean(mnp.square(a - b)), (input, target))[0]


def _grad_cross_entropy(logits, labels):
    labels = _mx(np.asarray(labels, dtype=np.int64))

    def loss(z):
        log_p = npx.log_softmax(z, axis=-1)
        return -mnp.mean(npx.pick(log_p, labels, axis=-1))

    return _grads(loss, (logits,))[0]


def _native_sgd_step(module: gluon.Block, x, y, lr: float) -> np.ndarray:
    """One step of a gluon Trainer with 'sgd' over module.collect_params() on the MSE of
    module(x) against y (gradients zeroed first); returns the loss."""
    params = module.collect_params()
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": lr})
    params.zero_grad()
    with mx.autograd.record():
        loss = mnp.mean(mnp.square(module(_mx(x)) - _mx(y)))
    loss.backward()
    trainer.step(1)
    return _out(loss)


_RAW: dict[str, Callable[..., np.ndarray]] = {
    "add": _binary(mnp.add),
    "subtract": _binary(mnp.subtract),
    "multiply": _binary(mnp.multiply),
    "divide": _binary(mnp.divide),
    "maximum": _binary(mnp.maximum),
    "matmul": _binary(mnp.matmul),
    "exp": _unary(mnp.exp),
    "log": _unary(mnp.log),
    "sqrt": _unary(mnp.sqrt),
    "abs": _unary(mnp.abs),
    "tanh": _unary(mnp.tanh),
    "sigmoid": _unary(npx.sigmoid),
    "relu": _unary(npx.relu),
    "softmax": lambda a, axis: _out(npx.softmax(_mx(a), axis=axis)),
    "log_softmax": _log_softmax,
    "sum": lambda a, axis, keepdims: _out(mnp.sum(_mx(a), axis=axis, keepdims=keepdims)),
    "mean": lambda a, axis, keepdims: _out(mnp.mean(_mx(a), axis=axis, keepdims=keepdims)),
    "max": lambda a, axis, keepdims: _out(mnp.max(_mx(a), axis=axis, keepdims=keepdims)),
    "argmax": lambda a, axis: _out(mnp.argmax(_mx(a), axis=axis)),
    "reshape": lambda a, shape: _out(mnp.reshape(_mx(a), shape)),
    "permute_dims": lambda a, axes: _out(mnp.transpose(_mx(a), axes)),
    "concat": lambda arrays, axis: _out(mnp.concatenate([_mx(a) for a in arrays], axis=axis)),
    "stack": lambda arrays, axis: _out(mnp.stack([_mx(a) for a in arrays], axis=axis)),
    "where": lambda cond, a, b: _out(mnp.where(_mx(cond), _mx(a), _mx(b))),
    "clip": lambda a, lo, hi: _out(mnp.clip(_mx(a), lo, hi)),
    "linear": _linear,
    # gradients by mx.autograd (gy: the output's gradient; losses are scalars)
    "grad_linear": _grad_linear,  # -> (grad x, grad weight, grad bias)
    "grad_relu": lambda x, gy: _grads(npx.relu, (x,), gy)[0],
    "grad_softmax": lambda x, axis, gy: _grads(lambda t: npx.softmax(t, axis=axis), (x,), gy)[0],
    "grad_mse_loss": _grad_mse_loss,
    "grad_cross_entropy": _grad_cross_entropy,
    # native interop: what MXNet's own tools see of net.native
    "native_parameters": lambda module: list(module.collect_params().values()),
    "native_sgd_step": _native_sgd_step,
}

#: name -> the op computed by MXNet on NumPy arrays, returning a NumPy array
OPS: dict[str, Callable[..., np.ndarray]] = {name: mx.util.use_np(fn) for name, fn in _RAW.items()}
