"""The conformance matrix: backend × section, each cell passed/failed/skipped with reasons.

A pytest plugin gathers outcomes per section; ``merge`` combines runs made in different
environments (each backend has its own virtual environment) into one matrix, written as
Markdown and JSON.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from . import SECTIONS

__all__ = ["Recorder", "merge", "to_markdown"]


def section_of(nodeid: str) -> str:
    name = Path(nodeid.split("::")[0]).stem
    return name[5:] if name.startswith("test_") else name


class Recorder:
    """pytest plugin: collects per-section outcomes of one backend's run."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.cells: dict[str, dict[str, Any]] = defaultdict(
            lambda: {"passed": 0, "failed": 0, "skipped": 0, "xfailed": 0, "reasons": []}
        )

    def pytest_runtest_logreport(self, report) -> None:
        if "multidev/testing/" not in report.nodeid.replace("\\", "/"):
            return  # unit tests run in the same session are not part of the matrix
        cell = self.cells[section_of(report.nodeid)]
        test = report.nodeid.split("::", 1)[-1]
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if hasattr(report, "wasxfail"):
                cell["xfailed"] += 1
                cell["reasons"].append(["xfail", test, report.wasxfail])
            elif report.passed:
                cell["passed"] += 1
            elif report.skipped:
                cell["skipped"] += 1
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
                cell["reasons"].append(["skip", test, reason.removeprefix("Skipped: ")])
            else:
                cell["failed"] += 1
                cell["reasons"].append(["FAIL", test, ""])
        elif report.when == "teardown" and report.failed:
            cell["failed"] += 1
            cell["reasons"].append(["FAIL", test, "teardown"])

    def result(self) -> dict[str, Any]:
        return {"backends": {self.backend: dict(self.cells)}}


def merge(results: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"backends": {}}
    for r in results:
        out["backends"].update(r["backends"])
    return out


def _cell(c: dict[str, Any] | None) -> str:
    if not c:
        return "—"
    parts = [f"{c['passed']} passed"]
    for key in ("failed", "skipped", "xfailed"):
        if c[key]:
            parts.append(f"{c[key]} {key}")
    return ", ".join(parts)


def to_markdown(result: dict[str, Any]) -> str:
    backends = list(result["backends"])
    sections = [s for s in SECTIONS if any(s in result["backends"][b] for b in backends)]
    extra = sorted({s for b in backends for s in result["backends"][b] if s not in SECTIONS})
    sections += extra
    lines = [
        "| section | " + " | ".join(backends) + " |",
        "|---|" + "---|" * len(backends),
    ]
    for s in sections:
        lines.append(
            f"| {s} | " + " | ".join(_cell(result["backends"][b].get(s)) for b in backends) + " |"
        )
    notes = []
    for b in backends:
        for s in sections:
            groups: dict[tuple[str, str], list[str]] = {}
            for kind, test, reason in (result["backends"][b].get(s) or {}).get("reasons", []):
                groups.setdefault((kind, reason), []).append(test)
            for (kind, reason), tests in groups.items():
                shown = ", ".join(tests[:3]) + (
                    f" and {len(tests) - 3} more" if len(tests) > 3 else ""
                )
                notes.append(
                    f"- {b} / {s}: {kind} ×{len(tests)}"
                    + (f" ({reason})" if reason else "")
                    + f": {shown}"
                )
    if notes:
        lines += ["", "Skips, expected failures and failures:", "", *notes]
    return "\n".join(lines) + "\n"


def write(result: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    md_path, json_path = out_dir / "conformance.md", out_dir / "conformance.json"
    md_path.write_text(to_markdown(result))
    json_path.write_text(json.dumps(result, indent=2, sort_keys=True))
    return md_path, json_path
