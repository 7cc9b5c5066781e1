"""The catalogue of planted bugs (tools/source_mutants.py) stays applicable, and a short run of
it kills its mutants; the whole run is ``nox -s mutation-source`` (outside the default set)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import multidev as md

TOOL = Path(__file__).resolve().parents[1] / "tools" / "source_mutants.py"


def _tool():
    spec = importlib.util.spec_from_file_location("source_mutants", TOOL)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_every_mutant_still_applies_to_exactly_one_place():
    assert _tool().check_catalogue() == []


@pytest.mark.skipif(md.get_backend() != "numpy", reason="the short run needs one backend only")
def test_a_short_run_kills_its_mutants(tmp_path):
    names = ["StepLR decays one epoch late", "loader reuses epoch 0's order"]
    env = {**os.environ, "MULTIDEV_BACKEND": "numpy"}
    out = subprocess.run(
        [sys.executable, str(TOOL), "--only", *names, "--out", str(tmp_path / "r.json")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("killed") == 2 and "survived: none" in out.stdout
