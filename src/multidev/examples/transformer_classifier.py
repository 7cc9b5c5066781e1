"""A Transformer encoder classifier (d2l "attention mechanisms and transformers"): token
``Embedding`` plus learned positions → two ``TransformerEncoderLayer``s → mean over positions →
``Linear``, trained with Adam on synthetic sequences whose label says whether token 1 occurs
more often than token 2.

The same code trains on every backend with autograd; after ``md.manual_seed`` the per-step
losses agree across backends within float32 tolerance (dropout masks come from multidev's host
generator).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import multidev as md
from multidev import nn
from multidev.nn import functional as F

#: the final loss must be below this (chance level is log(2) = 0.693)
THRESHOLD = 0.5
STEPS = 15
BATCH_SIZE, SEQ_LEN, VOCAB = 32, 12, 6
D_MODEL, HEADS, FF, LR = 16, 2, 32, 0.005


class Classifier(nn.Block):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, D_MODEL)
        self.position = nn.Parameter(md.randn(1, SEQ_LEN, D_MODEL) * 0.1)
        self.encoder = nn.Sequential(
            *(
                nn.TransformerEncoderLayer(
                    D_MODEL, HEADS, FF, dropout=0.1, batch_first=True, activation="gelu"
                )
                for _ in range(2)
            )
        )
        self.head = nn.Linear(D_MODEL, 2)

    def forward(self, X):
        h = self.encoder(self.embedding(X) + self.position)
        return self.head(md.mean(h, axis=1))


def batch(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    X = rng.integers(0, VOCAB, (BATCH_SIZE, SEQ_LEN))
    y = ((X == 1).sum(1) > (X == 2).sum(1)).astype(np.int64)
    return X, y


def train(seed: int = 0, log: Callable[[str], None] = print) -> list[float]:
    """Train ``STEPS`` Adam steps from scratch; returns the training loss of each step."""
    md.manual_seed(seed)
    net = Classifier()
    opt = md.optim.Adam(net.parameters(), lr=LR)
    rng = np.random.default_rng(seed)
    losses = []
    for step in range(STEPS):
        X, y = batch(rng)
        with md.autograd.record():
            loss = F.cross_entropy(net(md.asarray(X)), md.asarray(y))
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
        log(f"step {step + 1}, loss {losses[-1]:.6f}")
    return losses


def main(seed: int = 0) -> int:
    """Train and print; returns 0 if the final loss is below ``THRESHOLD``, else 1."""
    final = train(seed)[-1]
    ok = final < THRESHOLD
    print(f"final loss {final:.6f} {'<' if ok else '>='} {THRESHOLD}: {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
