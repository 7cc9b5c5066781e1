"""File I/O: saving and loading tensors, lists, dicts and a model's parameters."""

from __future__ import annotations

import tempfile
from pathlib import Path

import multidev as md
from multidev import nn
from multidev.nn import functional as F


class MLP(nn.Block):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(20, 256)
        self.output = nn.Linear(256, 10)

    def forward(self, x):
        return self.output(F.relu(self.hidden(x)))


def main(seed: int = 0) -> None:
    md.manual_seed(seed)
    with tempfile.TemporaryDirectory() as folder:
        here = Path(folder)

        x = md.arange(4)
        md.save(x, here / "x-file")
        x2 = md.load(here / "x-file")
        print(x2)

        y = md.zeros(4)
        md.save([x, y], here / "x-files")
        x2, y2 = md.load(here / "x-files")
        print((x2, y2))

        mydict = {"x": x, "y": y}
        md.save(mydict, here / "mydict")
        mydict2 = md.load(here / "mydict")
        print(mydict2)

        net = MLP()
        X = md.randn(2, 20)
        Y = net(X)
        md.save(net.state_dict(), here / "mlp.params")
        clone = MLP()
        clone.load_state_dict(md.load(here / "mlp.params"))
        print(clone.eval())
        Y_clone = clone(X)
        print(Y_clone == Y)


if __name__ == "__main__":
    main()
