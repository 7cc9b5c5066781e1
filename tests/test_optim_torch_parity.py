"""Every optimiser and learning-rate schedule against PyTorch's, on the active backend.

The reference numbers are torch.optim's own, stored in ``tests/fixtures/torch_reference.json``
(made by ``tests/fixtures/torch_reference.py``; ``test_torch_reference.py`` checks them against
torch where it is installed), so these tests run on every backend, torch or not: parameters
after each of 20 steps and the final ``state_dict()`` agree within 1e-6 relative.
"""

from __future__ import annotations

import importlib.util
import json
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
FIXTURE = json.loads(ref.PATH.read_text())
RTOL = 1e-6


def _assert_close(actual, expected, what: str) -> None:
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    assert actual.shape == expected.shape, what
    rel = np.abs(actual - expected).max(initial=0.0) / max(np.abs(expected).max(initial=0.0), 1e-30)
    assert rel <= RTOL, f"{what}: {rel:.3g} relative (> {RTOL})"


def _params() -> list[nn.Parameter]:
    init, _ = ref.inputs()
    return [nn.Parameter(md.asarray(p)) for p in init]


def _run(name, kwargs, override):
    params = _params()
    opt = getattr(md.optim, name)(ref.groups(params, override), **kwargs)
    _, grads = ref.inputs()
    trajectory = []
    for step_grads in grads:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = None if g is None else md.asarray(g)
        opt.step()
        trajectory.append([p.numpy().copy() for p in params])
    return opt, trajectory


@pytest.mark.parametrize("case", FIXTURE["optimisers"], ids=lambda c: f"{c['name']}-{c['kwargs']}")
def test_optimiser_matches_torch_step_for_step(case):
    _, trajectory = _run(case["name"], case["kwargs"], case["override"])
    for step, (mine, theirs) in enumerate(zip(trajectory, case["params"], strict=True), 1):
        for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            _assert_close(a, b, f"parameter {i} after step {step}")


@pytest.mark.parametrize("case", FIXTURE["optimisers"], ids=lambda c: f"{c['name']}-{c['kwargs']}")
def test_optimiser_state_dict_has_torch_layout_and_values(case):
    opt, _ = _run(case["name"], case["kwargs"], case["override"])
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1, 2]]
    assert sorted(sd["state"]) == [int(i) for i in case["state"]]
    for i, theirs in case["state"].items():
        mine = sd["state"][int(i)]
        assert sorted(mine) == sorted(theirs)
        for key, value in theirs.items():
            if isinstance(value, list):
                _assert_close(mine[key].numpy(), value, f"state {i} {key}")
            else:
                assert mine[key] == value, f"state {i} {key}"
    group0 = {**case["kwargs"], **case["override"]}
    for key, value in group0.items():
        got = sd["param_groups"][0][key]
        assert (list(got) if isinstance(got, tuple) else got) == value


def _schedule(name, kwargs):
    params = _params()
    opt = md.optim.SGD(ref.groups(params, {"lr": 0.2}), lr=0.1, momentum=0.9)
    sched = getattr(md.optim.lr_scheduler, name)(opt, **ref.schedule_kwargs(kwargs))
    return opt, sched


@pytest.mark.parametrize("case", FIXTURE["schedules"], ids=lambda c: f"{c['name']}-{c['kwargs']}")
def test_schedule_matches_torch(case):
    opt, sched = _schedule(case["name"], case["kwargs"])
    lrs, momenta = [sched.get_last_lr()], [[g["momentum"] for g in opt.param_groups]]
    for _ in range(ref.STEPS):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
        momenta.append([g["momentum"] for g in opt.param_groups])
    assert ref.close(lrs, case["lrs"], RTOL), (lrs, case["lrs"])
    assert ref.close(momenta, case["momenta"], RTOL)


@pytest.mark.parametrize("case", FIXTURE["schedules"], ids=lambda c: f"{c['name']}-{c['kwargs']}")
def test_resumed_schedule_continues_the_sequence(case):
    opt, sched = _schedule(case["name"], case["kwargs"])
    for _ in range(7):
        sched.step()
    saved_opt, saved = opt.state_dict(), sched.state_dict()
    opt2, sched2 = _schedule(case["name"], case["kwargs"])
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved)
    for _ in range(ref.STEPS - 7):
        sched.step()
        sched2.step()
        assert sched2.get_last_lr() == sched.get_last_lr()
        assert [g["momentum"] for g in opt2.param_groups] == [
            g["momentum"] for g in opt.param_groups
        ]
