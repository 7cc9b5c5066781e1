"""The cross-backend comparison tools cannot be fooled by NaN, infinities or stale files."""

from __future__ import annotations

import json
import math

import pytest

from multidev.testing import compare_outputs, param_hash, train_compare

REF = "tensor([[0.1234, -0.5678]], device=cpu, backend=numpy)\nloss 0.25\n"


def _problems(text: str, ref: str = REF) -> list[str]:
    return compare_outputs.compare(text, ref, rtol=1e-4, atol=1e-5)[0]


def test_outputs_within_tolerance_and_other_backend_names_agree():
    assert _problems(REF.replace("numpy", "torch").replace("0.1234", "0.12341")) == []


@pytest.mark.parametrize(
    "text, ref",
    [
        (REF.replace("0.1234", "nan"), REF),
        (REF, REF.replace("0.1234", "nan")),
        (REF.replace("0.25", "nan"), REF.replace("0.25", "nan")),
        (REF.replace("0.25", "NaN"), REF),
        (REF.replace("0.25", "inf"), REF.replace("0.25", "-inf")),
        (REF.replace("0.25", "inf"), REF),
        (REF.replace("0.25", "0.25025"), REF),
    ],
    ids=["nan-vs-number", "number-vs-nan", "nan-vs-nan", "NaN", "inf-vs-minus-inf", "inf", "0.1%"],
)
def test_nan_unequal_infinities_and_a_tenth_of_a_percent_fail(text, ref):
    assert _problems(text, ref)


def test_equal_infinities_agree_and_words_are_not_numbers():
    text = "inference information nanometre: -inf inf\n"
    assert _problems(text, text) == []
    assert compare_outputs.tokens("information") == ["information"]


def test_main_fails_on_a_nan_even_in_the_reference_alone(tmp_path, capsys):
    a, b = tmp_path / "numpy.txt", tmp_path / "torch.txt"
    a.write_text(REF.replace("0.25", "nan"))
    b.write_text(REF.replace("0.25", "nan"))
    assert compare_outputs.main([str(a), str(b)]) == 1
    assert compare_outputs.main([str(a)]) == 1
    assert "NaN" in capsys.readouterr().out


def _result(backend: str, losses: list) -> dict:
    return {"backend": backend, "examples": {"ex": {"losses": losses, "threshold": 1.0}}}


def test_training_results_that_agree_pass():
    problems, _ = train_compare.check(
        [_result("torch", [2.0, 1.0, 0.5]), _result("paddle", [2.0, 1.00001, 0.5])]
    )
    assert problems == []


@pytest.mark.parametrize("bad", [math.nan, math.inf, None])
@pytest.mark.parametrize("where", ["first", "other"])
def test_a_non_finite_loss_in_a_middle_epoch_fails(bad, where):
    good = _result("torch", [2.0, 1.0, 0.5])
    broken = _result("paddle", [2.0, bad, 0.5])
    runs = [broken, good] if where == "first" else [good, broken]
    problems, _ = train_compare.check(runs)
    assert any("paddle has non-finite losses (epoch 2" in p for p in problems), problems


def test_nan_in_every_backend_fails_through_json(tmp_path):
    files = []
    for backend in ("torch", "mxnet"):
        path = tmp_path / f"{backend}.json"
        path.write_text(json.dumps(_result(backend, [2.0, math.nan, 0.5])))
        files.append(str(path))
    assert train_compare.main(["check", *files]) == 1


H = "a" * 64


def _hash_files(tmp_path, **forward: str) -> list:
    paths = []
    for backend in ("numpy", "torch"):
        path = tmp_path / f"{backend}.txt"
        line = forward.get(backend, "0.5 -1.25 2.0")
        path.write_text(f"{backend} {H}\n" + (f"{backend} forward {line}\n" if line else ""))
        paths.append(path)
    return paths


def test_reproducibility_covers_a_forward_pass(tmp_path):
    assert param_hash.check(_hash_files(tmp_path)) == 0
    assert param_hash.check(_hash_files(tmp_path, torch="0.5 -1.25 2.002")) == 1
    assert param_hash.check(_hash_files(tmp_path, torch="0.5 nan 2.0")) == 1
    assert param_hash.check(_hash_files(tmp_path, numpy="0.5 nan 2.0", torch="0.5 nan 2.0")) == 1
    assert param_hash.check(_hash_files(tmp_path, torch="")) == 1


def test_forward_values_are_seeded_and_follow_the_parameters():
    net = param_hash.build_model()
    first = param_hash.forward_values(net)
    assert first == param_hash.forward_values(param_hash.build_model())
    assert len(first) == 15 and all(math.isfinite(v) for v in first)
    net[6].weight.data[0, 0] = net[6].weight.numpy()[0, 0] * 1.001
    assert param_hash.forward_values(net) != first


def test_torch_interop_read_fails_on_nan_expected_outputs(tmp_path):
    """A NaN in the outputs compared must be a mismatch, not a difference below tolerance."""
    import numpy as np

    import multidev as md
    from multidev.testing import torch_interop

    net = torch_interop.build(md.nn)
    md.save(net.state_dict(), tmp_path / "native-torch.safetensors")
    x = md.asarray(torch_interop._input())
    outputs = {mode: net.train(mode == "train")(x).numpy() for mode in ("eval", "train")}
    np.savez(tmp_path / "native-torch.npz", **outputs)
    assert torch_interop.read(tmp_path) == []
    outputs["eval"] = np.full_like(outputs["eval"], np.nan)
    np.savez(tmp_path / "native-torch.npz", **outputs)
    problems = torch_interop.read(tmp_path)
    assert len(problems) == 1 and "eval output" in problems[0]
