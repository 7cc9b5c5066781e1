"""Seeded parameters must be bit-identical on every backend.

``python -m multidev.testing.param_hash`` builds a seeded model on the active backend (eager and
lazy layers, an initialiser recorded before the first call, a forward pass to materialise the
lazy ones) and prints ``<backend> <sha256>``: the hash of every parameter's name, shape and
float32 bytes in ``named_parameters`` order.

``python -m multidev.testing.param_hash --check FILE...`` reads such lines (any number per
file), prints them, and exits non-zero unless every hash is the same.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np

__all__ = ["build_model", "check", "digest"]


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


def check(paths: list[Path]) -> int:
    """Print every ``<backend> <hash>`` line of ``paths``; 0 when all hashes agree, else 1."""
    entries: list[tuple[str, str, str]] = []
    for path in paths:
        for line in Path(path).read_text().splitlines():
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 2 or len(parts[1]) != 64:
                print(f"{path}: expected lines '<backend> <sha256>'. Received: {line!r}")
                return 1
            entries.append((parts[0], parts[1], str(path)))
    if not entries:
        print(f"Expected at least one '<backend> <sha256>' line. Received none in {paths}")
        return 1
    hashes = {h for _, h, _ in entries}
    width = max(len(b) for b, _, _ in entries)
    for backend, h, source in entries:
        print(f"{backend:<{width}}  {h}  ({source})")
    if len(hashes) == 1:
        print(f"all {len(entries)} agree")
        return 0
    print(f"DIFFER: {len(hashes)} distinct hashes among {len(entries)} backends")
    return 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--check", nargs="+", type=Path, metavar="FILE", help="compare hash lines")
    args = p.parse_args(argv)
    if args.check:
        return check(args.check)
    import multidev as md

    print(f"{md.get_backend()} {digest(build_model())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
