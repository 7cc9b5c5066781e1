"""The PyTorch code of d2l's model chapters, with ``torch`` replaced by ``md`` mechanically,
runs on the active backend (``tools/d2l_chapters.py`` extracts and runs it).

Needs a local checkout of the book's source named by ``MULTIDEV_D2L_DIR`` (``git clone
https://github.com/d2l-ai/d2l-en``): the ``d2l-chapters`` nox session runs it on the four
autograd backends; without the variable the test is skipped. Every cell either runs or is
matches a cause in ``KNOWN``, which says why it cannot run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import multidev as md

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import d2l_chapters  # noqa: E402

CHECKOUT = os.environ.get("MULTIDEV_D2L_DIR")

#: (pattern of the error, why): failures known on every backend, by their cause. A cell whose
#: error matches none of them (nor one of ``KNOWN_ON`` for the active backend) fails the test.
KNOWN: tuple[tuple[str, str], ...] = (
    (
        r"d2l has no '(download|extract|DATA_URL|DATA_HUB|get_data_ch11|load_data_fashion_mnist)'",
        "data the book downloads (Time Machine from its URL, fra-eng, airfoil) or its old data API",
    ),
    (
        r"'int' object is not callable",
        "X.size(1): md's Tensor.size is the Array API's element count (an int), PyTorch's a method",
    ),
    (
        r"No module named '(pandas|mpl_toolkits|matplotlib)'|plots .* need matplotlib",
        "pandas (and in MXNet's environment matplotlib) is not installed in the test environments",
    ),
    (
        r"^NameError|attention_weights|src_vocab|list index out of range|too many values to unpack",
        "follows from an earlier cell of the section that failed for one of the reasons above",
    ),
)

pytestmark = [
    pytest.mark.requires("autograd"),
    pytest.mark.skipif(
        not CHECKOUT,
        reason="MULTIDEV_D2L_DIR is not set: point it at a clone of "
        "https://github.com/d2l-ai/d2l-en to run the book's chapters (nox -s d2l-chapters)",
    ),
]


#: backend -> (pattern, why): failures known on that backend only
KNOWN_ON: dict[str, tuple[tuple[str, str], ...]] = {}


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> list[dict]:
    checkout = Path(CHECKOUT or "")
    sections = [s for c in d2l_chapters.CHAPTERS for s in d2l_chapters.sections(checkout, c)]
    work = tmp_path_factory.mktemp("d2l") / "work"
    work.mkdir()
    out = work.parent / "records.json"
    # the same multidev as this test's, whatever the working folder
    path = os.pathsep.join(str(Path(p).resolve()) for p in sys.path if p)
    env = {**os.environ, "MULTIDEV_BACKEND": md.get_backend(), "PYTHONPATH": path}
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "d2l_chapters.py"),
            *map(str, sections),
            "--json",
            str(out),
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=3000,
    )
    assert out.exists(), proc.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.parametrize("chapter", d2l_chapters.CHAPTERS)
def test_chapter_cells_run_with_torch_replaced_by_md(records, chapter):
    mine = [r for r in records if r["section"].startswith(chapter + "/")]
    assert mine, f"no PyTorch cells found for {chapter}"
    failed = {
        (r["section"], r["cell"]): r["error"]
        for r in mine
        if r["status"] != "ok"
        and not any(re.search(p, r["error"]) for p, _ in KNOWN + KNOWN_ON.get(md.get_backend(), ()))
    }
    assert not failed, "\n".join(f"{s}[{i}]: {e}" for (s, i), e in failed.items())
