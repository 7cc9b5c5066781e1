"""Metrics for ``md.Trainer``: ``Mean``, ``Accuracy`` and ``TopKAccuracy``.

A metric accumulates a weighted sum and a count over an epoch, so its value is the average
over every sample, whatever the batch sizes (a short last batch weighs what it holds, not as
much as a full one). Protocol, for users' own metrics: ``name``, ``update(outputs,
targets)``, ``compute() -> float``, ``reset()``, ``state_dict()`` / ``load_state_dict()``
(plain Python values, so that a training checkpoint resumes mid-epoch).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .tensors import Tensor

__all__ = ["Accuracy", "Mean", "Metric", "TopKAccuracy"]


class Metric:
    """Base class: a weighted running mean, ``total / count``."""

    name = "metric"

    def __init__(self, name: str | None = None) -> None:
        if name is not None:
            self.name = name
        self.reset()

    def reset(self) -> None:
        """Forget what was accumulated (the Trainer calls it at the start of every epoch)."""
        self.total = 0.0
        self.count = 0.0

    def update(self, outputs: Any, targets: Any = None) -> None:
        raise NotImplementedError

    def compute(self) -> float:
        """The average so far; NaN before any update."""
        return self.total / self.count if self.count else float("nan")

    def state_dict(self) -> dict[str, Any]:
        return {"total": self.total, "count": self.count}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.total = float(state["total"])
        self.count = float(state["count"])


def _host(x: Any) -> np.ndarray:
    return np.asarray(x.numpy()) if isinstance(x, Tensor) else np.asarray(x)


class Mean(Metric):
    """Weighted mean of the values given: ``update(value, weight=1)``; ``value`` a number or a
    one-element Tensor (e.g. a batch's mean loss, weighted by the batch size)."""

    name = "mean"

    def update(self, value: Any, weight: float = 1.0) -> None:
        v = value.item() if isinstance(value, Tensor) else float(value)
        self.total += v * float(weight)
        self.count += float(weight)


class TopKAccuracy(Metric):
    """Fraction of samples whose target class is among the ``k`` largest outputs (logits or
    probabilities of shape ``(N, C)``; targets class indices ``(N,)``)."""

    name = "top_k_accuracy"

    def __init__(self, k: int = 5, name: str | None = None) -> None:
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"Expected k to be an int >= 1. Received: {k!r}")
        self.k = k
        super().__init__(name if name is not None else f"top{k}_accuracy")

    def _correct(self, outputs: np.ndarray, targets: np.ndarray) -> np.ndarray:
        k = min(self.k, outputs.shape[-1])
        # argpartition: the k largest per row in C's time, not a full sort
        top = np.argpartition(-outputs, k - 1, axis=-1)[..., :k]
        return (top == targets[..., None]).any(axis=-1)

    def update(self, outputs: Any, targets: Any = None) -> None:
        if targets is None:
            raise ValueError(f"Expected targets for {type(self).__name__}. Received: None")
        out, tgt = _host(outputs), _host(targets)
        if out.ndim < 1 or out.shape[:-1] != tgt.shape:
            raise ValueError(
                f"Expected outputs of shape (N, classes) and targets of shape (N,) for "
                f"{type(self).__name__}. Received: {out.shape} and {tgt.shape}"
            )
        self.total += float(self._correct(out, tgt.astype(np.int64)).sum())
        self.count += float(tgt.size)


class Accuracy(TopKAccuracy):
    """Fraction of samples whose largest output is the target class (top-1 accuracy);
    outputs ``(N, C)``, targets ``(N,)``."""

    name = "accuracy"

    def __init__(self, name: str | None = None) -> None:
        super().__init__(1, name if name is not None else "accuracy")

    def _correct(self, outputs: np.ndarray, targets: np.ndarray) -> np.ndarray:
        return outputs.argmax(axis=-1) == targets
