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


def _same_numbers(old: dict, new: dict) -> bool:
    """One stored case against torch's fresh one. Float32 trajectories and state tensors are
    compared within 1e-6 of each tensor's largest value: a value near zero (a parameter a step
    took across zero) keeps the last-bit rounding of the larger ones it came from, which differs
    between CPUs (AVX2, AVX-512). Everything else within 1e-6 relative."""
    if old.keys() != new.keys():
        return False
    for key in old:
        if key == "params":
            same = len(old[key]) == len(new[key]) and all(
                ref.close(a, b, scale=ref.magnitude(a))
                for step_a, step_b in zip(old[key], new[key], strict=True)
                for a, b in zip(step_a, step_b, strict=True)
            )
        elif key == "state":
            same = old[key].keys() == new[key].keys() and all(
                old[key][i].keys() == new[key][i].keys()
                and all(
                    ref.close(v, new[key][i][k], scale=ref.magnitude(v))
                    for k, v in old[key][i].items()
                )
                for i in old[key]
            )
        elif key == "torch_state":
            same = ref.close(old[key], new[key], scale=ref.magnitude(old[key]))
        else:
            same = ref.close(old[key], new[key])
        if not same:
            return False
    return True


def test_stored_reference_is_what_torch_computes():
    stored = json.loads(ref.PATH.read_text())
    fresh = json.loads(json.dumps(ref.generate()))
    for kind in ("optimisers", "schedules"):
        assert [c["name"] for c in stored[kind]] == [c["name"] for c in fresh[kind]]
        for old, new in zip(stored[kind], fresh[kind], strict=True):
            assert _same_numbers(old, new), (
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
    # relative to a scale: a small value may move by rtol * scale, no more
    assert ref.close([2.0, 1e-4], [2.0, 1e-4 + 1e-6], scale=2.0)
    assert not ref.close([2.0, 1e-4], [2.0, 1e-4 + 1e-5], scale=2.0)
    assert not ref.close([2.0, 1e-4], [2.0, 1e-4 + 1e-6])
    assert ref.magnitude({"p": [[-3.0, 1.0], [2.0]], "n": "x"}) == 3.0
