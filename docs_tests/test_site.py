"""The built documentation site, served on 127.0.0.1 and opened in headless Chromium.

Run by ``nox -s docs`` after ``mkdocs build`` (``MULTIDEV_SITE`` names the built site,
``MULTIDEV_SCREENSHOTS`` where the screenshots go). Chromium is Debian's ``chromium`` package
(``.ci/run`` installs it); each page is driven over the DevTools protocol (docs_tests/cdp.py), which reports its console.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import shutil
import sys
import threading
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from cdp import Browser

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("MULTIDEV_SITE", ROOT / ".nox" / "site"))
SHOTS = Path(os.environ.get("MULTIDEV_SCREENSHOTS", ROOT / ".nox" / "docs-screenshots"))


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        if path := shutil.which(name):
            return path
    raise AssertionError(
        "Expected Debian's chromium on PATH for the site test. Received none. "
        "Install it with `apt-get install -y chromium` (.ci/run does)."
    )


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep the test output to the test
        pass


@pytest.fixture(scope="module")
def server():
    assert (SITE / "index.html").exists(), f"Expected a built site at {SITE}: run `nox -s docs`"
    handler = functools.partial(_Quiet, directory=str(SITE))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture
def browser(tmp_path):
    b = Browser(_chromium(), tmp_path / "profile")
    yield b
    b.close()


def _shot(browser: Browser, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / name
    browser.screenshot(path)
    assert path.stat().st_size > 1000, f"Expected a screenshot at {path}"
    return path


def test_home_page_renders(server, browser) -> None:
    browser.open(server + "/")
    assert browser.evaluate("document.querySelector('h1').textContent").startswith("multidev")
    assert browser.evaluate("document.body.innerText.includes('Train on real data')")
    _shot(browser, "home.png")
    problems = browser.console_problems()
    assert not problems, f"Expected no console errors on the home page. Received: {problems}"


def test_adam_reference_renders(server, browser) -> None:
    browser.open(server + "/api/multidev.optim/#multidev.optim.Adam")
    text = browser.evaluate(
        "(document.getElementById('multidev.optim.Adam') || {}).parentElement?.innerText || ''"
    )
    assert "Adam" in text and "lr" in text, f"Expected md.optim.Adam's entry. Received: {text!r}"
    _shot(browser, "adam.png")
    problems = browser.console_problems()
    assert not problems, f"Expected no console errors on md.optim.Adam's page. Received: {problems}"


def test_search_finds_checkpoint(server, browser) -> None:
    browser.open(server + "/?q=checkpoint")
    count = browser.wait_for("document.querySelectorAll('.md-search-result__item').length")
    assert count, "Expected search results for 'checkpoint'"
    titles = browser.evaluate(
        "[...document.querySelectorAll('.md-search-result__item')].map(e => e.innerText).join(' ')"
    )
    assert "checkpoint" in titles.lower(), f"Expected results about checkpoints. Received: {titles}"
    _shot(browser, "search-checkpoint.png")
    problems = browser.console_problems()
    assert not problems, f"Expected no console errors during the search. Received: {problems}"


def _gen_docs():
    spec = importlib.util.spec_from_file_location("_gen_docs", ROOT / "tools" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_name_is_in_the_built_reference() -> None:
    """mkdocstrings' inventory of the built site holds every public name (the reference rendered
    it, not only listed it)."""
    data = (SITE / "objects.inv").read_bytes()
    body = data.split(b"zlib.\n", 1)[1]
    rendered = {line.split()[0] for line in zlib.decompress(body).decode().splitlines()}
    gen = _gen_docs()
    missing = [
        f"{m}.{n}"
        for m in gen.PUBLIC_MODULES
        for n in gen.public_names(m)
        if f"{m}.{n}" not in rendered and f"{m}.{n}" not in gen.PUBLIC_MODULES
    ]
    assert not missing, f"Expected these public names in the built API reference: {missing}"
