"""``python benchmarks/report.py``: the combined table and chart from every backend's JSON.

Reads ``results/<backend>.json`` for each backend that has one and writes
``results/README.md`` (one row per case and baseline, one column per backend, each cell the
figure its target is about, with ✓ or ✗) and ``results/ratios.png`` (multidev ÷ baseline time
per case and backend; 1.0 is parity, a black line on each bar marks its target).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from harness import fmt_time  # noqa: E402

BACKENDS = ("numpy", "torch", "tensorflow", "paddle", "mxnet")
_VS = {
    "native": "native code",
    "safetensors": "safetensors.numpy",
    "st_fsync": "safetensors.numpy + fsync",
}


def load_all(folder: Path) -> dict[str, dict]:
    found = {}
    for b in BACKENDS:
        f = folder / f"{b}.json"
        if f.exists():
            found[b] = json.loads(f.read_text())
    return found


def _group(case: str) -> str:
    return case.split(" ", 1)[0]


def _cell(r: dict) -> str:
    if r["skipped"]:
        return "skipped"
    mark = {True: " ✓", False: " ✗", None: ""}[r["met"]]
    group = _group(r["case"])
    if group == "to_device_noop":
        return fmt_time(r["md_s"]) + mark
    if group.startswith("ckpt"):
        return f"{r['base_s'] / r['md_s']:.2f}×{mark}"
    return f"{r['md_s'] / r['base_s']:.3f}{mark}"


def _compared(case: str, vs: str) -> str:
    group = _group(case)
    if group == "to_device_noop":
        return "— (absolute time)"
    if group.startswith("ckpt") and vs == "native":
        return "the framework's own save/load"
    return _VS.get(vs, vs)


def _figure(group: str) -> str:
    if group == "to_device_noop":
        return "time per call"
    if group.startswith("ckpt"):
        return "throughput ratio"
    return "time ratio"


def _rows(data: dict[str, dict]) -> list[tuple[str, str]]:
    """(case, vs) keys in first-seen order across backends."""
    keys: dict[tuple[str, str], None] = {}
    for doc in data.values():
        for r in doc["results"]:
            keys.setdefault((r["case"], r.get("vs", "")), None)
    return list(keys)


def table(data: dict[str, dict]) -> str:
    backends = list(data)
    index = {b: {(r["case"], r.get("vs", "")): r for r in d["results"]} for b, d in data.items()}
    # a row's target column holds the target its backends share; where they differ (op_tiny:
    # numpy's is looser than the frameworks'), each cell names its own
    targets: dict[tuple[str, str], set[str]] = {}
    for b in backends:
        for key, r in index[b].items():
            if r["target"]:
                targets.setdefault(key, set()).add(r["target"])
    lines = [
        "| case | compared with | figure | target | " + " | ".join(backends) + " |",
        "|---|---|---|---|" + "---|" * len(backends),
    ]
    for key in _rows(data):
        case, vs = key
        found = targets.get(key, set())
        shared = next(iter(found)) if len(found) == 1 else ("per backend" if found else "")
        cells = []
        for b in backends:
            r = index[b].get(key)
            cell = "—" if r is None else _cell(r)
            if r is not None and len(found) > 1 and r["target"]:
                cell += f" ({r['target']})"
            cells.append(cell)
        lines.append(
            f"| {case} | {_compared(case, vs)} | {_figure(_group(case))} | {shared} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(lines)


def markdown(data: dict[str, dict]) -> str:
    machines = sorted({d["machine"] for d in data.values()})
    versions = ", ".join(f"{b} {d['framework_version']}" for b, d in data.items())
    runs = ", ".join(
        f"{b} {d['date']}" + (" (quick)" if d.get("quick") else "") for b, d in data.items()
    )
    parts = [
        "# multidev benchmarks",
        "",
        "Each figure compares multidev with the same work written in the framework's own code, "
        "measured in the same process with the two sides interleaved (medians over repeats). "
        "Time ratio: multidev time ÷ native time (1.000 = no overhead, lower is better). "
        "Throughput ratio: multidev bytes/s ÷ baseline bytes/s (higher is better). "
        "✓ / ✗: target met or missed.",
        "",
        "Machine: " + "; ".join(machines),
        "",
        f"Versions: {versions}. Runs: {runs}.",
        "",
        table(data),
        "",
        "![ratios](ratios.png)",
        "",
        "Per backend, with absolute times and spreads: "
        + ", ".join(f"[{b}]({b}.md)" for b in data)
        + ". Re-run with `nox -s bench-<backend>`.",
        "",
    ]
    return "\n".join(parts)


def chart(data: dict[str, dict], path: Path) -> None:
    """Grouped bars of multidev ÷ baseline time for each case with a ratio or throughput
    target; one colour per backend; a black line across each bar at its target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = []
    for key in _rows(data):
        case, vs = key
        group = _group(case)
        if group == "to_device_noop" or (group.startswith("ckpt") and vs != "safetensors"):
            continue
        keys.append(key)
    backends = list(data)
    index = {b: {(r["case"], r.get("vs", "")): r for r in d["results"]} for b, d in data.items()}
    width = 0.8 / max(len(backends), 1)
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(keys)), 4.8))
    for j, b in enumerate(backends):
        xs, ys, limits = [], [], []
        for i, key in enumerate(keys):
            r = index[b].get(key)
            if r and not r["skipped"]:
                xs.append(i - 0.4 + width * (j + 0.5))
                ys.append(r["md_s"] / r["base_s"])
                limits.append(_time_ratio_limit(r.get("goal", {})))
        ax.bar(xs, ys, width, label=b)
        for x, limit in zip(xs, limits, strict=True):
            if limit is not None:
                ax.hlines(limit, x - width / 2, x + width / 2, colors="black", lw=1.2)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xticks(range(len(keys)))
    labels = [c if vs == "native" else f"{c}\nvs safetensors" for c, vs in keys]
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("multidev time ÷ baseline time")
    ax.set_title("multidev overhead per case and backend (black lines: targets; lower is better)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _time_ratio_limit(goal: dict) -> float | None:
    """The target as a limit on multidev ÷ baseline time (None: not a ratio target)."""
    if goal.get("kind") == "ratio":
        return goal["value"]
    if goal.get("kind") == "throughput":
        return 1.0 / goal["value"]
    return None


def write(folder: Path) -> None:
    data = load_all(folder)
    if not data:
        raise FileNotFoundError(
            f"Expected results/<backend>.json files in {folder}. Received: none. "
            "Run `python benchmarks/run.py --backend NAME` first."
        )
    (folder / "README.md").write_text(markdown(data))
    chart(data, folder / "ratios.png")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    write(args.out)
    print(f"wrote {args.out / 'README.md'} and {args.out / 'ratios.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
