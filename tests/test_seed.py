"""The seed test: the d2l chapter multidev grew out of runs with ``torch`` replaced by ``md``.

The code cells are extracted from the seed files mechanically, so this test follows the
files instead of a copy of them:

- ``*.txt`` pages in reStructuredText (``.. code:: python`` blocks) give the cells of the
  ``pytorch`` tab and those outside any tab; the other frameworks' tabs are not PyTorch.
- Other ``*.txt`` pages (a blog's text) give every paragraph that parses as Python. Not code:
  a paragraph that is one bare name or number (a heading, a column of line numbers), and
  printed output (a paragraph starting with ``# result``). A paragraph starting indented
  continues the one before (a blank line inside a class). A line ``1 2<TAB>`a = f() a`` is a
  code widget whose newlines were lost: it is split back into as many lines as it numbers.

Each cell then gets the ``torch`` → ``md`` replacement and nothing else: ``import torch``
becomes ``import multidev as md``, the module path ``torch`` in imports becomes
``multidev`` (``from multidev import nn``, ``multidev.nn.functional``), and the name
``torch`` becomes ``md``. The cells of one file run in order in one fresh namespace, in a
temporary directory (the file I/O cells write there), and a trailing expression is shown
with ``repr`` as a notebook would. Skipped, each by a rule checked here:

- shell cells (``!nvidia-smi``): IPython escapes, not Python;
- ``from d2l import torch as d2l``: the book's helper package, not PyTorch; the test checks
  that no cell uses the name;
- a cell that reads a name only a GPU-failed cell would have defined.

A cell that needs a GPU the machine lacks must fail with ``md.DeviceError`` naming a GPU
that ``md.num_gpus()`` says is missing, as PyTorch fails without CUDA. Anything else must
run. The seeds live beside the repository (``../shared/seeds``) or where ``MULTIDEV_SEEDS``
points; the test skips with the path when they are absent.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import multidev as md

ROOT = Path(__file__).resolve().parents[1]
SEEDS = Path(os.environ.get("MULTIDEV_SEEDS") or ROOT.parent / "shared" / "seeds")

_RST_TAB = re.compile(r'mdl-tabs__panel[^"]*" id="(?P<tab>[a-z]+)-\d+-\d+"')
_WIDGET = re.compile(r"^(?P<numbers>\d+(?: \d+)*)\t`(?P<code>.*)`\s*$")
_HELPER_IMPORT = re.compile(r"^\s*from d2l import torch as d2l\s*$", re.M)


@dataclass
class Cell:
    """One code cell of a seed file: its text as written and after the replacement."""

    path: Path
    line: int
    original: str
    source: str = field(init=False)
    skip: str = ""

    def __post_init__(self) -> None:
        lines = self.original.splitlines()
        if any(_HELPER_IMPORT.match(ln) for ln in lines):
            lines = [ln for ln in lines if not _HELPER_IMPORT.match(ln)]
        self.source = to_multidev("\n".join(lines))
        if all(ln.lstrip().startswith("!") for ln in lines if ln.strip()):
            self.skip = "a shell command (IPython `!` escape), not Python"

    @property
    def id(self) -> str:
        return f"{self.path.name[:3]}:L{self.line}"


def to_multidev(code: str) -> str:
    """The ``torch`` → ``md`` replacement, and nothing else."""
    code = re.sub(r"^(\s*)import torch[ \t]*$", r"\1import multidev as md", code, flags=re.M)
    code = re.sub(r"\b(from|import) torch\b", r"\1 multidev", code)
    return re.sub(r"\btorch\b", "md", code)


def _is_code(text: str) -> bool:
    """True for a paragraph that is Python code rather than prose, a heading or output."""
    if text.lstrip().startswith("# result"):
        return False
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    return any(
        not (isinstance(s, ast.Expr) and isinstance(s.value, (ast.Name, ast.Constant)))
        for s in tree.body
    )


def _split_widget(code: str, n: int) -> str | None:
    """``code`` split at spaces into ``n`` lines that parse, or None."""
    if n == 1:
        return code if _is_code(code) or code.startswith("!") else None
    for m in re.finditer(" ", code):
        head, tail = code[: m.start()], code[m.end() :]
        if _is_code(head):
            rest = _split_widget(tail, n - 1)
            if rest is not None:
                return head + "\n" + rest
    return None


def _rst_cells(path: Path, lines: list[str]) -> list[Cell]:
    cells, tab, i = [], None, 0
    while i < len(lines):
        line = lines[i]
        m = _RST_TAB.search(line)
        if m:
            tab = m.group("tab")
        elif line.strip() == "</div>":
            tab = None
        elif line.startswith(".. code:: python") and tab in (None, "pytorch"):
            j, body = i + 1, []
            while j < len(lines) and (not lines[j].strip() or lines[j].startswith("    ")):
                body.append(lines[j][4:])
                j += 1
            cells.append(Cell(path, i + 1, "\n".join(body).strip("\n")))
            i = j
            continue
        i += 1
    return cells


def _text_cells(path: Path, lines: list[str]) -> list[Cell]:
    paragraphs: list[tuple[int, list[str]]] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            if paragraphs and paragraphs[-1][1][-1] != "":
                paragraphs[-1][1].append("")
            continue
        w = _WIDGET.match(line)
        if w:
            code = _split_widget(w.group("code"), len(w.group("numbers").split()))
            if code is not None:
                paragraphs.append((n, [*code.splitlines(), ""]))
                continue
        if paragraphs and paragraphs[-1][1][-1] == "" and line[0] in " \t":
            prev = "\n".join(paragraphs[-1][1])
            if _is_code(prev):
                paragraphs[-1][1].append(line)
                continue
        if not paragraphs or paragraphs[-1][1][-1] == "":
            paragraphs.append((n, []))
        paragraphs[-1][1].append(line)
    cells = []
    for n, body in paragraphs:
        text = "\n".join(body).strip("\n")
        if _is_code(text) or text.startswith("!"):
            cells.append(Cell(path, n, text))
    return cells


def extract(path: Path) -> list[Cell]:
    """The code cells of one seed file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if any(ln.startswith(".. code:: python") for ln in lines):
        return _rst_cells(path, lines)
    return _text_cells(path, lines)


def _seed_files() -> list[Path]:
    return sorted(p for p in SEEDS.glob("*.txt")) if SEEDS.is_dir() else []


CELLS = [c for p in _seed_files() for c in extract(p)]


def _names(tree: ast.AST, ctx: type) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _bound(tree: ast.Module) -> set[str]:
    out = _names(tree, ast.Store)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
    return out


class Notebook:
    """Runs one file's cells in order in one namespace, each at most once."""

    def __init__(self, cells: list[Cell], workdir: Path) -> None:
        self.cells = cells
        self.workdir = workdir
        self.namespace: dict[str, Any] = {"__name__": "__seed__"}
        self.outcomes: dict[int, BaseException | str | None] = {}
        self.missing: dict[str, Cell] = {}  # names a GPU-failed cell would have defined

    def run(self, index: int) -> BaseException | str | None:
        for i in range(index + 1):
            if i not in self.outcomes:
                self.outcomes[i] = self._run(self.cells[i])
        return self.outcomes[index]

    def _run(self, cell: Cell) -> BaseException | str | None:
        if cell.skip:
            return cell.skip
        tree = ast.parse(cell.source)
        needs = sorted(_names(tree, ast.Load) & self.missing.keys())
        if needs:
            self.missing.update(dict.fromkeys(_bound(tree), cell))
            first = self.missing[needs[0]]
            return f"uses {', '.join(needs)}, which the GPU cell {first.id} would have defined"
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        cwd = Path.cwd()
        os.chdir(self.workdir)
        try:
            exec(compile(tree, cell.id, "exec"), self.namespace)
            if last is not None:
                repr(eval(compile(ast.Expression(last.value), cell.id, "eval"), self.namespace))
        except md.DeviceError as e:
            self.missing.update(dict.fromkeys(_bound(tree), cell))
            return e
        except Exception as e:  # reported by the cell's test with the cell's text
            return e
        finally:
            os.chdir(cwd)
        return None


@pytest.fixture(scope="module")
def notebooks(tmp_path_factory) -> dict[Path, Notebook]:
    out = {}
    for p in _seed_files():
        cells = [c for c in CELLS if c.path == p]
        out[p] = Notebook(cells, tmp_path_factory.mktemp(p.stem))
    return out


def _missing_gpu(e: md.DeviceError) -> bool:
    """True when the error names a GPU beyond the ones this machine has."""
    n = md.num_gpus()
    return any(int(i) >= n for i in re.findall(r"\b(?:gpu|cuda):(\d+)", str(e)))


@pytest.mark.skipif(not CELLS, reason=f"the seed files are not at {SEEDS}")
@pytest.mark.parametrize("cell", CELLS, ids=[c.id for c in CELLS])
def test_seed_cell(cell: Cell, notebooks: dict[Path, Notebook]) -> None:
    nb = notebooks[cell.path]
    outcome = nb.run(nb.cells.index(cell))
    if isinstance(outcome, str):
        pytest.skip(outcome)
    if isinstance(outcome, md.DeviceError):
        assert _missing_gpu(outcome), (
            f"{cell.id} raised DeviceError although md.num_gpus() == {md.num_gpus()}: "
            f"{outcome}\n{cell.source}"
        )
        return
    if outcome is not None:
        raise AssertionError(f"seed cell {cell.id} failed:\n{cell.source}") from outcome


@pytest.mark.skipif(not CELLS, reason=f"the seed files are not at {SEEDS}")
def test_extraction_keeps_the_pytorch_code() -> None:
    files = {c.path for c in CELLS}
    assert files == set(_seed_files()), "every seed file gives code cells"
    text = "\n".join(c.original for c in CELLS)
    assert "mxnet" not in text and "tensorflow" not in text and "paddle" not in text
    assert "import torch" in text and "X = torch.ones(2, 3, device=try_gpu())" in text
    for c in CELLS:
        assert re.search(r"\btorch\b", c.source) is None, c.id
        if not c.skip:
            ast.parse(c.source)
    widget = [c for c in CELLS if c.original == "net = MLP()\nnet(X)"]
    assert widget, "a numbered code widget is split back into its lines"


@pytest.mark.skipif(not CELLS, reason=f"the seed files are not at {SEEDS}")
def test_dropped_helper_import_is_unused() -> None:
    dropped = [c for c in CELLS if _HELPER_IMPORT.search(c.original)]
    assert dropped, "the rule is here for the d2l import; drop it when the seeds lose it"
    for c in CELLS:
        if not c.skip:
            assert "d2l" not in _names(ast.parse(c.source), ast.Load), c.id


def test_replacement_touches_only_torch() -> None:
    src = "import torch\nfrom torch import nn\nimport torch.nn.functional as F\ny = torch.mm(a, torchy)"
    assert to_multidev(src) == (
        "import multidev as md\nfrom multidev import nn\n"
        "import multidev.nn.functional as F\ny = md.mm(a, torchy)"
    )
