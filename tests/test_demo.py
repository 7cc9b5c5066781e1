"""``multidev demo`` labels every output with the code that printed it, keeps framework logs
out, and ``multidev --help`` reads as plain text."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import multidev as md
from multidev import cli

#: absl's preamble, glog/absl lines (``I0000 00:00:…``, ``W1130 …``), oneDNN notes
_LOG_NOISE = re.compile(r"absl::|^[IWE]\d{4} |oneDNN|cpu_feature_guard", re.MULTILINE)


def _run_demo() -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "GLOG_v")}
    env["MULTIDEV_BACKEND"] = md.get_backend()
    return subprocess.run(
        [sys.executable, "-m", "multidev", "demo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_demo_labels_each_output_and_keeps_framework_logs_out():
    proc = _run_demo()
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not _LOG_NOISE.search(proc.stderr), proc.stderr[:2000]
    lines = proc.stdout.splitlines()
    assert lines[0] == f"multidev demo on the {md.get_backend()} backend"
    sections = [i for i, line in enumerate(lines) if line.startswith("== ")]
    assert len(sections) == 6
    for i in sections:
        assert re.fullmatch(r">>> print\(.*\)  # \w+\.py, line \d+", lines[i + 1]), lines[i + 1]
    labels = [line for line in lines if line.startswith(">>> ")]
    assert len(labels) >= 40
    assert ">>> print(net[2].weight is net[4].weight)  # parameters.py, line" in proc.stdout


def test_help_is_plain_text(capsys):
    try:
        cli.main(["--help"])
    except SystemExit as e:
        assert e.code == 0
    out = capsys.readouterr().out
    assert "``" not in out and ":func:" not in out
    assert "usage: multidev" in out and "demo" in out and "conformance" in out
