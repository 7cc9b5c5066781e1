"""Operands whose shapes do not fit an op raise ``md.ShapeError`` (a ValueError) on every
backend, naming the op and the operands' shapes, instead of the framework's own error
(MXNetError, InvalidArgumentError, RuntimeError, Paddle's C++ text); an in-place op or a
write that does not fit leaves the tensor as it was. Shapes that fit still give results."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import multidev as md
from multidev import dispatch, nn
from multidev.nn import functional as F


def f32(*shape: int) -> md.Tensor:
    return md.asarray(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 1)


def i32(*shape: int) -> md.Tensor:
    return md.asarray(np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape) + 1)


def bools(*shape: int) -> md.Tensor:
    return md.asarray(np.arange(int(np.prod(shape))).reshape(shape) % 2 == 0)


def _plain(x: md.Tensor) -> md.Tensor:
    """``x`` as an instance of ``md.Tensor`` itself (not its backend's class), whose operators
    take the generic path."""
    return md.Tensor(x.native, x._bk, x.device, x.dtype)


_OPERATORS = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "divide": operator.truediv,
    "floor_divide": operator.floordiv,
    "remainder": operator.mod,
    "pow": operator.pow,
    "equal": operator.eq,
    "not_equal": operator.ne,
    "less": operator.lt,
    "less_equal": operator.le,
    "greater": operator.gt,
    "greater_equal": operator.ge,
}

#: a Python list operand (converted by multidev; not a tensor)
_PAIR = [1.0, 2.0]

#: name -> (call, the op the error must name, the shapes it must name)
CASES: dict[str, tuple[Callable[[], Any], str, tuple[tuple[int, ...], ...]]] = {
    **{
        f"operator_{name}": (lambda op=op: op(f32(2, 3), f32(4)), name, ((2, 3), (4,)))
        for name, op in _OPERATORS.items()
    },
    **{
        f"operator_{name}_of_plain_tensors": (
            lambda op=op: op(_plain(f32(2, 3)), _plain(f32(4))),
            name,
            ((2, 3), (4,)),
        )
        for name, op in _OPERATORS.items()
        if name in ("add", "less")
    },
    "operator_add_of_batch_dims": (
        lambda: f32(2, 1, 3) + f32(4, 2, 3),
        "add",
        ((2, 1, 3), (4, 2, 3)),
    ),
    "operator_add_of_a_list": (lambda: f32(2, 3) + _PAIR, "add", ((2, 3), (2,))),
    "operator_subtract_from_a_list": (lambda: _PAIR - f32(2, 3), "subtract", ((2,), (2, 3))),
    "operator_and_of_ints": (lambda: i32(2, 3) & i32(4), "bitwise_and", ((2, 3), (4,))),
    "operator_or_of_bools": (lambda: bools(2, 3) | bools(4), "bitwise_or", ((2, 3), (4,))),
    "md_logical_xor": (
        lambda: md.logical_xor(bools(2, 3), bools(4)),
        "logical_xor",
        ((2, 3), (4,)),
    ),
    **{
        f"md_{name}": (lambda name=name: getattr(md, name)(f32(2, 3), f32(4)), name, ((2, 3), (4,)))
        for name in (
            "add",
            "subtract",
            "multiply",
            "divide",
            "maximum",
            "minimum",
            "atan2",
            "hypot",
            "logaddexp",
            "copysign",
            "equal",
            "less",
        )
    },
    "md_bitwise_xor": (lambda: md.bitwise_xor(i32(2, 3), i32(4)), "bitwise_xor", ((2, 3), (4,))),
    "md_logical_and": (
        lambda: md.logical_and(bools(2, 3), bools(4)),
        "logical_and",
        ((2, 3), (4,)),
    ),
    "md_where": (lambda: md.where(bools(2, 3), f32(2, 3), f32(4)), "where", ((2, 3), (2, 3), (4,))),
    "matmul_2x3_2x3": (lambda: md.matmul(f32(2, 3), f32(2, 3)), "matmul", ((2, 3), (2, 3))),
    "operator_matmul_2x3_2x3": (lambda: f32(2, 3) @ f32(2, 3), "matmul", ((2, 3), (2, 3))),
    "matmul_of_plain_tensors": (
        lambda: _plain(f32(2, 3)) @ _plain(f32(2, 3)),
        "matmul",
        ((2, 3), (2, 3)),
    ),
    "matmul_1d_mismatch": (lambda: md.matmul(f32(3), f32(4)), "matmul", ((3,), (4,))),
    "matmul_matrix_vector": (lambda: md.matmul(f32(2, 3), f32(4)), "matmul", ((2, 3), (4,))),
    "matmul_batch_dims": (
        lambda: md.matmul(f32(2, 3, 4), f32(5, 4, 2)),
        "matmul",
        ((2, 3, 4), (5, 4, 2)),
    ),
    "linalg_matmul": (lambda: md.linalg.matmul(f32(2, 3), f32(2, 3)), "matmul", ((2, 3), (2, 3))),
    "mm": (lambda: md.mm(f32(2, 3), f32(2, 3)), "matmul", ((2, 3), (2, 3))),
    "bmm_batch": (lambda: md.bmm(f32(2, 2, 3), f32(3, 3, 2)), "matmul", ((2, 2, 3), (3, 3, 2))),
    "dot_lengths": (lambda: md.dot(f32(3), f32(2)), "dot", ((3,), (2,))),
    "dot_matrix": (lambda: md.dot(f32(2, 3), f32(2, 3)), "dot", ((2, 3), (2, 3))),
    "mv_length": (lambda: md.mv(f32(2, 3), f32(2)), "mv", ((2, 3), (2,))),
    "concat": (lambda: md.concat([f32(2, 3), f32(3, 2)]), "concat", ((2, 3), (3, 2))),
    "concat_of_ranks": (lambda: md.concat([f32(2, 3), f32(4)]), "concat", ((2, 3), (4,))),
    "stack": (lambda: md.stack([f32(2, 3), f32(3, 2)]), "stack", ((2, 3), (3, 2))),
    "stack_of_sizes": (lambda: md.stack([f32(2, 3), f32(2, 2)], axis=1), "stack", ((2, 3), (2, 2))),
    "reshape": (lambda: md.reshape(f32(2, 3), (4,)), "reshape", ((2, 3), (4,))),
    "method_reshape": (lambda: f32(2, 3).reshape(5), "reshape", ((2, 3), (5,))),
    "broadcast_to": (lambda: md.broadcast_to(f32(2, 3), (4, 3)), "broadcast_to", ((2, 3), (4, 3))),
    "broadcast_arrays": (
        lambda: md.broadcast_arrays(f32(2, 3), f32(4)),
        "broadcast_arrays",
        ((2, 3), (4,)),
    ),
    "vecdot": (lambda: md.vecdot(f32(2, 3), f32(4)), "vecdot", ((2, 3), (4,))),
    "tensordot": (
        lambda: md.tensordot(f32(2, 3), f32(2, 3), axes=1),
        "tensordot",
        ((2, 3), (2, 3)),
    ),
    "linalg_solve": (lambda: md.linalg.solve(md.eye(3), f32(4)), "linalg.solve", ((3, 3), (4,))),
    "linalg_inv_of_non_square": (lambda: md.linalg.inv(f32(2, 3)), "linalg.inv", ((2, 3),)),
    "linalg_outer": (lambda: md.linalg.outer(f32(2, 3), f32(4)), "linalg.outer", ((2, 3), (4,))),
    "tril_of_1d": (lambda: md.tril(f32(4)), "tril", ((4,),)),
    "triu_of_1d": (lambda: md.triu(f32(4)), "triu", ((4,),)),
    "unstack_of_0d": (lambda: md.unstack(md.asarray(1.0)), "unstack", ((),)),
    "repeat_with_counts_of_a_wrong_shape": (
        lambda: md.repeat(f32(2, 3), md.asarray([1, 2, 3, 4]), axis=1),
        "repeat",
        ((2, 3), (4,)),
    ),
    "meshgrid_of_2d": (lambda: md.meshgrid(f32(2, 3), f32(4)), "meshgrid", ((2, 3), (4,))),
    "take_along_axis": (
        lambda: md.take_along_axis(f32(2, 3), md.zeros((4, 3), dtype=md.int64), axis=1),
        "take_along_axis",
        ((2, 3), (4, 3)),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_an_op_of_shapes_that_do_not_fit_raises_shape_error_naming_op_and_shapes(name):
    fn, op, shapes = CASES[name]
    with pytest.raises(md.ShapeError) as info:
        fn()
    err = info.value
    assert isinstance(err, ValueError)
    assert err.op == op
    assert err.shapes == shapes
    message = str(err)
    assert op in message, message
    for shape in shapes:
        assert str(shape) in message, message
    assert "Expected" in message and "Received" in message, message


def test_shape_error_is_exported_and_documented_as_a_value_error():
    assert md.ShapeError is md.errors.ShapeError
    assert "ShapeError" in md.__all__
    assert issubclass(md.ShapeError, ValueError)


@pytest.mark.parametrize(
    ("name", "op"),
    [
        ("add", operator.iadd),
        ("subtract", operator.isub),
        ("multiply", operator.imul),
        ("divide", operator.itruediv),
        ("matmul", operator.imatmul),
    ],
)
def test_an_in_place_op_of_shapes_that_do_not_broadcast_leaves_the_tensor_unchanged(name, op):
    x = f32(2, 3)
    before = x.numpy().copy()
    with pytest.raises(md.ShapeError, match=name) as info:
        op(x, f32(4))
    assert info.value.op == name
    assert x.shape == (2, 3)
    np.testing.assert_array_equal(x.numpy(), before)


@pytest.mark.parametrize(
    ("symbol", "op", "other"),
    [
        ("+=", operator.iadd, (2, 3)),
        ("*=", operator.imul, (2, 3)),
        ("@=", operator.imatmul, (3, 2)),
    ],
)
def test_an_in_place_op_whose_result_outgrows_the_tensor_names_the_op(symbol, op, other):
    x = f32(3)
    before = x.numpy().copy()
    with pytest.raises(md.ShapeError) as info:
        op(x, f32(*other))
    err = info.value
    assert err.op == symbol and err.shapes == ((3,), other)
    assert symbol in str(err) and str(other) in str(err) and "(3,)" in str(err)
    np.testing.assert_array_equal(x.numpy(), before)


def test_a_torch_style_in_place_method_whose_result_outgrows_the_tensor_names_it():
    x = f32(3)
    before = x.numpy().copy()
    with pytest.raises(md.ShapeError, match=r"add_.*\(3,\) and \(2, 3\)") as info:
        x.add_(f32(2, 3))
    assert info.value.op == "add_"
    np.testing.assert_array_equal(x.numpy(), before)


def test_in_place_ops_that_fit_still_broadcast_into_the_tensor():
    x = f32(2, 3)
    x += f32(3)
    np.testing.assert_array_equal(x.numpy(), np.arange(6).reshape(2, 3) + 2 + np.arange(3))
    x.mul_(f32(1, 3))
    assert x.shape == (2, 3)


@pytest.mark.parametrize(
    ("key", "value_shape", "target"),
    [
        (0, (4,), (3,)),
        ((slice(None), 0), (3,), (2,)),
        (Ellipsis, (2, 3, 1), (2, 3)),
        (slice(0, 1), (2, 3), (1, 3)),
    ],
)
def test_setitem_with_a_value_that_does_not_fit_raises_shape_error(key, value_shape, target):
    x = f32(2, 3)
    before = x.numpy().copy()
    with pytest.raises(md.ShapeError) as info:
        x[key] = f32(*value_shape)
    err = info.value
    assert err.op == "setitem" and err.shapes == ((2, 3), value_shape)
    assert str(target) in str(err) and str(value_shape) in str(err)
    np.testing.assert_array_equal(x.numpy(), before)


def test_setitem_with_a_value_that_broadcasts_still_writes():
    x = f32(2, 3)
    x[:, 1] = f32(1)
    x[0] = md.asarray([7.0, 8.0, 9.0])
    np.testing.assert_array_equal(x.numpy(), [[7, 8, 9], [4, 1, 6]])


def test_ops_of_shapes_that_broadcast_still_compute():
    np.testing.assert_array_equal((f32(2, 1) + f32(3)).numpy(), np.array([[2, 3, 4], [3, 4, 5]]))
    assert md.matmul(f32(5, 2, 3), f32(3, 4)).shape == (5, 2, 4)
    assert md.concat([f32(2, 3), f32(1, 3)]).shape == (3, 3)
    assert md.stack([f32(2, 3), f32(2, 3)], axis=2).shape == (2, 3, 2)


def test_the_shape_error_keeps_the_framework_error_as_its_cause():
    """Where the native op raised, its error stays reachable (``raise ... from``) for whoever
    debugs an adapter."""
    with pytest.raises(md.ShapeError) as info:
        f32(2, 3) + f32(4)
    assert info.value.__cause__ is not None
    assert not isinstance(info.value.__cause__, md.ShapeError)


def test_a_native_error_of_shapes_that_fit_is_not_called_a_shape_error():
    """Only shapes that do not fit become ShapeError: where the native op failed otherwise,
    ``check_shapes`` returns and the caller re-raises the framework's error."""
    x = f32(2, 3)
    cause = RuntimeError("out of memory")
    assert dispatch.check_shapes(x._bk, "add", (x, f32(3)), cause) is None
    assert dispatch.check_shapes(x._bk, "matmul", (x, f32(3, 4)), cause) is None
    with pytest.raises(md.ShapeError):
        dispatch.check_shapes(x._bk, "matmul", (x, f32(2, 3)), cause)


def test_layers_given_the_wrong_feature_count_raise_value_errors_that_say_so():
    with pytest.raises(ValueError, match=r"in_features=5.*\(2, 3\)"):
        nn.Linear(5, 4)(f32(2, 3))
    with pytest.raises(ValueError, match=r"C_in.*3.*Received: 2 channels"):
        nn.Conv2d(3, 4, 3)(f32(1, 2, 5, 5))
    with pytest.raises(ValueError, match=r"same shape.*\(2, 3\) and \(4,\)"):
        F.mse_loss(f32(2, 3), f32(4))


def test_chunk_and_topk_refuse_counts_that_do_not_fit():
    with pytest.raises(ValueError, match=r"positive number of chunks.*0"):
        md.chunk(f32(2, 3), 0)
    with pytest.raises(ValueError, match=r"k in \[0, 4\].*k=5"):
        md.topk(f32(4), 5)
    values, indices = md.topk(f32(4), 2)
    np.testing.assert_array_equal(values.numpy(), [4, 3])
    np.testing.assert_array_equal(indices.numpy(), [3, 2])


def test_split_refuses_a_split_size_below_one():
    with pytest.raises(ValueError, match=r"positive split size.*0"):
        f32(2, 3).split(0)


def test_searchsorted_refuses_a_sorter_of_another_shape():
    with pytest.raises(md.ShapeError, match=r"searchsorted.*\(4,\).*\(3,\)") as info:
        md.searchsorted(f32(4), f32(4), sorter=md.asarray([0, 1, 2]))
    assert info.value.shapes == ((4,), (3,))


def test_allclose_of_shapes_that_do_not_broadcast_names_allclose():
    with pytest.raises(md.ShapeError, match=r"allclose.*\(2, 3\) and \(4,\)") as info:
        md.allclose(f32(2, 3), f32(4))
    assert info.value.op == "allclose"
    assert md.allclose(f32(2, 3), f32(2, 3)) and md.allclose(f32(1, 3), f32(1, 3)[0])


@pytest.mark.parametrize(
    ("shapes", "mask"),
    [
        (((1, 2, 4), (1, 3, 4), (1, 2, 4)), None),  # key and value disagree on S
        (((2, 2, 4), (3, 3, 4), (3, 3, 4)), None),  # batch dimensions that do not broadcast
        (((1, 2, 4), (1, 3, 4), (1, 3, 4)), (5, 5)),  # a mask that is not (..., L, S)
    ],
)
def test_attention_of_shapes_that_do_not_fit_raises_shape_error(shapes, mask):
    q, k, v = (f32(*s) for s in shapes)
    m = None if mask is None else md.ones(mask, dtype=md.bool)
    with pytest.raises(md.ShapeError, match="scaled_dot_product_attention") as info:
        F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    assert info.value.shapes[:3] == shapes
    assert F.scaled_dot_product_attention(f32(1, 2, 4), f32(1, 3, 4), f32(1, 3, 5)).shape == (
        1,
        2,
        5,
    )


@pytest.mark.parametrize(
    ("batch_first", "shapes"),
    [
        (True, ((2, 5, 8), (2, 4, 8), (2, 5, 8))),  # key and value of different lengths
        (True, ((2, 5, 8), (3, 5, 8), (3, 5, 8))),  # key and value of another batch size
        (False, ((5, 2, 8), (4, 3, 8), (4, 3, 8))),  # the same, sequence first
    ],
)
def test_multihead_attention_of_shapes_that_do_not_fit_names_the_layer(batch_first, shapes):
    """Not the error of an op inside the layer (a reshape of the projected key)."""
    m = nn.MultiheadAttention(8, 2, batch_first=batch_first)
    with pytest.raises(md.ShapeError, match=r"key and value of one length.*\(query, key") as info:
        m(*(f32(*s) for s in shapes))
    assert info.value.op == "MultiheadAttention" and info.value.shapes == shapes
    assert m(f32(*shapes[0]), f32(*shapes[0]), f32(*shapes[0]))[0].shape == shapes[0]


@pytest.mark.parametrize("layer", ["RNN", "GRU", "LSTM"])
def test_a_recurrent_layer_given_an_initial_state_of_the_wrong_shape_says_so(layer):
    net = getattr(nn, layer)(3, 4)
    bad = f32(1, 1, 5)
    state = (bad, bad) if layer == "LSTM" else bad
    with pytest.raises(md.ShapeError, match=rf"\(1, 1, 4\).*{layer}.*\(1, 1, 5\)") as info:
        net(f32(2, 1, 3), state)
    assert info.value.op == layer
    good = f32(1, 1, 4)
    out, _ = net(f32(2, 1, 3), (good, good) if layer == "LSTM" else good)
    assert out.shape == (2, 1, 4)


def test_an_unbatched_recurrent_input_is_checked_against_unbatched_state_shapes():
    net = nn.GRU(3, 4)
    with pytest.raises(md.ShapeError, match=r"\(1, 4\).*Received: \(1, 5\)"):
        net(f32(2, 3), f32(1, 5))
    out, h = net(f32(2, 3), f32(1, 4))
    assert out.shape == (2, 4) and h.shape == (1, 4)
