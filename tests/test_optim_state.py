"""Optimiser state: ``state_dict()``/``load_state_dict()`` resume a run exactly, on this backend
and across backends; parameter groups; loading checks everything before changing anything."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import multidev as md
from multidev import nn

_spec = importlib.util.spec_from_file_location(
    "torch_reference", Path(__file__).parent / "fixtures" / "torch_reference.py"
)
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)
CASES = [pytest.param(*c, id=f"{c[0]}-{i}") for i, c in enumerate(ref.CASES)]


def _params(values=None):
    init, _ = ref.inputs()
    return [nn.Parameter(md.asarray(np.asarray(p))) for p in (values or init)]


def _steps(opt, params, grads):
    for step_grads in grads:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = None if g is None else md.asarray(g)
        opt.step()


@pytest.mark.parametrize(("name", "kwargs", "override"), CASES)
def test_resumed_optimiser_continues_exactly(name, kwargs, override):
    _, grads = ref.inputs()
    params = _params()
    opt = getattr(md.optim, name)(ref.groups(params, override), **kwargs)
    _steps(opt, params, grads)

    first = _params()
    opt1 = getattr(md.optim, name)(ref.groups(first, override), **kwargs)
    _steps(opt1, first, grads[:10])
    sd = opt1.state_dict()
    second = _params([p.numpy() for p in first])
    opt2 = getattr(md.optim, name)(ref.groups(second, {}), lr=123.0)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    _steps(opt2, second, grads[10:])
    for a, b in zip(params, second, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_loaded_state_is_a_copy_on_the_parameters_device():
    params = _params()
    opt = md.optim.Adam(params, lr=0.1)
    _steps(opt, params, ref.inputs()[1][:2])
    sd = opt.state_dict()
    other = md.optim.Adam(params, lr=0.1)
    other.load_state_dict(sd)
    for p in params:
        mine, theirs = other.state[p]["exp_avg"], opt.state[p]["exp_avg"]
        assert mine is not theirs
        assert mine.device == p.device and mine.dtype == p.dtype
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def test_state_dict_numbers_parameters_in_group_order():
    params = _params()
    opt = md.optim.SGD(
        [{"params": [params[2]], "lr": 0.5}, {"params": params[:2]}], lr=0.1, momentum=0.9
    )
    _steps(opt, params, ref.inputs()[1][:1])
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1, 2]]
    assert [g["lr"] for g in sd["param_groups"]] == [0.5, 0.1]
    np.testing.assert_array_equal(sd["state"][0]["momentum_buffer"].numpy(), ref.inputs()[1][0][2])


def test_load_state_dict_rejects_a_mismatch_and_changes_nothing():
    params = _params()
    opt = md.optim.Adam(ref.groups(params, {"lr": 0.5}), lr=0.1)
    _steps(opt, params, ref.inputs()[1][:1])
    before = opt.state_dict()
    one_group = md.optim.Adam(params, lr=0.2).state_dict()
    with pytest.raises(md.StateDictError, match="Expected 2 parameter group"):
        opt.load_state_dict(one_group)
    bad = opt.state_dict()
    bad["param_groups"][0]["lr"] = 9.0
    bad["state"][1]["exp_avg"] = md.zeros(7)
    with pytest.raises(md.StateDictError, match=r"shape \(4,\)"):
        opt.load_state_dict(bad)
    with pytest.raises(md.StateDictError, match="'state' and 'param_groups'"):
        opt.load_state_dict({"state": {}})
    assert opt.param_groups[0]["lr"] == 0.5
    assert opt.state_dict()["state"].keys() == before["state"].keys()


def test_adagrad_state_exists_before_the_first_step():
    params = _params()
    sd = md.optim.Adagrad(params, initial_accumulator_value=0.25).state_dict()
    assert sorted(sd["state"]) == [0, 1, 2]
    assert sd["state"][1]["step"] == 0
    np.testing.assert_array_equal(sd["state"][1]["sum"].numpy(), np.full(4, 0.25, np.float32))


@pytest.mark.parametrize(
    ("cls", "kwargs", "match"),
    [
        (md.optim.SGD, {"lr": -1.0}, "lr"),
        (md.optim.Adam, {"betas": (0.9, 1.5)}, "betas"),
        (md.optim.RMSprop, {"momentum": -0.1}, "momentum"),
        (md.optim.Adagrad, {"lr_decay": -1.0}, "lr_decay"),
        (md.optim.AdamW, {"weight_decay": -0.1}, "weight_decay"),
    ],
)
def test_bad_hyperparameters_are_named(cls, kwargs, match):
    with pytest.raises(ValueError, match=f"Expected {match}"):
        cls(_params(), **kwargs)
    with pytest.raises(ValueError, match=f"Expected {match}"):
        cls([{"params": _params(), **kwargs}])


def test_state_loads_across_backends():
    others = [b for b in md.available_backends() if b != md.get_backend()]
    if not others:
        pytest.skip("only one backend is installed here")
    params = _params()
    opt = md.optim.RMSprop(params, lr=0.01, momentum=0.9, centered=True)
    _steps(opt, params, ref.inputs()[1][:3])
    sd = opt.state_dict()
    with md.use_backend(others[0]):
        twins = _params([p.numpy() for p in params])
        twin_opt = md.optim.RMSprop(twins, lr=0.01, momentum=0.9, centered=True)
        twin_opt.load_state_dict(sd)
        state = twin_opt.state[twins[0]]
        assert state["square_avg"].backend == others[0]
        assert state["step"] == 3
        np.testing.assert_array_equal(
            state["grad_avg"].numpy(), opt.state[params[0]]["grad_avg"].numpy()
        )
