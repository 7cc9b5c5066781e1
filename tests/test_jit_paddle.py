"""``md.jit`` on Paddle: ``paddle.jit.to_static`` programs never own NumPy's memory.

``md.asarray`` imports NumPy arrays into Paddle through DLPack (zero-copy). A to_static
program's executor frees the variables it holds on a worker thread; when that frees the last
reference to imported memory, NumPy's deleter waits for the GIL inside Paddle's deleter lock,
while the main thread, holding the GIL, waits for that lock to free another imported tensor:
the process hangs (or crashes). Before the fix, the loop below hung in two runs out of three.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

paddle = pytest.importorskip("paddle")

from multidev_paddle.jit import owned  # noqa: E402

import multidev as md  # noqa: E402
from multidev import registry  # noqa: E402

pytestmark = pytest.mark.skipif(
    registry.current().name != "paddle", reason="needs MULTIDEV_BACKEND=paddle"
)

#: compiled functions fed fresh NumPy-imported inputs that nothing else keeps alive
_LOOP = """
    import gc
    import warnings
    import numpy as np
    import multidev as md

    rng = np.random.default_rng(0)
    for _ in range(25):
        f = md.jit(lambda x: x * 2.0 + 1.0)
        for shape in [(2, 3), (5,), (4, 4)]:
            for _ in range(3):
                a = rng.standard_normal(shape).astype(np.float32)
                with warnings.catch_warnings():
                    warnings.simplefilter("error", md.JitWarning)
                    out = f(md.asarray(a.copy()))
                np.testing.assert_allclose(out.numpy(), a * 2 + 1, rtol=1e-6)
        del f
        gc.collect()
    print("done")
"""


def test_compiled_program_runs_on_paddle_memory():
    a = np.arange(6, dtype=np.float32)
    x = md.asarray(a)
    assert x.native.data_ptr() == a.ctypes.data  # imported zero-copy
    fed = owned(x.native)
    assert fed.data_ptr() != a.ctypes.data
    np.testing.assert_array_equal(fed.numpy(), a)


def test_compiled_calls_on_imported_inputs_do_not_hang():
    env = {**os.environ, "MULTIDEV_BACKEND": "paddle"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(_LOOP)],
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("compiled Paddle calls deadlocked freeing NumPy-imported inputs")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("done")
