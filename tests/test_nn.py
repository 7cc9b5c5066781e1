"""Blocks and parameters on the active backend: the Block API details, the PyTorch data the
conformance suite compares with, the d2l demo and the seeded-parameter hash."""

from __future__ import annotations

import runpy
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

import multidev as md
from multidev import nn
from multidev.testing import param_hash
from multidev.testing.models import TORCH_EXPECTED, build, describe

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------ PyTorch's own answers


def test_stored_pytorch_names_shapes_and_print_are_what_torch_gives():
    torch = pytest.importorskip("torch")
    for name, want in TORCH_EXPECTED.items():
        got = describe(build(torch.nn, name))
        assert got == want, f"regenerate TORCH_EXPECTED[{name!r}]: {got!r}"


def test_multidev_gives_the_stored_pytorch_answers():
    for name, want in TORCH_EXPECTED.items():
        assert describe(build(nn, name)) == want


# ------------------------------------------------------------------ Block details


def test_module_is_block():
    assert nn.Module is nn.Block


def test_named_parameters_options():
    net = build(nn, "tied")
    assert len(list(net.named_parameters(remove_duplicate=False))) == 8
    assert [n for n, _ in net.named_parameters(prefix="model")][:2] == [
        "model.0.weight",
        "model.0.bias",
    ]
    assert list(net.parameters(recurse=False)) == []
    assert [n for n, _ in net[0].named_parameters(recurse=False)] == ["weight", "bias"]


def test_state_dict_keep_vars_gives_the_parameters():
    lin = nn.Linear(2, 3)
    sd = lin.state_dict(keep_vars=True)
    assert sd["weight"] is lin.weight and sd["bias"] is lin.bias
    plain = lin.state_dict()
    assert isinstance(plain["weight"], md.Tensor) and not isinstance(plain["weight"], nn.Parameter)


def test_buffers_register_move_and_save():
    block = nn.Block()
    block.register_buffer("running", md.zeros(3))
    block.register_buffer("scratch", md.ones(2), persistent=False)
    assert list(block.state_dict()) == ["running"]
    block.running = md.ones(3)
    np.testing.assert_array_equal(block.running.numpy(), np.ones(3))
    with pytest.raises(TypeError, match="Tensor or None"):
        block.running = [1, 2, 3]
    block.load_state_dict({"running": np.full(3, 5.0)})
    np.testing.assert_array_equal(block.running.numpy(), np.full(3, 5.0))
    with pytest.raises(TypeError, match=r"md\.Tensor"):
        block.register_buffer("bad", np.zeros(2))


def test_registration_errors_say_what_was_expected():
    net = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="Block or None"):
        net.add_module("x", "not a block")
    with pytest.raises(KeyError, match="already an attribute"):
        net.add_module("in_features", nn.ReLU())
    with pytest.raises(KeyError, match="non-empty"):
        net.add_module("", nn.ReLU())
    with pytest.raises(TypeError, match=r"nn\.Parameter"):
        net.register_parameter("scale", md.ones(2))
    with pytest.raises(TypeError, match="Block or None"):
        seq = nn.Sequential(nn.ReLU())
        seq.add_module("1", 3)


def test_setting_registered_parameter_or_module_to_none():
    lin = nn.Linear(2, 2)
    lin.bias = None
    assert lin.bias is None
    assert [n for n, _ in lin.named_parameters()] == ["weight"]
    assert lin(md.ones((1, 2))).shape == (1, 2)
    net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    net.add_module("1", None)
    assert len(list(net.children())) == 1


def test_delete_attribute_unregisters():
    net = build(nn, "mlp")
    del net.out
    assert [n for n, _ in net.named_children()] == ["hidden"]
    with pytest.raises(AttributeError, match="has no attribute 'out'"):
        _ = net.out
    assert "hidden" in dir(net)


def test_sequential_editing():
    net = nn.Sequential(OrderedDict([("first", nn.Linear(3, 4)), ("act", nn.ReLU())]))
    assert [n for n, _ in net.named_children()] == ["first", "act"]
    net.append(nn.Linear(4, 1))
    assert [n for n, _ in net.named_children()] == ["first", "act", "2"]
    new = nn.Tanh()
    net[1] = new
    assert net[1] is new and net.act is new
    del net[0]
    assert len(net) == 2 and [n for n, _ in net.named_children()] == ["0", "1"]
    with pytest.raises(TypeError, match="Block"):
        net[0] = "relu"
    with pytest.raises(TypeError, match="int or a slice"):
        net["0"]


def test_to_accepts_device_strings():
    lin = nn.Linear(2, 2)
    assert lin.to("cpu") is lin
    assert lin.weight.device is md.cpu()


def test_parameter_of_an_uninitialised_parameter_is_refused():
    with pytest.raises(TypeError, match="forward pass"):
        nn.Parameter(nn.LazyLinear(2).weight)


def test_shared_lazy_layer_materialises_once():
    md.manual_seed(0)
    shared = nn.LazyLinear(4)
    net = nn.Sequential(nn.Linear(3, 4), shared, nn.ReLU(), shared)
    assert net(md.rand(2, 3)).shape == (2, 4)
    assert shared.weight.shape == (4, 4)
    assert [n for n, _ in net.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_dropout_function_arguments():
    X = md.ones((2, 3))
    assert nn.functional.dropout(X, 0.5, training=False) is X
    assert nn.functional.dropout(X, 0.0) is X
    with pytest.raises(ValueError, match=r"Received: -0.1"):
        nn.functional.dropout(X, -0.1)


def test_linear_function_checks_shapes_and_devices():
    w = md.ones((3, 4))
    with pytest.raises(ValueError, match="bias of shape"):
        nn.functional.linear(md.ones((2, 4)), w, md.ones(2))
    out = nn.functional.linear([[1.0, 1.0, 1.0, 1.0]], w)
    np.testing.assert_array_equal(out.numpy(), np.full((1, 3), 4.0))


# ------------------------------------------------------------------ demo and examples


def test_demo_prints_every_section(capsys):
    from multidev import demo

    assert demo.main() == 0
    out = capsys.readouterr().out
    for title in (
        "Layers and blocks",
        "Parameter management",
        "Deferred initialisation",
        "Custom layers",
    ):
        assert f"== {title} ==" in out
    for line in (
        "    (block 3): Sequential(",
        "<UninitializedParameter>",
        "(256, 20)",
        "Init weight (8, 4)",
        "('0.weight', (8, 4)) ('0.bias', (8,)) ('2.weight', (1, 8)) ('2.bias', (1,))",
        "  (0): Linear(in_features=20, out_features=256, bias=True)",
    ):
        assert line in out


def test_demo_output_is_the_same_twice(capsys):
    from multidev import demo

    demo.main()
    first = capsys.readouterr().out
    demo.main()
    assert capsys.readouterr().out == first


@pytest.mark.parametrize(
    "name", ["layers_and_blocks", "parameters", "deferred_init", "custom_layers"]
)
def test_example_scripts_run(name, capsys):
    runpy.run_path(str(ROOT / "examples" / f"{name}.py"), run_name="__main__")
    assert "tensor(" in capsys.readouterr().out


def test_multidev_demo_command_runs():
    proc = subprocess.run(
        [sys.executable, "-m", "multidev", "demo"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "== Custom layers ==" in proc.stdout


# ------------------------------------------------------------------ parameter hash


def test_param_hash_is_reproducible_and_sensitive():
    net = param_hash.build_model()
    h = param_hash.digest(net)
    assert h == param_hash.digest(param_hash.build_model())
    w = net[0].weight
    v = w.numpy()[0, 0]
    w.data[0, 0] = float(np.nextafter(v, np.float32(np.inf), dtype=np.float32))
    assert param_hash.digest(net) != h


def test_param_hash_check(tmp_path, capsys):
    h = "a" * 64
    (tmp_path / "a.txt").write_text(f"numpy {h}\nnumpy forward 0.5 -1.25\n")
    (tmp_path / "b.txt").write_text(f"torch {h}\ntorch forward 0.5 -1.25\n")
    (tmp_path / "c.txt").write_text(f"paddle {'b' * 64}\n")
    (tmp_path / "bad.txt").write_text("mxnet\n")
    assert param_hash.main(["--check", str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]) == 0
    assert param_hash.check([tmp_path / "a.txt", tmp_path / "c.txt"]) == 1
    assert param_hash.check([tmp_path / "bad.txt"]) == 1
    (tmp_path / "empty.txt").write_text("")
    assert param_hash.check([tmp_path / "empty.txt"]) == 1
    assert "DIFFER" in capsys.readouterr().out


def test_param_hash_prints_backend_and_hash(capsys):
    assert param_hash.main([]) == 0
    hash_line, forward_line = capsys.readouterr().out.splitlines()
    backend, h = hash_line.split()
    assert backend == md.get_backend() and len(h) == 64
    assert forward_line.split()[:2] == [backend, "forward"]


@pytest.mark.requires("autograd")
def test_module_zero_grad_drops_or_zeroes_every_parameters_gradient():
    """PyTorch's ``Module.zero_grad`` (d2l's conv-layer section calls ``conv2d.zero_grad()``)."""
    net = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    x = md.ones((4, 3))
    with md.autograd.record():
        loss = net(x).sum()
    loss.backward()
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_a_0d_tensor_formats_as_its_number_as_in_pytorch():
    """``f"{loss:.3f}"`` (d2l prints losses so); other tensors only with an empty spec."""
    x = md.asarray(np.array([1.25, 2.5], dtype=np.float32))
    assert f"{x.sum():.3f}" == "3.750"
    assert f"{x[0]}" == str(x[0].item())
    assert f"{x}" == repr(x)
    with pytest.raises(TypeError):
        f"{x:.3f}"
