"""``md.nn.utils.clip_grad_norm_`` / ``clip_grad_value_`` against torch's stored results (on
every backend), with a tied parameter listed twice counted once."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

import multidev as md
from multidev import nn
from multidev.nn.utils import clip_grad_norm_, clip_grad_value_

_spec = importlib.util.spec_from_file_location(
    "torch_reference", Path(__file__).parent / "fixtures" / "torch_reference.py"
)
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)
CLIPPING = json.loads(ref.PATH.read_text())["clipping"]


def _with_grads():
    init, grads = ref.inputs()
    params = [nn.Parameter(md.asarray(p)) for p in init]
    for p, g in zip(params, grads[0], strict=True):
        p.grad = md.asarray(g)
    return params


def _assert_close(actual, expected):
    expected = np.asarray(expected)
    scale = np.abs(expected).max()
    assert np.abs(np.asarray(actual) - expected).max() <= 1e-6 * scale


@pytest.mark.parametrize(
    ("args", "expected"), list(zip(ref.CLIP_NORMS, CLIPPING["norms"], strict=True))
)
def test_clip_grad_norm_matches_torch(args, expected):
    max_norm, norm_type = args
    params = _with_grads()
    tied = [params[0], params[1], params[1], params[2]]
    total = clip_grad_norm_(tied, max_norm, math.inf if norm_type == "inf" else norm_type)
    assert isinstance(total, md.Tensor) and total.shape == ()
    assert total.item() == pytest.approx(expected["total"], rel=1e-6)
    for p, g in zip(params, expected["grads"], strict=True):
        _assert_close(p.grad.numpy(), g)


@pytest.mark.parametrize(
    ("value", "expected"), list(zip(ref.CLIP_VALUES, CLIPPING["values"], strict=True))
)
def test_clip_grad_value_matches_torch(value, expected):
    params = _with_grads()
    clip_grad_value_([*params, params[0]], value)
    for p, g in zip(params, expected, strict=True):
        np.testing.assert_array_equal(p.grad.numpy(), np.asarray(g, np.float32))


def test_clip_grad_norm_edge_cases():
    params = _with_grads()
    params[2].grad = None
    bare = nn.Parameter(md.zeros(2))
    assert clip_grad_norm_([bare], 1.0).item() == 0.0
    params[0].grad = md.full((3, 4), float("nan"))
    with pytest.raises(RuntimeError, match="finite"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    with pytest.raises(ValueError, match="max_norm"):
        clip_grad_norm_(params, -1.0)
    with pytest.raises(ValueError, match="norm_type"):
        clip_grad_norm_(params, 1.0, norm_type=0)
    with pytest.raises(ValueError, match="clip_value"):
        clip_grad_value_(params, -0.5)


@pytest.mark.requires("autograd")
def test_clipping_inside_an_open_recording_is_not_recorded():
    """As PyTorch's (``@torch.no_grad()``): clipping while a recording is open (here a
    ``record()`` block around the whole step) neither fails nor records the gradient
    arithmetic. On MXNet a recorded gradient write raised "already in a computational graph"."""
    w = nn.Parameter(md.asarray(np.array([3.0, 4.0], dtype=np.float32)))
    with md.autograd.record():
        loss = (w * w).sum()
        loss.backward()
        total = clip_grad_norm_([w], max_norm=1.0)
        clip_grad_value_([w], 0.5)
        assert md.is_grad_enabled()
    assert math.isclose(float(total), 10.0, rel_tol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), [0.5, 0.5], rtol=1e-5)
