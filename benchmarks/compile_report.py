"""``python benchmarks/compile_report.py``: the combined table and chart of the compilation
benchmark, from each backend's ``results/compile_<backend>.json`` (``benchmarks/compile.py``).

Writes ``results/compile.md`` (one row per backend and case: milliseconds per step of every
side, md.jit ÷ the framework's compiled step against the 1.10 target, md.jit against Keras 3)
and ``results/compile.png`` (per backend and case, md.jit ÷ compiled and Keras 3
``train_on_batch`` ÷ compiled, wall-clock; 1.0 is the framework's own compiler).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from compile import ALL_CASES, COMPILED, EAGER  # noqa: E402

BACKENDS = ("torch", "tensorflow", "paddle", "mxnet", "jax")
TARGET = 1.10  # issue 13: md.jit of the step within 1.10x of the framework's compiled step
COLUMNS = (
    ("multidev eager", "multidev eager"),
    ("md.jit(step)", "multidev md.jit(step)"),
    ("net.hybridize()", "multidev net.hybridize()"),
)


def load_all(folder: Path) -> dict[str, dict]:
    found = {}
    for b in BACKENDS:
        f = folder / f"compile_{b}.json"
        if f.exists():
            found[b] = json.loads(f.read_text())
    return found


def _index(data: dict) -> dict[str, dict[str, dict]]:
    """case -> side -> row (timed or failed)."""
    out: dict[str, dict[str, dict]] = {}
    for r in data["rows"]:
        if "side" in r:
            out.setdefault(r["case"], {})[r["side"]] = r
    return out


def _keras(sides: dict[str, dict]) -> dict | None:
    return next((r for s, r in sides.items() if s.startswith("Keras")), None)


def _ratio(r: dict | None, base: dict | None) -> float | None:
    if r is None or base is None or "us_per_step" not in r or "us_per_step" not in base:
        return None
    return r["us_per_step"] / base["us_per_step"]


def _ms(r: dict | None) -> str:
    if r is None:
        return "—"
    if "error" in r:
        return "failed (see compile_<backend>.md)"
    ms = r["us_per_step"] / 1000
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 10 else f"{ms:.1f}"


def table(found: dict[str, dict]) -> str:
    lines = [
        "| backend | case | multidev eager | md.jit(step) | net.hybridize() | native eager "
        "| native compiled | Keras 3 train_on_batch | md.jit ÷ compiled | ≤ 1.10 "
        "| md.jit < Keras 3 | run (UTC) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for b, data in found.items():
        index = _index(data)
        runs = {r["case"]: r["started"] for r in data["rows"] if "started" in r}
        for case in [c for c in ALL_CASES if c in index]:
            sides = index[case]
            jit, base, keras = sides.get(COLUMNS[1][1]), sides.get(COMPILED[b]), _keras(sides)
            ratio = _ratio(jit, base)
            vs_keras = _ratio(jit, keras)
            cells = [_ms(sides.get(side)) for _, side in COLUMNS]
            cells += [_ms(sides.get(EAGER[b])), _ms(base), _ms(keras)]
            cells += [
                "—" if ratio is None else f"{ratio:.2f}",
                "—" if ratio is None else ("✓" if ratio <= TARGET else "✗"),
                "—" if vs_keras is None else ("✓" if vs_keras < 1 else "✗"),
                runs.get(case, "earlier run (no date recorded)"),
            ]
            lines.append(f"| {b} | {case} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(found: dict[str, dict]) -> str:
    loads = "; ".join(
        f"{b} {', '.join(f'{x:.1f}' for x in d['meta']['load_start'])} → "
        f"{', '.join(f'{x:.1f}' for x in d['meta']['load_average'])}"
        for b, d in found.items()
    )
    return "\n".join(
        [
            "# Compilation benchmark, all backends",
            "",
            "Written by `python benchmarks/compile_report.py` from `compile_<backend>.json` "
            "(`benchmarks/compile.py`). Milliseconds per training step (wall-clock median over "
            "interleaved rounds, 1 thread); each backend's `compile_<backend>.md` has the CPU "
            "times, the load average when each case ran, and why a side failed. Native compiled: "
            + ", ".join(f"`{COMPILED[b]}`" for b in BACKENDS)
            + ". Targets (issue 13): md.jit of the step within 1.10x of the framework's compiled "
            "step, and faster than Keras 3's `train_on_batch` on torch, tensorflow and jax. Load "
            f"average of each backend's last run (start → end): {loads}.",
            "",
            table(found),
            "",
            "![md.jit and Keras 3 against each framework's compiled step](compile.png)",
            "",
        ]
    )


def chart(found: dict[str, dict], path: Path) -> None:
    """Two panels of grouped bars, one group per case, one colour per backend: md.jit ÷
    compiled (black line: the 1.10 target) and Keras 3 ``train_on_batch`` ÷ compiled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    indexes = {b: _index(d) for b, d in found.items()}
    cases = [c for c in ALL_CASES if any(c in ix for ix in indexes.values())]
    width = 0.8 / max(len(found), 1)
    fig, axes = plt.subplots(1, 2, figsize=(max(10, 2.6 * len(cases)), 4.6))
    panels = (
        ("md.jit(step) ÷ native compiled", lambda s: s.get(COLUMNS[1][1])),
        ("Keras 3 train_on_batch ÷ native compiled", _keras),
    )
    for ax, (title, pick) in zip(axes, panels, strict=True):
        for j, (b, index) in enumerate(indexes.items()):
            xs, ys = [], []
            for i, case in enumerate(cases):
                sides = index.get(case, {})
                ratio = _ratio(pick(sides), sides.get(COMPILED[b]))
                if ratio is not None:
                    xs.append(i - 0.4 + width * (j + 0.5))
                    ys.append(ratio)
            if xs:
                bars = ax.bar(xs, ys, width, label=b, color=f"C{BACKENDS.index(b)}")
                ax.bar_label(bars, fmt="%.2f", fontsize=7)
        ax.axhline(1.0, color="grey", lw=0.8)
        if "md.jit" in title:
            ax.axhline(TARGET, color="black", lw=1.0, ls="--", label="target 1.10")
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels(cases, fontsize=9)
        ax.set_title(title + " (lower is better)", fontsize=10)
        ax.set_ylabel("time ÷ the framework's compiled step")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(folder: Path) -> None:
    found = load_all(folder)
    if not found:
        raise FileNotFoundError(
            f"Expected results/compile_<backend>.json files in {folder}. Received: none. "
            "Run `MULTIDEV_BACKEND=NAME python benchmarks/compile.py` first."
        )
    (folder / "compile.md").write_text(markdown(found))
    chart(found, folder / "compile.png")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    write(args.out)
    print(f"wrote {args.out / 'compile.md'} and {args.out / 'compile.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
