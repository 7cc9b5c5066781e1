"""Run the PyTorch code of d2l's model chapters with ``torch`` replaced by ``md``.

The cells come from a local checkout of the book's source (github.com/d2l-ai/d2l-en), named
by ``MULTIDEV_D2L_DIR``: for each chapter in :data:`CHAPTERS`, its sections in the order of
the chapter's ``index.md``, the Python input cells marked for PyTorch (``%%tab pytorch``,
``#@tab pytorch``, ``all``). The replacement is mechanical (:func:`translate`): the imports
of ``torch`` become imports of ``multidev``, every other ``torch`` becomes ``md``, and
``from d2l import torch as d2l`` is dropped: ``d2l`` is :class:`Library`, i.e.
``multidev.d2l`` plus what the chapters themselves mark ``#@save`` (as the book builds its
library from them), with the book's framework aliases (``d2l.zeros`` is ``torch.zeros``)
mapped to ``md``'s names. ``tab.selected('pytorch')`` is true, every other tab false.

Short-data mode: the data sets are small generated files in the books' formats (a
Fashion-MNIST of 256 + 64 images, a text for TimeMachine) under ``../data`` of the working
folder, and ``d2l.Trainer`` trains one epoch. Data the book downloads and that is not
generated here (fra-eng, airfoil) fails the cells that need it, with the reason.

``python tools/d2l_chapters.py SECTION_FILE... --json OUT`` runs sections (one namespace
each) on ``MULTIDEV_BACKEND`` and writes one record per cell: section, index, status
(``ok``/``error``), the error's first line.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
import traceback
import types
from pathlib import Path

CHAPTERS = (
    "chapter_convolutional-neural-networks",
    "chapter_convolutional-modern",
    "chapter_recurrent-neural-networks",
    "chapter_recurrent-modern",
    "chapter_attention-mechanisms-and-transformers",
    "chapter_optimization",
)

_CELL = re.compile(r"^```\{\.python \.input[^}]*\}\n(.*?)^```$", re.M | re.S)
_TAB = re.compile(r"^(?:%%tab|#@tab)\s+(.*)$")


def sections(checkout: Path, chapter: str) -> list[Path]:
    """The chapter's section files in the order of its ``index.md`` table of contents."""
    index = (checkout / chapter / "index.md").read_text(encoding="utf-8")
    toc = re.search(r"```toc\n(.*?)```", index, re.S)
    names = [ln.strip() for ln in toc.group(1).splitlines() if ln.strip()] if toc else []
    return [checkout / chapter / f"{n}.md" for n in names if not n.startswith(":")]


def pytorch_cells(text: str) -> list[str]:
    """The section's input cells marked for PyTorch (a cell without a tab mark is the
    default tab's, MXNet's, in d2lbook), without notebook magics."""
    cells = []
    for body in _CELL.findall(text):
        lines = body.splitlines()
        tabs: set[str] = set()
        if lines and (m := _TAB.match(lines[0].strip())):
            tabs = {t.strip() for t in m.group(1).split(",")}
            lines = lines[1:]
        if not ({"pytorch", "all"} & tabs):
            continue
        code = "\n".join(ln for ln in lines if not ln.lstrip().startswith(("%", "!")))
        cells.append(code)
    return cells


def translate(code: str) -> str:
    """PyTorch code as multidev code: ``torch`` replaced by ``md`` and nothing else (the
    d2l import is dropped: the runner provides ``d2l``)."""
    code = re.sub(r"^\s*from d2l import torch as d2l\s*$", "", code, flags=re.M)
    code = re.sub(r"^(\s*)import torch\s*$", r"\1import multidev as md", code, flags=re.M)
    code = re.sub(
        r"^(\s*)from torch(\.[\w.]+)? import", r"\1from multidev\2 import", code, flags=re.M
    )
    code = re.sub(r"^(\s*)import torch\.([\w.]+)", r"\1import multidev.\2", code, flags=re.M)
    return re.sub(r"\btorch\b", "md", code)


class Library(types.ModuleType):
    """``d2l`` for the cells: what the chapters save, else ``multidev.d2l``, else ``md``
    (the book's aliases such as ``d2l.zeros``, ``d2l.matmul``, ``d2l.tanh``)."""

    def __init__(self, checkout: Path) -> None:
        super().__init__("d2l")
        import multidev as md
        from multidev import d2l

        self._sources = (d2l, md)
        # the book's aliases (``zeros = torch.zeros``, ``reduce_sum = lambda x: x.sum()``)
        # are the last part of its torch library: translated like the cells
        lib = (checkout / "d2l" / "torch.py").read_text(encoding="utf-8")
        aliases = lib[lib.index("# Alias defined in config.ini") :]
        exec(translate(aliases), {"md": md, "nn": md.nn}, self.__dict__)

    def __getattr__(self, name: str):
        for src in self._sources:
            if hasattr(src, name):
                return getattr(src, name)
        raise AttributeError(f"d2l has no {name!r} (neither multidev.d2l nor md)")


class Tab:
    """d2lbook's ``tab`` object as the PyTorch tab sees it."""

    @staticmethod
    def selected(*names: str) -> bool:
        return "pytorch" in names or "all" in names

    @staticmethod
    def interact_select(*names: object) -> None:
        return None


def _idx(a):
    import numpy as np

    return bytes([0, 0, 0x08, a.ndim]) + np.asarray(a.shape, ">u4").tobytes() + a.tobytes()


def write_short_data(data: Path) -> None:
    """Small generated data sets in the book's formats under ``data``."""
    import numpy as np

    rng = np.random.default_rng(0)
    folder = data / "FashionMNIST"
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", 256), ("t10k", 64)):
        labels = rng.integers(0, 10, n, dtype=np.uint8)
        # class-dependent images, so that a model can learn something
        images = (rng.integers(0, 64, (n, 28, 28)) + labels[:, None, None] * 19).astype(np.uint8)
        for kind, a in (("images-idx3", images), ("labels-idx1", labels)):
            (folder / f"{split}-{kind}-ubyte.gz").write_bytes(gzip.compress(_idx(a), mtime=0))
    words = ("the", "time", "machine", "traveller", "said", "we", "went", "into", "future")
    text = " ".join(words[i] for i in rng.integers(0, len(words), 12000))
    (data / "timemachine.txt").write_text(text, encoding="utf-8")


def _short_trainer(lib: Library) -> None:
    base = lib.Trainer

    class Trainer(base):  # one epoch in short-data mode
        def __init__(self, max_epochs, *args, **kwargs):
            super().__init__(1, *args, **kwargs)

    Trainer.__name__ = "Trainer"
    lib.Trainer = Trainer


def run_section(path: Path, lib: Library) -> list[dict]:
    """Run the section's PyTorch cells in one namespace, from the same seed whatever ran
    before (the book's checks on random data then see the same data in every run); one
    record per cell."""
    import multidev as md

    md.manual_seed(0)
    ns: dict = {"__name__": "__d2l_cell__", "d2l": lib, "tab": Tab()}
    records = []
    for i, cell in enumerate(pytorch_cells(path.read_text(encoding="utf-8"))):
        code = translate(cell)
        before = dict(ns)
        rec = {"section": f"{path.parent.name}/{path.stem}", "cell": i, "status": "ok"}
        try:
            exec(compile(code, f"{path.stem}[{i}]", "exec"), ns)
        except BaseException as e:  # a cell's failure is its record, not the run's end
            if isinstance(e, KeyboardInterrupt):
                raise
            rec["status"] = "error"
            rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
            rec["where"] = traceback.format_exc().strip().splitlines()[-3:-1]
        if "#@save" in cell:  # the book's library is built from these
            for k, v in ns.items():
                if k != "d2l" and not k.startswith("__") and before.get(k) is not v:
                    setattr(lib, k, v)
        records.append(rec)
    return records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sections", nargs="+", type=Path)
    ap.add_argument("--json", type=Path, required=True)
    args = ap.parse_args(argv)
    try:  # the cells that plot need it; without it they fail and say so
        import matplotlib

        matplotlib.use("Agg")
    except ImportError:
        pass
    work = Path.cwd()
    write_short_data(work.parent / "data")
    lib = Library(Path(os.environ["MULTIDEV_D2L_DIR"]))
    _short_trainer(lib)
    records = []
    for path in args.sections:
        records += run_section(path, lib)
        args.json.write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
