"""Linear regression, trained with minibatch SGD (d2l "concise implementation of linear
regression"): synthetic data y = X w + b + noise, one ``nn.Linear`` layer, ``mse_loss``.

The same code trains on every backend with autograd; after ``md.manual_seed`` the per-epoch
losses agree across backends within float32 tolerance
(``python -m multidev.testing.train_compare``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

import multidev as md
from multidev import nn
from multidev.nn import functional as F

#: the final full-data loss must be below this (the noise alone gives about 5e-5)
THRESHOLD = 1e-3
EPOCHS = 3
BATCH_SIZE = 10
LR = 0.03
TRUE_W, TRUE_B = [2.0, -3.4], 4.2


def synthetic_data(w: list[float], b: float, num_examples: int) -> tuple[md.Tensor, md.Tensor]:
    """y = X w + b + N(0, 0.01^2) noise, X ~ N(0, 1)."""
    X = md.randn(num_examples, len(w))
    y = X @ md.asarray(w).reshape(-1, 1) + b
    y += md.randn(*y.shape) * 0.01
    return X, y


def data_iter(
    X: md.Tensor, y: md.Tensor, batch_size: int, rng: np.random.Generator
) -> Iterator[tuple[md.Tensor, md.Tensor]]:
    """Shuffled minibatches (the order comes from a seeded NumPy generator on the host)."""
    order = rng.permutation(len(X))
    X, y = X[order], y[order]
    for i in range(0, len(X), batch_size):
        yield X[i : i + batch_size], y[i : i + batch_size]


def train(seed: int = 0, log: Callable[[str], None] = print) -> list[float]:
    """Train from scratch; returns the full-data loss after each epoch."""
    md.manual_seed(seed)
    X, y = synthetic_data(TRUE_W, TRUE_B, 1000)
    net = nn.Sequential(nn.Linear(2, 1))
    nn.init.normal_(net[0].weight, std=0.01)
    nn.init.zeros_(net[0].bias)
    opt = md.optim.SGD(net.parameters(), lr=LR)
    rng = np.random.default_rng(seed)
    losses = []
    for epoch in range(EPOCHS):
        for X_batch, y_batch in data_iter(X, y, BATCH_SIZE, rng):
            with md.autograd.record():
                loss = F.mse_loss(net(X_batch), y_batch)
            loss.backward()
            opt.step()
            opt.zero_grad()
        with md.no_grad():
            losses.append(F.mse_loss(net(X), y).item())
        log(f"epoch {epoch + 1}, loss {losses[-1]:.6f}")
    w, b = net[0].weight.numpy().reshape(-1), net[0].bias.numpy()
    log(f"error in estimating w: {np.asarray(TRUE_W) - w}")
    log(f"error in estimating b: {TRUE_B - b}")
    return losses


def main(seed: int = 0) -> int:
    """Train and print; returns 0 if the final loss is below ``THRESHOLD``, else 1."""
    final = train(seed)[-1]
    ok = final < THRESHOLD
    print(
        f"final loss {final:.6f} {'<' if ok else '>='} threshold {THRESHOLD}: {'ok' if ok else 'FAILED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
