"""Pictures of training runs: loss and metrics per epoch (``Trainer.plot``, ``multidev
plot``). Needs matplotlib (``multidev[train]``); draws with the Agg backend (no display)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

from ._extras import require

__all__ = ["draw_histories", "plot_histories", "plot_runs", "read_history"]

_SKIP = {"epoch", "time_s", "lr"}


def read_history(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The per-epoch logs of a run folder (``metrics.jsonl``, else ``metrics.csv``, as
    ``CSVLogger`` writes them). Raises FileNotFoundError naming what it looked for."""
    folder = Path(run_dir)
    jsonl, csv_path = folder / "metrics.jsonl", folder / "metrics.csv"
    if jsonl.is_file():
        return [json.loads(line) for line in jsonl.read_text().splitlines() if line.strip()]
    if csv_path.is_file():
        with open(csv_path, newline="") as f:
            return [
                {k: float(v) for k, v in row.items() if v not in (None, "")}
                for row in csv.DictReader(f)
            ]
    raise FileNotFoundError(
        f"Expected a run folder with metrics.jsonl or metrics.csv (Trainer(log_dir=...) writes "
        f"them). Received: {folder}, which has neither"
    )


def plot_histories(runs: dict[str, list[dict[str, Any]]], path: str | os.PathLike[str]) -> Path:
    """One panel per quantity (loss, each metric; validation dashed beside training), one
    line per run, against the epoch; saved as PNG at ``path``."""
    mpl = require("matplotlib", "plots of training runs")
    mpl.use("Agg")
    plt = require("matplotlib.pyplot", "plots of training runs")
    fig = draw_histories(runs)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def draw_histories(runs: dict[str, list[dict[str, Any]]]) -> Any:
    """The matplotlib figure of :func:`plot_histories` (not saved, not closed)."""
    plt = require("matplotlib.pyplot", "plots of training runs")
    names: list[str] = []
    for history in runs.values():
        for row in history:
            for k in row:
                base = k[4:] if k.startswith("val_") else k
                if base not in _SKIP and base not in names:
                    names.append(base)
    if not names:
        raise ValueError("Expected at least one epoch of logs to plot. Received: none")
    fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.5), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, name in zip(axes[0], names, strict=True):
        for i, (label, history) in enumerate(runs.items()):
            colour = colours[i % len(colours)]
            # one unnamed run (Trainer.plot): "train" and "validation"; else the run's name
            kinds = (
                (("", "train"), ("val_", "validation"))
                if not label
                else (("", label), ("val_", label + " (val)"))
            )
            for (prefix, legend), style in zip(kinds, ("-", "--"), strict=True):
                key = prefix + name
                pts = [(r.get("epoch", j + 1), r[key]) for j, r in enumerate(history) if key in r]
                if pts:
                    xs, ys = zip(*pts, strict=True)
                    ax.plot(xs, ys, style, color=colour, marker="o", ms=3, label=legend)
        ax.set_xlabel("epoch")
        ax.set_title(name)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_runs(run_dirs: list[str | os.PathLike[str]], path: str | os.PathLike[str]) -> Path:
    """Overlay the runs of several run folders (``multidev plot``) into one PNG."""
    runs = {}
    for d in run_dirs:
        folder = Path(d)
        label = folder.name or str(folder)
        while label in runs:
            label += "'"
        runs[label] = read_history(folder)
    return plot_histories(runs, path)
