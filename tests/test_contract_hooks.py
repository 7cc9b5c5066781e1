"""The adapter contract is explicit: every hook the core reads on an adapter (or an engine) is
declared in ``multidev.contract`` with its default, ``missing_members`` names a hook that an
adapter not built on ``AdapterBase`` lacks, and the backends with a distributed engine follow
from the registered adapters, not from a list in the core."""

from __future__ import annotations

import ast
import sys
import types
from importlib import metadata
from pathlib import Path

import pytest

import multidev
from multidev import contract, distributed, registry
from multidev.contract.interfaces import _members

ROOT = Path(multidev.__file__).parent
#: names under which the core holds an adapter or an engine
_ADAPTER_NAMES = {"bk", "adapter", "backend_adapter"}
_ENGINE_NAMES = {"engine"}
#: written by the core itself onto adapter classes (dispatch's per-backend Tensor subclass)
_CORE_CACHES = {"md_tensor_class"}


def _core_trees():
    """The core's modules, but the conformance suite and the contract (whose
    ``missing_members`` probes an adapter by name)."""
    for path in ROOT.rglob("*.py"):
        if path.relative_to(ROOT).parts[0] not in ("testing", "contract"):
            yield path, ast.parse(path.read_text(), str(path))


def _holder(node: ast.expr) -> str | None:
    """'adapter' or 'engine' where ``node`` is how the core names one, else None."""
    if isinstance(node, ast.Name):
        if node.id in _ADAPTER_NAMES:
            return "adapter"
        if node.id in _ENGINE_NAMES:
            return "engine"
    if isinstance(node, ast.Attribute) and node.attr == "_bk":
        return "adapter"
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "engine_module":
        return "engine"
    return None


def test_the_core_finds_no_adapter_hook_by_getattr():
    found = []
    for path, tree in _core_trees():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) in ("getattr", "hasattr")
                and node.args
                and _holder(node.args[0])
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def test_every_adapter_and_engine_member_the_core_reads_is_declared():
    declared = {
        "adapter": _members(contract.Adapter) | set(dir(contract.AdapterBase)) | _CORE_CACHES,
        "engine": _members(contract.DistributedEngine) | {"module"},
    }
    undeclared = []
    for path, tree in _core_trees():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute):
                continue
            kind = _holder(node.value)
            if kind and node.attr not in declared[kind]:
                undeclared.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.attr}")
    assert undeclared == []


def test_missing_members_names_a_hook_an_adapter_without_the_base_lacks():
    bk = registry.current()
    members = _members(contract.Adapter) - {"ops"}
    for cap, protocol in (("autograd", contract.Autograd), ("dlpack", contract.DLPack)):
        if cap in bk.capabilities:
            members |= _members(protocol)
    complete = {n: getattr(bk, n) for n in members} | {"ops": bk.ops}
    assert contract.missing_members(types.SimpleNamespace(**complete)) == []
    for hook in ("jit_compile", "implicit_record", "export_onnx", "add_scaled_many_"):
        partial = types.SimpleNamespace(**{k: v for k, v in complete.items() if k != hook})
        assert contract.missing_members(partial) == [hook]


def test_an_autograd_capability_left_at_the_default_hooks_is_incomplete():
    class NoTape(contract.AdapterBase):
        capabilities = frozenset({"autograd"})

    missing = set(contract.missing_members(NoTape()))
    assert {"record", "no_grad", "backward", "grad", "set_grad", "native_module"} <= missing


def test_an_engine_module_without_hooks_reads_as_the_declared_defaults():
    module = types.ModuleType("fake_engine")
    module.start = lambda job: ("started", job)
    module.extra = 7
    engine = contract.Engine(module)
    assert engine.start("job") == ("started", "job")
    assert engine.extra == 7  # the module's own names pass through
    hooks = _members(contract.DistributedEngine) - {"start"}
    assert hooks and all(getattr(engine, h) is None for h in hooks)
    module.worker_envs = envs = lambda **kw: [{}]
    assert contract.Engine(module).worker_envs is envs


@pytest.fixture
def registered_extra(tmp_path, monkeypatch):
    """A sixth adapter package ``mdfake_adapter`` registered as ``fakefw`` (an entry point
    only), with a distributed engine but no framework."""
    pkg = tmp_path / "mdfake_adapter"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "distributed.py").write_text("def start(job):\n    return 'group'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = dict(registry._discover())
    eps["fakefw"] = metadata.EntryPoint("fakefw", "mdfake_adapter:Backend", registry.GROUP)
    monkeypatch.setattr(registry, "_entry_points", eps)
    yield "fakefw"
    sys.modules.pop("mdfake_adapter.distributed", None)
    sys.modules.pop("mdfake_adapter", None)


def test_backends_with_an_engine_follow_the_registered_adapters(registered_extra):
    assert registered_extra in distributed.engine_backends()
    engine = distributed.engine_module(registered_extra)
    assert engine is not None and engine.start(None) == "group"
    assert registered_extra in str(distributed.no_engine("numpy"))
    assert "numpy" not in distributed.engine_backends()
    assert distributed.engine_module("numpy") is None
