"""``md.autocast`` and ``md.amp.GradScaler``: output dtypes against the docs' table and against
real ``torch.autocast`` (where torch is importable), float32 master weights and gradients,
context rules, and the scale sequence against the rule written plainly here and against real
``torch.amp.GradScaler`` (where torch is importable)."""

from __future__ import annotations

import contextvars
import importlib.util
import math
import re
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import multidev as md
import multidev.nn.functional as F
from multidev import nn
from multidev.nn import sequence_functional as SF

HAS_AUTOGRAD = "autograd" in md.registry.current().capabilities
BACKEND = md.get_backend()
HAS_TORCH = importlib.util.find_spec("torch") is not None
# MXNet has no bfloat16 dtype: there autocast runs in float16.
LOW = md.float16 if BACKEND == "mxnet" else md.bfloat16
# MXNet's CPU build has no float16 gemm for the backward pass: its loss-scaling run is float32
TRAIN_LOW = not (BACKEND == "mxnet" and md.registry.current().default_device().type == "cpu")
needs_autograd = pytest.mark.skipif(not HAS_AUTOGRAD, reason=f"{BACKEND} has no autograd")
#: ops whose low-precision kernels a backend's CPU build lacks (the framework raises)
NO_LOW_KERNEL = {
    "paddle": {
        "conv1d": "Paddle's CPU build has no bfloat16 conv2d kernel",
        "conv2d": "Paddle's CPU build has no bfloat16 conv2d kernel",
        "conv_transpose2d": "Paddle's CPU build has no bfloat16 conv2d_transpose kernel",
    },
    "mxnet": {
        op: "MXNet's CPU build has no float16 gemm (MXNetError, raised asynchronously)"
        for op in ("matmul", "linear", "conv1d", "conv2d", "conv_transpose2d")
    }
    | {"scaled_dot_product_attention": "MXNet's CPU build has no float16 gemm"},
}

#: op -> output dtype kind under autocast: "low" (the autocast dtype) or "float32"
TABLE = {
    "matmul": "low",
    "linear": "low",
    "conv1d": "low",
    "conv2d": "low",
    "conv_transpose2d": "low",
    "scaled_dot_product_attention": "low",
    "softmax": "float32",
    "log_softmax": "float32",
    "cross_entropy": "float32",
    "mse_loss": "float32",
    "layer_norm": "float32",
    "group_norm": "float32",
    "batch_norm": "float32",
    "sum": "float32",
    "prod": "float32",
}

#: ops whose torch CPU autocast keeps a bfloat16 input in bfloat16 (its CPU list differs from
#: its CUDA list, which multidev follows); compared against torch on CUDA only
TORCH_CPU_DIFFERS = {
    "softmax",
    "log_softmax",
    "layer_norm",
    "group_norm",
    "batch_norm",
    "sum",
    "prod",
}


def _doc_table() -> dict[str, str]:
    text = (Path(__file__).parents[1] / "docs" / "guide" / "training.md").read_text()
    section = text.split("### Output dtypes", 1)[1]
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \| (\w+) \|$", section, re.M)
    return {op: ("low" if out == "bfloat16" else out) for op, _, out in rows}


def test_doc_table_is_the_tested_table_and_the_policy():
    assert _doc_table() == TABLE
    assert {op: ("low" if p == "lower" else p) for op, p in md.amp.POLICY.items()} == TABLE


def _rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _run(op, lib, x, low, device="cpu"):
    """``op`` through ``lib`` ("md" or "torch", on torch's ``device``) on float32 arrays cast to
    ``low`` first where ``low`` is given; returns the output dtype's name."""
    a, w, img, k = x
    if lib == "torch":
        import torch
        import torch.nn.functional as TF

        dtype = getattr(torch, low) if low else torch.float32
        A, W, IMG, K = (torch.from_numpy(t).to(device, dtype) for t in (a, w, img, k))
        labels = torch.zeros(4, dtype=torch.long, device=device)
        fns = {
            "matmul": lambda: torch.matmul(A, W.T),
            "linear": lambda: TF.linear(A, W),
            "conv1d": lambda: TF.conv1d(IMG[:, :, 0], K[:, :, 0]),
            "conv2d": lambda: TF.conv2d(IMG, K),
            "conv_transpose2d": lambda: TF.conv_transpose2d(IMG, K.transpose(0, 1)),
            "scaled_dot_product_attention": lambda: TF.scaled_dot_product_attention(
                A[None], A[None], A[None]
            ),
            "softmax": lambda: TF.softmax(A, -1),
            "log_softmax": lambda: TF.log_softmax(A, -1),
            "cross_entropy": lambda: TF.cross_entropy(A, labels),
            "mse_loss": lambda: TF.mse_loss(A, A),
            "layer_norm": lambda: TF.layer_norm(A, (8,)),
            "group_norm": lambda: TF.group_norm(IMG, 1),
            "batch_norm": lambda: TF.batch_norm(IMG, None, None, training=True),
            "sum": lambda: torch.sum(A),
            "prod": lambda: torch.prod(A),
        }
        return str(fns[op]().dtype).replace("torch.", "")
    dt = getattr(md, low) if low else md.float32
    A, W, IMG, K = (md.asarray(t).astype(dt) for t in (a, w, img, k))
    labels = md.asarray(np.zeros(4, dtype=np.int64))
    fns = {
        "matmul": lambda: md.matmul(A, W.T),
        "linear": lambda: F.linear(A, W),
        "conv1d": lambda: F.conv1d(IMG[:, :, 0], K[:, :, 0]),
        "conv2d": lambda: F.conv2d(IMG, K),
        "conv_transpose2d": lambda: F.conv_transpose2d(IMG, md.permute_dims(K, (1, 0, 2, 3))),
        "scaled_dot_product_attention": lambda: SF.scaled_dot_product_attention(
            A[None], A[None], A[None]
        ),
        "softmax": lambda: F.softmax(A, -1),
        "log_softmax": lambda: F.log_softmax(A, -1),
        "cross_entropy": lambda: F.cross_entropy(A, labels),
        "mse_loss": lambda: F.mse_loss(A, A),
        "layer_norm": lambda: SF.layer_norm(A, (8,)),
        "group_norm": lambda: F.group_norm(IMG, 1),
        "batch_norm": lambda: F.batch_norm(IMG, None, None, training=True),
        "sum": lambda: md.sum(A),
        "prod": lambda: md.prod(A),
    }
    return str(fns[op]().dtype).replace("multidev.", "")


INPUTS = (_rand((4, 8)), _rand((3, 8), 1), _rand((2, 3, 6, 6), 2), _rand((4, 3, 3, 3), 3))


@needs_autograd
@pytest.mark.parametrize("op", sorted(TABLE))
@pytest.mark.parametrize("input_dtype", [None, "low"])
def test_output_dtype_follows_the_table(op, input_dtype):
    reason = NO_LOW_KERNEL.get(BACKEND, {}).get(op)
    if reason and md.registry.current().default_device().type == "cpu":
        pytest.skip(reason)
    low = str(LOW).replace("multidev.", "")
    with md.autocast(dtype=LOW):
        got = _run(op, "md", INPUTS, low if input_dtype else None)
    md.synchronize()  # MXNet reports a missing kernel only when the work runs
    assert got == (low if TABLE[op] == "low" else "float32")
    # outside autocast the op keeps its inputs' dtype
    assert _run(op, "md", INPUTS, None) == "float32"


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed in this environment")
@pytest.mark.parametrize("op", sorted(TABLE))
@pytest.mark.parametrize("input_dtype", [None, "bfloat16"])
def test_table_equals_torch_autocast(op, input_dtype):
    """The table against real torch.autocast: on CUDA for every case; on the CPU where torch's
    CPU list agrees with its CUDA list (float32 inputs; the lowered ops and losses)."""
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" and input_dtype and op in TORCH_CPU_DIFFERS:
        pytest.skip(f"torch's CPU autocast keeps bfloat16 {op} in bfloat16; checked on CUDA")
    with torch.autocast(device, dtype=torch.bfloat16):
        got = _run(op, "torch", INPUTS, input_dtype, device)
    assert got == ("bfloat16" if TABLE[op] == "low" else "float32")


@needs_autograd
@pytest.mark.skipif(not TRAIN_LOW, reason="MXNet's CPU build has no float16 gemm for backward")
def test_master_weights_and_gradients_stay_float32():
    lin = nn.Linear(8, 3)
    x = md.asarray(_rand((4, 8)))
    with md.autograd.record(), md.autocast(dtype=LOW):
        out = lin(x)
        loss = F.cross_entropy(out, md.asarray(np.zeros(4, dtype=np.int64)))
    loss.backward()
    assert out.dtype == LOW and loss.dtype == md.float32
    assert lin.weight.dtype == md.float32 and lin.weight.grad.dtype == md.float32
    assert lin.bias.grad.dtype == md.float32
    # the gradient is the float32 one up to the low precision's rounding
    low = {n: p.grad.numpy() for n, p in lin.named_parameters()}
    for p in lin.parameters():
        p.grad = None
    with md.autograd.record():
        ref = F.cross_entropy(lin(x), md.asarray(np.zeros(4, dtype=np.int64)))
    ref.backward()
    for n, p in lin.named_parameters():
        np.testing.assert_allclose(low[n], p.grad.numpy(), rtol=0.05, atol=0.02)


@needs_autograd
def test_nesting_disable_decorator_and_context_locality():
    a = md.asarray(_rand((4, 8)))
    assert md.matmul(a, a.T).dtype == md.float32
    with md.autocast(dtype=LOW):
        assert md.matmul(a, a.T).dtype == LOW
        with md.autocast(enabled=False):
            assert md.matmul(a, a.T).dtype == md.float32
        assert md.matmul(a, a.T).dtype == LOW
        seen = []
        t = threading.Thread(target=lambda: seen.append(md.matmul(a, a.T).dtype))
        t.start()
        t.join()
        assert seen == [md.float32]  # another thread is not inside this context
    assert md.matmul(a, a.T).dtype == md.float32
    assert md.amp.ACTIVE == 0

    @md.autocast(dtype=LOW)
    def f(x):
        return md.matmul(x, x.T)

    assert f(a).dtype == LOW and md.matmul(a, a.T).dtype == md.float32
    assert contextvars.copy_context().run(md.amp.autocast_dtype) is None


@needs_autograd
def test_matmul_operator_follows_the_policy_of_md_matmul():
    """``a @ b`` under autocast is ``md.matmul(a, b)``: the low dtype, the same values and a
    float32 gradient for float32 leaves; in the C fast path (where built) and in the Python
    operator, reflected (``__rmatmul__``) too; another thread and the code after the
    context compute in float32."""
    reason = NO_LOW_KERNEL.get(BACKEND, {}).get("matmul")
    if reason and md.registry.current().default_device().type == "cpu":
        pytest.skip(reason)
    a_np, b_np = _rand((4, 8)), _rand((8, 3), 1)
    a, b = md.asarray(a_np), md.asarray(b_np)
    assert (a @ b).dtype == md.float32
    with md.autocast(dtype=LOW):
        want = md.matmul(a, b)
        got = [a @ b, type(a).__matmul__(a, b), type(b).__rmatmul__(b, a_np)]
        seen = []
        t = threading.Thread(target=lambda: seen.append((a @ b).dtype))
        t.start()
        t.join()
    assert want.dtype == LOW and seen == [md.float32]
    for r in got:
        assert r.dtype == LOW
        np.testing.assert_array_equal(r.astype(md.float32).numpy(), want.astype(md.float32).numpy())
    assert (a @ b).dtype == md.float32 and md.amp.ACTIVE == 0
    if not TRAIN_LOW:
        return
    w = nn.Parameter(md.asarray(b_np))
    with md.autograd.record(), md.autocast(dtype=LOW):
        loss = (a @ w).astype(md.float32).sum()
    loss.backward()
    assert w.grad is not None and w.grad.dtype == md.float32
    np.testing.assert_allclose(
        w.grad.numpy(), np.repeat(a_np.sum(0)[:, None], 3, 1), rtol=2e-2, atol=5e-2
    )


def test_bad_arguments_raise_typed_errors():
    with pytest.raises(TypeError, match=r"bfloat16 or md\.float16"):
        md.autocast(dtype=md.float32)
    with pytest.raises(TypeError, match="True or False"):
        md.autocast(enabled=1)
    with pytest.raises(ValueError, match="backoff_factor"):
        md.amp.GradScaler(backoff_factor=2.0)


@pytest.mark.skipif(HAS_AUTOGRAD, reason="the no-op path is the numpy backend's")
def test_numpy_autocast_is_a_noop_that_warns_once():
    md.amp._warned_no_autograd = False
    a = md.asarray(_rand((4, 8)))
    with pytest.warns(UserWarning, match="does nothing on the numpy backend"), md.autocast():
        assert md.matmul(a, a.T).dtype == md.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with md.autocast():
            assert F.softmax(a).dtype == md.float32


# ---------------------------------------------------------------- GradScaler

OVERFLOW_AT = {2, 5, 6, 13, 19}
STEPS = 20


def _rule(init=2.0**16, growth=2.0, backoff=0.5, interval=3):
    """torch's update rule, written plainly: a float32 scale, halved after an overflow, doubled
    after ``interval`` good steps in a row."""
    scale, good, out = np.float32(init), 0, []
    for i in range(STEPS):
        if i in OVERFLOW_AT:
            scale, good = np.float32(scale * backoff), 0
        else:
            good += 1
            if good == interval:
                scale, good = np.float32(scale * growth), 0
        out.append(float(scale))
    return out


def _torch_scales(interval=3):
    import torch

    lin = torch.nn.Linear(8, 3)
    opt = torch.optim.SGD(lin.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu", growth_interval=interval)
    x = torch.from_numpy(_rand((4, 8)))
    out = []
    for i in range(STEPS):
        scaler.scale(lin(x).square().mean()).backward()
        if i in OVERFLOW_AT:
            lin.weight.grad[0, 0] = float("inf") if i % 2 else float("nan")
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        out.append(scaler.get_scale())
    return out


def _md_train(interval=3, clip=False):
    lin = nn.Linear(8, 3)
    opt = md.optim.SGD(lin.parameters(), lr=0.01)
    scaler = md.amp.GradScaler(growth_interval=interval)
    x = md.asarray(_rand((4, 8)))
    out, skipped_ok = [], []
    for i in range(STEPS):
        with md.autograd.record():
            with md.autocast(dtype=LOW, enabled=TRAIN_LOW):
                loss = F.mse_loss(lin(x), md.zeros((4, 3)))
            scaled = scaler.scale(loss)
        scaled.backward()
        if i in OVERFLOW_AT:
            g = lin.weight.grad.numpy().copy()
            g[0, 0] = np.inf if i % 2 else np.nan
            lin.weight.grad = md.asarray(g)
        before = lin.weight.numpy().copy()
        if clip:
            scaler.unscale_(opt)
            nn.utils.clip_grad_norm_(lin.parameters(), 0.5)
        scaler.step(opt)
        changed = not np.array_equal(before, lin.weight.numpy())
        skipped_ok.append(changed == (i not in OVERFLOW_AT))
        scaler.update()
        opt.zero_grad()
        out.append(scaler.get_scale())
    return out, skipped_ok


@needs_autograd
@pytest.mark.parametrize("clip", [False, True])
def test_scale_sequence_equals_the_rule_and_skips_overflowed_steps(clip):
    scales, skipped_ok = _md_train(clip=clip)
    assert scales == _rule()
    assert all(skipped_ok)


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed in this environment")
def test_the_rule_equals_torch_gradscaler():
    assert _torch_scales() == _rule()
    if HAS_AUTOGRAD:
        assert _md_train()[0] == _torch_scales()


def test_gradscaler_on_plain_tensors_and_state_dict():
    """No autograd needed: gradients set by hand (the numpy backend's case too)."""
    p = nn.Parameter(md.asarray(np.ones(3, dtype=np.float32)))
    opt = md.optim.SGD([p], lr=1.0)
    scaler = md.amp.GradScaler(init_scale=8.0, growth_interval=1)
    assert scaler.scale(md.asarray(np.float32(2.0))).item() == 16.0
    p.grad = md.asarray(np.full(3, 8.0, dtype=np.float32))
    scaler.step(opt)
    np.testing.assert_array_equal(p.numpy(), np.zeros(3, dtype=np.float32))
    scaler.update()
    assert scaler.get_scale() == 16.0
    p.grad = md.asarray(np.array([1.0, math.inf, 0.0], dtype=np.float32))
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    assert scaler.step(opt) is None
    np.testing.assert_array_equal(p.numpy(), np.zeros(3, dtype=np.float32))
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 8.0
    state = scaler.state_dict()
    assert state == {
        "scale": 8.0,
        "growth_factor": 2.0,
        "backoff_factor": 0.5,
        "growth_interval": 1,
        "_growth_tracker": 0,
    }
    other = md.amp.GradScaler()
    other.load_state_dict(state)
    assert other.state_dict() == state
    with pytest.raises(RuntimeError, match="empty"):
        other.load_state_dict(md.amp.GradScaler(enabled=False).state_dict())
    with pytest.raises(RuntimeError, match="No inf checks"):
        other.update()
    off = md.amp.GradScaler(enabled=False)
    loss = md.asarray(np.float32(3.0))
    assert off.scale(loss) is loss and off.get_scale() == 1.0


@needs_autograd
@pytest.mark.skipif(not TRAIN_LOW, reason="MXNet's CPU build has no float16 gemm")
def test_autocast_inside_md_jit_matches_eager():
    """autocast inside a jitted forward and a jitted training step (record, backward,
    opt.step): the same dtypes, and the losses of eager autocast within its rounding."""
    x = md.asarray(_rand((4, 8)))
    y = md.asarray(np.array([0, 1, 2, 0], dtype=np.int64))
    w0, b0 = _rand((3, 8), 5) / 3, _rand((3,), 6) / 3

    def make():
        lin = nn.Linear(8, 3)
        lin.weight = nn.Parameter(md.asarray(w0))
        lin.bias = nn.Parameter(md.asarray(b0))
        return lin, md.optim.SGD(lin.parameters(), lr=0.5)

    def run(jit: bool) -> tuple[list[float], Any]:
        lin, opt = make()

        def step(x, y):
            with md.autograd.record(), md.autocast(dtype=LOW):
                out = lin(x)
                loss = F.cross_entropy(out, y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss, out

        if jit:
            step = md.jit(step)
        losses = []
        for _ in range(5):
            loss, out = step(x, y)
            assert out.dtype == LOW and loss.dtype == md.float32
            losses.append(loss.item())
        return losses, lin.weight

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", md.JitWarning)  # an eager fallback is allowed (DESIGN 12)
        jitted, w = run(True)
    eager, _ = run(False)
    assert w.dtype == md.float32
    assert jitted[-1] < jitted[0]
    np.testing.assert_allclose(jitted, eager, rtol=2e-2)


@needs_autograd
@pytest.mark.parametrize("optimiser", ["SGD", "Adam"])
def test_gradscaler_inside_md_jit_matches_eager(optimiser):
    """``scale``/``backward``/``step``/``update`` inside one jitted step, with overflows
    injected (a captured factor set to inf or NaN at some calls): the same scale sequence,
    skipped steps and parameters as eager. A compiler that cannot hold the scaler's check in
    its graph (it reads a flag back to Python) compiles around it or runs the step eagerly
    with a JitWarning; never a silently different step."""
    x = md.asarray(_rand((4, 8)))
    w0, b0 = _rand((3, 8), 5) / 3, _rand((3,), 6) / 3
    overflow = {2: np.inf, 5: np.nan, 6: np.inf}

    def run(jit: bool) -> tuple[list[float], np.ndarray]:
        lin = nn.Linear(8, 3)
        lin.weight = nn.Parameter(md.asarray(w0))
        lin.bias = nn.Parameter(md.asarray(b0))
        opt = getattr(md.optim, optimiser)(lin.parameters(), lr=0.05)
        scaler = md.amp.GradScaler(init_scale=2.0**10, growth_interval=2)
        factor = md.asarray(np.float32(1.0))

        def step(x):
            with md.autograd.record():  # scale inside: TensorFlow and MXNet tape it
                loss = F.mse_loss(lin(x), md.zeros((4, 3))) * factor
                scaled = scaler.scale(loss)
            scaled.backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
            return loss

        if jit:
            step = md.jit(step)
        scales = []
        for i in range(9):
            factor[...] = overflow.get(i, 1.0)
            step(x)
            scales.append(scaler.get_scale())
        return scales, lin.weight.numpy().copy()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", md.JitWarning)  # an eager fallback is allowed
        jitted = run(True)
    eager = run(False)
    scale, good, rule = 2.0**10, 0, []  # halved at an overflow, doubled after 2 good steps
    for i in range(9):
        good = 0 if i in overflow else good + 1
        scale = scale / 2 if i in overflow else scale * 2 if good == 2 else scale
        good = 0 if good == 2 else good
        rule.append(scale)
    assert eager[0] == rule
    assert jitted[0] == eager[0]
    np.testing.assert_allclose(jitted[1], eager[1], rtol=1e-5, atol=1e-6)
    assert np.isfinite(jitted[1]).all()
