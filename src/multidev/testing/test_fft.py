"""Section "fft": ``md.fft`` (the Array API 2023.12 extension) against NumPy's ``numpy.fft``.

The frequency and shift helpers run on every backend. The transforms give complex results:
they are checked where the backend has complex dtypes, and a transform the framework lacks
must raise ``UnsupportedOperationError`` naming it.
"""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md

RTOL, ATOL = 1e-4, 1e-4


@pytest.mark.parametrize("n", [1, 4, 5])
@pytest.mark.parametrize("d", [1.0, 0.25])
def test_frequencies(n, d):
    got = md.fft.fftfreq(n, d=d)
    assert got.dtype is md.float32 and got.device is md.default_device()
    np.testing.assert_allclose(got.numpy(), np.fft.fftfreq(n, d), rtol=1e-6)
    np.testing.assert_allclose(md.fft.rfftfreq(n, d=d).numpy(), np.fft.rfftfreq(n, d), rtol=1e-6)


@pytest.mark.parametrize("axes", [None, 0, (1,), (0, 1)])
def test_shifts(axes):
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    got = md.fft.fftshift(md.asarray(x), axes=axes)
    np.testing.assert_array_equal(got.numpy(), np.fft.fftshift(x, axes=axes))
    back = md.fft.ifftshift(got, axes=axes)
    np.testing.assert_array_equal(back.numpy(), x)
    np.testing.assert_array_equal(
        md.fft.ifftshift(md.asarray(x), axes=axes).numpy(), np.fft.ifftshift(x, axes=axes)
    )


def _transform_cases(rng):
    """name -> (md call, NumPy call, input): real input for the forward transforms, NumPy's
    own forward result for the inverse ones."""
    x = rng.standard_normal((4, 6)).astype(np.float32)
    spectrum = np.fft.fft(x).astype(np.complex64)
    half = np.fft.rfft(x).astype(np.complex64)
    return {
        "fft": (lambda t: md.fft.fft(t), np.fft.fft, x),
        "fft_n_axis_ortho": (
            lambda t: md.fft.fft(t, n=8, axis=0, norm="ortho"),
            lambda a: np.fft.fft(a, 8, 0, "ortho"),
            x,
        ),
        "ifft": (lambda t: md.fft.ifft(t), np.fft.ifft, spectrum),
        "ifft_forward": (
            lambda t: md.fft.ifft(t, norm="forward"),
            lambda a: np.fft.ifft(a, norm="forward"),
            spectrum,
        ),
        "rfft": (lambda t: md.fft.rfft(t), np.fft.rfft, x),
        "rfft_n": (lambda t: md.fft.rfft(t, n=4), lambda a: np.fft.rfft(a, 4), x),
        "irfft": (lambda t: md.fft.irfft(t), np.fft.irfft, half),
        "irfft_n": (lambda t: md.fft.irfft(t, n=7), lambda a: np.fft.irfft(a, 7), half),
        "hfft": (lambda t: md.fft.hfft(t), np.fft.hfft, half),
        "ihfft": (lambda t: md.fft.ihfft(t), np.fft.ihfft, x),
        "fftn": (lambda t: md.fft.fftn(t), np.fft.fftn, x),
        "fftn_s_axes": (
            lambda t: md.fft.fftn(t, s=(3, 8), axes=(1, 0), norm="forward"),
            lambda a: np.fft.fftn(a, (3, 8), (1, 0), "forward"),
            x,
        ),
        "rfftn_axes": (
            lambda t: md.fft.rfftn(t, axes=(1, 0), norm="ortho"),
            lambda a: np.fft.rfftn(a, axes=(1, 0), norm="ortho"),
            x,
        ),
        "ifftn": (
            lambda t: md.fft.ifftn(t, axes=(0,)),
            lambda a: np.fft.ifftn(a, axes=(0,)),
            spectrum,
        ),
        "rfftn": (lambda t: md.fft.rfftn(t), np.fft.rfftn, x),
        "irfftn": (
            lambda t: md.fft.irfftn(t, s=(4, 6)),
            lambda a: np.fft.irfftn(a, (4, 6)),
            np.fft.rfftn(x).astype(np.complex64),
        ),
    }


@pytest.mark.parametrize("name", list(_transform_cases(np.random.default_rng(0))))
def test_transforms_match_numpy(name, bk, rng):
    fn, np_fn, x = _transform_cases(rng)[name]
    native = name.split("_")[0]
    if bk.fft.lowering(native) is None:
        with pytest.raises(md.UnsupportedOperationError, match=rf"fft\.{native}"):
            fn(md.ones((4, 6)))
        return
    if not hasattr(md, "complex64"):
        pytest.skip("multidev has no complex dtypes yet: the transforms' results are complex")
    got = fn(md.asarray(x))
    want = np_fn(x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=RTOL, atol=ATOL)


def test_errors_are_clear():
    with pytest.raises(ValueError, match="norm"):
        md.fft.fft(md.ones(4), norm="unitary")
    with pytest.raises(ValueError, match="n >= 1"):
        md.fft.fftfreq(0)
    with pytest.raises(ValueError, match="one size per axis"):
        md.fft.fftn(md.ones((2, 2)), s=(2, 2), axes=(0,))
