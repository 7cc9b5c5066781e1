"""Expected values for the conformance suite, computed with PaddlePaddle's own API (not
through multidev), on the CPU place. The entries not written here are Paddle's functions of
the names the suite uses (``multidev.testing.reference``)."""

from __future__ import annotations

import warnings

from multidev.testing import reference as ref

from . import cnn_reference, sequence_reference

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="No ccache found")
    import paddle

import paddle.nn.functional as F

__all__ = ["OPS"]

OPS = ref.native_table(
    # Paddle reads uint16 data as bfloat16 and gives bfloat16 tensors to NumPy as uint16
    ref.bfloat16_bits(lambda a: paddle.to_tensor(a, place=paddle.CPUPlace())),
    ref.bfloat16_numpy(lambda t: t.numpy(), lambda t: t.dtype == paddle.bfloat16),
    {
        # Paddle's linear takes the weight as (in_features, out_features)
        "linear": lambda x, w, b: F.linear(x, paddle.transpose(w, [1, 0]), b),
        # native interop: what Paddle's own tools see of net.native
        "native_parameters": lambda module: list(module.parameters()),
        "native_sgd_step": ref.eager_sgd_step(
            lambda module, lr: paddle.optimizer.SGD(
                learning_rate=lr, parameters=module.parameters()
            ),
            paddle.nn.Layer.clear_gradients,
            F.mse_loss,
        ),
    },
    F,
    paddle,
    modules=[sequence_reference, cnn_reference],
    reduce_keywords=("axis", "keepdim"),
    axes=list,
    grads=ref.tape_grads(lambda t: setattr(t, "stop_gradient", False)),  # by Paddle's autograd
    losses=(F.mse_loss, F.cross_entropy),
)
