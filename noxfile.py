"""Test, lint and benchmark sessions. Every backend gets its own virtual environment.

``nox`` (no arguments) runs the whole suite: the five ``tests-<backend>`` sessions, then the
cross-backend sessions that compare what those environments produced (conformance matrix,
checkpoint portability, seeded-parameter hashes, examples, training, resuming a run on
another backend), all from pinned constraint files.
The ``bench-<backend>`` sessions (benchmarks/, not part of the suite) run only when named.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

ROOT = Path(__file__).parent
BACKENDS = ("numpy", "torch", "tensorflow", "paddle", "mxnet")
EXTRAS = {
    "numpy": "test",
    "torch": "torch,test",
    "tensorflow": "tensorflow,test",
    "paddle": "paddle,test",
    "mxnet": "mxnet,test",
}
SHARED = ROOT / ".nox" / "_shared"

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True
nox.options.sessions = [
    *(f"tests-{b}" for b in BACKENDS),
    "conformance",
    "portability",
    "reproducibility",
    "examples",
    "training",
    "resume",
    "lint",
    "typecheck",
]


def _install(session: nox.Session, backend: str) -> None:
    constraints = ROOT / "constraints" / f"{backend}.txt"
    session.install("-c", str(constraints), f".[{EXTRAS[backend]}]")


def _venv_python(backend: str) -> Path:
    """The interpreter of the tests-<backend> session's environment."""
    py = ROOT / ".nox" / f"tests-{backend}" / "bin" / "python"
    if not py.exists():
        raise FileNotFoundError(
            f"Expected the environment of session tests-{backend} at {py}. "
            f"Run `nox -s tests-{backend}` first (plain `nox` runs everything in order)."
        )
    return py


def _tests(session: nox.Session, backend: str) -> None:
    _install(session, backend)
    env = {"MULTIDEV_BACKEND": backend, "PYTHONHASHSEED": "0", "TF_CPP_MIN_LOG_LEVEL": "2"}
    reports = SHARED / "conformance"
    reports.mkdir(parents=True, exist_ok=True)
    session.run(
        "python",
        "-m",
        "pytest",
        "tests",
        "--pyargs",
        "multidev.testing",
        "-p",
        "no:cacheprovider",
        "-p",
        "multidev.testing.plugin",
        "-q",
        "-rs",
        f"--conformance-json={reports / (backend + '.json')}",
        *session.posargs,
        env=env,
    )
    if session.posargs:
        return
    portable = SHARED / "portability"
    session.run("python", "-m", "multidev.testing.portability", "write", str(portable), env=env)
    hashes = SHARED / "hashes"
    hashes.mkdir(parents=True, exist_ok=True)
    with open(hashes / f"{backend}.txt", "w") as f:
        session.run("python", "-m", "multidev.testing.param_hash", env=env, stdout=f, stderr=None)
    if backend != "numpy":
        training = SHARED / "training"
        training.mkdir(parents=True, exist_ok=True)
        session.run(
            "python",
            "-m",
            "multidev.testing.train_compare",
            "run",
            "--quiet",
            "--out",
            str(training / f"{backend}.json"),
            env=env,
        )
    session.run(
        "python",
        "-m",
        "multidev.testing.resume_compare",
        "run",
        "--out",
        str(SHARED / "resume"),
        env=env,
    )
    outputs = SHARED / "examples"
    outputs.mkdir(parents=True, exist_ok=True)
    with open(outputs / f"{backend}.txt", "w") as f:
        session.run("python", "-m", "multidev", "demo", env=env, stdout=f, stderr=None)


for _backend in BACKENDS:

    @nox.session(name=f"tests-{_backend}")
    def tests(session: nox.Session, backend: str = _backend) -> None:
        """Unit tests and the conformance suite on one backend, in its own environment."""
        _tests(session, backend)


@nox.session
def conformance(session: nox.Session) -> None:
    """Merge the five backends' conformance results into one matrix (Markdown and JSON)."""
    session.install("-c", "constraints/numpy.txt", ".")
    files = [SHARED / "conformance" / f"{b}.json" for b in BACKENDS]
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        session.error(f"Expected results of every tests-<backend> session. Missing: {missing}")
    session.run(
        "multidev", "conformance", "--merge", *map(str, files), "--out", "conformance-report"
    )


@nox.session
def portability(session: nox.Session) -> None:
    """Every backend loads every backend's checkpoints, bit-exact: a 5×5 matrix."""
    portable = SHARED / "portability"
    for b in BACKENDS:
        session.run(
            str(_venv_python(b)),
            "-m",
            "multidev.testing.portability",
            "check",
            str(portable),
            "--out",
            str(portable / f"check-{b}.json"),
            env={"MULTIDEV_BACKEND": b},
            external=True,
        )
    session.run(
        str(_venv_python("numpy")),
        "-m",
        "multidev.testing.portability",
        "matrix",
        str(portable),
        "--strict",
        external=True,
    )


@nox.session
def reproducibility(session: nox.Session) -> None:
    """After md.manual_seed, the same model code gives bit-identical parameters on every backend."""
    files = [str(SHARED / "hashes" / f"{b}.txt") for b in BACKENDS]
    session.run(
        str(_venv_python("numpy")),
        "-m",
        "multidev.testing.param_hash",
        "--check",
        *files,
        external=True,
    )


@nox.session
def examples(session: nox.Session) -> None:
    """The d2l examples gave the same printed output on every backend (within float32 tolerance)."""
    files = [str(SHARED / "examples" / f"{b}.txt") for b in BACKENDS]
    session.run(
        str(_venv_python("numpy")), "-m", "multidev.testing.compare_outputs", *files, external=True
    )


@nox.session
def training(session: nox.Session) -> None:
    """The training examples gave the same per-epoch losses on every autograd backend."""
    files = [str(SHARED / "training" / f"{b}.json") for b in BACKENDS if b != "numpy"]
    session.run(
        str(_venv_python("numpy")),
        "-m",
        "multidev.testing.train_compare",
        "check",
        *files,
        external=True,
    )


@nox.session
def resume(session: nox.Session) -> None:
    """A training run stopped on one backend resumes on any other with the same losses.

    The checkpoints each tests-<backend> session wrote (after epoch 2, and 5 batches into
    epoch 3) continue on every other autograd backend; fails unless the 12 ordered pairs'
    per-epoch losses match the uninterrupted runs within 1e-5 relative, and the seeded
    DataLoader batches are identical on all five backends, with and without workers.
    """
    shared = SHARED / "resume"
    autograd = [b for b in BACKENDS if b != "numpy"]
    for b in autograd:
        session.run(
            str(_venv_python(b)),
            "-m",
            "multidev.testing.resume_compare",
            "resume",
            str(shared),
            "--out",
            str(shared / f"resumed-{b}.json"),
            env={"MULTIDEV_BACKEND": b, "PYTHONHASHSEED": "0", "TF_CPP_MIN_LOG_LEVEL": "2"},
            external=True,
        )
    session.run(
        str(_venv_python("numpy")),
        "-m",
        "multidev.testing.resume_compare",
        "check",
        str(shared),
        "--backends",
        *BACKENDS,
        "--autograd",
        *autograd,
        external=True,
    )


@nox.session
def demo(session: nox.Session) -> None:
    """The d2l chapter tour on the default (NumPy) backend, or MULTIDEV_BACKEND's."""
    backend = os.environ.get("MULTIDEV_BACKEND", "numpy")
    _install(session, backend)
    session.run("multidev", "demo")


def _bench(session: nox.Session, backend: str) -> None:
    constraints = ROOT / "constraints"
    extra = "" if backend == "numpy" else f"[{backend}]"
    session.install(
        "-c",
        str(constraints / f"{backend}.txt"),
        "-c",
        str(constraints / "tools.txt"),
        f".{extra}",
        "matplotlib",
    )
    session.run(
        "python",
        "benchmarks/run.py",
        "--backend",
        backend,
        *session.posargs,
        env={"MULTIDEV_BACKEND": backend, "PYTHONHASHSEED": "0"},
    )


for _backend in BACKENDS:

    @nox.session(name=f"bench-{_backend}")
    def bench(session: nox.Session, backend: str = _backend) -> None:
        """Benchmarks on one backend (not part of CI): multidev ÷ native time per case.

        Writes benchmarks/results/<backend>.{json,md}, then the combined table
        (results/README.md) and chart (results/ratios.png) of every backend run so far.
        Arguments after ``--`` go to benchmarks/run.py (``--quick``, ``--cases op,ckpt``).
        """
        _bench(session, backend)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("-c", "constraints/tools.txt", "ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy over src/ and backends/ ([tool.mypy] in pyproject.toml; the frameworks are not
    installed and are typed as Any)."""
    session.install("-c", "constraints/tools.txt", "mypy")
    session.run("mypy")
