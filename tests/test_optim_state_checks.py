"""``load_state_dict`` of optimisers and schedulers checks every field before anything changes:
each malformed, out-of-range or foreign state raises ``md.StateDictError`` naming the field and
leaves the optimiser (or scheduler) as it was. The state ``torch.optim`` saves loads and
continues torch's run (``test_torch_state_continues_*``)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

import multidev as md
from multidev import nn
from multidev.optim import lr_scheduler

_spec = importlib.util.spec_from_file_location(
    "torch_reference", Path(__file__).parent / "fixtures" / "torch_reference.py"
)
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)
FIXTURE = json.loads(ref.PATH.read_text())

SETTINGS = {
    "SGD": {"lr": 0.1, "momentum": 0.9},
    "Adam": {"lr": 0.01, "amsgrad": True},
    "AdamW": {"lr": 0.01},
    "RMSprop": {"lr": 0.01, "momentum": 0.5, "centered": True},
    "Adagrad": {"lr": 0.1},
}
TENSOR = {
    "SGD": "momentum_buffer",
    "Adam": "exp_avg",
    "AdamW": "exp_avg",
    "RMSprop": "square_avg",
    "Adagrad": "sum",
}


def _trained(name):
    rng = np.random.default_rng(0)
    params = [
        nn.Parameter(md.asarray(rng.standard_normal(s).astype(np.float32))) for s in [(3, 2), (2,)]
    ]
    opt = getattr(md.optim, name)(
        [{"params": params[:1], "lr": 0.05}, {"params": params[1:]}], **SETTINGS[name]
    )
    for _ in range(2):
        for p in params:
            p.grad = md.asarray(rng.standard_normal(p.shape).astype(np.float32))
        opt.step()
    return opt


def _snapshot(opt):
    sd = opt.state_dict()
    state = {
        i: {k: (v.numpy().copy() if isinstance(v, md.Tensor) else v) for k, v in s.items()}
        for i, s in sd["state"].items()
    }
    return sd["param_groups"], state


def _same(a, b):
    assert a[0] == b[0]
    assert a[1].keys() == b[1].keys()
    for i in a[1]:
        assert a[1][i].keys() == b[1][i].keys()
        for k in a[1][i]:
            x, y = a[1][i][k], b[1][i][k]
            if isinstance(x, np.ndarray):
                np.testing.assert_array_equal(x, y)
            else:
                assert x == y and type(x) is type(y)


def _set(path, value):
    """A change of the state dict at ``path`` (keys from the top; the last one set to value,
    or deleted for ``DELETE``)."""

    def change(sd):
        node = sd
        for key in path[:-1]:
            node = node[key]
        if value is DELETE:
            del node[path[-1]]
        else:
            node[path[-1]] = value(node.get(path[-1])) if callable(value) else value

    return change


DELETE = object()


def _rename_state_key(new):
    def change(sd):
        sd["state"][new] = sd["state"].pop(0)

    return change


def _np(shape, dtype=np.float32, fill=0.0):
    return lambda _old: np.full(shape, fill, dtype)


# (attack id, change, text the error must hold); for every optimiser
COMMON = [
    ("no-state-entry", _set(("state",), DELETE), "'state' and 'param_groups'"),
    ("state-a-list", _set(("state",), []), "'state' to be a dict"),
    ("groups-a-dict", _set(("param_groups",), {}), "'param_groups' to be a list"),
    ("group-a-list", _set(("param_groups", 0), [0]), "'param_groups' to be a list"),
    ("state-key-string", _rename_state_key("0"), "keys of 'state'"),
    ("state-key-word", _rename_state_key("abc"), "keys of 'state'"),
    ("state-key-float", _rename_state_key(0.0), "keys of 'state'"),
    ("state-key-unknown", _rename_state_key(7), "state for parameter 7"),
    ("state-entry-a-list", _set(("state", 0), []), r"state\[0\] to be a dict"),
    ("params-float", _set(("param_groups", 0, "params"), [0.0]), "'params' of group 0"),
    ("params-int", _set(("param_groups", 0, "params"), 0), "'params' of group 0"),
    ("params-negative", _set(("param_groups", 0, "params"), [-1]), "'params' of group 0"),
    ("params-twice", _set(("param_groups", 1, "params"), [0]), "index once"),
    ("params-missing", _set(("param_groups", 0, "params"), DELETE), "'params' of group 0"),
    ("lr-string", _set(("param_groups", 0, "lr"), "0.1"), "lr"),
    ("lr-negative", _set(("param_groups", 0, "lr"), -0.1), "lr"),
    ("lr-inf", _set(("param_groups", 1, "lr"), math.inf), "lr"),
    ("lr-nan", _set(("param_groups", 0, "lr"), math.nan), "lr"),
    ("lr-bool", _set(("param_groups", 0, "lr"), True), "lr"),
    ("lr-none", _set(("param_groups", 0, "lr"), None), "lr"),
    ("lr-huge-int", _set(("param_groups", 0, "lr"), 10**400), "lr"),
    ("weight-decay-nan", _set(("param_groups", 0, "weight_decay"), math.nan), "weight_decay"),
    ("unknown-hyperparameter", _set(("param_groups", 0, "lr_warmup"), 3), "lr_warmup"),
    ("maximize", _set(("param_groups", 0, "maximize"), True), "maximize"),
    ("foreach-string", _set(("param_groups", 0, "foreach"), "yes"), "foreach"),
    ("initial-lr-nan", _set(("param_groups", 0, "initial_lr"), math.nan), "initial_lr"),
    ("unknown-state", _set(("state", 0, "bogus"), _np((3, 2))), "bogus"),
]


def _tensor_attacks(key):
    return [
        (f"{key}-int64", _set(("state", 0, key), _np((3, 2), np.int64)), "floating-point"),
        (f"{key}-bool", _set(("state", 0, key), _np((3, 2), np.bool_, True)), "floating-point"),
        (f"{key}-shape", _set(("state", 0, key), _np((2, 3))), r"shape \(2, 3\)"),
        (f"{key}-nan", _set(("state", 0, key), _np((3, 2), fill=math.nan)), "finite"),
        (f"{key}-inf-tensor", _set(("state", 1, key), lambda _: md.full((2,), math.inf)), "finite"),
        (
            f"{key}-float64-overflow",
            _set(("state", 1, key), _np((2,), np.float64, 1e300)),
            "finite",
        ),
        (f"{key}-string", _set(("state", 0, key), "zeros"), key),
        (f"{key}-list", _set(("state", 0, key), [[0.0] * 2] * 3), key),
    ]


def _step_attacks():
    return [
        ("step-negative", _set(("state", 0, "step"), -1), "step"),
        ("step-string", _set(("state", 0, "step"), "2"), "step"),
        ("step-nan", _set(("state", 0, "step"), math.nan), "step"),
        ("step-fraction", _set(("state", 0, "step"), 1.5), "step"),
        ("step-bool", _set(("state", 0, "step"), True), "step"),
        ("step-huge-int", _set(("state", 0, "step"), 10**400), "step"),
        ("step-vector", _set(("state", 0, "step"), _np((2,), fill=2.0)), "step"),
        ("step-missing", _set(("state", 0, "step"), DELETE), "missing"),
    ]


ADAM = [
    ("betas-three", _set(("param_groups", 0, "betas"), (0.9, 0.99, 0.5)), "betas"),
    ("betas-one", _set(("param_groups", 0, "betas"), (1.0, 0.99)), "betas"),
    ("betas-negative", _set(("param_groups", 0, "betas"), (-0.1, 0.99)), "betas"),
    ("betas-nan", _set(("param_groups", 0, "betas"), (0.9, math.nan)), "betas"),
    ("betas-strings", _set(("param_groups", 0, "betas"), ("0.9", "0.99")), "betas"),
    ("betas-number", _set(("param_groups", 0, "betas"), 0.9), "betas"),
    ("eps-negative", _set(("param_groups", 0, "eps"), -1e-8), "eps"),
    ("amsgrad-string", _set(("param_groups", 0, "amsgrad"), "no"), "amsgrad"),
    ("exp-avg-missing", _set(("state", 0, "exp_avg"), DELETE), "missing"),
    ("max-exp-avg-sq-missing", _set(("state", 0, "max_exp_avg_sq"), DELETE), "missing"),
    ("exp-avg-sq-negative", _set(("state", 0, "exp_avg_sq"), _np((3, 2), fill=-1.0)), ">= 0"),
]
ATTACKS = {
    "SGD": COMMON
    + _tensor_attacks("momentum_buffer")
    + [
        ("momentum-negative", _set(("param_groups", 0, "momentum"), -0.5), "momentum"),
        ("momentum-nan", _set(("param_groups", 0, "momentum"), math.nan), "momentum"),
        ("dampening-inf", _set(("param_groups", 0, "dampening"), math.inf), "dampening"),
        ("nesterov-string", _set(("param_groups", 0, "nesterov"), "yes"), "nesterov"),
        ("adam-keys", _set(("param_groups", 0, "betas"), (0.9, 0.99)), "betas"),
        ("adam-state", _set(("state", 0, "exp_avg"), _np((3, 2))), "exp_avg"),
    ],
    "Adam": COMMON
    + _tensor_attacks("exp_avg")
    + _step_attacks()
    + ADAM
    + [
        ("decoupled", _set(("param_groups", 0, "decoupled_weight_decay"), True), "AdamW"),
        ("sgd-keys", _set(("param_groups", 0, "momentum"), 0.9), "momentum"),
    ],
    "AdamW": COMMON
    + _tensor_attacks("exp_avg_sq")
    + _step_attacks()
    + ADAM[:9]
    + [("not-decoupled", _set(("param_groups", 0, "decoupled_weight_decay"), False), "Adam")],
    "RMSprop": COMMON
    + _tensor_attacks("grad_avg")
    + _step_attacks()
    + [
        ("alpha-nan", _set(("param_groups", 0, "alpha"), math.nan), "alpha"),
        ("centered-string", _set(("param_groups", 0, "centered"), "no"), "centered"),
        ("square-avg-missing", _set(("state", 0, "square_avg"), DELETE), "missing"),
        ("momentum-buffer-missing", _set(("state", 0, "momentum_buffer"), DELETE), "missing"),
        ("square-avg-negative", _set(("state", 1, "square_avg"), _np((2,), fill=-2.0)), ">= 0"),
        ("adam-keys", _set(("param_groups", 0, "betas"), (0.9, 0.99)), "betas"),
    ],
    "Adagrad": COMMON
    + _tensor_attacks("sum")
    + _step_attacks()
    + [
        ("lr-decay-negative", _set(("param_groups", 0, "lr_decay"), -1.0), "lr_decay"),
        ("eps-nan", _set(("param_groups", 0, "eps"), math.nan), "eps"),
        (
            "initial-accumulator-string",
            _set(("param_groups", 0, "initial_accumulator_value"), "0"),
            "initial_accumulator_value",
        ),
        ("sum-missing", _set(("state", 0, "sum"), DELETE), "missing"),
        ("sum-negative", _set(("state", 0, "sum"), _np((3, 2), fill=-1.0)), ">= 0"),
    ],
}
CASES = [
    pytest.param(name, change, match, id=f"{name}-{attack}")
    for name, attacks in ATTACKS.items()
    for attack, change, match in attacks
]


@pytest.mark.parametrize(("name", "change", "match"), CASES)
def test_bad_state_is_refused_and_changes_nothing(name, change, match):
    opt = _trained(name)
    before = _snapshot(opt)
    sd = opt.state_dict()
    change(sd)
    with pytest.raises(md.StateDictError, match=match):
        opt.load_state_dict(sd)
    _same(_snapshot(opt), before)
    opt.load_state_dict(opt.state_dict())  # still loads its own state afterwards
    _same(_snapshot(opt), before)


@pytest.mark.parametrize("source", list(SETTINGS))
@pytest.mark.parametrize("target", list(SETTINGS))
def test_another_optimisers_state_is_refused(source, target):
    if {source, target} <= {"Adam", "AdamW"} or source == target:
        pytest.skip("Adam and AdamW share their layout (as in PyTorch)")
    opt = _trained(target)
    before = _snapshot(opt)
    with pytest.raises(md.StateDictError, match=f"saved by {target}"):
        opt.load_state_dict(_trained(source).state_dict())
    _same(_snapshot(opt), before)


def test_numpy_converted_state_loads_and_continues():
    """The state with NumPy values (as from a safetensors file) and a 0-d step continues the
    run as the state itself does."""
    opt, twin = _trained("Adam"), _trained("Adam")
    sd = opt.state_dict()
    for entries in sd["state"].values():
        for k, v in entries.items():
            entries[k] = np.asarray(v.numpy() if isinstance(v, md.Tensor) else v, np.float32)
    twin.load_state_dict(sd)
    assert twin.state[twin.param_groups[0]["params"][0]]["step"] == 2
    params = [g["params"][0] for g in opt.param_groups]
    twins = [g["params"][0] for g in twin.param_groups]
    for p, q in zip(params, twins, strict=True):
        p.grad = q.grad = md.ones(p.shape)
    opt.step()
    twin.step()
    for p, q in zip(params, twins, strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def _close(actual, expected, what):
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    assert actual.shape == expected.shape, what
    err = np.abs(actual - expected).max(initial=0.0)
    assert err <= 1e-6 * max(np.abs(expected).max(initial=0.0), 1.0), f"{what}: {err:.3g}"


@pytest.mark.parametrize("case", FIXTURE["optimisers"], ids=lambda c: f"{c['name']}-{c['kwargs']}")
def test_torch_state_continues_torchs_run(case):
    """torch.optim's own state dict after 10 steps (tensors as NumPy arrays, step a 0-d
    float32 array, torch's group flags kept), loaded into an optimiser made with other
    hyperparameters, continues torch's trajectory."""
    saved = case["torch_state"]
    sd = {
        "state": {
            int(i): {k: np.asarray(v, np.float32) for k, v in s.items()}
            for i, s in saved["state"].items()
        },
        "param_groups": saved["param_groups"],
    }
    params = [nn.Parameter(md.asarray(np.asarray(v, np.float32))) for v in case["params"][9]]
    opt = getattr(md.optim, case["name"])(ref.groups(params, {}), lr=123.0)
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == saved["param_groups"][0]["lr"]
    assert "foreach" not in opt.param_groups[0]
    _, grads = ref.inputs()
    for step in range(ref.RESUME_AT, ref.STEPS):
        for p, g in zip(params, grads[step], strict=True):
            p.grad = None if g is None else md.asarray(g)
        opt.step()
        for i, p in enumerate(params):
            _close(p.numpy(), case["params"][step][i], f"parameter {i} after step {step + 1}")


TORCH_CASES = [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01}),
]


def _converted(value, how):
    import torch

    if not isinstance(value, torch.Tensor):
        return value
    if how == "asarray":
        return md.asarray(value.numpy())
    return value.numpy()


@pytest.mark.parametrize("how", ["torch", "asarray", "numpy", "load_native"])
@pytest.mark.parametrize(("name", "kwargs"), TORCH_CASES)
def test_torch_state_loads_live(name, kwargs, how, tmp_path):
    """Train torch.optim for 3 steps, load its state_dict() (as it is on the torch backend,
    through md.asarray, NumPy-converted, or written by torch.save and read by
    md.load_native) into multidev's optimiser over the same weights; 3 more steps on both
    give the same parameters within 1e-6."""
    torch = pytest.importorskip("torch")
    if how == "torch" and md.get_backend() != "torch":
        pytest.skip("torch tensors are native tensors on the torch backend only")
    rng = np.random.default_rng(1)
    init = [rng.standard_normal(s).astype(np.float32) for s in [(4, 3), (3,)]]
    grads = [[rng.standard_normal(a.shape).astype(np.float32) for a in init] for _ in range(6)]
    theirs = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in init]
    topt = getattr(torch.optim, name)(theirs, **kwargs)
    for step in range(6):
        if step == 3:
            sd = topt.state_dict()
            if how == "load_native":
                torch.save(sd, tmp_path / "opt.pt")
                sd = md.load_native(tmp_path / "opt.pt")
            else:
                sd = {
                    "state": {
                        i: {k: _converted(v, how) for k, v in s.items()}
                        for i, s in sd["state"].items()
                    },
                    "param_groups": sd["param_groups"],
                }
            mine = [nn.Parameter(md.asarray(p.detach().numpy().copy())) for p in theirs]
            opt = getattr(md.optim, name)(mine, lr=123.0)
            opt.load_state_dict(sd)
        for p, g in zip(theirs, grads[step], strict=True):
            p.grad = torch.from_numpy(g.copy())
        topt.step()
        if step >= 3:
            for p, g in zip(mine, grads[step], strict=True):
                p.grad = md.asarray(g)
            opt.step()
    for a, b in zip(mine, theirs, strict=True):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_constructor_refuses_non_finite_hyperparameters():
    params = [nn.Parameter(md.zeros(2))]
    with pytest.raises(ValueError, match="Expected lr"):
        md.optim.SGD(params, lr=math.nan)
    with pytest.raises(ValueError, match="Expected eps"):
        md.optim.Adam(params, eps=math.inf)
    with pytest.raises(ValueError, match="Expected betas"):
        md.optim.Adam(params, betas=(0.9, 0.99, 0.5))


# ------------------------------------------------------------------ schedulers
def _sched(cls, **kwargs):
    opt = md.optim.SGD([nn.Parameter(md.zeros(2))], lr=0.1, momentum=0.9)
    sched = cls(opt, **kwargs)
    sched.step()
    return sched


SCHEDULERS = {
    "StepLR": (lr_scheduler.StepLR, {"step_size": 2, "gamma": 0.5}),
    "MultiStepLR": (lr_scheduler.MultiStepLR, {"milestones": [1, 3]}),
    "ExponentialLR": (lr_scheduler.ExponentialLR, {"gamma": 0.9}),
    "CosineAnnealingLR": (lr_scheduler.CosineAnnealingLR, {"T_max": 5, "eta_min": 0.01}),
    "LambdaLR": (lr_scheduler.LambdaLR, {"lr_lambda": lambda e: 0.9**e}),
    "OneCycleLR": (lr_scheduler.OneCycleLR, {"max_lr": 0.5, "total_steps": 10}),
}
SCHED_COMMON = [
    ("last-epoch-string", "last_epoch", "3"),
    ("last-epoch-float", "last_epoch", 1.5),
    ("last-epoch-below", "last_epoch", -2),
    ("step-count-negative", "_step_count", -1),
    ("base-lrs-long", "base_lrs", [0.1, 0.1]),
    ("base-lrs-nan", "base_lrs", [math.nan]),
    ("base-lrs-number", "base_lrs", 0.1),
    ("last-lr-string", "_last_lr", ["0.1"]),
    ("is-initial-string", "_is_initial", "no"),
    ("unknown-key", "T_mult", 2),
]
SCHED_ATTACKS = {
    "StepLR": [
        ("gamma-nan", "gamma", math.nan),
        ("gamma-string", "gamma", "0.5"),
        ("gamma-huge-int", "gamma", 10**400),
        ("step-size-zero", "step_size", 0),
        ("step-size-float", "step_size", 2.0),
    ],
    "MultiStepLR": [
        ("gamma-inf", "gamma", math.inf),
        ("milestones-list", "milestones", [1, 3]),
        ("milestones-float", "milestones", {1.5: 1}),
        ("milestones-count", "milestones", {1: 0}),
    ],
    "ExponentialLR": [("gamma-nan", "gamma", math.nan), ("gamma-negative", "gamma", -0.5)],
    "CosineAnnealingLR": [
        ("t-max-zero", "T_max", 0),
        ("eta-min-nan", "eta_min", math.nan),
        ("eta-min-string", "eta_min", "0"),
    ],
    "LambdaLR": [("lambdas-long", "lr_lambdas", [None, None]), ("lambdas-str", "lr_lambdas", "x")],
    "OneCycleLR": [
        ("total-steps-zero", "total_steps", 0),
        ("anneal-unknown", "_anneal_func_type", "cubic"),
        ("phases-broken", "_schedule_phases", [{"end_step": "x"}]),
        ("cycle-momentum-string", "cycle_momentum", "yes"),
    ],
}
SCHED_CASES = [
    pytest.param(name, key, value, id=f"{name}-{attack}")
    for name in SCHEDULERS
    for attack, key, value in SCHED_COMMON + SCHED_ATTACKS[name]
]


@pytest.mark.parametrize(("name", "key", "value"), SCHED_CASES)
def test_bad_scheduler_state_is_refused_and_changes_nothing(name, key, value):
    cls, kwargs = SCHEDULERS[name]
    sched = _sched(cls, **kwargs)
    before = sched.state_dict()
    sd = dict(before)
    sd[key] = value
    with pytest.raises(md.StateDictError, match=key):
        sched.load_state_dict(sd)
    assert sched.state_dict() == before
    sched.load_state_dict(before)
    sched.step()


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_state_round_trips(name):
    cls, kwargs = SCHEDULERS[name]
    sched, twin = _sched(cls, **kwargs), _sched(cls, **kwargs)
    sched.step()
    twin.optimizer.load_state_dict(sched.optimizer.state_dict())
    twin.load_state_dict(sched.state_dict())
    assert twin.state_dict() == sched.state_dict()
    for _ in range(3):
        sched.step()
        twin.step()
        assert twin.get_last_lr() == sched.get_last_lr()


def test_custom_optimiser_without_a_state_spec_still_loads_its_state():
    class Counting(md.optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, {"lr": lr, "weight_decay": 0.0})

        def _update(self, p, grad, group, state):
            state["calls"] = state.get("calls", 0) + 1
            state["last"] = grad.to(grad.device, copy=True)
            self._add_scaled_(p, grad, -group["lr"])

    params = [nn.Parameter(md.zeros(3))]
    opt = Counting(params)
    params[0].grad = md.ones(3)
    opt.step()
    twin = Counting([nn.Parameter(md.zeros(3))], lr=0.5)
    twin.load_state_dict(opt.state_dict())
    state = twin.state[twin.param_groups[0]["params"][0]]
    assert state["calls"] == 1 and twin.param_groups[0]["lr"] == 0.1
    np.testing.assert_array_equal(state["last"].numpy(), np.ones(3, np.float32))
    bad = opt.state_dict()
    bad["state"][0]["last"] = np.zeros(4, np.float32)
    with pytest.raises(md.StateDictError, match=r"shape \(4,\)"):
        twin.load_state_dict(bad)
