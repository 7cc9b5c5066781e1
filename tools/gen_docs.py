"""Generate the documentation site's API reference and benchmark pages.

``python tools/gen_docs.py`` (run by ``nox -s docs`` before ``mkdocs build``) writes
``docs/api/<module>.md``, one ``::: name`` entry (rendered by mkdocstrings from the docstring) per
public name of each public module, and ``docs/benchmarks/*.md``, tables and SVG charts of
``benchmarks/results/*.json`` with each run's measuring conditions as a table of its recorded
fields. Both folders are generated, never edited (git-ignores them).

Public means: the names in a module's ``__all__``, or, without one, its names not starting
with ``_``.
"""

from __future__ import annotations

import html
import importlib
import inspect
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RESULTS = ROOT / "benchmarks" / "results"

#: the public modules, in the order of the reference's navigation (mkdocs.yml lists the same)
PUBLIC_MODULES = (
    "multidev",
    "multidev.nn",
    "multidev.nn.functional",
    "multidev.nn.init",
    "multidev.nn.utils",
    "multidev.optim",
    "multidev.optim.lr_scheduler",
    "multidev.data",
    "multidev.data.datasets",
    "multidev.callbacks",
    "multidev.metrics",
    "multidev.d2l",
    "multidev.amp",
    "multidev.autograd",
    "multidev.distributed",
    "multidev.parallel",
    "multidev.linalg",
    "multidev.fft",
    "multidev.cuda",
    "multidev.random",
)


def public_names(module: str) -> list[str]:
    """The public names of ``module`` (its ``__all__``, else its names without a leading _)."""
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in vars(mod) if not n.startswith("_")]
    return sorted(set(names), key=str.lower)


def api_page(module: str) -> str:
    """The Markdown of ``module``'s reference page."""
    lines = [f"# `{module}`", ""]
    doc = (importlib.import_module(module).__doc__ or "").strip()
    if doc:
        lines += [doc.split("\n\n")[0], ""]
    mod = importlib.import_module(module)
    for name in public_names(module):
        full = f"{module}.{name}"
        if inspect.ismodule(getattr(mod, name, None)) and full in PUBLIC_MODULES:
            lines += [f"## `{full}`", "", f"A module: see [`{full}`]({full}.md).", ""]
        else:
            lines += [f"::: {full}", ""]
    return "\n".join(lines)


def write_api() -> list[Path]:
    out = DOCS / "api"
    out.mkdir(exist_ok=True)
    written = []
    for module in PUBLIC_MODULES:
        path = out / f"{module}.md"
        path.write_text(api_page(module), encoding="utf-8")
        written.append(path)
    return written


def _bars(title: str, bars: list[tuple[str, float]], unit: str, line: float | None = None) -> str:
    """A horizontal bar chart as inline SVG (no plotting library needed to build the site)."""
    if not bars:
        return ""
    width, label_w, row_h = 720, 260, 22
    top = max(v for _, v in bars) or 1.0
    top = max(top, line or 0.0)
    scale = (width - label_w - 70) / top
    height = row_h * len(bars) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{html.escape(title)}">',
        f'<text x="4" y="14" font-size="12" font-weight="bold">{html.escape(title)}</text>',
    ]
    for i, (label, value) in enumerate(bars):
        y = 22 + i * row_h
        w = max(value * scale, 1.0)
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 14}" font-size="11" text-anchor="end">'
            f"{html.escape(label)}</text>"
        )
        parts.append(
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="15" fill="#3f51b5"/>'
        )
        parts.append(
            f'<text x="{label_w + w + 4:.1f}" y="{y + 14}" font-size="11">{value:.3g}{unit}</text>'
        )
    if line is not None:
        x = label_w + line * scale
        parts.append(
            f'<line x1="{x:.1f}" y1="20" x2="{x:.1f}" y2="{height}" stroke="#e91e63" '
            'stroke-dasharray="4 3"/>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def _conditions(fields: dict) -> list[str]:
    """A run's recorded conditions as a two-column table (values as the run wrote them)."""
    rows = ["| condition | value |", "|---|---|"]
    for key, value in fields.items():
        if isinstance(value, (dict, list)) and key not in ("load_start", "load_average", "cases"):
            continue
        if isinstance(value, float):
            value = f"{value:.3g}"
        rows.append(f"| {key} | {html.escape(str(value), quote=False)} |")
    return rows


def _load(pattern: str) -> list[tuple[str, dict]]:
    return [(p.stem, json.loads(p.read_text())) for p in sorted(RESULTS.glob(pattern))]


def ops_page() -> str:
    lines = [
        "# Ops, layers and checkpoints",
        "",
        "Each row: multidev's time divided by the same work in the framework's own code, measured",
        "in one process with the sides interleaved (`benchmarks/run.py`, `nox -s bench-<backend>`).",
        "Lower is better; checkpoint rows are throughput ratios (higher is better). The",
        'sections "backward() without record()" come from `benchmarks/implicit_grad.py`: a',
        "training step recorded as PyTorch records it, divided by the same step in `record()`.",
        "",
    ]
    for stem, run in _load("*.json"):
        if stem.startswith(("compile_", "ddp_")):
            continue
        lines += [f"## {run.get('backend', stem)}", "", "Conditions of this run:", ""]
        lines += [*_conditions({k: v for k, v in run.items() if k != "results"}), ""]
        lines += ["| case | vs | ratio | target | met | note |", "|---|---|---|---|---|---|"]
        bars = []
        for r in run.get("results", []):
            ratio = r.get("ratio")
            shown = f"{ratio:.3f}" if isinstance(ratio, (int, float)) else (r.get("skipped") or "")
            lines.append(
                f"| {r.get('case', '')} | {r.get('vs', '')} | {shown} | {r.get('target', '')} "
                f"| {'yes' if r.get('met') else 'no'} | {r.get('note', '')} |".replace("\n", " ")
            )
            if isinstance(ratio, (int, float)):
                bars.append((r.get("case", ""), float(ratio)))
        lines += ["", _bars(f"{run.get('backend', stem)}: multidev ÷ native", bars, "", 1.0), ""]
    return "\n".join(lines)


def compile_page() -> str:
    lines = [
        "# Compilation",
        "",
        "Time per training step of each side (`benchmarks/compile.py`), microseconds; every side",
        "runs the same model, data and first losses.",
        "",
    ]
    for stem, run in _load("compile_*.json"):
        meta = run.get("meta", {})
        lines += [f"## {meta.get('backend', stem)}", "", "Conditions of this run:", ""]
        lines += [*_conditions(meta), ""]
        per_case = [r for r in run.get("rows", []) if "side" not in r]
        if per_case:  # when each case ran, and the machine's load then: conditions, as data
            keys = [k for k in per_case[0] if k != "case"]
            lines += ["| case | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
            for r in per_case:
                cells = [
                    html.escape(str(r.get(k, "")), quote=False).replace("\n", " ") for k in keys
                ]
                lines.append(f"| {r.get('case', '')} | " + " | ".join(cells) + " |")
            lines.append("")
        lines += ["| case | side | µs per step | CPU µs per step |", "|---|---|---|---|"]
        bars = []
        for r in run.get("rows", []):
            if "side" not in r:
                continue
            us = r.get("us_per_step")
            cpu = r.get("cpu_us_per_step")
            lines.append(
                f"| {r.get('case', '')} | {r.get('side', '')} | "
                f"{'' if us is None else f'{us:.0f}'} | {'' if cpu is None else f'{cpu:.0f}'} |"
            )
            if isinstance(us, (int, float)):
                bars.append((f"{r.get('case', '')}: {r.get('side', '')}"[:40], float(us)))
        lines += ["", _bars(f"{meta.get('backend', stem)}: µs per step", bars, " µs"), ""]
    return "\n".join(lines)


def ddp_page() -> str:
    lines = [
        "# Data-parallel training",
        "",
        "Step time with 1 and 2 processes on one machine (`benchmarks/ddp_scaling.py`):",
        "multidev's `DistributedDataParallel` against the framework's own data-parallel step.",
        "",
    ]
    for stem, run in _load("ddp_*.json"):
        backend = run.get("backend", stem)
        for model, m in run.get("models", {}).items():
            lines += [f"## {backend}: {model}", "", "Conditions of this run:", ""]
            cond = {"backend": backend, "cpus": run.get("cpus")}
            cond.update({k: v for k, v in m.items() if k != "rows"})
            lines += [*_conditions(cond), ""]
            lines += ["| processes | side | ms per step | CPU ms per step |", "|---|---|---|---|"]
            bars = []
            for r in m.get("rows", []):
                for side, ms in r.get("step_ms", {}).items():
                    cpu = r.get("cpu_ms", {}).get(side)
                    lines.append(
                        f"| {r.get('procs')} | {side} | {ms:.3f} | "
                        f"{'' if cpu is None else f'{cpu:.3f}'} |"
                    )
                    bars.append((f"{r.get('procs')} proc, {side}", float(ms)))
            lines += ["", _bars(f"{backend} {model}: ms per step", bars, " ms"), ""]
    return "\n".join(lines)


def write_benchmarks() -> list[Path]:
    out = DOCS / "benchmarks"
    out.mkdir(exist_ok=True)
    pages = {
        "index.md": "# Benchmarks\n\nGenerated from `benchmarks/results/*.json` by "
        "`tools/gen_docs.py`; each run states its measuring conditions as recorded.\n\n"
        "- [Ops, layers and checkpoints](ops.md)\n- [Compilation](compile.md)\n"
        "- [Data-parallel training](ddp.md)\n",
        "ops.md": ops_page(),
        "compile.md": compile_page(),
        "ddp.md": ddp_page(),
    }
    for name, text in pages.items():
        (out / name).write_text(text, encoding="utf-8")
    return [out / n for n in pages]


def write_home() -> list[Path]:
    """docs/index.md from README.md and docs/changelog.md from CHANGELOG.md (one source each)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    readme = readme.replace("](docs/", "](").replace("](CHANGELOG.md)", "](changelog.md)")
    readme = readme.replace("[CONTRIBUTING.md](CONTRIBUTING.md)", "`CONTRIBUTING.md`")
    readme = readme.replace(
        "API reference: every public name", "[API reference](api/multidev.md): every public name"
    )
    readme = readme.replace("- Benchmarks: ratios", "- [Benchmarks](benchmarks/index.md): ratios")
    home = DOCS / "index.md"
    home.write_text(readme, encoding="utf-8")
    changelog = DOCS / "changelog.md"
    changelog.write_text((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), encoding="utf-8")
    return [home, changelog]


def main() -> int:
    sys.path[:0] = [str(ROOT / "src"), str(ROOT / "backends")]
    written = write_home() + write_api() + write_benchmarks()
    print(f"wrote {len(written)} pages under {DOCS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
