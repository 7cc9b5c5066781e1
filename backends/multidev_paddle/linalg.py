"""PaddlePaddle lowerings of ``md.linalg`` and ``md.fft``: ``paddle.linalg`` and ``paddle.fft``,
except where Paddle spells a function differently."""

from __future__ import annotations

import paddle

from multidev.contract import Extension

__all__ = ["FFT", "LINALG"]


def _slogdet(x):
    out = paddle.linalg.slogdet(x)  # sign and log|det| stacked on a new first axis
    return out[0], out[1]


LINALG = Extension(
    paddle.linalg,
    slogdet=_slogdet,
    pinv=lambda x, rtol: paddle.linalg.pinv(x, rcond=rtol),
    cross=lambda a, b: paddle.cross(a, b, axis=-1),
    diagonal=lambda x, offset: paddle.diagonal(x, offset, -2, -1),
    vector_norm=lambda x, ord: paddle.linalg.vector_norm(x, p=ord, axis=-1),
)
FFT = Extension(paddle.fft)
