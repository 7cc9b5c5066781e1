"""multidev's conformance suite: one set of checks run unchanged on every backend adapter.

Run it on the active backend with ``MULTIDEV_BACKEND=torch pytest --pyargs multidev.testing`` or
``multidev conformance --backend torch``. Each test module is a section (``test_ops.py`` is
"ops"). Expected values come from the NumPy reference backend and, where the adapter names a
``reference`` module, from the same computation written in the framework's own code.

A third-party adapter runs the same suite: register it in the ``multidev.backends`` entry-point
group, declare its ``capabilities`` (tests needing a missing one are skipped with that name),
and list known failures in ``conformance_xfails`` (``{test name: reason}``); the report shows them.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np

__all__ = ["REFERENCE_KEYS", "SECTIONS", "native_reference", "sample_values", "suite_path"]

#: Report sections, in the order the matrix shows them.
SECTIONS = (
    "backend",
    "device",
    "placement",
    "tensor",
    "ops",
    "edges",
    "numpy_parity",
    "array_api",
    "linalg",
    "fft",
    "array_object",
    "torch_fluency",
    "block",
    "parameters",
    "init",
    "deferred",
    "custom",
    "checkpoint",
    "autograd",
    "grad_mode",
    "native_interop",
    "recurrent",
    "attention",
    "jit",
    "conv",
    "norm",
    "gpu",
)


#: What an adapter's native reference module (``OPS``) provides: the same computations
#: written in the framework's own code, on NumPy arrays in and out.
REFERENCE_KEYS = (
    *("add", "subtract", "multiply", "divide", "maximum", "matmul"),
    *("exp", "log", "log1p", "sqrt", "abs", "tanh", "sigmoid", "relu", "softmax", "log_softmax"),
    *("sum", "mean", "max", "argmax", "reshape", "permute_dims", "concat", "stack"),
    *("where", "clip", "linear", "conv2d"),
    *("grad_linear", "grad_relu", "grad_softmax", "grad_mse_loss", "grad_cross_entropy"),
    *("native_parameters", "native_sgd_step"),
    *("rnn_layer", "attention", "layer_norm", "gelu", "embedding"),
    *("max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "batch_norm_train", "group_norm"),
)


def suite_path() -> Path:
    """Folder holding the conformance test modules."""
    return Path(__file__).parent


def native_reference(bk) -> dict | None:
    """The adapter's native reference ops (``{name: fn(numpy arrays) -> numpy array}``), or None."""
    mod = getattr(bk, "reference", None)
    if not mod:
        return None
    return importlib.import_module(mod).OPS


def sample_values(dt, rng: np.random.Generator, shape: tuple[int, ...] = (3, 4)) -> np.ndarray:
    """Random values of md dtype ``dt`` with the edge cases a bit-exact round trip must keep:
    -0.0, inf and NaN for floating point (at least 3 elements), the minimum and maximum for
    integers (at least 2)."""
    if dt.kind == "b":
        return rng.random(shape) > 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt.numpy)
        out = rng.integers(info.min, info.max, shape, endpoint=True).astype(dt.numpy)
        out.flat[:2] = (info.min, info.max)
        return out
    out = rng.standard_normal(shape).astype(np.float32).astype(dt.numpy)
    out.flat[:3] = (-0.0, np.inf, np.nan)
    return out
