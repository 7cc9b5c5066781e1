"""The benchmark harness gives every side the same chances: no side always runs first."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path

import pytest


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
