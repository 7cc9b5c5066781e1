"""The ``resume`` nox session's comparison fails on what it must catch."""

from __future__ import annotations

import json

import pytest

from multidev.testing import resume_compare

LOSSES = [0.5, 0.25, 0.125, 0.0625]


def _write(folder, name, data):
    (folder / name).write_text(json.dumps(data))


def _folder(tmp_path, resumed_b=LOSSES, digest_b="d"):
    for b in ("a", "b"):
        _write(
            tmp_path,
            f"{b}.json",
            {
                "backend": b,
                "loader": {"seed": "d" if b == "a" else digest_b},
                "losses": LOSSES,
                "trainer_losses": LOSSES,
            },
        )
    kinds = [*resume_compare.POSITIONS, *resume_compare.TRAINER_POSITIONS]
    runs = [{"from": "b", "kind": k, "losses": LOSSES} for k in kinds]
    _write(tmp_path, "resumed-a.json", {"backend": "a", "runs": runs})
    runs = [{"from": "a", "kind": k, "losses": resumed_b} for k in kinds]
    _write(tmp_path, "resumed-b.json", {"backend": "b", "runs": runs})
    return tmp_path


def test_agreeing_runs_pass(tmp_path):
    problems, lines = resume_compare.check(_folder(tmp_path), ["a", "b"], ["a", "b"])
    assert problems == []
    assert sum("ok" in line for line in lines) == 8  # 2 pairs x (2 loop + 2 Trainer) kinds


def test_a_drifting_resumed_run_fails(tmp_path):
    drifted = [*LOSSES[:3], LOSSES[3] * (1 + 2e-5)]
    problems, _ = resume_compare.check(_folder(tmp_path, drifted), ["a", "b"], ["a", "b"])
    assert len(problems) == 4 and all("a -> b" in p for p in problems)


def test_missing_pairs_and_different_batches_fail(tmp_path):
    folder = _folder(tmp_path, digest_b="other")
    (folder / "resumed-a.json").unlink()
    problems, _ = resume_compare.check(folder, ["a", "b", "c"], ["a", "b"])
    text = "\n".join(problems)
    assert "loader batches: b differs from a" in text
    assert "no resumed-a.json" in text
    assert "c: no c.json" in text


def test_a_nan_or_infinite_loss_in_a_resumed_run_fails(tmp_path):
    for bad in (float("nan"), float("inf")):
        resumed = [*LOSSES[:2], bad, LOSSES[3]]
        problems, lines = resume_compare.check(_folder(tmp_path, resumed), ["a", "b"], ["a", "b"])
        kinds = len(resume_compare.POSITIONS) + len(resume_compare.TRAINER_POSITIONS)
        assert len(problems) == kinds and all("a -> b" in p for p in problems), (bad, problems)
        assert sum("FAILED" in line for line in lines) == kinds


def test_relative_difference_of_non_finite_values():
    assert resume_compare._relative(float("nan"), float("nan")) == float("inf")
    assert resume_compare._relative(float("inf"), float("inf")) == 0.0
    assert resume_compare._relative(float("inf"), 1.0) == float("inf")
    assert resume_compare._relative(0.0, 0.0) == 0.0
    assert resume_compare._relative(1.0, 1.5) == pytest.approx(1 / 3)
