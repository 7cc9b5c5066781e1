"""The d2l compilers example (``examples/compilers.py``, written once) runs on the active
backend: the hybridized ``Sequential`` gives the eager output, warm-up calls included; it
compiles on every backend with a compiler (MXNet's too) and stays eager with a note on NumPy;
and on every backend with a serving format the export is written (issue 13)."""

from __future__ import annotations

import warnings

from multidev import registry
from multidev.examples import compilers

SERVING = {"torch", "tensorflow", "paddle", "mxnet", "jax"}


def test_the_compilers_example_matches_eager_and_exports(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(compilers, "RUNS", 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert compilers.main(export_dir=str(tmp_path)) == 0
    out = capsys.readouterr().out
    assert "compiled output equals eager: True" in out
    assert f"hybridized, {compilers.WARMUP} warm-up calls" in out
    bk = registry.current()
    compiles = "jit" in bk.capabilities
    assert ("note:" in out) is not compiles, out  # a JitWarning means it ran eagerly
    if bk.name in SERVING:
        assert "exported to the framework's serving format" in out
        assert any(tmp_path.iterdir()), "the export wrote no file"
    else:
        assert "no export on this backend" in out
