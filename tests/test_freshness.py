"""Cross-backend sessions refuse artifacts that the latest tests-<backend> run did not write."""

from __future__ import annotations

import os

import pytest

from multidev.testing import freshness


@pytest.fixture
def tree(tmp_path):
    root, shared = tmp_path / "repo", tmp_path / "repo" / ".nox" / "_shared"
    for rel in ("src/multidev/core.py", "backends/multidev_torch/ops.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x = 1\n")
    (root / "constraints").mkdir()
    (root / "constraints" / "torch.txt").write_text("torch==2.13.0\n")
    (root / "pyproject.toml").write_text("[project]\n")
    return root, shared


def _run(root, shared, backend="torch"):
    run = freshness.start(root, shared, backend)
    for kind, path in freshness.artifacts(shared, backend).items():
        if kind == "portability":
            path.mkdir(parents=True, exist_ok=True)
            (path / "tensor.safetensors").write_bytes(b"data")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("{}")
    freshness.finish(shared, run)
    return run


def test_artifacts_of_the_latest_run_are_fresh(tree):
    root, shared = tree
    _run(root, shared)
    for kind in freshness.KINDS:
        assert freshness.stale(root, shared, "torch", kind) is None


def test_an_unfinished_run_is_stale_and_forgets_the_old_artifacts(tree):
    root, shared = tree
    _run(root, shared)
    freshness.start(root, shared, "torch")
    assert "no completed run" in freshness.stale(root, shared, "torch", "examples")
    assert not freshness.artifacts(shared, "torch")["examples"].exists()
    assert not freshness.artifacts(shared, "torch")["portability"].exists()


def test_changed_sources_make_artifacts_stale(tree):
    root, shared = tree
    _run(root, shared)
    (root / "backends" / "multidev_torch" / "ops.py").write_text("x = 2\n")
    assert "sources changed" in freshness.stale(root, shared, "torch", "training")


@pytest.mark.parametrize("kind", ["examples", "portability"])
def test_a_file_from_another_time_is_stale(tree, kind):
    root, shared = tree
    run = _run(root, shared)
    path = freshness.artifacts(shared, "torch")[kind]
    target = next(path.iterdir()) if path.is_dir() else path
    os.utime(target, (run["started"] - 3600, run["started"] - 3600))
    assert "was not written by run" in freshness.stale(root, shared, "torch", kind)


def test_a_missing_artifact_is_stale_and_numpy_has_no_training(tree):
    root, shared = tree
    _run(root, shared)
    freshness.artifacts(shared, "torch")["reproducibility"].unlink()
    assert "missing" in freshness.stale(root, shared, "torch", "reproducibility")
    with pytest.raises(ValueError, match="Expected one of"):
        freshness.stale(root, shared, "numpy", "training")
