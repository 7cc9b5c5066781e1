"""How ``contract.op_table`` completes an adapter's table beyond its own lowerings: the
Python-operator defaults go through the adapter's ``wrap`` like the natives found by name."""

from __future__ import annotations

import types

import numpy as np

from multidev import contract


def _tagged(fn, name):
    def op(*args):
        return (name, fn(*args))

    return op


def test_wrap_applies_to_the_python_operator_defaults_too():
    ops = contract.op_table(types.SimpleNamespace(exp=np.exp), wrap=_tagged)
    assert ops.add(2, 3) == ("add", 5)
    assert ops.less(2, 3) == ("less", True)
    assert ops.exp(0.0) == ("exp", 1.0)


def test_without_wrap_the_python_operators_are_plain():
    ops = contract.op_table(types.SimpleNamespace())
    assert ops.add(2, 3) == 5
    assert ops.getitem([1, 2], 1) == 2


def test_a_reduction_found_by_name_goes_through_the_adapters_reduce():
    def reduce(fn):
        return lambda x, axis, keepdims: ("reduced", fn(x, axis=axis, keepdims=keepdims))

    namespace = types.SimpleNamespace(reduce_sum=np.sum, mean=np.mean)
    ops = contract.op_table(namespace, reduce=reduce)
    assert ops.sum(np.ones((2, 3)), 1, False)[0] == "reduced"
    np.testing.assert_array_equal(ops.mean(np.ones((2, 3)), 1, True)[1], np.ones((2, 1)))


def test_without_reduce_no_reduction_is_taken_from_the_namespace():
    # np.sum takes (x, axis, dtype): called as (x, axis, keepdims) it would be wrong
    ops = contract.op_table(np)
    assert not hasattr(ops, "sum") and not hasattr(ops, "mean")


def test_a_table_without_log_softmax_gets_the_stable_composition_of_its_own_ops():
    def reduce(fn):
        return lambda x, axis, keepdims: fn(x, axis=axis, keepdims=keepdims)

    ops = contract.op_table(np, reduce=reduce)
    x = np.array([[1000.0, 0.0], [-5.0, 5.0]])  # exp(1000) overflows a naive log(softmax)
    shifted = x - x.max(axis=1, keepdims=True)
    expected = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(ops.log_softmax(x, 1), expected)
    assert np.isfinite(ops.log_softmax(x, 1)).all()


def test_the_composed_log_softmax_of_a_0d_tensor_is_zero():
    def reduce(fn):
        return lambda x, axis, keepdims: fn(x, axis=axis, keepdims=keepdims)

    out = contract.op_table(np, reduce=reduce).log_softmax(np.array(3.5), 0)
    assert out.shape == () and out == 0


def _nan_skipping_table():
    """A NumPy op table whose argmax/argmin skip NaN, as TensorFlow's and Paddle's kernels do."""

    def skipping(fn, fill):
        return lambda x, axis: fn(np.where(np.isnan(x), fill, x), axis=axis)

    return contract.op_table(
        np,
        reduce=lambda fn: lambda x, axis, keepdims: fn(x, axis=axis, keepdims=keepdims),
        argmax=skipping(np.argmax, -np.inf),
        argmin=skipping(np.argmin, np.inf),
        astype=lambda x, dt: x.astype(dt.numpy),
    )


def test_nan_first_makes_the_first_nan_win_argmax_and_argmin():
    a = np.array([[1.0, np.nan, 5.0, np.nan], [np.inf, 2.0, 3.0, 1.0]])
    for ask in (False, True):
        ops = _nan_skipping_table()
        assert ops.argmax(a, None) == 4  # the NaNs are skipped before: the inf wins
        contract.nan_first(ops, lambda x: x.dtype.kind == "f", ask=ask)
        for name in ("argmax", "argmin"):
            for axis in (None, 0, 1):
                expected = getattr(np, name)(a, axis=axis)
                np.testing.assert_array_equal(getattr(ops, name)(a, axis), expected)
        assert ops.argmin(np.array(np.nan), 0) == 0  # 0-d: its only element
        assert ops.argmax(np.arange(3), None) == 2  # not floating: the table's own op
