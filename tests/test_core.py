"""Core behaviour that does not depend on a framework: registry, devices, dtypes, reports."""

from __future__ import annotations

import pytest

import multidev as md
from multidev import dtypes, registry
from multidev.testing import compare_outputs, report


def test_registered_backends_are_the_five():
    assert set(registry.registered_backends()) >= {
        "numpy",
        "torch",
        "tensorflow",
        "paddle",
        "mxnet",
    }


def test_missing_framework_gives_install_hint(monkeypatch):
    monkeypatch.setattr(registry, "framework_installed", lambda name: name == "numpy")
    monkeypatch.setattr(registry, "_adapters", {})
    with pytest.raises(ImportError, match=r"pip install 'multidev\[torch\]'"):
        registry.load("torch")
    assert registry.install_hint("paddle") == "pip install 'multidev[paddle]'"


def test_set_backend_then_use_backend_override():
    before = md.get_backend()
    try:
        md.set_backend("numpy")
        assert md.get_backend() == "numpy"
        assert "set_backend" in registry.chosen_by()
        with md.use_backend("numpy"):
            assert "use_backend" in registry.chosen_by()
    finally:
        md.set_backend(before)


@pytest.mark.parametrize(
    "a, b, want",
    [
        (dtypes.bool, dtypes.bool, dtypes.bool),
        (dtypes.bool, dtypes.uint8, dtypes.uint8),
        (dtypes.uint8, dtypes.int8, dtypes.int16),
        (dtypes.uint8, dtypes.int32, dtypes.int32),
        (dtypes.int64, dtypes.float16, dtypes.float16),
        (dtypes.float16, dtypes.bfloat16, dtypes.float32),
        (dtypes.bfloat16, dtypes.float64, dtypes.float64),
        (dtypes.int32, dtypes.float32, dtypes.float32),
    ],
)
def test_promotion_table(a, b, want):
    assert dtypes.result_type(a, b) is want and dtypes.result_type(b, a) is want


def test_scalar_promotion_rules():
    assert dtypes.scalar_result_type(dtypes.int32, 1.5) is dtypes.float32
    assert dtypes.scalar_result_type(dtypes.bool, 2) is dtypes.int64
    assert dtypes.scalar_result_type(dtypes.float16, 2.0) is dtypes.float16
    assert dtypes.scalar_result_type(dtypes.int8, 3) is dtypes.int8


def test_unknown_dtype_error():
    with pytest.raises(TypeError, match="Expected one of multidev's dtypes"):
        dtypes.as_dtype("datetime64")


def test_device_constructor_validates():
    assert md.Device("cpu") is md.cpu()
    with pytest.raises(ValueError, match="Expected a device like"):
        md.Device("tpu", 0)
    with pytest.raises(ValueError, match="non-negative"):
        md.Device("gpu", -1)


def test_compare_outputs_tolerates_float_noise_only():
    a = "tensor([1.0000001, 2.0], backend=torch)\nshape (2, 3)"
    b = "tensor([1.0, 2.0], backend=numpy)\nshape (2, 3)"
    assert compare_outputs.compare(a, b, 1e-4, 1e-5)[0] == []
    problems, _ = compare_outputs.compare(a.replace("2.0", "2.1"), b, 1e-4, 1e-5)
    assert problems
    assert compare_outputs.compare("Linear(4)", "ReLU(4)", 1e-4, 1e-5)[0]


def test_report_markdown_groups_reasons():
    result = {
        "backends": {
            "numpy": {
                "ops": {
                    "passed": 2,
                    "failed": 0,
                    "skipped": 2,
                    "xfailed": 0,
                    "reasons": [["skip", "t1", "no ref"], ["skip", "t2", "no ref"]],
                }
            },
            "torch": {"ops": {"passed": 4, "failed": 0, "skipped": 0, "xfailed": 0, "reasons": []}},
        }
    }
    text = report.to_markdown(result)
    assert "| ops | 2 passed, 2 skipped | 4 passed |" in text
    assert "skip ×2 (no ref): t1, t2" in text


@pytest.mark.skipif(md.get_backend() != "numpy", reason="the NumPy backend shares the array")
def test_writing_into_a_tensor_over_a_read_only_numpy_array_is_refused():
    """The NumPy backend's tensors are the arrays themselves: a write into one made from a
    read-only array is a clear ValueError, and the array keeps its values."""
    import numpy as np

    a = np.arange(3.0)
    a.flags.writeable = False
    t = md.asarray(a)
    with pytest.raises(ValueError, match="Expected a writable array"):
        t[0] = 7.0
    assert a.tolist() == [0.0, 1.0, 2.0]
