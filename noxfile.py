"""Test, lint and benchmark sessions. Every backend gets its own virtual environment.

``nox`` (no arguments) runs the whole suite: the five ``tests-<backend>`` sessions, then the
cross-backend sessions that compare what those environments produced (conformance matrix,
checkpoint portability, seeded-parameter hashes, examples, training, resuming a run on
another backend), lint, typecheck and the documentation site (``docs``), all from pinned
constraint files. ``build`` (the release: sdist, wheel, a clean install) runs when named.
The ``bench-<backend>`` sessions (benchmarks/, not part of the suite) run only when named.

A cross-backend session compares only fresh artifacts (``multidev.testing.freshness``): each
``tests-<backend>`` session deletes its earlier artifacts, and once all of them are written
stamps the run (run id, start and end, fingerprint of the sources); a cross session fails
unless every backend's stamp matches today's sources and each artifact it reads was written
during that run.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import nox

ROOT = Path(__file__).parent
BACKENDS = ("numpy", "torch", "tensorflow", "paddle", "mxnet", "jax")
AUTOGRAD = BACKENDS[1:]
EXTRAS = {
    "numpy": "test,interop,interchange,train",
    "torch": "torch,test,interop,interchange,onnx-torch,train,tensorboard",
    "tensorflow": "tensorflow,test,interop,interchange,onnx-tensorflow,train",
    "paddle": "paddle,test,interop,interchange,onnx-paddle,train",
    "mxnet": "mxnet,test,interop,interchange,onnx-mxnet",
    "jax": "jax,test,interop,interchange,train,bench-jax",
}
SHARED = ROOT / ".nox" / "_shared"


def _load_freshness():
    """multidev.testing.freshness (standard library only), loaded by path: nox's own
    interpreter need not have multidev or NumPy."""
    path = ROOT / "src" / "multidev" / "testing" / "freshness.py"
    spec = importlib.util.spec_from_file_location("_multidev_freshness", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


freshness = _load_freshness()

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
    "training-sequence",
    "torch-checkpoints",
    "lint",
    "typecheck",
    "docs",
]


def _install(session: nox.Session, backend: str, test: bool = True) -> None:
    """multidev with ``backend``'s framework (and the test tools) from its pinned constraints."""
    constraints = ROOT / "constraints" / f"{backend}.txt"
    extras = EXTRAS[backend] if test else ("" if backend == "numpy" else backend)
    session.install("-c", str(constraints), f".[{extras}]" if extras else ".")


def _venv_python(backend: str) -> Path:
    """The interpreter of the tests-<backend> session's environment."""
    py = ROOT / ".nox" / f"tests-{backend}" / "bin" / "python"
    if not py.exists():
        raise FileNotFoundError(
            f"Expected the environment of session tests-{backend} at {py}. "
            f"Run `nox -s tests-{backend}` first (plain `nox` runs everything in order)."
        )
    return py


def _require_fresh(session: nox.Session, kind: str, backends: tuple[str, ...]) -> None:
    problems = [p for b in backends if (p := freshness.stale(ROOT, SHARED, b, kind))]
    if problems:
        session.error(
            "Expected artifacts written by the latest tests-<backend> run of today's sources. "
            f"Received: {'; '.join(problems)}. Run `nox -s tests-<backend>` (without extra "
            "arguments) for each backend named, then this session."
        )


def _tests(session: nox.Session, backend: str) -> None:
    _install(session, backend)
    run = freshness.start(ROOT, SHARED, backend)
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
        "--durations=25",
        # two pytest-xdist workers: many tests wait on worker processes or on one framework
        # thread; `-- -n 0` after the session name runs in one process
        "-n",
        "2",
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
    freshness.finish(SHARED, run)


for _backend in BACKENDS:

    @nox.session(name=f"tests-{_backend}")
    def tests(session: nox.Session, backend: str = _backend) -> None:
        """Unit tests and the conformance suite on one backend, in its own environment."""
        _tests(session, backend)


@nox.session
def conformance(session: nox.Session) -> None:
    """Merge the five backends' conformance results into one matrix (Markdown and JSON)."""
    _require_fresh(session, "conformance", BACKENDS)
    session.install("-c", "constraints/numpy.txt", ".")
    files = [SHARED / "conformance" / f"{b}.json" for b in BACKENDS]
    session.run(
        "multidev", "conformance", "--merge", *map(str, files), "--out", "conformance-report"
    )


@nox.session
def portability(session: nox.Session) -> None:
    """Every backend loads every backend's checkpoints, bit-exact: a 5×5 matrix."""
    _require_fresh(session, "portability", BACKENDS)
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
    """After md.manual_seed, the same model code gives bit-identical parameters on every backend
    and forward passes equal within float32 rounding."""
    _require_fresh(session, "reproducibility", BACKENDS)
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
    _require_fresh(session, "examples", BACKENDS)
    files = [str(SHARED / "examples" / f"{b}.txt") for b in BACKENDS]
    session.run(
        str(_venv_python("numpy")), "-m", "multidev.testing.compare_outputs", *files, external=True
    )


@nox.session
def training(session: nox.Session) -> None:
    """The training examples gave the same per-epoch losses on every autograd backend."""
    autograd = tuple(b for b in BACKENDS if b != "numpy")
    _require_fresh(session, "training", autograd)
    files = [str(SHARED / "training" / f"{b}.json") for b in autograd]
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
    epoch 3, of the hand-written loop; at steps 24 and 29 of the same run through md.Trainer)
    continue on every other autograd backend; fails unless the 12 ordered pairs'
    per-epoch losses match the uninterrupted runs within 1e-5 relative, and the seeded
    DataLoader batches are identical on all five backends, with and without workers.
    """
    _require_fresh(session, "resume", BACKENDS)
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


@nox.session(venv_backend="none")
def demo(session: nox.Session) -> None:
    """The d2l chapter tour on MULTIDEV_BACKEND's backend (default: numpy), run by the session
    demo-<backend> in that backend's own environment."""
    backend = os.environ.get("MULTIDEV_BACKEND", "numpy")
    if backend not in BACKENDS:
        session.error(
            f"Expected MULTIDEV_BACKEND to be one of {', '.join(BACKENDS)}. Received: "
            f"{backend!r}. Unset it for the NumPy reference backend."
        )
    session.notify(f"demo-{backend}")


for _backend in BACKENDS:

    @nox.session(name=f"demo-{_backend}")
    def demo_backend(session: nox.Session, backend: str = _backend) -> None:
        """The d2l chapter tour on one backend, in an environment of its own."""
        _install(session, backend, test=False)
        session.run("multidev", "demo", env={"MULTIDEV_BACKEND": backend})


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
def docs(session: nox.Session) -> None:
    """The documentation site, built in strict mode (a broken link, a missing reference or any
    warning fails), into .nox/site; then docs_tests/ serves it on 127.0.0.1 and opens the home
    page, md.optim.Adam's reference and a search in headless Chromium (Debian's ``chromium``),
    writing a screenshot of each under .nox/docs-screenshots/."""
    session.install(
        "-c",
        str(ROOT / "constraints" / "numpy.txt"),
        "-c",
        str(ROOT / "constraints" / "docs.txt"),
        ".[docs,test]",
    )
    # ruff lays out long signatures in the reference (mkdocstrings' separate_signature)
    session.install("-c", str(ROOT / "constraints" / "tools.txt"), "ruff")
    session.run("python", "tools/gen_docs.py")
    session.run("mkdocs", "build", "--strict", env={"NO_MKDOCS_2_WARNING": "1"})
    session.run(
        "python",
        "-m",
        "pytest",
        "docs_tests",
        "-q",
        "-p",
        "no:cacheprovider",
        env={
            "MULTIDEV_SITE": str(ROOT / ".nox" / "site"),
            "MULTIDEV_SCREENSHOTS": str(ROOT / ".nox" / "docs-screenshots"),
        },
    )


@nox.session
def build(session: nox.Session) -> None:
    """The release: sdist and wheel (the C accelerator built where a compiler is present),
    ``twine check``, then the wheel installed into a clean environment that runs
    ``multidev info``, ``multidev demo`` and the conformance suite on NumPy."""
    dist = ROOT / "dist"
    session.install("-c", str(ROOT / "constraints" / "docs.txt"), "build", "twine")
    for old in dist.glob("multidev-*"):
        old.unlink()
    session.run("python", "-m", "build", "--outdir", str(dist), str(ROOT))
    built = sorted(dist.glob("multidev-*"))
    session.run("twine", "check", "--strict", *map(str, built))
    wheel = next(p for p in built if p.suffix == ".whl")
    clean = ROOT / ".nox" / "_release-venv"
    session.run("python", "-m", "venv", "--clear", str(clean))
    py = str(clean / "bin" / "python")
    session.run(
        py,
        "-m",
        "pip",
        "install",
        "--quiet",
        "-c",
        str(ROOT / "constraints" / "numpy.txt"),
        f"{wheel}[test]",
        external=True,
    )
    cli = str(clean / "bin" / "multidev")
    env = {"MULTIDEV_BACKEND": "numpy"}
    # from a folder without the sources, so the installed wheel is what runs
    with session.chdir(session.create_tmp()):
        session.run(cli, "info", env=env, external=True)
        session.run(cli, "demo", env=env, external=True)
        session.run(
            py,
            "-m",
            "pytest",
            "--pyargs",
            "multidev.testing",
            "-p",
            "multidev.testing.plugin",
            "-p",
            "no:cacheprovider",
            "-q",
            env=env,
            external=True,
        )


@nox.session(name="training-sequence")
def training_sequence(session: nox.Session) -> None:
    """The sequence examples (RNN/GRU/LSTM language models, Transformer classifier), trained in
    each autograd backend's tests environment with one seed: per-step losses must agree within
    1e-4 relative and end below each example's threshold."""
    out = SHARED / "training-sequence"
    files = []
    for b in (b for b in BACKENDS if b != "numpy"):
        files.append(str(out / f"{b}.json"))
        session.run(
            str(_venv_python(b)),
            "-m",
            "multidev.testing.train_sequence",
            "--quiet",
            "--out",
            files[-1],
            env={"MULTIDEV_BACKEND": b, "PYTHONHASHSEED": "0"},
            external=True,
        )
    session.run(
        str(_venv_python("numpy")),
        "-m",
        "multidev.testing.train_compare",
        "check",
        *files,
        external=True,
    )


@nox.session
def fuzz(session: nox.Session) -> None:
    """5,000 fuzzed checkpoints per backend (``nox -s fuzz -- numpy torch`` for some): each
    ends in success or md.CheckpointError, under 5 s and 200 MiB. Not in the default run;
    uses the tests-<backend> environments."""
    out = SHARED / "fuzz"
    out.mkdir(parents=True, exist_ok=True)
    for b in session.posargs or BACKENDS:
        session.run(
            str(_venv_python(b)),
            "-m",
            "multidev.testing.fuzz",
            "run",
            "--cases",
            "5000",
            "--seed",
            "0",
            "--out",
            str(out / f"{b}.json"),
            env={"MULTIDEV_BACKEND": b, "PYTHONHASHSEED": "0", "TF_CPP_MIN_LOG_LEVEL": "2"},
            external=True,
        )


@nox.session(venv_backend="none")
def mutation(session: nox.Session) -> None:
    """Mutation check (tools/mutation_check.py) on the named backends (``nox -s mutation --
    numpy torch``, the default): each op of the adapter scaled by 1.001, then made NaN, must make
    a conformance test fail. Slow (one rerun per op and mutation); not in the default run; uses
    the tests-<backend> environments."""
    out = SHARED / "mutation"
    out.mkdir(parents=True, exist_ok=True)
    for b in session.posargs or ("numpy", "torch"):
        session.run(
            str(_venv_python(b)),
            str(ROOT / "tools" / "mutation_check.py"),
            "--out",
            str(out / f"{b}.json"),
            env={"MULTIDEV_BACKEND": b, "PYTHONHASHSEED": "0", "TF_CPP_MIN_LOG_LEVEL": "2"},
            external=True,
        )


@nox.session(name="mutation-source", venv_backend="none")
def mutation_source(session: nox.Session) -> None:
    """Planted bugs in layers, optimisers, schedulers, the loader and DDP
    (tools/source_mutants.py), each of which a test must catch, on the named backends (``nox -s
    mutation-source -- torch``; default: all five). Minutes per backend; not in the default run
    (tests/test_source_mutants.py runs a short version there); uses the tests-<backend>
    environments."""
    out = SHARED / "mutation"
    out.mkdir(parents=True, exist_ok=True)
    for b in session.posargs or BACKENDS:
        session.run(
            str(_venv_python(b)),
            str(ROOT / "tools" / "source_mutants.py"),
            "--out",
            str(out / f"source-{b}.json"),
            env={"MULTIDEV_BACKEND": b, "PYTHONHASHSEED": "0", "TF_CPP_MIN_LOG_LEVEL": "2"},
            external=True,
        )


@nox.session(name="jit_inductor")
def jit_inductor(session: nox.Session) -> None:
    """The jit section and the export tests on torch with the full inductor compiler (C++
    code generation: tens of seconds per first compile on a small CPU machine, so the
    default tests-torch run uses ``aot_eager``). Not part of the default run."""
    _install(session, "torch")
    env = {
        "MULTIDEV_BACKEND": "torch",
        "MULTIDEV_TORCH_COMPILE_BACKEND": "inductor",
        "PYTHONHASHSEED": "0",
    }
    session.run(
        "python",
        "-m",
        "pytest",
        "tests/test_export.py",
        "--pyargs",
        "multidev.testing.test_jit",
        "-p",
        "no:cacheprovider",
        "-q",
        *session.posargs,
        env=env,
    )


for _backend in ("torch", "tensorflow", "paddle", "mxnet", "jax"):

    @nox.session(name=f"bench_compile-{_backend}")
    def bench_compile(session: nox.Session, backend: str = _backend) -> None:
        """The compilation benchmark on one backend (not part of CI): multidev eager and
        md.jit against the framework's eager and compiled step (on JAX, jax.jit with optax)
        and Keras 3's train_on_batch (torch, tensorflow, jax). Writes
        benchmarks/results/compile_<backend>.{json,md}, then the combined table and chart of every backend run so far (compile.md, compile.png).
        ``BENCH_CASES`` and ``BENCH_ROUNDS`` pass through (see benchmarks/compile.py)."""
        constraints = ROOT / "constraints"
        extra = ["keras"] if backend in ("torch", "tensorflow", "jax") else []
        package = ".[jax,bench-jax]" if backend == "jax" else f".[{backend}]"
        session.install(
            "-c",
            str(constraints / f"{backend}.txt"),
            "-c",
            str(constraints / "bench-keras.txt"),
            "-c",
            str(constraints / "tools.txt"),
            package,
            "matplotlib",
            *extra,
        )
        session.run(
            "python",
            "benchmarks/compile.py",
            env={"MULTIDEV_BACKEND": backend, "PYTHONHASHSEED": "0", "TF_CPP_MIN_LOG_LEVEL": "2"},
        )
        session.run("python", "benchmarks/compile_report.py")


@nox.session(name="torch-checkpoints")
def torch_checkpoints(session: nox.Session) -> None:
    """A multidev CNN's state dict from every autograd backend loads into torch.nn with the
    same outputs, and a torch state dict loads into multidev on every backend (DESIGN §11)."""
    directory = str(SHARED / "torch-checkpoints")
    steps = [("write", b) for b in AUTOGRAD] + [("check", "torch")]
    steps += [("read", b) for b in AUTOGRAD]
    for step, b in steps:
        session.run(
            str(_venv_python(b)),
            "-m",
            "multidev.testing.torch_interop",
            step,
            directory,
            env={"MULTIDEV_BACKEND": b, "PYTHONHASHSEED": "0", "TF_CPP_MIN_LOG_LEVEL": "2"},
            external=True,
        )


@nox.session(name="cnn-training")
def cnn_training(session: nox.Session) -> None:
    """The modern-CNN examples (LeNet … ResNet-18, DenseNet) give the same per-step losses on
    every autograd backend in float64, and ResNet-18's loss falls over 20 steps in float64 and
    in float32 (``multidev.testing.cnn_compare``). Not in the default set: several minutes per
    backend on two CPU cores."""
    directory = SHARED / "cnn-training"
    env = {"PYTHONHASHSEED": "0", "TF_CPP_MIN_LOG_LEVEL": "2"}
    for b in AUTOGRAD:
        session.run(
            str(_venv_python(b)), "-m", "multidev.testing.cnn_compare", "run",
            "--out", str(directory / f"{b}.json"), *session.posargs,
            env={**env, "MULTIDEV_BACKEND": b}, external=True,
        )  # fmt: skip
    files = [str(directory / f"{b}.json") for b in AUTOGRAD]
    session.run(
        str(_venv_python("torch")), "-m", "multidev.testing.cnn_compare", "check", *files,
        external=True,
    )  # fmt: skip


@nox.session(name="train-digits")
def train_digits(session: nox.Session) -> None:
    """``examples/train_digits.py`` (md.Trainer, a LeNet-style CNN on scikit-learn's digits)
    gives the same per-epoch losses on every autograd backend in float64 (within 1e-4
    relative) and at least 97% test accuracy in float64 and float32; prints each backend's
    seconds per epoch beside plain PyTorch's (``multidev.testing.digits_compare``). Not in the default set: about a
    minute per backend on two CPU cores. Needs scikit-learn in each tests-<backend>
    environment (the interop extra has it; MXNet's gets its pinned version here)."""
    directory = SHARED / "train-digits"
    env = {"PYTHONHASHSEED": "0", "TF_CPP_MIN_LOG_LEVEL": "2"}
    session.run(
        str(_venv_python("mxnet")), "-m", "pip", "install", "scikit-learn",
        "-c", str(ROOT / "constraints" / "mxnet.txt"), external=True,
    )  # fmt: skip
    for b in AUTOGRAD:
        session.run(
            str(_venv_python(b)), "-m", "multidev.testing.digits_compare", "run",
            "--out", str(directory / f"{b}.json"), *session.posargs,
            env={**env, "MULTIDEV_BACKEND": b}, external=True,
        )  # fmt: skip
    session.run(
        str(_venv_python("torch")), "-m", "multidev.testing.digits_compare", "plain",
        "--out", str(directory / "plain-torch.json"), env=env, external=True,
    )  # fmt: skip
    files = [str(directory / f"{b}.json") for b in AUTOGRAD]
    session.run(
        str(_venv_python("numpy")), "-m", "multidev.testing.digits_compare", "check", *files,
        "--plain", str(directory / "plain-torch.json"), external=True,
    )  # fmt: skip


@nox.session(name="digits-picture")
def digits_picture(session: nox.Session) -> None:
    """The README's picture: ``examples/train_digits.py`` (float32, one seed) trained on each
    autograd backend in its tests-<backend> environment, its runs overlaid by ``multidev
    plot`` into docs/images/digits-backends.png. Not in the default set: it trains four
    times; run it when the example or the Trainer changes, and commit the picture."""
    runs = SHARED / "digits-picture"
    env = {"PYTHONHASHSEED": "0", "TF_CPP_MIN_LOG_LEVEL": "2"}
    for b in AUTOGRAD:
        session.run(
            str(_venv_python(b)), "-m", "multidev.examples.train_digits",
            "--log-dir", str(runs / b), "--no-progress", "--no-plot",
            env={**env, "MULTIDEV_BACKEND": b}, external=True,
        )  # fmt: skip
    session.run(
        str(_venv_python("numpy")), "-m", "multidev", "plot", *(str(runs / b) for b in AUTOGRAD),
        "-o", str(ROOT / "docs" / "images" / "digits-backends.png"), external=True,
    )  # fmt: skip


@nox.session(name="d2l-chapters")
def d2l_chapters(session: nox.Session) -> None:
    """The PyTorch code of d2l's model chapters (CNNs, modern CNNs, RNNs, modern RNNs,
    attention and Transformers, optimisation) with ``torch`` replaced by ``md``, in each
    autograd backend's tests environment (tests/test_d2l_chapters.py, short-data mode). Not in
    the default set: the book's source is not a package. Point ``MULTIDEV_D2L_DIR`` at a clone
    of https://github.com/d2l-ai/d2l-en; without it the session skips, saying so."""
    checkout = os.environ.get("MULTIDEV_D2L_DIR")
    if not checkout:
        session.skip(
            "MULTIDEV_D2L_DIR is not set: clone https://github.com/d2l-ai/d2l-en and set "
            "MULTIDEV_D2L_DIR to that folder to run the book's chapters."
        )
    for b in session.posargs or AUTOGRAD:
        session.run(
            str(_venv_python(b)), "-m", "pytest", "tests/test_d2l_chapters.py",
            "-p", "no:cacheprovider", "-p", "multidev.testing.plugin", "-q", "-rs",
            env={"MULTIDEV_BACKEND": b, "MULTIDEV_D2L_DIR": checkout, "PYTHONHASHSEED": "0",
                 "TF_CPP_MIN_LOG_LEVEL": "2"},
            external=True,
        )  # fmt: skip


@nox.session(name="array-api")
@nox.parametrize("backend", BACKENDS)
def array_api(session: nox.Session, backend: str) -> None:
    """The data-apis array-api-tests suite against ``multidev`` on one backend (not in the
    default set: the suite is on no package registry). Point ``ARRAY_API_TESTS_DIR`` at a
    checkout of it; ``array-api-xfails/<backend>.txt`` lists the known failures with reasons."""
    suite = os.environ.get("ARRAY_API_TESTS_DIR")
    if not suite or not (Path(suite) / "array_api_tests").is_dir():
        session.error(
            "Expected ARRAY_API_TESTS_DIR to name a checkout of the array-api-tests suite. "
            f"Received: {suite!r}. Get it with: git clone --recurse-submodules "
            "https://github.com/data-apis/array-api-tests ~/array-api-tests && "
            "ARRAY_API_TESTS_DIR=~/array-api-tests nox -s array-api"
        )
    _install(session, backend)
    session.install("-r", str(Path(suite) / "requirements.txt"))
    env = {
        "MULTIDEV_BACKEND": backend,
        "ARRAY_API_TESTS_MODULE": "multidev",
        # MXNet has no complex dtypes, and the suite (at 55fcc60) cannot start on a 2022.12+
        # namespace without them: MXNet is judged by the standard before complex (2021.12).
        # Its switch for missing dtypes cannot help: with complex64 and complex128 skipped it
        # stops at import (dtype_helpers.py takes max() over no complex dtypes).
        # The others run the 2024.12 tests too (md has its additions; md.__array_api_version__
        # stays "2023.12", so the suite's version is set here, not read from md)
        "ARRAY_API_TESTS_VERSION": "2021.12" if backend == "mxnet" else "2024.12",
        # md.int16 and md.uint16/32/64 exist on every backend; MXNet cannot hold int16 nor the
        # wider unsigned ones, Paddle not the latter (typed errors): not drawn there
        "ARRAY_API_TESTS_SKIP_DTYPES": {
            "mxnet": "int16,uint16,uint32,uint64",
            "paddle": "uint16,uint32,uint64",
        }.get(backend, ""),
        "PYTHONHASHSEED": "0",
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    session.chdir(suite)
    session.run(
        "python",
        "-m",
        "pytest",
        "array_api_tests",
        "-p",
        "no:cacheprovider",
        "-q",
        # MXNet 1.9.1 has no FFT kernels, so md.fft does not exist there; linalg runs everywhere
        *(["--disable-extension", "fft"] if backend == "mxnet" else []),
        f"--xfails-file={ROOT / 'array-api-xfails' / (backend + '.txt')}",
        "--hypothesis-max-examples=20",
        # no wall-clock deadline per example: on a loaded machine it fails tests at random
        "--hypothesis-disable-deadline",
        *session.posargs,
        env=env,
    )


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy over src/ and backends/ ([tool.mypy] in pyproject.toml; the frameworks are not
    installed and are typed as Any)."""
    session.install("-c", "constraints/tools.txt", "mypy")
    session.run("mypy")


for _backend in AUTOGRAD:

    @nox.session(name=f"bench_ddp-{_backend}")
    def bench_ddp(session: nox.Session, backend: str = _backend) -> None:
        """The data-parallel scaling benchmark on one backend (not part of CI): the MLP step
        (or ResNet-18's, ``-- --model resnet18``) with 1 and 2 worker processes, multidev's
        DistributedDataParallel against the framework's own data-parallel code. Writes
        benchmarks/results/ddp_<backend>.{json,md}. Arguments after ``--`` go to
        benchmarks/ddp_scaling.py (``--model``, ``--rounds``, ``--steps``)."""
        _install(session, backend, test=False)
        session.run(
            "python",
            "benchmarks/ddp_scaling.py",
            "--backend",
            backend,
            *session.posargs,
            env={"MULTIDEV_BACKEND": backend, "PYTHONHASHSEED": "0", "TF_CPP_MIN_LOG_LEVEL": "2"},
        )
