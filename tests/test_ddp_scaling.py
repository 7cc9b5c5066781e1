"""benchmarks/ddp_scaling.py's results files: a run of one model keeps the other model's last
rows, and a file written before the models were named is read as the MLP's."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def ddp_scaling():
    path = Path(__file__).parents[1] / "benchmarks" / "ddp_scaling.py"
    spec = importlib.util.spec_from_file_location("_bench_ddp_scaling", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def _result(md_ms: float, native_ms: float) -> dict:
    row = {
        "procs": 2,
        "step_ms": {"md": md_ms, "native": native_ms},
        "cpu_ms": {"md": md_ms / 2, "native": native_ms / 2},
        "ratio": {"native": md_ms / native_ms},
    }
    return {"batch": 16, "steps_per_round": 5, "rounds": 9, "rows": [row]}


def test_an_old_results_file_is_read_as_the_mlp_rows(ddp_scaling, tmp_path):
    old = {"backend": "torch", "cpus": 2, **_result(3.0, 2.0)}
    path = tmp_path / "ddp_torch.json"
    path.write_text(json.dumps(old))
    assert ddp_scaling._load(path) == {"mlp": _result(3.0, 2.0)}
    assert ddp_scaling._load(tmp_path / "absent.json") == {}
    path.write_text(json.dumps({"backend": "torch", "models": {"resnet18": _result(5.0, 4.0)}}))
    assert ddp_scaling._load(path) == {"resnet18": _result(5.0, 4.0)}


def test_the_table_has_a_row_per_model_and_side(ddp_scaling):
    table = ddp_scaling._table("torch", {"mlp": _result(3.0, 2.0), "resnet18": _result(5.0, 4.0)})
    rows = table.splitlines()[2:]
    assert rows == [
        "| mlp | torch | 2 | 3.00 | torch DDP | 2.00 | 1.50 | 1.50 / 1.00 |",
        "| resnet18 | torch | 2 | 5.00 | torch DDP | 4.00 | 1.25 | 2.50 / 2.00 |",
    ]
