"""Resume anywhere: a training run stopped on one backend continues on any other exactly.

``python -m multidev.testing.resume_compare run --out DIR`` (once per backend, in its own
environment) trains ``multidev.examples.resume_training`` for its 4 epochs, saving training
checkpoints after epoch 2 and 5 batches into epoch 3, and writes ``DIR/<backend>.json`` with
the per-epoch losses and a digest of a seeded ``DataLoader``'s batches (with and without
worker processes; every backend, NumPy included, writes these).

The same run through ``md.Trainer`` (``trainer_losses``) writes Trainer checkpoints at global
steps 24 and 29 (``TRAINER_POSITIONS``), compared the same way.

``… resume DIR --out FILE`` (once per autograd backend B) continues every other backend A's
checkpoints on B to epoch 4 and records the losses. ``… check DIR --backends … --autograd …``
fails unless, for every ordered pair (A, B) of the autograd backends and both checkpoints, the
per-epoch losses of "2 epochs on A, resumed on B" agree with A's uninterrupted run within
``--rtol`` (default 1e-5) relative, and the loader digests are the same on every backend.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .. import registry

__all__ = ["check", "loader_digests", "main", "resume", "run"]

#: checkpoint kinds: (epochs completed, batches into the next epoch)
POSITIONS = {"epoch2": (2, 0), "mid-epoch3": (2, 5)}
#: md.Trainer checkpoints of the same run (12 batches an epoch), by global step: after the
#: last batch of epoch 2 (before its end), and 5 batches into epoch 3
TRAINER_POSITIONS = {"trainer-step24": 24, "trainer-step29": 29}


def _quiet(_: str) -> None:
    pass


def loader_digests() -> dict[str, str]:
    """SHA-256 of the batches of two shuffled epochs of seeded DataLoaders (a seed given to
    the loader, and ``md.manual_seed``), built in this process and by two worker processes."""
    import multidev as md

    data = md.data.TensorDataset(
        np.arange(2 * 103, dtype=np.float32).reshape(103, 2), np.arange(103) % 7
    )
    out = {}
    for workers in (0, 2):
        for name, generator in (("seed", 1234), ("manual_seed", None)):
            md.manual_seed(42)
            loader = md.data.DataLoader(
                data, batch_size=10, shuffle=True, generator=generator, num_workers=workers
            )
            h = hashlib.sha256()
            for _ in range(2):
                for x, y in loader:
                    h.update(np.ascontiguousarray(x.numpy()).tobytes())
                    h.update(np.ascontiguousarray(y.numpy()).astype("<i8").tobytes())
            out[f"{name}, num_workers={workers}"] = h.hexdigest()
    return out


class _SaveAt:
    """A Trainer callback writing ``trainer.save_checkpoint`` at the given global steps."""

    def __init__(self, saves: dict[int, Path]) -> None:
        self.saves = saves

    def on_batch_end(self, trainer: Any) -> None:
        path = self.saves.get(trainer.global_step)
        if path is not None:
            trainer.save_checkpoint(path)


def trainer_losses(
    seed: int, saves: dict[int, Path] | None = None, resume: Path | None = None
) -> list[float]:
    """The resume example's run through ``md.Trainer`` (same model, data, Adam, OneCycleLR
    stepped per batch, gradient clipping): the per-epoch training losses."""
    import multidev as md
    from multidev.nn import functional as F

    from ..examples import resume_training as rt

    run = rt.build(seed)
    callbacks: list[Any] = [md.callbacks.LearningRateScheduler(run["sched"], "step")]
    if saves:
        callbacks.append(_SaveAt(saves))
    trainer = md.Trainer(
        rt.EPOCHS,
        callbacks=callbacks,
        gradient_clip_val=rt.MAX_GRAD_NORM,
        progress=False,
        loss=F.cross_entropy,
        optimizer=run["opt"],
    )
    history = trainer.fit(run["net"], run["loader"], resume=resume)
    return [h["loss"] for h in history]


def run(out: Path, seed: int = 0) -> dict[str, Any]:
    """Uninterrupted run and checkpoints of the active backend into ``out``."""
    from ..autograd import autograd_backends
    from ..examples import resume_training

    backend = registry.get_backend()
    out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"backend": backend, "seed": seed, "loader": loader_digests()}
    if backend in autograd_backends():
        names = {kind: f"{backend}-{kind}.ckpt" for kind in POSITIONS}
        saves = {POSITIONS[kind]: out / name for kind, name in names.items()}
        result["losses"] = resume_training.train(seed, checkpoints=saves, log=_quiet)
        tnames = {kind: f"{backend}-{kind}.ckpt" for kind in TRAINER_POSITIONS}
        tsaves = {TRAINER_POSITIONS[kind]: out / name for kind, name in tnames.items()}
        result["trainer_losses"] = trainer_losses(seed, tsaves)
        result["checkpoints"] = {**names, **tnames}
    (out / f"{backend}.json").write_text(json.dumps(result, indent=2))
    return result


def resume(folder: Path) -> dict[str, Any]:
    """Continue every other backend's checkpoints in ``folder`` on the active backend."""
    from ..examples import resume_training

    me = registry.get_backend()
    runs = []
    for path in sorted(folder.glob("*.json")):
        source = json.loads(path.read_text())
        if source.get("backend") == me or "checkpoints" not in source:
            continue
        for kind, name in source["checkpoints"].items():
            if kind in TRAINER_POSITIONS:
                losses = trainer_losses(source["seed"], resume=folder / name)
            else:
                losses = resume_training.train(source["seed"], resume=folder / name, log=_quiet)
            runs.append({"from": source["backend"], "kind": kind, "losses": losses})
    return {"backend": me, "runs": runs}


def _relative(a: float, b: float) -> float:
    """|a - b| relative to the larger; infinite where either is NaN or they are unequal
    infinities, so that a non-finite loss can never pass as a small difference."""
    if a == b:
        return 0.0
    scale = max(abs(a), abs(b))
    if math.isnan(a) or math.isnan(b) or math.isinf(scale):
        return math.inf
    return abs(a - b) / scale


def check(
    folder: Path, backends: list[str], autograd: list[str], rtol: float = 1e-5
) -> tuple[list[str], list[str]]:
    """(problems, report lines) for the files in ``folder``."""
    problems: list[str] = []
    lines: list[str] = []
    sources: dict[str, Any] = {}
    for b in backends:
        path = folder / f"{b}.json"
        if not path.exists():
            problems.append(f"{b}: no {path.name} (its tests-{b} session did not write it)")
            continue
        sources[b] = json.loads(path.read_text())
    digests = {b: s["loader"] for b, s in sources.items()}
    if digests:
        ref_b, ref = next(iter(digests.items()))
        for b, d in digests.items():
            if d != ref:
                diff = sorted(k for k in ref if d.get(k) != ref[k])
                problems.append(f"loader batches: {b} differs from {ref_b} in {diff}")
        lines.append(f"loader batches: identical on {', '.join(digests)}")
    for target in autograd:
        path = folder / f"resumed-{target}.json"
        if not path.exists():
            problems.append(f"{target}: no {path.name} (run the resume session)")
            continue
        done = {(r["from"], r["kind"]): r["losses"] for r in json.loads(path.read_text())["runs"]}
        for origin in autograd:
            if origin == target:
                continue
            for kind in (*POSITIONS, *TRAINER_POSITIONS):
                key = "trainer_losses" if kind in TRAINER_POSITIONS else "losses"
                base = sources.get(origin, {}).get(key)
                if base is None:
                    problems.append(f"{origin}: no uninterrupted {key}")
                    continue
                losses = done.get((origin, kind))
                if losses is None:
                    problems.append(f"{origin} -> {target} ({kind}): not run")
                    continue
                if len(losses) != len(base):
                    problems.append(
                        f"{origin} -> {target} ({kind}): {len(losses)} epochs, expected {len(base)}"
                    )
                    continue
                worst = max(_relative(a, b) for a, b in zip(base, losses, strict=True))
                status = "ok" if worst <= rtol else "FAILED"  # NaN cannot be <= rtol
                lines.append(
                    f"{origin:>10} -> {target:<10} {kind:<11} largest relative difference "
                    f"{worst:.2e} {status}"
                )
                if not worst <= rtol:
                    problems.append(
                        f"{origin} -> {target} ({kind}): losses {losses} differ from the "
                        f"uninterrupted {base} by {worst:.3g} relative (> {rtol})"
                    )
    return problems, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m multidev.testing.resume_compare")
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="uninterrupted run and checkpoints on this backend")
    p_run.add_argument("--out", required=True, type=Path, help="folder to write into")
    p_run.add_argument("--seed", type=int, default=0)
    p_resume = sub.add_parser("resume", help="continue the other backends' checkpoints here")
    p_resume.add_argument("folder", type=Path)
    p_resume.add_argument("--out", required=True, type=Path, help="JSON file to write")
    p_check = sub.add_parser("check", help="compare the runs of every ordered backend pair")
    p_check.add_argument("folder", type=Path)
    p_check.add_argument("--backends", nargs="+", required=True)
    p_check.add_argument("--autograd", nargs="+", required=True)
    p_check.add_argument("--rtol", type=float, default=1e-5)
    args = parser.parse_args(argv)

    if args.command == "run":
        result = run(args.out, args.seed)
        print(f"wrote {args.out / (result['backend'] + '.json')}")
        return 0
    if args.command == "resume":
        result = resume(args.folder)
        args.out.write_text(json.dumps(result, indent=2))
        print(f"wrote {args.out} ({len(result['runs'])} resumed runs)")
        return 0
    problems, lines = check(args.folder, args.backends, args.autograd, args.rtol)
    print(f"resume anywhere (rtol {args.rtol}):")
    for line in lines:
        print("  " + line)
    if problems:
        print("FAILED:")
        for p in problems:
            print("  " + p)
        return 1
    print("ok: every resumed run continued as the uninterrupted one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
