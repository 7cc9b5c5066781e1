"""Seeded parameters must be bit-identical on every backend, and their forward pass equal.

``python -m multidev.testing.param_hash`` builds a seeded model on the active backend (eager and
lazy layers, an initialiser recorded before the first call, a forward pass to materialise the
lazy ones) and prints two lines: ``<backend> <sha256>``, the hash of every parameter's name,
shape and float32 bytes in ``named_parameters`` order, and ``<backend> forward <v> <v> …``, the
model's output on a seeded input drawn after the parameters (the framework's own kernels at
work, so equal within float32 rounding rather than bit for bit).

``python -m multidev.testing.param_hash --check FILE...`` reads such lines (any number per
file), prints them, and exits non-zero unless every hash is the same and every backend's
forward values are finite and agree within ``FORWARD_RTOL``/``FORWARD_ATOL``.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
from pathlib import Path

import numpy as np

__all__ = ["FORWARD_ATOL", "FORWARD_RTOL", "build_model", "check", "digest", "forward_values"]

#: float32 tolerance of the forward pass: far below a 0.1% error in any op on its path
FORWARD_RTOL, FORWARD_ATOL = 1e-5, 1e-6


def build_model():
    """The seeded model whose parameters are hashed."""
    import multidev as md
    from multidev import nn

    md.manual_seed(0)
    net = nn.Sequential(
        nn.Linear(20, 64),
        nn.ReLU(),
        nn.LazyLinear(32),
        nn.Tanh(),
        nn.LazyLinear(10),
        nn.Sigmoid(),
        nn.Linear(10, 3, bias=False),
    )
    nn.init.xavier_normal_(net[4].weight)
    net[6].apply(lambda m: nn.init.kaiming_uniform_(m.weight, nonlinearity="relu"))
    net(md.rand(4, 20))
    return net


def digest(net) -> str:
    """sha256 over every parameter's name, shape and little-endian float32 bytes."""
    h = hashlib.sha256()
    for name, p in net.named_parameters():
        arr = np.ascontiguousarray(np.asarray(p.numpy()), dtype="<f4")
        h.update(f"{name}:{arr.shape};".encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def forward_values(net) -> list[float]:
    """The model's outputs on a seeded ``md.rand(5, 20)`` drawn after its parameters."""
    import multidev as md

    md.manual_seed(1)
    out = net(md.rand(5, 20)).numpy()
    return [float(v) for v in np.asarray(out, dtype=np.float64).ravel()]


def _forward_problems(forwards: dict[str, list[float]], backends: list[str]) -> list[str]:
    problems = [f"{b}: no forward line" for b in backends if b not in forwards]
    for backend, values in forwards.items():
        if not all(math.isfinite(v) for v in values):
            problems.append(f"{backend}: non-finite forward values {values}")
    finite = {b: v for b, v in forwards.items() if all(math.isfinite(x) for x in v)}
    if not finite:
        return problems
    ref_backend, ref = next(iter(finite.items()))
    for backend, values in finite.items():
        if len(values) != len(ref):
            problems.append(f"{backend}: {len(values)} forward values, {ref_backend} {len(ref)}")
            continue
        bad = [
            (i, x, y)
            for i, (x, y) in enumerate(zip(values, ref, strict=True))
            if abs(x - y) > FORWARD_ATOL + FORWARD_RTOL * abs(y)
        ]
        if bad:
            i, x, y = bad[0]
            problems.append(
                f"{backend}: forward value {i} is {x!r}, {ref_backend} {y!r} "
                f"({len(bad)} values differ beyond rtol {FORWARD_RTOL}, atol {FORWARD_ATOL})"
            )
    return problems


def check(paths: list[Path]) -> int:
    """Print every ``<backend> <hash>`` line of ``paths``; 0 when all hashes agree and every
    backend's ``<backend> forward …`` values are finite and agree, else 1."""
    entries: list[tuple[str, str, str]] = []
    forwards: dict[str, list[float]] = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            parts = line.split()
            if not parts:
                continue
            if len(parts) > 2 and parts[1] == "forward":
                try:
                    forwards[parts[0]] = [float(v) for v in parts[2:]]
                except ValueError:
                    print(f"{path}: expected numbers after 'forward'. Received: {line!r}")
                    return 1
                continue
            if len(parts) != 2 or len(parts[1]) != 64:
                print(
                    f"{path}: expected lines '<backend> <sha256>' or '<backend> forward <v>…'. "
                    f"Received: {line!r}"
                )
                return 1
            entries.append((parts[0], parts[1], str(path)))
    if not entries:
        print(f"Expected at least one '<backend> <sha256>' line. Received none in {paths}")
        return 1
    hashes = {h for _, h, _ in entries}
    width = max(len(b) for b, _, _ in entries)
    for backend, h, source in entries:
        print(f"{backend:<{width}}  {h}  ({source})")
    problems = _forward_problems(forwards, [b for b, _, _ in entries])
    if len(hashes) != 1:
        problems.insert(0, f"{len(hashes)} distinct hashes among {len(entries)} backends")
    if not problems:
        print(f"all {len(entries)} agree: parameters bit for bit, forward pass within float32")
        return 0
    print("DIFFER:")
    for p in problems:
        print(f"  {p}")
    return 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--check", nargs="+", type=Path, metavar="FILE", help="compare hash lines")
    args = p.parse_args(argv)
    if args.check:
        return check(args.check)
    import multidev as md

    net = build_model()
    backend = md.get_backend()
    print(f"{backend} {digest(net)}")
    print(f"{backend} forward " + " ".join(repr(v) for v in forward_values(net)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
