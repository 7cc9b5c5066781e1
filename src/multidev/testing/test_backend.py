"""Section "backend": selection, discovery, isolation, mixing."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import multidev as md
from multidev import contract, registry
from multidev.contract import CAPABILITIES, Adapter

#: the frameworks of every registered adapter (read without importing them), numpy aside
FRAMEWORKS = tuple(
    registry.framework(n).name for n in registry.registered_backends() if n != "numpy"
)


def test_active_backend_follows_environment(bk):
    expected = os.environ.get("MULTIDEV_BACKEND") or "numpy"
    assert md.get_backend() == expected == bk.name


def test_active_backend_is_available():
    assert md.get_backend() in md.available_backends()
    assert "numpy" in md.available_backends()


def test_adapter_has_every_member_of_the_contract(bk):
    assert contract.missing_members(bk) == [], f"the {bk.name} adapter lacks these members"


def test_missing_members_are_named():
    class Partial:
        name = "partial"
        capabilities = frozenset({"autograd"})
        ops = None

    missing = contract.missing_members(Partial())
    assert {"devices", "ops.add", "ops.log1p", "backward", "native_module"} <= set(missing)
    assert "name" not in missing and "capabilities" not in missing


def test_adapter_satisfies_contract(bk):
    assert isinstance(bk, Adapter)
    assert bk.capabilities <= CAPABILITIES, bk.capabilities - CAPABILITIES
    assert isinstance(bk.version(), str) and bk.version()


def test_unknown_backend_names_installed_ones():
    with pytest.raises(md.BackendError) as e:
        md.set_backend("nonsense")
    assert isinstance(e.value, ValueError)
    for name in md.available_backends():
        assert name in str(e.value)
    assert md.get_backend() == registry.current().name


def test_use_backend_is_context_local(bk):
    seen = {}

    def other_thread():
        seen["thread"] = md.get_backend()

    with md.use_backend("numpy"):
        assert md.get_backend() == "numpy"
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
    assert md.get_backend() == bk.name
    assert seen["thread"] == bk.name


def test_use_backend_restored_after_exception(bk):
    with pytest.raises(RuntimeError), md.use_backend("numpy"):
        raise RuntimeError("boom")
    assert md.get_backend() == bk.name


def test_tensors_remember_their_backend(bk):
    x = md.ones(3)
    with md.use_backend("numpy"):
        y = md.ones(3)
        assert x.backend == bk.name
        assert (x + x).backend == bk.name
    assert y.backend == "numpy"


def test_mixing_backends_raises(bk):
    if bk.name == "numpy":
        pytest.skip("needs a second backend; numpy is the active one")
    x = md.ones(3)
    with md.use_backend("numpy"):
        y = md.ones(3)
    with pytest.raises(md.BackendError, match="to_backend"):
        x + y


def test_to_backend_round_trip(bk):
    x = md.arange(6, dtype=md.float32).reshape(2, 3)
    y = x.to_backend("numpy")
    assert y.backend == "numpy"
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    z = y.to_backend(bk.name)
    assert z.backend == bk.name and z.dtype is md.float32
    np.testing.assert_array_equal(z.numpy(), x.numpy())


def _run(code: str, env_backend: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("MULTIDEV_BACKEND", None)
    if env_backend is not None:
        env["MULTIDEV_BACKEND"] = env_backend
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )


def test_import_multidev_imports_no_framework():
    code = (
        "import sys, multidev as md\n"
        "md.available_backends(); md.Device.parse('gpu:1'); md.float32\n"
        f"print([m for m in {FRAMEWORKS!r} if m in sys.modules])\n"
    )
    r = _run(code, None)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_environment_selects_backend_on_first_use(bk):
    r = _run(
        f"import sys, multidev as md\nprint(md.get_backend(), {bk.name!r} in sys.modules)", bk.name
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [bk.name, "True"]


def test_unknown_environment_value_raises_on_first_use():
    code = (
        "import multidev as md\n"
        "try:\n    md.ones(2)\n"
        "except md.BackendError as e:\n    print('BackendError', e)\n"
    )
    r = _run(code, "nonsense")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("BackendError") and "'nonsense'" in r.stdout
    assert "numpy" in r.stdout
