"""``multidev.testing.cnn_compare check``: the float64 runs must agree across backends, and
every backend's float32 ResNet-18 run must end below its step-0 loss (its agreement across
backends is reported, not checked)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from multidev.testing import cnn_compare


def _result(backend: str, f64: list[float], f32: list[float] | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "backend": backend,
        "seed": 0,
        "examples": {"resnet18": {"losses": f64, "threshold": f64[0]}},
        "float32": {},
    }
    if f32 is not None:
        out["float32"]["resnet18"] = {"losses": f32, "threshold": f32[0]}
    return out


def _check(tmp_path: Path, *results: dict[str, Any]) -> int:
    files = []
    for r in results:
        f = tmp_path / f"{r['backend']}.json"
        f.write_text(json.dumps(r))
        files.append(str(f))
    return cnn_compare.main(["check", *files])


def test_float32_runs_may_differ_when_each_falls(tmp_path, capsys):
    a = _result("torch", [2.3, 1.0, 0.5], [2.3, 1.1, 0.6])
    b = _result("tensorflow", [2.3, 1.0, 0.5], [2.3, 0.7, 0.4])
    assert _check(tmp_path, a, b) == 0
    out = capsys.readouterr().out
    assert "resnet18 (float32, must fall" in out
    assert "FAILED" not in out


def test_float64_runs_must_agree(tmp_path, capsys):
    a = _result("torch", [2.3, 1.0, 0.5], [2.3, 1.1, 0.6])
    b = _result("tensorflow", [2.3, 1.0, 0.51], [2.3, 1.1, 0.6])
    assert _check(tmp_path, a, b) == 1
    assert "resnet18: losses differ by" in capsys.readouterr().out


def test_float32_run_that_does_not_fall_fails(tmp_path, capsys):
    a = _result("torch", [2.3, 1.0, 0.5], [2.3, 1.1, 0.6])
    b = _result("paddle", [2.3, 1.0, 0.5], [2.3, 2.4, 2.5])
    assert _check(tmp_path, a, b) == 1
    out = capsys.readouterr().out
    assert "final loss 2.5 on paddle is not below the threshold 2.3 (float32)" in out


def test_missing_float32_run_fails(tmp_path, capsys):
    a = _result("torch", [2.3, 1.0, 0.5], [2.3, 1.1, 0.6])
    b = _result("mxnet", [2.3, 1.0, 0.5], None)
    assert _check(tmp_path, a, b) == 1
    assert "resnet18 (float32): no results from mxnet" in capsys.readouterr().out
