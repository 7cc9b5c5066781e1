"""The Python examples of README.md and docs/**/*.md run, on the active backend.

Each page's ```python blocks run in order in one namespace (as a reader types them into one
session), with ``multidev as md``, ``nn`` and ``F`` imported. An HTML comment on the line
before a block changes that: ``<!-- docs-test: skip (why) -->`` leaves out a fragment that
cannot run (the reason is required), ``<!-- docs-test: needs autograd, sklearn -->`` runs it only where the
backend has each capability (``multidev.contract.CAPABILITIES``) and each other name imports as a
module.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest

import multidev as md
from multidev import contract, registry

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ("api", "benchmarks", "index.md", "changelog.md")
FENCE = re.compile(r"^```python\s*$")
MARKER = re.compile(r"<!--\s*docs-test:\s*(skip|needs)\s*(.*?)\s*-->")


def _pages() -> list[Path]:
    docs = ROOT / "docs"
    pages = [ROOT / "README.md"]
    for p in sorted(docs.rglob("*.md")):
        rel = p.relative_to(docs)
        if rel.parts[0] not in GENERATED:
            pages.append(p)
    return pages


def blocks(path: Path) -> list[tuple[int, str, tuple[str, str] | None]]:
    """(line, code, marker) of each ```python block of ``path``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    i = 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            start = i
            marker = None
            prev = lines[i - 1] if i else ""
            if m := MARKER.search(prev):
                marker = (m.group(1), m.group(2))
            i += 1
            code = []
            while i < len(lines) and not lines[i].startswith("```"):
                code.append(lines[i])
                i += 1
            out.append((start + 1, "\n".join(code), marker))
        i += 1
    return out


PAGES = _pages()


def _present(need: str) -> bool:
    """Whether the active backend has capability ``need``, or else module ``need`` imports."""
    need = need.strip()
    if need in contract.CAPABILITIES:
        return need in registry.current().capabilities
    return importlib.util.find_spec(need) is not None


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_examples_run(page: Path, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    namespace: dict = {}
    exec(
        "import multidev as md\nfrom multidev import nn\nfrom multidev.nn import functional as F",
        namespace,
    )
    saved_env = dict(os.environ)  # examples may set variables (SCIPY_ARRAY_API): undone below
    try:
        _run_page(page, namespace)
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
    if not blocks(page):
        pytest.skip(f"{page.name} has no Python examples")


def _run_page(page: Path, namespace: dict) -> None:
    for line, code, marker in blocks(page):
        if marker and marker[0] == "skip":
            assert marker[1], f"{page.name}:{line}: a docs-test skip marker must say why"
            continue
        if marker and marker[0] == "needs" and not all(map(_present, marker[1].split(","))):
            continue
        try:
            exec(compile(code, f"{page.name}:{line}", "exec"), namespace)
        except Exception as exc:  # the page and line make the failure findable
            raise AssertionError(
                f"The example at {page.relative_to(ROOT)}:{line} failed on backend "
                f"{md.get_backend()}: {type(exc).__name__}: {exc}"
            ) from exc


def test_every_skip_marker_gives_a_reason() -> None:
    for page in PAGES:
        for line, _, marker in blocks(page):
            if marker and marker[0] == "skip":
                assert len(marker[1]) > 3, f"{page.name}:{line}: say why the block cannot run"


NOTEBOOK = {
    "a date": re.compile(
        r"\b20\d\d-\d\d-\d\d\b|\b\d{1,2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
        r"\.? 20\d\d\b|\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d{1,2}, 20\d\d\b"
    ),
    "a time of day": re.compile(r"\b\d{1,2}:\d\d\s*(UTC|am|pm)\b|\bUTC\b", re.IGNORECASE),
    "a load average": re.compile(r"load average|\bload \d", re.IGNORECASE),
    "a commit id": re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),
}


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_user_docs_carry_no_lab_notebook(page: Path) -> None:
    """The README and the guide describe the software; when and where something was measured
    belongs to the benchmark results (benchmarks/results/), not to these pages."""
    text = page.read_text(encoding="utf-8")
    found = [f"{what}: {m.group(0)!r}" for what, rx in NOTEBOOK.items() for m in rx.finditer(text)]
    assert not found, (
        f"Expected no dates, times, load averages or commit ids in {page.name}: {found}"
    )
