"""A multilayer perceptron classifier, trained with Adam (d2l "concise implementation of
multilayer perceptrons"): synthetic data from three Gaussian clusters, a hidden ReLU layer
with ``Dropout``, ``cross_entropy`` on integer labels.

The same code trains on every backend with autograd; after ``md.manual_seed`` the per-epoch
losses agree across backends within float32 tolerance (dropout masks come from multidev's
host generator too).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import multidev as md
from multidev import nn
from multidev.nn import functional as F

#: the final full-data loss must be below this (chance level is log(3) = 1.0986)
THRESHOLD = 0.1
EPOCHS = 10
BATCH_SIZE = 50
LR = 0.01
NUM_INPUTS, NUM_HIDDEN, NUM_CLASSES = 20, 64, 3


class MLP(nn.Block):
    def __init__(self, num_inputs: int, num_hidden: int, num_outputs: int, dropout: float):
        super().__init__()
        self.hidden = nn.Linear(num_inputs, num_hidden)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(num_hidden, num_outputs)

    def forward(self, X):
        return self.out(self.dropout(F.relu(self.hidden(X))))


def synthetic_data(num_examples: int) -> tuple[md.Tensor, md.Tensor]:
    """Points around three random centres (one per class) with unit Gaussian noise."""
    centres = md.randn(NUM_CLASSES, NUM_INPUTS) * 0.8
    labels = md.arange(num_examples) % NUM_CLASSES
    X = centres[labels] + md.randn(num_examples, NUM_INPUTS)
    return X, labels


def accuracy(logits: md.Tensor, labels: md.Tensor) -> float:
    return md.mean((md.argmax(logits, axis=1) == labels).astype(md.float32)).item()


def train(seed: int = 0, log: Callable[[str], None] = print) -> list[float]:
    """Train from scratch; returns the full-data loss (dropout off) after each epoch."""
    md.manual_seed(seed)
    X, labels = synthetic_data(600)
    net = MLP(NUM_INPUTS, NUM_HIDDEN, NUM_CLASSES, dropout=0.2)
    opt = md.optim.Adam(net.parameters(), lr=LR)
    rng = np.random.default_rng(seed)
    losses = []
    for epoch in range(EPOCHS):
        net.train()
        order = rng.permutation(len(X))
        for i in range(0, len(X), BATCH_SIZE):
            idx = order[i : i + BATCH_SIZE]
            with md.autograd.record():
                loss = F.cross_entropy(net(X[idx]), labels[idx])
            loss.backward()
            opt.step()
            opt.zero_grad()
        net.eval()
        with md.no_grad():
            logits = net(X)
            losses.append(F.cross_entropy(logits, labels).item())
        log(f"epoch {epoch + 1}, loss {losses[-1]:.6f}, train acc {accuracy(logits, labels):.3f}")
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
