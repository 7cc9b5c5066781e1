"""Compare what the same program printed on several backends.

``python -m multidev.testing.compare_outputs a.txt b.txt …`` checks that the texts agree
token by token: words must be equal (backend names aside), numbers equal within float32
tolerance. A NaN anywhere fails, even where every backend printed it: the examples never
compute one, so a NaN is a defect, and one shared by all backends (a bug in the core) must not
pass as agreement. Infinities agree only with the same infinity. Prints the largest difference
and exits non-zero on any disagreement.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

from ..registry import registered_backends

_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?\b(?i:inf|infinity|nan)\b")
# every registered adapter's name, installed or not: a backend added later needs no edit here
_BACKEND = re.compile(rf"\b({'|'.join(map(re.escape, registered_backends()))})\b")


def tokens(text: str) -> list[str | float]:
    text = _BACKEND.sub("<backend>", text)
    out: list[str | float] = []
    pos = 0
    for m in _NUMBER.finditer(text):
        out.extend(text[pos : m.start()].split())
        out.append(float(m.group()))
        pos = m.end()
    out.extend(text[pos:].split())
    return out


def _number_problem(x: float, y: float, rtol: float, atol: float) -> bool:
    """Whether ``x`` (compared) and ``y`` (reference) disagree: any NaN, unequal infinities,
    or a finite difference over ``atol + rtol * |y|``."""
    if math.isnan(x) or math.isnan(y):
        return True
    if math.isinf(x) or math.isinf(y):
        return x != y
    return abs(x - y) > atol + rtol * abs(y)


def compare(a: str, b: str, rtol: float, atol: float) -> tuple[list[str], float]:
    """(problems, largest finite difference) between the texts ``a`` and reference ``b``."""
    ta, tb = tokens(a), tokens(b)
    problems: list[str] = []
    worst = 0.0
    if len(ta) != len(tb):
        problems.append(f"different number of tokens: {len(ta)} vs {len(tb)}")
    for i, (x, y) in enumerate(zip(ta, tb, strict=False)):
        if isinstance(x, float) and isinstance(y, float):
            if math.isfinite(x) and math.isfinite(y):
                worst = max(worst, abs(x - y))
            if _number_problem(x, y, rtol, atol):
                nan = " (NaN never agrees)" if math.isnan(x) or math.isnan(y) else ""
                problems.append(f"token {i}: {x!r} vs {y!r}{nan}")
        elif x != y:
            problems.append(f"token {i}: {x!r} vs {y!r}")
        if len(problems) > 20:
            break
    return problems, worst


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--atol", type=float, default=1e-5)
    args = p.parse_args(argv)
    ref_path = args.files[0]
    ref = ref_path.read_text()
    if not ref.strip():
        print(f"{ref_path}: empty output")
        return 1
    status = 0
    if len(args.files) == 1:
        problems, _ = compare(ref, ref, args.rtol, args.atol)
        print(f"{ref_path.name}: {'DIFFERS' if problems else 'agrees'} with itself")
        for line in problems:
            print("   ", line)
        return int(bool(problems))
    for path in args.files[1:]:
        problems, worst = compare(path.read_text(), ref, args.rtol, args.atol)
        verdict = "agrees" if not problems else "DIFFERS"
        print(f"{path.name} vs {ref_path.name}: {verdict}; largest difference {worst:.3g}")
        for line in problems:
            print("   ", line)
        status |= bool(problems)
    return status


if __name__ == "__main__":
    sys.exit(main())
