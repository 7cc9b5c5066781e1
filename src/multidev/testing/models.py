"""Models written once against the ``torch.nn`` API, and what PyTorch's own modules give for
them: parameter names and shapes, state-dict keys and the printed model.

``build(nn, name)`` runs unchanged with ``multidev.nn`` and with ``torch.nn``. ``TORCH_EXPECTED``
was produced by running torch 2.13; the unit tests regenerate it whenever torch is installed.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TORCH_EXPECTED", "build", "describe", "mse_train_step"]


def build(torch_nn: Any, name: str) -> Any:
    """The model called ``name``, built with ``torch_nn`` (``multidev.nn`` or ``torch.nn``)."""
    if name == "rgnet":

        def block1():
            return torch_nn.Sequential(
                torch_nn.Linear(4, 8), torch_nn.ReLU(), torch_nn.Linear(8, 4), torch_nn.ReLU()
            )

        def block2():
            net = torch_nn.Sequential()
            for i in range(4):
                net.add_module(f"block {i}", block1())
            return net

        return torch_nn.Sequential(block2(), torch_nn.Linear(4, 1))
    if name == "tied":
        shared = torch_nn.Linear(8, 8)
        return torch_nn.Sequential(
            torch_nn.Linear(4, 8),
            torch_nn.ReLU(),
            shared,
            torch_nn.ReLU(),
            shared,
            torch_nn.ReLU(),
            torch_nn.Linear(8, 1),
        )
    if name == "mlp":

        class MLP(torch_nn.Module):
            def __init__(self):
                super().__init__()
                self.hidden = torch_nn.Linear(20, 256)
                self.out = torch_nn.Linear(256, 10)

        return MLP()
    if name == "layers":
        return torch_nn.Sequential(
            torch_nn.Flatten(),
            torch_nn.Linear(4, 8, bias=False),
            torch_nn.Sigmoid(),
            torch_nn.Tanh(),
            torch_nn.Dropout(0.25),
            torch_nn.LazyLinear(3),
        )
    raise KeyError(name)


def describe(net: Any) -> dict[str, Any]:
    """Names and shapes of parameters, state-dict keys and the printed model."""
    return {
        "parameters": [
            (n, tuple(int(s) for s in p.shape))
            for n, p in net.named_parameters()
            if getattr(p, "initialized", True) and type(p).__name__ != "UninitializedParameter"
        ],
        "state_dict": list(net.state_dict().keys()),
        "repr": repr(net),
    }


_RG = [
    (f"0.block {i}.{j}.{kind}", shape)
    for i in range(4)
    for j, shapes in ((0, ((8, 4), (8,))), (2, ((4, 8), (4,))))
    for kind, shape in zip(("weight", "bias"), shapes, strict=True)
]
_RG_BLOCK = (
    "Sequential(\n"
    "      (0): Linear(in_features=4, out_features=8, bias=True)\n"
    "      (1): ReLU()\n"
    "      (2): Linear(in_features=8, out_features=4, bias=True)\n"
    "      (3): ReLU()\n"
    "    )"
)

#: What torch 2.13's own modules give for ``build(torch.nn, name)``.
TORCH_EXPECTED: dict[str, dict[str, Any]] = {
    "rgnet": {
        "parameters": [*_RG, ("1.weight", (1, 4)), ("1.bias", (1,))],
        "state_dict": [n for n, _ in _RG] + ["1.weight", "1.bias"],
        "repr": "Sequential(\n  (0): Sequential(\n"
        + "".join(f"    (block {i}): {_RG_BLOCK}\n" for i in range(4))
        + "  )\n  (1): Linear(in_features=4, out_features=1, bias=True)\n)",
    },
    "tied": {
        "parameters": [
            ("0.weight", (8, 4)),
            ("0.bias", (8,)),
            ("2.weight", (8, 8)),
            ("2.bias", (8,)),
            ("6.weight", (1, 8)),
            ("6.bias", (1,)),
        ],
        "state_dict": [
            "0.weight",
            "0.bias",
            "2.weight",
            "2.bias",
            "4.weight",
            "4.bias",
            "6.weight",
            "6.bias",
        ],
        "repr": "Sequential(\n"
        "  (0): Linear(in_features=4, out_features=8, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Linear(in_features=8, out_features=8, bias=True)\n"
        "  (3): ReLU()\n"
        "  (4): Linear(in_features=8, out_features=8, bias=True)\n"
        "  (5): ReLU()\n"
        "  (6): Linear(in_features=8, out_features=1, bias=True)\n"
        ")",
    },
    "mlp": {
        "parameters": [
            ("hidden.weight", (256, 20)),
            ("hidden.bias", (256,)),
            ("out.weight", (10, 256)),
            ("out.bias", (10,)),
        ],
        "state_dict": ["hidden.weight", "hidden.bias", "out.weight", "out.bias"],
        "repr": "MLP(\n"
        "  (hidden): Linear(in_features=20, out_features=256, bias=True)\n"
        "  (out): Linear(in_features=256, out_features=10, bias=True)\n"
        ")",
    },
    "layers": {
        "parameters": [("1.weight", (8, 4))],
        "state_dict": ["1.weight", "5.weight", "5.bias"],
        "repr": "Sequential(\n"
        "  (0): Flatten(start_dim=1, end_dim=-1)\n"
        "  (1): Linear(in_features=4, out_features=8, bias=False)\n"
        "  (2): Sigmoid()\n"
        "  (3): Tanh()\n"
        "  (4): Dropout(p=0.25, inplace=False)\n"
        "  (5): LazyLinear(in_features=0, out_features=3, bias=True)\n"
        ")",
    },
}


def train_step(net: Any, opt: Any, loss_fn: Any, *, detach: bool = False) -> Any:
    """A multidev training step ``step(X, y)`` of ``net``: record, forward, ``loss_fn(out, y)``,
    ``backward()``, ``opt.step()``, ``opt.zero_grad()``; returns the loss (detached if asked)."""
    import multidev as md

    def step(X: Any, y: Any) -> Any:
        with md.autograd.record():
            loss = loss_fn(net(X), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach() if detach else loss

    return step


def mse_train_step(net: Any, opt: Any, *, detach: bool = False) -> Any:
    """``train_step`` on mean-squared error."""
    return train_step(net, opt, lambda out, y: ((out - y) ** 2).mean(), detach=detach)
