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
