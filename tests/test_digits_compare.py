"""digits_compare's check: backends agree or fail, plain PyTorch's run printed beside."""

from __future__ import annotations

import json

from multidev.testing import digits_compare


def _run(backend: str, losses: list[float], accuracy: float, seconds: float) -> dict:
    part = {"losses": losses, "accuracy": accuracy, "seconds": [seconds] * len(losses)}
    return {"backend": backend, "seed": 0, "float64": part, "float32": part}


def _write(path, doc) -> str:
    path.write_text(json.dumps(doc))
    return str(path)


def test_check_prints_plain_torch_beside_and_fails_on_disagreeing_losses(tmp_path, capsys):
    a = _write(tmp_path / "a.json", _run("torch", [1.0, 0.5], 0.98, 2.0))
    b = _write(tmp_path / "b.json", _run("paddle", [1.0, 0.50001], 0.985, 3.0))
    doc = {
        "backend": "plain torch",
        "float32": {"losses": [1.0], "accuracy": 0.99, "seconds": [1.5]},
    }
    p = _write(tmp_path / "plain.json", doc)
    assert digits_compare.main(["check", a, b, "--plain", p]) == 0
    out = capsys.readouterr().out
    assert "plain torch: test accuracy 0.9900, 1.50 s/epoch" in out
    assert "paddle: test accuracy 0.9850" in out and "3.00 s/epoch" in out
    c = _write(tmp_path / "c.json", _run("mxnet", [1.0, 0.6], 0.99, 1.0))
    assert digits_compare.main(["check", a, c]) == 1
    assert "FAILED: mxnet: per-epoch losses" in capsys.readouterr().out
    d = _write(tmp_path / "d.json", _run("jax", [1.0, 0.5], 0.5, 1.0))
    assert digits_compare.main(["check", a, d]) == 1
    assert "FAILED: jax: test accuracy 0.5000" in capsys.readouterr().out
