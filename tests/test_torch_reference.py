"""The stored PyTorch reference (tests/fixtures/torch_reference.json) is what torch computes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

_spec = importlib.util.spec_from_file_location(
    "torch_reference", Path(__file__).parent / "fixtures" / "torch_reference.py"
)
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)


def test_stored_reference_is_what_torch_computes():
    stored = json.loads(ref.PATH.read_text())
    fresh = json.loads(json.dumps(ref.generate()))
    for kind in ("optimisers", "schedules"):
        assert [c["name"] for c in stored[kind]] == [c["name"] for c in fresh[kind]]
        for old, new in zip(stored[kind], fresh[kind], strict=True):
            assert ref.close(old, new), (
                f"{kind} {old['name']} {old['kwargs']}: the stored numbers differ from torch "
                f"{torch.__version__}'s. Regenerate with `python tests/fixtures/torch_reference.py`."
            )


def test_stored_clipping_is_what_torch_computes():
    stored = json.loads(ref.PATH.read_text())
    assert ref.close(stored["clipping"], json.loads(json.dumps(ref.generate()["clipping"])))


def test_close_tells_numbers_apart():
    assert ref.close({"a": [1.0, 2.0]}, {"a": [1.0, 2.0 + 1e-7]})
    assert not ref.close({"a": [1.0, 2.0]}, {"a": [1.0, 2.0 + 1e-5]})
    assert not ref.close({"a": [1.0]}, {"b": [1.0]})
