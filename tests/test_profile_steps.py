"""benchmarks/profile_steps.py counts what each side of a case calls per step and lists the
two sides' counts side by side with their difference."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def profile_steps():
    sys.path.insert(0, str(BENCH))
    try:
        import profile_steps

        yield profile_steps
    finally:
        sys.path.remove(str(BENCH))


def test_builtin_calls_are_counted_per_step(profile_steps):
    def step():
        for _ in range(6):
            math.sqrt(2.0)
        math.factorial(5)

    out = profile_steps.profile_side(step, lambda: None, steps=4)
    calls = out["builtins"]
    assert calls["<built-in method math.sqrt>"] == 6
    assert calls["<built-in method math.factorial>"] == 1
    assert out["total"] > 0 and set(out["builtin_ms"]) >= {"<built-in method math.sqrt>"}


def test_table_puts_the_sides_side_by_side_with_their_difference(profile_steps):
    rows = profile_steps._table({"transpose": 12.0, "conv": 2.0}, {"conv": 2.0, "pad": 1.0}, 10)
    assert rows[1].split() == ["12.0", "0.0", "+12.0", "transpose"]
    assert rows[2].split() == ["2.0", "2.0", "+0.0", "conv"]
    assert rows[3].split() == ["0.0", "1.0", "-1.0", "pad"]
    assert len(profile_steps._table({"a": 1.0, "b": 2.0}, {}, 1)) == 2


def test_files_are_told_apart_by_origin(profile_steps):
    assert profile_steps._origin("/x/src/multidev/nn/conv.py") == "multidev"
    assert profile_steps._origin("/x/backends/multidev_torch/cnn.py") == "multidev"
    assert profile_steps._origin("/v/lib/python3.11/site-packages/torch/nn/modules/conv.py") == (
        "framework"
    )
