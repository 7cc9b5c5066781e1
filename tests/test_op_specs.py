"""Ops are declared once in the core (``multidev.op_specs``) and an adapter's op table is built
from the declarations: its own lowering, else a function of the op's name in its lowering
modules, else the op's native name on the framework's namespaces."""

from __future__ import annotations

import types

import numpy as np
import pytest

from multidev import contract, op_specs
from multidev import dtypes as md_dtypes
from multidev.testing import reference


def test_every_member_of_the_op_table_contract_is_declared():
    members = set(contract.OpTable.__annotations__)
    assert members - set(op_specs.SPECS) == set()


def test_every_declaration_names_a_known_promotion_rule():
    for spec in op_specs.SPECS.values():
        assert spec.promotion in op_specs.PROMOTIONS, spec


def test_a_lowering_wins_over_a_module_function_and_the_namespace():
    module = types.SimpleNamespace(hypot=lambda a, b: "module")
    ops = contract.op_table(np, modules=[module], hypot=lambda a, b: "lowering")
    assert ops.hypot(1, 2) == "lowering"
    assert contract.op_table(np, modules=[module]).hypot(1, 2) == "module"


def test_a_module_with_a_lowerings_dict_gives_only_its_entries_in_module_order():
    # array_api.py, sequence_ops.py, losses.py: a LOWERINGS dict beside helper functions
    with_dict = types.SimpleNamespace(LOWERINGS={"hypot": lambda a, b: "dict"}, atan2=np.add)
    plain = types.SimpleNamespace(hypot=lambda a, b: "plain", atan2=lambda a, b: "plain")
    ops = contract.op_table(np, modules=[with_dict, plain])
    assert ops.hypot(1, 2) == "dict"  # the first module that has the op
    assert ops.atan2(1, 2) == "plain"  # a module's own functions count only without the dict
    with pytest.raises(TypeError, match=r"declared in multidev.op_specs.*\['hypotenuse'\]"):
        contract.op_table(np, modules=[types.SimpleNamespace(LOWERINGS={"hypotenuse": np.add})])


def test_the_namespace_gives_an_op_by_any_of_its_native_names():
    first = types.SimpleNamespace(arctan2=lambda a, b: "first")
    second = types.SimpleNamespace(atan2=lambda a, b: "second")
    ops = contract.op_table(first, second)
    assert ops.atan2(1, 2) == "first"  # the first namespace that has one of the names
    tf_like = types.SimpleNamespace(is_nan=np.isnan)
    assert contract.op_table(tf_like).isnan is np.isnan


def test_an_op_found_nowhere_is_absent_and_named_by_missing_members():
    ops = contract.op_table(types.SimpleNamespace())
    assert not hasattr(ops, "exp")
    adapter = types.SimpleNamespace(ops=ops, capabilities=frozenset())
    assert "ops.exp" in contract.missing_members(adapter)


def test_a_lowering_of_an_undeclared_op_is_refused_with_the_fix():
    with pytest.raises(TypeError, match=r"declared in multidev.op_specs.*\['hypotenuse'\]"):
        contract.op_table(np, hypotenuse=np.hypot)


def test_layer_ops_never_come_from_the_framework_namespace():
    # torch.conv2d or torch.embedding exist with other argument conventions: a layer op is
    # always the adapter's own lowering
    namespace = types.SimpleNamespace(conv2d=np.add, embedding=np.add, linear=np.add)
    ops = contract.op_table(namespace)
    for name in ("conv2d", "embedding", "linear"):
        assert not hasattr(ops, name)


def test_reference_keys_come_from_the_namespace_with_numpy_calls():
    table = reference.native_table(np.asarray, np.asarray, {}, np)
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    np.testing.assert_array_equal(table["permute_dims"](x, (1, 0)), x.T)
    np.testing.assert_array_equal(table["sum"](x, (1,), True), x.sum(axis=1, keepdims=True))
    np.testing.assert_array_equal(table["sum"](x, (), False), x)  # no axis: the input
    assert table["max"](x, None, True).shape == (1, 1)
    # defined on floating point: integer input is computed in float32, as multidev does
    assert table["mean"](x, None, False).dtype == np.float32


def test_reference_bfloat16_helpers_pass_the_bits_and_read_them_back():
    bf16 = np.dtype(md_dtypes.bfloat16.numpy)
    seen = []
    to_native = reference.bfloat16_bits(lambda a: seen.append(a.dtype) or a, lambda t: t.view(bf16))
    a = np.array([1.5, -2.25, np.nan], dtype=bf16)
    out = to_native(a)
    assert seen == [np.uint16] and out.dtype == bf16 and out is not a
    np.testing.assert_array_equal(out.view(np.uint16), a.view(np.uint16))
    assert to_native(np.float32([2.0])).dtype == np.float32  # other dtypes as they are
    to_numpy = reference.bfloat16_numpy(np.asarray, lambda t: t.dtype == np.uint16)
    back = to_numpy(a.view(np.uint16))
    assert back.dtype == bf16
    np.testing.assert_array_equal(back.view(np.uint16), a.view(np.uint16))


def test_reference_grad_keys_differentiate_the_tables_own_entries():
    # a stand-in for autograd that returns the value of what it differentiates
    def grads(fn, tensors, gy=None):
        return (fn(*tensors),)

    ns = types.SimpleNamespace(linear=lambda x, w, b: x @ w.T + b, softmax=lambda a, axis: a)
    losses = (lambda a, b: ((a - b) ** 2).mean(), lambda z, y: z[0, y[0]])
    ops = {"relu": lambda a: np.maximum(a, 0), "grad_cross_entropy": lambda z, y: "written"}
    table = reference.native_table(np.asarray, np.asarray, ops, np, ns, grads=grads, losses=losses)
    x = np.array([[-1.0, 2.0]])
    np.testing.assert_array_equal(table["grad_relu"](x, None), [[0.0, 2.0]])
    np.testing.assert_array_equal(table["linear"](x, np.eye(2), np.ones(2)), [[0.0, 3.0]])
    assert table["grad_linear"](x, np.eye(2), np.ones(2), None)[0].tolist() == [[0.0, 3.0]]
    assert table["grad_mse_loss"](x, x) == 0.0
    assert table["grad_cross_entropy"](x, [1]) == "written"  # an entry of ``ops`` wins
    with pytest.raises(TypeError, match=r"Received: no relu, losses=\(mse_loss, cross_entropy\)\."):
        reference.native_table(np.asarray, np.asarray, {}, ns, grads=grads)
