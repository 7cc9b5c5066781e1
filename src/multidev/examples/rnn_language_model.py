"""A character-level language model (d2l "recurrent neural networks", "concise implementation"):
``Embedding`` → ``RNN``/``GRU``/``LSTM`` (two layers) → ``Linear``, trained with Adam on a short
bundled public-domain text (the opening of H. G. Wells's *The Time Machine*, 1895).

The same code trains on every backend with autograd; after ``md.manual_seed`` the per-step
losses agree across backends within float32 tolerance (dropout masks come from multidev's host
generator). ``python -m multidev.examples.rnn_language_model gru`` trains one cell type.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

import multidev as md
from multidev import nn
from multidev.nn import functional as F

TEXT = (
    "The Time Traveller (for so it will be convenient to speak of him) was expounding a "
    "recondite matter to us. His grey eyes shone and twinkled, and his usually pale face was "
    "flushed and animated. The fire burned brightly, and the soft radiance of the "
    "incandescent lights in the lilies of silver caught the bubbles that flashed and passed "
    "in our glasses. Our chairs, being his patents, embraced and caressed us rather than "
    "submitted to be sat upon, and there was that luxurious after-dinner atmosphere when "
    "thought roams gracefully free of the trammels of precision. And he put it to us in this "
    "way, marking the points with a lean forefinger, as we sat and lazily admired his "
    "earnestness over this new paradox (as we thought it) and his fecundity."
).lower()
CELLS = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}
#: the final loss must be below this (a uniform guess over the vocabulary is log(len(VOCAB)))
THRESHOLD = 3.0
STEPS = 12
BATCH_SIZE, NUM_STEPS = 8, 20
EMBED, HIDDEN, LR = 16, 32, 0.01
VOCAB = sorted(set(TEXT))


class LanguageModel(nn.Block):
    def __init__(self, cell: str, vocab_size: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, EMBED)
        self.rnn = CELLS[cell](EMBED, HIDDEN, num_layers=2, batch_first=True, dropout=0.1)
        self.output = nn.Linear(HIDDEN, vocab_size)

    def forward(self, X):
        Y, _ = self.rnn(self.embedding(X))
        return self.output(Y)


def batches(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random subsequences of the text (inputs) and the same shifted by one (targets)."""
    ids = np.array([VOCAB.index(c) for c in TEXT])
    starts = rng.integers(0, len(ids) - NUM_STEPS - 1, BATCH_SIZE)
    X = np.stack([ids[s : s + NUM_STEPS] for s in starts])
    Y = np.stack([ids[s + 1 : s + NUM_STEPS + 1] for s in starts])
    return X, Y


def train(seed: int = 0, log: Callable[[str], None] = print, cell: str = "gru") -> list[float]:
    """Train ``STEPS`` Adam steps from scratch; returns the training loss of each step."""
    md.manual_seed(seed)
    net = LanguageModel(cell, len(VOCAB))
    opt = md.optim.Adam(net.parameters(), lr=LR)
    rng = np.random.default_rng(seed)
    losses = []
    for step in range(STEPS):
        X, Y = batches(rng)
        with md.autograd.record():
            logits = net(md.asarray(X))
            loss = F.cross_entropy(md.reshape(logits, (-1, len(VOCAB))), md.asarray(Y.reshape(-1)))
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
        log(f"{cell} step {step + 1}, loss {losses[-1]:.6f}")
    return losses


def main(cell: str = "gru", seed: int = 0) -> int:
    """Train and print; returns 0 if the final loss is below ``THRESHOLD``, else 1."""
    final = train(seed, cell=cell)[-1]
    ok = final < THRESHOLD
    print(f"final loss {final:.6f} {'<' if ok else '>='} {THRESHOLD}: {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]) if len(sys.argv) > 1 else main())
