"""Counting GPUs: ``CUDA_VISIBLE_DEVICES`` read as CUDA reads it, and a count that leaves a
later ``fork`` usable.

Without a GPU the fork test proves less than its name: that counting starts nothing in the
framework that breaks a forked child (no thread pool, no TensorFlow runtime it cannot survive).
Whether CUDA itself stays uninitialised is only shown by the GPU-marked test, on a GPU machine.
"""

from __future__ import annotations

import json

import pytest
from conftest import run_python

import multidev as md
from multidev import gpus, registry

UUIDS = ["GPU-8d6f1c2e-0000", "GPU-12ab-0000", "GPU-12ac-0000", "GPU-fff0-0000"]


@pytest.mark.parametrize(
    ("visible", "expected"),
    [
        (None, 4),
        ("", 0),
        ("2,0", 2),
        (" 1 , 3", 2),
        ("1,7,2", 1),  # stops at the first index that is not a GPU
        ("1,1", 0),  # a GPU named twice hides every GPU
        ("0,2,0", 0),
        ("0,GPU-aaa", 1),  # a list of indices stops at a UUID
        ("1gpu,2", 2),  # an entry counts by its leading digits, as strtoul reads it
        ("-1", 0),
        ("0,-1,2", 1),
        ("x", 0),
        ("GPU-8d6f,GPU-fff", 2),
        ("GPU-8d6f,GPU-12a", 1),  # "GPU-12a" matches two GPUs: invalid, stops
        ("GPU-8d6f,GPU-0000", 1),  # matches no GPU
        ("GPU-8d6f,GPU-8d6f1c", 0),  # the same GPU twice
        ("GPU-8d6f,1", 1),  # a list of UUIDs stops at an index
    ],
)
def test_visible_gpu_count_reads_cuda_visible_devices_as_cuda_does(visible, expected):
    assert gpus.visible_gpu_count(4, visible, UUIDS) == expected


def test_visible_gpu_count_without_uuids_or_gpus():
    assert gpus.visible_gpu_count(2, "GPU-a,GPU-b,GPU-c") == 2  # unchecked UUIDs: counted
    assert gpus.visible_gpu_count(2, "GPU-a,GPU-a") == 0
    assert gpus.visible_gpu_count(0, "0") == 0
    assert gpus.visible_gpu_count(0, None) == 0


def test_nvml_count_applies_cuda_visible_devices(monkeypatch):
    monkeypatch.setattr(gpus, "_nvml_devices", lambda: UUIDS[:2])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,1")
    assert gpus.nvml_visible_gpu_count() == 0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    assert gpus.nvml_visible_gpu_count() == 2
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert gpus.nvml_visible_gpu_count() == 2
    monkeypatch.setattr(gpus, "_nvml_devices", lambda: None)
    assert gpus.nvml_visible_gpu_count() is None


_FORK = """
import json, os
import multidev as md
n = md.num_gpus()
dev = md.gpu(0) if {on_gpu} else md.cpu()
pid = os.fork()
if pid == 0:
    try:
        ok = float((md.ones(3, device=dev) + 1).sum().item()) == 6.0
    except BaseException:
        ok = False
    os._exit(0 if ok else 1)
_, status = os.waitpid(pid, 0)
print(json.dumps({{"gpus": n, "child": os.waitstatus_to_exitcode(status)}}))
"""


def _count_then_fork(on_gpu: bool) -> dict:
    out = run_python(_FORK.format(on_gpu=on_gpu), MULTIDEV_BACKEND=registry.current().name)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_child_forked_after_counting_gpus_works():
    result = _count_then_fork(on_gpu=False)
    assert result["gpus"] == md.num_gpus()
    assert result["child"] == 0


#: backends whose framework initialises CUDA before multidev counts (stated in docs/guide/devices.md)
_CUDA_BEFORE_COUNTING = {
    "paddle": "a CUDA build of Paddle initialises CUDA when it is imported",
    "tensorflow": "building the TensorFlow backend starts TensorFlow's runtime, and CUDA with it",
}


@pytest.mark.gpu
def test_a_child_forked_after_counting_gpus_uses_the_gpu():
    if md.num_gpus() == 0:
        pytest.skip("no GPU: num_gpus() == 0")
    reason = _CUDA_BEFORE_COUNTING.get(registry.current().name)
    if reason:
        pytest.skip(f"documented limit: {reason}")
    assert _count_then_fork(on_gpu=True)["child"] == 0
