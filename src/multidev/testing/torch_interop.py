"""PyTorch checkpoints both ways, across environments (DESIGN §11).

One CNN is written once against the ``torch.nn`` API, so ``build(md.nn)`` and
``build(torch.nn)`` give the same architecture with the same state-dict keys. Three steps,
each in the environment that has what it needs:

- ``write DIR`` (every backend): a seeded multidev model's state dict saved with ``md.save``
  before and after one training-mode forward, with that forward's output and gradients and
  the evaluation-mode output of the updated model;
- ``check DIR`` (the torch environment): each such file loads into ``build(torch.nn)`` through
  ``safetensors.torch.load_file`` with identical keys and gives the same outputs, gradients
  and running statistics within ``TOL``; then a torch model's state dict is saved with
  ``safetensors.torch.save_file`` with its outputs;
- ``read DIR`` (every backend): that torch file loads with ``md.load`` into ``build(md.nn)``
  and gives torch's outputs within ``TOL``.

Each step exits non-zero naming every mismatch.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["GRAD_TOL", "TOL", "build", "main"]

#: largest absolute difference allowed between multidev's and torch's float32 results
TOL = 1e-5
#: gradients: largest difference relative to the largest gradient of the model
GRAD_TOL = 1e-4
_SHAPE = (4, 1, 16, 16)


def build(nn: Any) -> Any:
    """A small CNN using every layer of the convolution and normalisation half of §11."""
    return nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5, padding=2, padding_mode="circular"),
        nn.BatchNorm2d(6),
        nn.ReLU(),
        nn.MaxPool2d(2, dilation=2),
        nn.Conv2d(6, 8, kernel_size=3, groups=2, padding="same", dilation=2),
        nn.GroupNorm(4, 8),
        nn.ReLU(),
        nn.AvgPool2d(2, padding=1, count_include_pad=False),
        nn.ConvTranspose2d(8, 4, kernel_size=2, stride=2),
        nn.Identity(),
        nn.AdaptiveAvgPool2d((2, 2)),
        nn.Flatten(),
        nn.Linear(16, 10),
        nn.BatchNorm1d(10),
        nn.ReLU(),
        nn.Linear(10, 3),
    )


def _input() -> np.ndarray:
    return np.random.default_rng(7).standard_normal(_SHAPE).astype(np.float32)


def _loss_weights() -> np.ndarray:
    """The loss is sum(output * these): every output element gets its own gradient."""
    return np.random.default_rng(8).standard_normal((_SHAPE[0], 3)).astype(np.float32)


def write(out: Path) -> None:
    import multidev as md

    md.manual_seed(0)
    net = build(md.nn)
    name = md.asarray(0.0).backend
    out.mkdir(parents=True, exist_ok=True)
    md.save(net.state_dict(), out / f"{name}-before.safetensors")
    params = dict(net.named_parameters())
    net.train()
    with md.autograd.record():
        y = net(md.asarray(_input()))
        loss = (y * md.asarray(_loss_weights())).sum()
    loss.backward()
    results = {"train": y.numpy()}
    results.update({f"grad:{k}": p.grad.numpy() for k, p in params.items()})
    md.save(net.state_dict(), out / f"{name}-after.safetensors")
    net.eval()
    results["eval"] = net(md.asarray(_input())).numpy()
    np.savez(out / f"{name}-outputs.npz", **results)


def _torch_net(state: dict) -> Any:
    import torch

    net = build(torch.nn)
    own = list(net.state_dict())
    if sorted(state) != sorted(own):  # a safetensors file keeps its keys, not their order
        raise AssertionError(
            f"state-dict keys differ: multidev {sorted(state)} vs torch {sorted(own)}"
        )
    net.load_state_dict(state)
    return net


def check(directory: Path) -> list[str]:
    import torch
    from safetensors.torch import load_file, save_file

    problems: list[str] = []
    x = torch.from_numpy(_input())

    def close(name: str, got: Any, want: np.ndarray, tol: float = TOL) -> None:
        got = got.detach().numpy() if hasattr(got, "detach") else np.asarray(got)
        diff = float(np.abs(got.astype(np.float64) - want).max()) if got.size else 0.0
        if got.shape != want.shape or not diff <= tol:  # a NaN difference fails
            problems.append(f"{name}: shapes {got.shape}/{want.shape}, max difference {diff:.3g}")

    files = sorted(directory.glob("*-outputs.npz"))
    if not files:
        problems.append(f"no *-outputs.npz in {directory}: run `write` on each backend first")
    for f in files:
        bk = f.name[: -len("-outputs.npz")]
        expected = np.load(f)
        try:
            net = _torch_net(load_file(directory / f"{bk}-before.safetensors"))
            after = load_file(directory / f"{bk}-after.safetensors")
            net.train()
            y = net(x)
            (y * torch.from_numpy(_loss_weights())).sum().backward()
            close(f"{bk} train output", y, expected["train"])
            # gradients relative to the largest one: a bias before a BatchNorm has a gradient
            # of zero in exact arithmetic, so its float32 value is rounding alone
            scale = max(1.0, *(float(p.grad.abs().max()) for p in net.parameters()))
            for k, p in net.named_parameters():
                close(f"{bk} grad {k}", p.grad / scale, expected[f"grad:{k}"] / scale, GRAD_TOL)
            for k, v in net.state_dict().items():
                close(f"{bk} state {k} after a training step", v, after[k].numpy())
            net = _torch_net(after).eval()
            close(f"{bk} eval output", net(x), expected["eval"])
        except (AssertionError, RuntimeError, KeyError) as e:
            problems.append(f"{bk}: {e}")
    torch.manual_seed(1)
    net = build(torch.nn)
    net.train()
    net(x * 2.0)  # running statistics away from their initial values
    save_file(net.state_dict(), str(directory / "native-torch.safetensors"))
    outputs = {"eval": net.eval()(x).detach().numpy(), "train": net.train()(x).detach().numpy()}
    np.savez(directory / "native-torch.npz", **outputs)
    return problems


def read(directory: Path) -> list[str]:
    import multidev as md

    problems = []
    net = build(md.nn)
    net.load_state_dict(md.load(directory / "native-torch.safetensors"))
    expected = np.load(directory / "native-torch.npz")
    for mode in ("eval", "train"):
        net.train(mode == "train")
        got = net(md.asarray(_input())).numpy()
        diff = float(np.abs(got - expected[mode]).max())
        if not diff <= TOL:  # a NaN difference fails
            problems.append(f"torch checkpoint, {mode} output: max difference {diff:.3g}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m multidev.testing.torch_interop")
    parser.add_argument("step", choices=("write", "check", "read"))
    parser.add_argument("directory", type=Path)
    args = parser.parse_args(argv)
    if args.step == "write":
        write(args.directory)
        return 0
    problems = check(args.directory) if args.step == "check" else read(args.directory)
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{args.step}: {'ok' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
