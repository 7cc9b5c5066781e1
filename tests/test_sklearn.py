"""scikit-learn on multidev tensors: with ``array_api_dispatch=True``, estimators that support
the Array API fit on ``md.Tensor``s of the active backend, return ``md.Tensor``s on the same
device, and agree with the same fit on NumPy arrays within float32 tolerance."""

from __future__ import annotations

import os

# SciPy reads this once, on import; scikit-learn's Array API dispatch requires it
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import numpy as np
import pytest

import multidev as md

_MISSING = "not installed: the 'interop' extra"
sklearn = pytest.importorskip("sklearn", reason=f"scikit-learn {_MISSING}")
pytest.importorskip("array_api_compat", reason=f"array-api-compat {_MISSING}")

from sklearn.decomposition import PCA  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402

RTOL, ATOL = 1e-4, 1e-4


@pytest.fixture(name="data")
def data_fixture() -> tuple[np.ndarray, np.ndarray]:
    """Two Gaussian classes in 6 dimensions, shifted apart, float32 features."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((80, 6)).astype(np.float32)
    y = (x[:, 0] - x[:, 2] > 0).astype(np.int64)
    x[y == 1] += 1.5
    return x, y


@pytest.fixture(name="device")
def device_fixture() -> md.Device:
    """The backend's last device: a second logical CPU where the backend has one, so that
    "the same device" is not just the default."""
    return md.devices()[-1]


@pytest.fixture(name="dispatch")
def dispatch_fixture():
    with sklearn.config_context(array_api_dispatch=True):
        yield


def _check_tensor(out, like: md.Tensor) -> np.ndarray:
    assert isinstance(out, md.Tensor), type(out)
    assert out.device == like.device
    assert out._bk is like._bk
    return out.numpy()


@pytest.mark.usefixtures("dispatch")
def test_pca_fits_on_tensors(data, device):
    x, _ = data
    xt = md.asarray(x, device=device)
    pca = PCA(n_components=3, svd_solver="full").fit(xt)
    expected = PCA(n_components=3, svd_solver="full").fit(x)
    got = _check_tensor(pca.transform(xt), xt)
    want = expected.transform(x)
    # a principal axis is defined up to its sign
    signs = np.sign(np.sum(got * want, axis=0))
    np.testing.assert_allclose(got * signs, want, rtol=RTOL, atol=ATOL)
    comps = _check_tensor(pca.components_, xt)
    np.testing.assert_allclose(comps * signs[:, None], expected.components_, rtol=RTOL, atol=ATOL)
    ratio = _check_tensor(pca.explained_variance_ratio_, xt)
    np.testing.assert_allclose(ratio, expected.explained_variance_ratio_, rtol=RTOL, atol=ATOL)


@pytest.mark.usefixtures("dispatch")
def test_lda_fits_on_tensors(data, device):
    x, y = data
    xt, yt = md.asarray(x, device=device), md.asarray(y, device=device)
    lda = LinearDiscriminantAnalysis().fit(xt, yt)
    expected = LinearDiscriminantAnalysis().fit(x, y)
    pred = _check_tensor(lda.predict(xt), xt)
    np.testing.assert_array_equal(pred, expected.predict(x))
    proba = _check_tensor(lda.predict_proba(xt), xt)
    np.testing.assert_allclose(proba, expected.predict_proba(x), rtol=RTOL, atol=ATOL)
    scores = _check_tensor(lda.decision_function(xt), xt)
    np.testing.assert_allclose(scores, expected.decision_function(x), rtol=1e-3, atol=1e-3)


def test_without_dispatch_results_are_numpy(data):
    """Without array_api_dispatch, scikit-learn converts through NumPy: results are NumPy
    arrays, never a silent mix."""
    x, _ = data
    out = PCA(n_components=2, svd_solver="full").fit_transform(md.asarray(x))
    assert isinstance(out, np.ndarray)
