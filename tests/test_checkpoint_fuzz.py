"""The structured checkpoint fuzzer, a few hundred cases on the active backend: every case
ends in success or md.CheckpointError, within 5 s and 200 MiB, measured in a worker process.
``nox -s fuzz`` runs 5,000 cases per backend."""

from __future__ import annotations

import os

import pytest

from multidev.testing import fuzz

CASES = 200
SEED = 20261130
TIME_LIMIT = 5.0
MEMORY_LIMIT = 200 << 20


def test_fuzzed_checkpoints_fail_cleanly_within_limits():
    results = fuzz.run(CASES, SEED, TIME_LIMIT, MEMORY_LIMIT)
    summary = fuzz.summarize(results, TIME_LIMIT, MEMORY_LIMIT)
    assert summary["cases"] == CASES
    assert summary["failures"] == [], summary
    # the mutations reach both ends: files that still load and files that are refused
    assert (
        summary["outcomes"].get("ok", 0) > 0 and summary["outcomes"].get("CheckpointError", 0) > 0
    )


def test_cases_are_reproducible(tmp_path):
    bases = fuzz.base_files(tmp_path)
    assert [fuzz.make_case(bases, SEED, i) for i in range(20)] == [
        fuzz.make_case(bases, SEED, i) for i in range(20)
    ]
    assert len({fuzz.make_case(bases, SEED, i) for i in range(20)}) > 15


def test_summary_flags_every_kind_of_failure():
    ok = {"index": 0, "outcome": "ok", "seconds": 0.1, "peak": 1, "rss": 1}
    results = [
        ok,
        {**ok, "index": 1, "outcome": "ValueError: boom"},
        {**ok, "index": 2, "seconds": TIME_LIMIT + 1},
        {**ok, "index": 3, "peak": MEMORY_LIMIT + 1},
        {**ok, "index": 4, "rss": MEMORY_LIMIT + 1},
        {**ok, "index": 5, "outcome": "hang"},
        {**ok, "index": 6, "outcome": "CheckpointError"},
    ]
    summary = fuzz.summarize(results, TIME_LIMIT, MEMORY_LIMIT)
    assert [f["index"] for f in summary["failures"]] == [1, 2, 3, 4, 5]


@pytest.mark.skipif(
    os.environ.get("MULTIDEV_BACKEND", "numpy") != "numpy",
    reason="building the files is the same on every backend: checked once, in the numpy session",
)
def test_every_case_of_the_long_run_can_be_built(tmp_path):
    """The generator itself never fails: mutations stack on one header, so a later one meets
    what an earlier one left (a string or floats as offsets). Case 4,308 of seed 0 once
    stopped ``nox -s fuzz`` on every backend. Builds the files only (no load)."""
    bases = fuzz.base_files(tmp_path)
    for i in range(5000):
        fuzz.make_case(bases, 0, i)
