"""The benchmark harness gives every side the same chances: no side always runs first."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections import Counter
from pathlib import Path

import pytest

# the harness is plain Python: one backend's session checks it (its gc.collect per call costs
# seconds in a process holding a framework's heap)
pytestmark = pytest.mark.skipif(
    os.environ.get("MULTIDEV_BACKEND", "numpy") != "numpy", reason="runs in tests-numpy only"
)


@pytest.fixture(scope="module")
def harness():
    path = Path(__file__).parents[1] / "benchmarks" / "harness.py"
    spec = importlib.util.spec_from_file_location("_bench_harness", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


@pytest.mark.parametrize("n", [2, 3, 4])
def test_every_side_leads_and_closes_equally_often(harness, n):
    calls: list[str] = []
    names = [f"side{i}" for i in range(n)]
    sides = {name: (lambda name=name: calls.append(name)) for name in names}
    repeats = 4 * n
    harness.measure(sides, lambda: None, repeats=repeats, warmup=0, number=1)
    rounds = [calls[i * n : (i + 1) * n] for i in range(repeats)]
    assert all(sorted(r) == names for r in rounds)
    firsts = Counter(r[0] for r in rounds)
    lasts = Counter(r[-1] for r in rounds)
    assert firsts == dict.fromkeys(names, repeats // n), firsts
    assert lasts == dict.fromkeys(names, repeats // n), lasts


def test_report_names_each_backends_target_where_they_differ(tmp_path):
    """The combined table's target column holds a target only when every backend has it; a row
    whose backends have different targets gives each cell its own (in the committed results,
    op_tiny: numpy's looser one and the frameworks')."""
    path = Path(__file__).parents[1] / "benchmarks" / "report.py"
    spec = importlib.util.spec_from_file_location("_bench_report", path)
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    data = report.load_all(path.parent / "results")
    assert len(data) >= 2, "the committed results of at least two backends"
    rows = {line.split(" | ")[0].lstrip("| "): line for line in report.table(data).splitlines()}
    by_row: dict[str, dict[str, str]] = {}
    for backend, doc in data.items():
        for r in doc["results"]:
            if r["target"] and r.get("vs", "native") == "native":
                by_row.setdefault(r["case"], {})[backend] = r["target"]
    assert any(len(set(t.values())) > 1 for t in by_row.values()), "no row to check"
    for case, targets in by_row.items():
        cells = rows[case].removesuffix(" |").split(" | ")
        if len(set(targets.values())) == 1:
            assert cells[3] == next(iter(targets.values())), rows[case]
        else:
            assert cells[3] == "per backend", rows[case]
            for backend, target in targets.items():
                cell = cells[4 + list(data).index(backend)]
                assert cell.endswith(f"({target})"), (backend, rows[case])
