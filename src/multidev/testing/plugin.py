"""pytest plugin that saves one backend's conformance results as JSON.

Load it with ``-p multidev.testing.plugin`` and pass ``--conformance-json=FILE``; ``multidev
conformance`` and the nox sessions do both.
"""

from __future__ import annotations

import json
from pathlib import Path

from multidev import registry
from multidev.testing.report import Recorder


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--conformance-json",
        default=None,
        help="write this backend's per-section results (the conformance matrix column) as JSON",
    )


def pytest_sessionstart(session) -> None:
    path = session.config.getoption("--conformance-json")
    # under pytest-xdist the controller receives every worker's reports: it alone records
    if path and not hasattr(session.config, "workerinput"):
        session.config._multidev_recorder = Recorder(registry.current().name)
        session.config.pluginmanager.register(session.config._multidev_recorder)


def pytest_sessionfinish(session) -> None:
    rec = getattr(session.config, "_multidev_recorder", None)
    if rec is not None:
        Path(session.config.getoption("--conformance-json")).write_text(json.dumps(rec.result()))
