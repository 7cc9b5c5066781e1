"""The conformance suite's ops written directly in MXNet's NumPy interface (not through
multidev): NumPy arrays in, NumPy arrays out.

Each function runs with MXNet's NumPy semantics on (``mx.util.use_np``), so the module works
whether or not the multidev adapter has been set up. ``log_softmax`` runs MXNet's kernel in
float64 and rounds the result back: in float32 that kernel is only accurate to about 1e-4
relative, short of the suite's tolerance.
"""

from __future__ import annotations

import mxnet as mx
import numpy as np
from mxnet import gluon, npx
from mxnet import np as mnp

from multidev.testing.reference import eager_sgd_step, native_table, tape_grads

from . import cnn_reference, sequence_reference

__all__ = ["OPS"]


def _mse(a, b):
    return mnp.mean(mnp.square(a - b))


OPS = {
    name: mx.util.use_np(fn)
    for name, fn in native_table(
        lambda a: mnp.array(a, dtype=a.dtype),  # a NumPy array (native_table converts no other)
        lambda x: x.asnumpy(),
        {
            "conv2d": lambda x, w, b, s, p, d, g: npx.convolution(
                x,
                w,
                b,
                kernel=w.shape[2:],
                stride=s,
                dilate=d,
                pad=p,
                num_filter=w.shape[0],
                num_group=g,
                no_bias=False,
                layout="NCHW",
            ),
            "softmax": lambda x, axis: npx.softmax(x, axis=axis),
            "log_softmax": lambda x, axis: (  # in float64: see the module docstring
                npx.log_softmax(x.astype(np.float64), axis=axis).astype(x.dtype)
            ),
            "linear": lambda x, w, b: npx.fully_connected(
                x, w, b, num_hidden=w.shape[0], no_bias=b is None, flatten=False
            ),
            # native interop: what MXNet's own tools see of net.native
            "native_parameters": lambda module: list(module.collect_params().values()),
            # a gluon Trainer with 'sgd' over module.collect_params()
            "native_sgd_step": eager_sgd_step(
                lambda module, lr: gluon.Trainer(
                    module.collect_params(), "sgd", {"learning_rate": lr}
                ),
                lambda module: module.collect_params().zero_grad(),
                _mse,
                mx.autograd.record,
                lambda trainer: trainer.step(1),
            ),
        },
        mnp,
        npx,
        modules=[sequence_reference, cnn_reference],
        grads=tape_grads(lambda x: x.attach_grad(), mx.autograd.record),  # by mx.autograd
        losses=(_mse, lambda z, y: -mnp.mean(npx.pick(npx.log_softmax(z, axis=-1), y, axis=-1))),
    ).items()
}
