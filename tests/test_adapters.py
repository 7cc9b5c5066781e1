"""What every adapter must do, checked on each backend whose framework is installed: importing
multidev and the adapter package imports no framework, ``MULTIDEV_BACKEND`` selects the backend
(and only its framework is imported), and the GPU helpers fall back to the CPU where there is
no GPU."""

from __future__ import annotations

import importlib.util
import json

import pytest

BACKENDS = ("numpy", "torch", "tensorflow", "paddle", "mxnet")
FRAMEWORKS = ("torch", "tensorflow", "paddle", "mxnet")

PROBE = """
import json, sys
import multidev as md
import multidev_{name}
from multidev import registry

before = sorted(f for f in {frameworks!r} if f in sys.modules)
X = md.ones((2, 3), device=md.try_gpu())
print(json.dumps({{
    "before": before,
    "after": sorted(f for f in {frameworks!r} if f in sys.modules),
    "backend": md.get_backend(),
    "gpus": md.num_gpus(),
    "try_gpu": str(md.try_gpu()),
    "try_gpu10": str(md.try_gpu(10)),
    "all": [str(d) for d in md.try_all_gpus()],
    "x_device": str(X.device),
    "native_device": str(registry.current().device_of(X.native)),
    "devices": [str(d) for d in md.devices()],
}}))
"""


@pytest.fixture(scope="module", params=BACKENDS)
def name(request) -> str:
    if request.param != "numpy" and importlib.util.find_spec(request.param) is None:
        pytest.skip(f"{request.param} is not installed here")
    return request.param


@pytest.fixture(scope="module")
def probe(name, run_python) -> dict:
    out = run_python(PROBE.format(name=name, frameworks=FRAMEWORKS), MULTIDEV_BACKEND=name)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_multidev_and_the_adapter_imports_no_framework(probe):
    assert probe["before"] == []


def test_environment_variable_selects_the_backend_and_only_its_framework(name, probe):
    assert probe["backend"] == name
    assert probe["after"] == ([] if name == "numpy" else [name])


def test_gpu_helpers_fall_back_to_the_cpu_without_a_gpu(probe):
    assert probe["native_device"] == probe["x_device"]
    assert probe["devices"][0] == "cpu"
    if probe["gpus"] == 0:
        assert probe["try_gpu"] == probe["try_gpu10"] == probe["x_device"] == "cpu"
        assert probe["all"] == ["cpu"]
        assert all(not d.startswith("gpu") for d in probe["devices"])
    else:
        assert probe["try_gpu"] == probe["x_device"] == "gpu:0"
        assert probe["all"] == [f"gpu:{i}" for i in range(probe["gpus"])]
        assert probe["try_gpu10"] == ("gpu:10" if probe["gpus"] > 10 else "cpu")


def test_a_missing_gpu_is_a_device_error_naming_it(name, run_python):
    out = run_python(
        """
        import multidev as md
        try:
            md.ones(2, device=md.gpu(md.num_gpus()))
        except md.DeviceError as e:
            print("DeviceError", e)
        """,
        MULTIDEV_BACKEND=name,
    )
    assert out.stdout.startswith("DeviceError") and "gpu:" in out.stdout


def test_an_empty_cuda_visible_devices_hides_every_gpu(name, run_python):
    out = run_python(
        "import multidev as md; print(md.num_gpus(), md.try_all_gpus())",
        MULTIDEV_BACKEND=name,
        CUDA_VISIBLE_DEVICES="",
    )
    assert out.stdout.split() == ["0", "[Device('cpu',", "0)]"]
