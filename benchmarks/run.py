"""``python benchmarks/run.py --backend torch``: multidev ÷ native time for one backend.

Runs every case (the NumPy backend: the op cases only), each side interleaved with the others
in this one process, and writes ``benchmarks/results/<backend>.json`` and ``.md`` (the raw
samples go to ``results/raw/``). Then it regenerates the combined table
(``results/README.md``) and chart (``results/ratios.png``) from every backend's JSON found
there (see report.py). A case whose multidev side raises (a feature the backend lacks) is
reported as skipped with the reason; a failing native side is a benchmark bug and makes the
exit status 1.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import BUILDERS, NUMPY_GROUPS, Case, Context, SideFailed  # noqa: E402
from harness import Result, fmt_time, measure, to_markdown, verdict  # noqa: E402
from natives import for_backend  # noqa: E402


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory() -> str:
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        return f"{pages * size / 2**30:.0f} GiB"
    except (ValueError, OSError, AttributeError):
        return "? GiB"


def machine() -> str:
    return (
        f"{_cpu_model()}, {os.cpu_count()} cores, {_memory()}, {platform.system()}, "
        f"Python {platform.python_version()}"
    )


def run_case(case: Case, backend: str, sync) -> tuple[list[Result], dict]:
    """Time one case; one result per row, and the raw samples by side."""
    timings = measure(
        case.sides,
        sync,
        repeats=case.repeats,
        warmup=case.warmup,
        number=case.number,
        budget_s=case.budget_s,
    )
    extra, note = case.describe(timings) if case.describe else ({}, "")
    md = timings["md"]
    results = []
    for row in case.rows:
        base = timings[row.side]
        r = Result(
            case.name,
            backend,
            row.label,
            vs=row.side,
            md_s=md.median,
            base_s=base.median,
            md_spread=md.spread,
            base_spread=base.spread,
            note="; ".join(s for s in (case.note, note) if s),
            extra={**case.extra, **extra},
        )
        results.append(r.judge(row.target))
    samples = {side: list(t.samples) for side, t in timings.items()}
    return results, samples


def _report_line(r: Result) -> str:
    if r.skipped:
        return f"{r.backend:<11} {r.case:<36} skipped: {r.skipped}"
    if r.goal.get("kind") == "absolute":
        return f"{r.backend:<11} {r.case:<36} {fmt_time(r.md_s)} per call {verdict(r)}"
    if r.goal.get("kind") == "throughput":
        return (
            f"{r.backend:<11} {r.case:<36} throughput ×{r.throughput_ratio:5.2f} {verdict(r)} "
            f"({fmt_time(r.md_s)} vs {fmt_time(r.base_s)}, {r.baseline})"
        )
    return (
        f"{r.backend:<11} {r.case:<36} ratio {r.ratio:7.3f} {verdict(r) or ' '} "
        f"({fmt_time(r.md_s)} vs {fmt_time(r.base_s)}, {r.baseline})"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--backend", default=os.environ.get("MULTIDEV_BACKEND", "numpy"))
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--quick", action="store_true", help="fewer repeats, smaller files (smoke run)")
    p.add_argument(
        "--cases",
        default="",
        help=f"comma-separated case groups to run (default all): {', '.join(BUILDERS)}",
    )
    p.add_argument("--no-report", action="store_true", help="skip the combined table and chart")
    args = p.parse_args(argv)

    os.environ["MULTIDEV_BACKEND"] = args.backend
    import multidev as md

    md.set_backend(args.backend)
    nat = for_backend(args.backend)
    groups = NUMPY_GROUPS if args.backend == "numpy" else tuple(BUILDERS)
    if args.cases:
        wanted = [g.strip() for g in args.cases.split(",") if g.strip()]
        unknown = [g for g in wanted if g not in BUILDERS]
        if unknown:
            p.error(f"Expected case groups among {', '.join(BUILDERS)}. Received: {unknown}")
        groups = tuple(g for g in groups if g in wanted)

    raw = args.out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    results: list[Result] = []
    samples: dict[str, dict] = {}
    broken = False
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-", dir=raw) as tmp:
        ctx = Context(md, nat, args.backend, args.quick, tmp)
        for group in groups:
            try:
                cases = BUILDERS[group](ctx)
            except SideFailed as e:
                broken |= e.side != "multidev"
                results.append(Result(group, args.backend, "", skipped=str(e)))
                print(_report_line(results[-1]), flush=True)
                continue
            for case in cases:
                try:
                    rows, samples[case.name] = run_case(case, args.backend, nat.sync)
                except Exception as e:
                    broken = True
                    rows = [
                        Result(
                            case.name,
                            args.backend,
                            "",
                            skipped=f"raised while timing: {type(e).__name__}: {e}",
                        )
                    ]
                results.extend(rows)
                for r in rows:
                    print(_report_line(r), flush=True)
            del cases
            gc.collect()
    elapsed = time.perf_counter() - started

    adapter_version = md.registry.load(args.backend).version()
    doc = {
        "backend": args.backend,
        "framework_version": adapter_version,
        "machine": machine(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "quick": args.quick,
        "seconds": round(elapsed, 1),
        "results": [asdict(r) | {"ratio": None if r.skipped else r.ratio} for r in results],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.backend}.json").write_text(json.dumps(doc, indent=2) + "\n")
    title = f"multidev benchmarks: {args.backend} {adapter_version}"
    (args.out / f"{args.backend}.md").write_text(to_markdown(results, doc["machine"], title))
    (raw / f"{args.backend}-samples.json").write_text(json.dumps(samples) + "\n")
    if not args.no_report:
        import report

        try:
            report.write(args.out)
        except ImportError as e:
            print(
                f"Expected matplotlib for the chart. Received: {e}. The table is written; "
                "install matplotlib (nox -s bench-<backend> does) and run benchmarks/report.py.",
                file=sys.stderr,
            )
    print(f"{args.backend}: {len(results)} rows in {elapsed:.0f} s; wrote {args.out}", flush=True)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
