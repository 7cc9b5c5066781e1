"""``md.data.datasets``: IDX files (gzip or not), download-and-verify against a real HTTP server
on 127.0.0.1 serving generated IDX files, the offline error, and scikit-learn's Digits."""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import socket
import threading

import numpy as np
import pytest

import multidev as md
from multidev.data.datasets import MNIST, Digits, read_idx

RNG = np.random.default_rng(0)
IMAGES = {"train": RNG.integers(0, 256, (12, 28, 28), dtype=np.uint8),
          "t10k": RNG.integers(0, 256, (5, 28, 28), dtype=np.uint8)}  # fmt: skip
LABELS = {"train": RNG.integers(0, 10, 12, dtype=np.uint8),
          "t10k": RNG.integers(0, 10, 5, dtype=np.uint8)}  # fmt: skip


def _idx(a: np.ndarray) -> bytes:
    head = bytes([0, 0, 0x08, a.ndim]) + np.asarray(a.shape, ">u4").tobytes()
    return head + a.tobytes()


def _write(folder, gz: bool = True) -> dict[str, str]:
    """The four generated files in ``folder``; returns their SHA-256 by file name."""
    folder.mkdir(parents=True, exist_ok=True)
    sums = {}
    for split in ("train", "t10k"):
        for kind, a in (("images-idx3", IMAGES[split]), ("labels-idx1", LABELS[split])):
            name, raw = f"{split}-{kind}-ubyte", _idx(a)
            data = gzip.compress(raw, mtime=0) if gz else raw
            path = folder / (name + (".gz" if gz else ""))
            path.write_bytes(data)
            sums[path.name] = hashlib.sha256(data).hexdigest()
    return sums


def _check(ds, split):
    assert len(ds) == len(LABELS[split])
    x, y = ds[1]
    np.testing.assert_array_equal(np.asarray(x), IMAGES[split][1][None] / np.float32(255))
    assert int(y) == LABELS[split][1]


@pytest.mark.parametrize("gz", [True, False])
def test_reads_local_idx_files(tmp_path, gz):
    _write(tmp_path / "MNIST", gz)
    _check(MNIST(tmp_path, train=True), "train")
    _check(MNIST(tmp_path, train=False), "t10k")
    x, y = next(iter(md.data.DataLoader(MNIST(tmp_path), batch_size=4)))
    assert x.shape == (4, 1, 28, 28) and x.dtype == md.float32 and y.dtype == md.int64


def test_damaged_idx_is_a_clear_error(tmp_path):
    path = tmp_path / "x-idx1-ubyte"
    path.write_bytes(_idx(np.arange(10, dtype=np.uint8))[:-3])
    with pytest.raises(ValueError, match="truncated"):
        read_idx(path)
    path.write_bytes(b"PK\x03\x04 not idx")
    with pytest.raises(ValueError, match="IDX"):
        read_idx(path)


def test_missing_files_name_them_and_the_folder(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        MNIST(tmp_path)
    assert "train-images-idx3-ubyte.gz" in str(err.value)
    assert str(tmp_path / "MNIST") in str(err.value) and "download=True" in str(err.value)


@pytest.fixture
def server(tmp_path):
    """An HTTP server on 127.0.0.1 serving the generated files; yields (base URL, sums)."""
    served = tmp_path / "served"
    sums = _write(served)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]  # quiet test output
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/", sums
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_download_verifies_sha256(tmp_path, server):
    url, sums = server

    class Served(MNIST):
        SHA256 = sums

    root = tmp_path / "root"
    _check(Served(root, train=False, download=True, base_url=url), "t10k")
    assert sorted(p.name for p in (root / "Served").iterdir()) == [
        "t10k-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
    ]

    class Tampered(MNIST):
        SHA256 = {**sums, "train-images-idx3-ubyte.gz": "0" * 64}  # noqa: RUF012

    with pytest.raises(ValueError, match="SHA-256"):
        Tampered(root, download=True, base_url=url)
    assert not any((root / "Tampered").iterdir())  # nothing kept, no partial file


def test_offline_download_names_the_files(tmp_path):
    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(FileNotFoundError, match=r"Offline\?.*train-labels-idx1-ubyte.gz"):
        MNIST(tmp_path, download=True, base_url=f"http://127.0.0.1:{port}/", timeout=5)


def test_digits_split_is_fixed():
    try:
        train, test = Digits(train=True), Digits(train=False)
    except ImportError as e:
        assert "multidev[train]" in str(e)
        pytest.skip(f"scikit-learn not installed here: {e}")
    assert (len(train), len(test)) == (1500, 297)
    x, y = test[0]
    assert (
        np.asarray(x).shape == (1, 8, 8)
        and 0.0 <= np.asarray(x).min() <= np.asarray(x).max() <= 1.0
    )
    from sklearn.datasets import load_digits

    order = np.random.default_rng(0).permutation(1797)
    assert int(y) == load_digits().target[order[1500]]
    both = np.concatenate([np.asarray(train._arrays[1]), np.asarray(test._arrays[1])])
    np.testing.assert_array_equal(np.sort(both), np.sort(load_digits().target))
