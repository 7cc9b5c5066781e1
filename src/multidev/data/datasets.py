"""Ready datasets: ``Digits`` (scikit-learn's bundled 8x8 digits, no download), ``MNIST`` and
``FashionMNIST`` (the IDX files, gzipped or not, downloaded and checked by SHA-256 when asked).

Each is an ``md.data.TensorDataset`` of ``(image, label)``: images float32 in [0, 1] of shape
``(1, H, W)`` (channels first), labels int64.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path
from typing import ClassVar

import numpy as np

from .._extras import require
from .dataset import TensorDataset

__all__ = ["MNIST", "Digits", "FashionMNIST", "read_idx"]

#: IDX element types by their type byte
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """The array of an IDX file (``.gz`` or not). Raises ValueError naming the file when its
    header or size is not IDX's."""
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_TYPES:
        raise ValueError(
            f"Expected an IDX file (magic 0x0000TTNN). Received: {p} starts {data[:4]!r}"
        )
    ndim = data[3]
    header = 4 + 4 * ndim
    shape = tuple(int(d) for d in np.frombuffer(data[4:header], dtype=">u4")) if ndim else ()
    dtype = np.dtype(_IDX_TYPES[data[2]])
    expected = header + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) != expected:
        raise ValueError(
            f"Expected {expected} bytes in {p} for shape {shape}. Received: {len(data)} bytes "
            "(truncated or damaged: delete it and download again)"
        )
    return (
        np.frombuffer(data, dtype=dtype, offset=header)
        .reshape(shape)
        .astype(dtype.newbyteorder("="))
    )


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class MNIST(TensorDataset):
    """The MNIST handwritten digits: 60,000 training and 10,000 test images of 28x28.

    ``root``: folder holding the four IDX files (``train-images-idx3-ubyte[.gz]``,
    ``train-labels-idx1-ubyte[.gz]``, ``t10k-…``); ``train``: which split; ``download``:
    fetch missing ``.gz`` files from ``base_url`` (default the class's ``BASE_URL``) and check
    their SHA-256 before use. Missing files without ``download`` raise FileNotFoundError naming
    them and where to put them; a checksum mismatch raises ValueError and keeps nothing.
    """

    BASE_URL: ClassVar[str] = "https://ossci-datasets.s3.amazonaws.com/mnist/"
    SHA256: ClassVar[dict[str, str]] = {
        "train-images-idx3-ubyte.gz": "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
        "train-labels-idx1-ubyte.gz": "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
        "t10k-images-idx3-ubyte.gz": "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
        "t10k-labels-idx1-ubyte.gz": "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
    }
    classes: ClassVar[list[str]] = [str(i) for i in range(10)]

    def __init__(
        self,
        root: str | os.PathLike[str] = "data",
        train: bool = True,
        download: bool = False,
        base_url: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.root = Path(root) / type(self).__name__
        self.train = train
        prefix = "train" if train else "t10k"
        names = [f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"]
        paths = [self._find(n, download, base_url or self.BASE_URL, timeout) for n in names]
        images, labels = read_idx(paths[0]), read_idx(paths[1])
        if images.ndim != 3 or labels.shape != images.shape[:1]:
            raise ValueError(
                f"Expected images (N, H, W) and labels (N,). Received: {images.shape} and "
                f"{labels.shape} from {paths}"
            )
        super().__init__(
            (images[:, None] / np.float32(255)).astype(np.float32), labels.astype(np.int64)
        )

    def _find(self, name: str, download: bool, base_url: str, timeout: float) -> Path:
        for candidate in (self.root / name, self.root / f"{name}.gz"):
            if candidate.is_file():
                return candidate
        gz = self.root / f"{name}.gz"
        if not download:
            raise FileNotFoundError(
                f"Expected the {type(self).__name__} file {name}.gz (or {name}) in {self.root}. "
                f"Received: no such file. Pass download=True to fetch it from {base_url}, or "
                f"copy the four IDX files ({', '.join(self.SHA256)}) into {self.root}."
            )
        self.root.mkdir(parents=True, exist_ok=True)
        url = base_url.rstrip("/") + "/" + gz.name
        tmp = gz.with_name(gz.name + ".part")
        try:
            with urllib.request.urlopen(url, timeout=timeout) as r, open(tmp, "wb") as f:
                shutil.copyfileobj(r, f)
        except (urllib.error.URLError, OSError) as e:
            tmp.unlink(missing_ok=True)
            raise FileNotFoundError(
                f"Expected to download {url}. Received: {e}. Offline? Copy the four IDX files "
                f"({', '.join(self.SHA256)}) into {self.root}."
            ) from e
        digest, expected = _sha256(tmp), self.SHA256.get(gz.name)
        if expected is not None and digest != expected:
            tmp.unlink()
            raise ValueError(
                f"Expected SHA-256 {expected} for {url}. Received: {digest}; the file was not "
                "kept. Try again, or another base_url."
            )
        os.replace(tmp, gz)
        return gz


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: MNIST's layout (28x28, 60,000/10,000) with ten clothing
    classes (``classes``); same arguments as ``MNIST``."""

    BASE_URL: ClassVar[str] = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
    SHA256: ClassVar[dict[str, str]] = {
        "train-images-idx3-ubyte.gz": "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
        "train-labels-idx1-ubyte.gz": "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
        "t10k-images-idx3-ubyte.gz": "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
        "t10k-labels-idx1-ubyte.gz": "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
    }
    classes: ClassVar[list[str]] = [
        "t-shirt", "trouser", "pullover", "dress", "coat",
        "sandal", "shirt", "sneaker", "bag", "ankle boot",
    ]  # fmt: skip


class Digits(TensorDataset):
    """scikit-learn's bundled handwritten digits (1,797 images of 8x8, ten classes; no
    download): images ``(1, 8, 8)`` float32 in [0, 1] (the 0-16 grey levels / 16), labels
    int64 (``dtype="float64"`` for float64 images). The split is fixed: the samples in the order of
    ``numpy.random.default_rng(0).permutation(1797)`` (``SPLIT_SEED``), the first 1,500 of them
    ``train=True``, the other 297 ``train=False``. (The file's own order puts the last writers'
    digits in the test part only, a harder and less representative test.) Needs scikit-learn
    (``multidev[train]``)."""

    TRAIN_SIZE: ClassVar[int] = 1500
    SPLIT_SEED: ClassVar[int] = 0
    classes: ClassVar[list[str]] = [str(i) for i in range(10)]

    def __init__(self, train: bool = True, dtype: str = "float32") -> None:
        if dtype not in ("float32", "float64"):
            raise ValueError(f"Expected dtype 'float32' or 'float64'. Received: {dtype!r}")
        datasets = require("sklearn.datasets", "md.data.datasets.Digits")
        bunch = datasets.load_digits()
        images = (np.asarray(bunch.images, dtype=dtype) / 16)[:, None]
        labels = np.asarray(bunch.target, dtype=np.int64)
        order = np.random.default_rng(self.SPLIT_SEED).permutation(len(labels))
        part = order[: self.TRAIN_SIZE] if train else order[self.TRAIN_SIZE :]
        self.train = train
        super().__init__(images[part], labels[part])
