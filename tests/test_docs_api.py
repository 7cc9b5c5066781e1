"""Every public name has a docstring and an entry in the generated API reference.

Public: the names in ``__all__`` of each module in ``tools/gen_docs.py``'s ``PUBLIC_MODULES``
(or its names without a leading underscore where it has no ``__all__``). The built site's
inventory is checked against the same names by docs_tests/test_site.py (``nox -s docs``).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _gen_docs():
    spec = importlib.util.spec_from_file_location("_gen_docs", ROOT / "tools" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _gen_docs()
PLAIN_VALUES = (int, float, complex, str, bytes, tuple, type(None))


@pytest.mark.parametrize("module", gen.PUBLIC_MODULES)
def test_every_public_name_has_a_docstring(module: str) -> None:
    mod = importlib.import_module(module)
    assert inspect.getdoc(mod), f"Expected a module docstring for {module}"
    missing = []
    for name in gen.public_names(module):
        obj = getattr(mod, name)
        if isinstance(obj, PLAIN_VALUES):  # constants (md.pi, __array_api_version__)
            continue
        if not inspect.getdoc(obj):
            missing.append(name)
    assert not missing, (
        f"Expected a docstring on every public name of {module}. Received none on: "
        f"{', '.join(missing)}. Write one (what it does, units, errors) where it is defined."
    )


@pytest.mark.parametrize("module", gen.PUBLIC_MODULES)
def test_every_public_name_is_in_the_reference(module: str) -> None:
    page = gen.api_page(module)
    missing = [
        n
        for n in gen.public_names(module)
        if f"::: {module}.{n}\n" not in page and f"[`{module}.{n}`]" not in page
    ]
    assert not missing, f"Expected reference entries in {module}'s page for: {missing}"


def test_every_public_subpackage_has_a_reference_page() -> None:
    """A module that a public module exports (md.nn, md.optim.lr_scheduler, …) has its own page."""
    unlisted = []
    for module in gen.PUBLIC_MODULES:
        mod = importlib.import_module(module)
        for name in gen.public_names(module):
            obj = getattr(mod, name)
            name_of = getattr(obj, "__name__", "")
            if inspect.ismodule(obj) and name_of.startswith("multidev."):
                unlisted += [] if name_of in gen.PUBLIC_MODULES else [name_of]
    assert not unlisted, f"Expected these public modules in gen_docs.PUBLIC_MODULES: {unlisted}"


def test_the_site_navigation_lists_every_reference_page() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    missing = [m for m in gen.PUBLIC_MODULES if f"api/{m}.md" not in nav]
    assert not missing, f"Expected mkdocs.yml's nav to list api pages for {missing}"


def test_benchmark_pages_show_every_result_and_its_conditions() -> None:
    """Each row of benchmarks/results/*.json appears in the generated pages, and each run's
    recorded conditions (machine, framework version, threads, …) appear once, as data."""
    import json

    ops, compiled, ddp = gen.ops_page(), gen.compile_page(), gen.ddp_page()
    results = sorted((ROOT / "benchmarks" / "results").glob("*.json"))
    assert results, "Expected benchmark results under benchmarks/results/"
    for path in results:
        run = json.loads(path.read_text())
        if path.stem.startswith("compile_"):
            for row in run["rows"]:
                if "side" in row:
                    assert f"| {row['case']} | {row['side']} |" in compiled, (path.name, row)
                else:  # the case's own conditions (when it ran, the load)
                    assert any(
                        x.startswith(f"| {row['case']} |") and row["started"] in x
                        for x in compiled.splitlines()
                    ), (path.name, row)
            assert f"| threads | {run['meta']['threads']} |" in compiled
        elif path.stem.startswith("ddp_"):
            for model in run["models"]:
                assert f"## {run['backend']}: {model}" in ddp, (path.name, model)
        else:
            for row in run["results"]:
                assert f"| {row['case']} | {row['vs']} |" in ops, (path.name, row["case"])
            assert f"| machine | {run['machine']} |" in ops
            assert ops.count(f"| framework_version | {run['framework_version']} |") >= 1
