"""Every native op, declared once: the arguments the core passes, what the core has done to
the dtypes before the call, and the names frameworks give the op.

The device rule is the same for every op: the core hands an op native tensors on one device
(mixing devices or backends raises before the call) and the result stays on that device. The
NumPy reference meaning of an op is NumPy's function found by its ``natives`` (``np.arccos``
for ``acos``), or the NumPy adapter's lowering where ``natives`` is empty.

``multidev.contract.op_table`` builds an adapter's table from these declarations: a lowering the
adapter gives, else a function of that name in one of the adapter's lowering modules, else the
first of ``natives`` found on the framework's namespaces. An adapter thus writes a line only
where its framework spells an op differently.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["PROMOTIONS", "SPECS", "OpSpec"]

#: what the core has done to the operands' dtypes before it calls an op
PROMOTIONS = {
    "same": "operands cast to one dtype by PyTorch's promotion rules; the result has it",
    "float": "bool and integer input cast to float32 first; the result is floating",
    "keep": "any dtype; the result has the input's dtype",
    "bool": "any dtype (bool for logical ops); the result is bool",
    "int": "bool or integer operands of one dtype; the result has it",
    "index": "the result (or each result) is int64 indices",
    "layer": "floating operands of one dtype (int64 indices where named); the result has it",
    "complex": "a complex operand (the 'complex' capability); real and imag give its parts' "
    "real dtype, conj keeps it",
}


class OpSpec(NamedTuple):
    """One native op: ``args``, the native call's parameters (native tensors, Python values
    where named); ``promotion``, a key of ``PROMOTIONS``; ``natives``, the names it goes by in
    frameworks' namespaces, tried in order (empty: every adapter lowers it);
    ``optional``: the core composes it from other ops where an adapter lacks it."""

    name: str
    args: str
    promotion: str
    natives: tuple[str, ...]
    optional: bool = False


SPECS: dict[str, OpSpec] = {}


def _declare(args: str, promotion: str, names: str, native: bool = True, optional: bool = False):
    """Declare the ops in ``names`` (``name|alias|alias`` each, space-separated)."""
    for entry in names.split():
        name, *aliases = entry.split("|")
        natives = (name, *aliases) if native else ()
        SPECS[name] = OpSpec(name, args, promotion, natives, optional)


# elementwise; the Python-operator ones default to the operator (contract.PythonOperatorOps)
_declare("(x1, x2)", "same", "add subtract multiply divide floor_divide remainder pow", False)
_declare("(x1, x2)", "same", "maximum minimum")
_declare("(x1, x2)", "bool", "equal not_equal less less_equal greater greater_equal", False)
_declare("(x1, x2)", "bool", "logical_and logical_or")
_declare("(x)", "bool", "logical_not")
_declare("(x)", "keep", "negative", False)
_declare("(x)", "keep", "copy|clone")
_declare("(x)", "keep", "abs relu")  # on bool and unsigned input the core copies instead
_declare("(x)", "float", "exp log log1p sqrt sin cos tanh sigmoid reciprocal")
_declare("(x)", "float", "acos|arccos acosh|arccosh asin|arcsin asinh|arcsinh atan|arctan")
_declare("(x)", "float", "atanh|arctanh cosh sinh tan expm1 log2 log10")
_declare("(x)", "keep", "floor ceil trunc round sign")
_declare("(x)", "bool", "isnan|is_nan isinf|is_inf isfinite|is_finite signbit")
_declare("(x1, x2)", "float", "atan2|arctan2 hypot copysign logaddexp nextafter")
_declare("(x1, x2)", "int", "bitwise_and bitwise_or bitwise_xor")
_declare("(x1, x2)", "int", "bitwise_left_shift|left_shift bitwise_right_shift|right_shift")
_declare("(x)", "int", "bitwise_invert|invert|bitwise_not")
_declare("(x)", "complex", "real imag conj")  # called only where the backend has "complex"
_declare("(x1, x2)", "same", "matmul", False)
_declare("(x1, x2)", "same", "getitem", False)  # (x, key): ints, slices, None, ..., tensors
# reductions: axis None reduces every axis, () none; a native found by name is made into the
# (x, axis, keepdims) op by the adapter's ``reduce`` (``contract.op_table``)
_declare("(x, axis, keepdims)", "keep", "sum|reduce_sum max|reduce_max min|reduce_min")
_declare("(x, axis, keepdims)", "keep", "prod|reduce_prod all|reduce_all any|reduce_any")
_declare("(x, axis, keepdims)", "float", "mean|reduce_mean")
_declare("(x, axis)", "index", "argmax argmin")  # axis: int or None (the core keeps dims)
# shape, joining, selection
_declare("(x, shape)", "keep", "reshape")
_declare("(x, axes)", "keep", "permute_dims|permute|transpose flip")
_declare("(xs, axis)", "same", "concat|cat|concatenate stack")
_declare("(cond, x1, x2)", "same", "where")
_declare("(x, min, max)", "keep", "clip", False)
_declare("(x, axis)", "float", "softmax log_softmax")
_declare("(x, dtype)", "keep", "astype", False)
_declare("(x, axis)", "keep", "cumulative_sum", False)
_declare("(x, axis)", "keep", "cumulative_prod|cumprod")
_declare("(x, axis, descending)", "keep", "sort", False)
_declare("(x, axis, descending)", "index", "argsort", False)
_declare("(x1, x2, side)", "index", "searchsorted", False)
_declare("(x)", "index", "nonzero", False)
_declare("(x, indices, axis)", "keep", "take", False)
_declare("(x, indices, axis)", "keep", "take_along_axis|take_along_dim")  # shapes equal off axis
_declare("(x, shifts, axes)", "keep", "roll")
_declare("(x, shape)", "keep", "broadcast_to", False)
_declare("(x, repeats, axis)", "keep", "repeat", False)
_declare("(x, reps)", "keep", "tile")
_declare("(x, k)", "keep", "tril triu")
# (equation, *operands): the equation checked and without spaces; operands of one dtype
_declare("(equation, *operands)", "same", "einsum")
_declare("(x)", "keep", "to_dlpack", False)
_declare("(obj)", "keep", "from_dlpack")
# layer ops (multidev.nn): each adapter lowers them (arguments already checked and explicit)
_declare("(x, weight (out, in), bias or None)", "layer", "linear", False, optional=True)
_declare("(x, w, b, stride, pads, dilation, groups)", "layer", "conv2d", False)
_declare(
    "(x, w, b, stride, padding, output_padding, dilation, groups)",
    "layer",
    "conv_transpose2d",
    False,
)
_declare("(x, kernel, stride, pads)", "layer", "max_pool2d avg_pool2d", False)
_declare("(x, output_size)", "layer", "adaptive_avg_pool2d", False, optional=True)
_declare("(x, mean or None (training), var, weight, bias, eps)", "layer", "batch_norm", False)
_declare("(x, groups, weight, bias, eps)", "layer", "group_norm", False, optional=True)
_declare(  # PyTorch's resampling (sizes or scales checked, one per spatial axis)
    "(x, size or None, scale_factor or None, mode, align_corners, recompute_scale_factor)",
    "layer",
    "interpolate",
    False,
    optional=True,
)
_declare(  # -> (y, new running mean, new running var): the fused kernel's batch statistics
    "(x, weight, bias, eps, running_mean or None, running_var or None, momentum)",
    "layer",
    "batch_norm_train",
    False,
    optional=True,
)
_declare("(x, pads ((before, after) per axis), mode, value)", "keep", "pad", False)
_declare("(weight (n, d), int64 indices)", "layer", "embedding", False)
_declare("(int64 indices, num_classes)", "index", "one_hot", False)
_declare("(x)", "keep", "stop_gradient", False)  # the same values without a gradient path
_declare("(x, weight, bias, eps)", "layer", "layer_norm", False)  # over the last axis
_declare(  # the fused softmax cross-entropy: -> per-sample (N,), or its mean or sum (0-d)
    "(logits (N, C), int64 labels (N,), reduction 'mean' | 'sum' | 'none')",
    "layer",
    "cross_entropy",
    False,
    optional=True,
)
_declare("(x, tanh approximation?)", "layer", "gelu", False)
_declare(
    "(q, k, v, additive mask or None, scale)",
    "layer",
    "scaled_dot_product_attention",
    False,
    optional=True,
)
_declare(
    "(mode, x (T, N, I), h0, c0 or None, weights, num_layers, bidirectional)",
    "layer",
    "rnn",
    False,
    optional=True,
)  # -> (y, h, c or None)
_declare(
    "(mode, x, h0 (P features), c0, weights ending with w_hr per layer, num_layers, bidirectional)",
    "layer",
    "rnn_projected",
    False,
    optional=True,
)  # an LSTM with a projection (proj_size): -> (y, h, c)
