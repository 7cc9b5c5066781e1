"""The core's module structure: no import cycle among the modules of ``src/multidev`` (the
conformance suite in ``testing/`` aside), counting imports inside functions, and no module
importing a private name of another. Imports under ``if TYPE_CHECKING:`` never run and are
not counted; importing a submodule runs its package's ``__init__`` first in any case, so an
edge to one's own package is not counted either."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

import multidev
from multidev import registry

ROOT = Path(multidev.__file__).parent


def _modules(root: Path = ROOT, top: str = "multidev") -> tuple[dict[str, ast.Module], set[str]]:
    """Every module's syntax tree by dotted name (the core's by default), and the names that
    are packages."""
    out, packages = {}, set()
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).with_suffix("")
        if rel.parts[0] == "testing":
            continue
        name = ".".join([top, *(p for p in rel.parts if p != "__init__")])
        if rel.name == "__init__":
            packages.add(name)
        out[name] = ast.parse(path.read_text(), str(path))
    return out, packages


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:``."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def _imports(name: str, tree: ast.Module, is_package: bool):
    """(imported module, imported names) for every import in the module, nested ones too."""
    package = name if is_package else name.rpartition(".")[0]
    skip = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            yield mod, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, []


def _graph(root: Path = ROOT, top: str = "multidev") -> tuple[dict[str, set[str]], list[str]]:
    mods, packages = _modules(root, top)
    graph: dict[str, set[str]] = {n: set() for n in mods}
    private = []
    for name, tree in mods.items():
        own = {name.rsplit(".", i)[0] for i in range(name.count(".") + 1)}
        for mod, names in _imports(name, tree, name in packages):
            for t in [mod] + [f"{mod}.{n}" for n in names]:
                if t in mods and t not in own:
                    graph[name].add(t)
            if mod in mods and mod != top:
                private += [f"{name} imports {mod}.{n}" for n in names if n.startswith("_")]
    return graph, private


def test_core_modules_import_no_private_name_of_a_sibling():
    _, private = _graph()
    assert private == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                cycles.append([*stack[stack.index(m) :], m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)
    return cycles


def test_core_modules_form_no_import_cycle():
    graph, _ = _graph()
    assert _cycles(graph) == []


@pytest.mark.parametrize("backend", registry.registered_backends())
def test_adapter_modules_form_no_import_cycle(backend):
    """An adapter package's modules, read without importing its framework: one concern
    per module, none needing another that needs it back."""
    package = registry.adapter_package(backend)
    spec = importlib.util.find_spec(package) if package else None
    if spec is None or spec.origin is None:
        pytest.skip(f"the {backend} adapter's package is not importable here")
    graph, _ = _graph(Path(spec.origin).parent, package)
    assert _cycles(graph) == []
