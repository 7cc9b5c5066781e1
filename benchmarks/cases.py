"""The benchmark cases: the multidev side and the native side of the same work.

Each builder takes a ``Context`` and returns ``Case``s. A case holds one callable per side
(``"md"`` first), the rows to report (each baseline side with its label and target), and how
to time it. Building either side may fail (a backend that lacks a feature); the builder then
raises ``SideFailed`` naming the side, and the runner reports the case as skipped.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from harness import Fn, Target, fmt_time
from natives import Native


class SideFailed(Exception):
    """Building or running one side of a case raised."""

    def __init__(self, side: str, error: BaseException) -> None:
        super().__init__(f"{side} side raised {type(error).__name__}: {error}")
        self.side = side
        self.error = error


@contextmanager
def side(name: str) -> Iterator[None]:
    try:
        yield
    except SideFailed:
        raise
    except Exception as e:
        raise SideFailed(name, e) from e


@dataclass
class Row:
    side: str  # key in Case.sides of the baseline
    label: str  # what the table calls the baseline
    target: Target | None = None


@dataclass
class Case:
    name: str
    sides: dict[str, Fn]
    rows: list[Row]
    repeats: int = 15
    warmup: int = 3
    number: int | None = None  # calls per repeat; None calibrates
    budget_s: float = 0.05
    note: str = ""
    #: timings by side -> (extra fields, note) added to each row's result
    describe: Callable[[dict[str, Any]], tuple[dict, str]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Context:
    md: Any  # the multidev module, backend selected
    nat: Native
    backend: str
    quick: bool
    tmp: str  # a scratch folder on the disk that holds the results (removed after the run)


#: the tiny-op targets of issue 13 (Python's own call and object costs set NumPy's floor)
OP_TINY_TARGETS = {"numpy": 1.6, "torch": 1.2, "paddle": 1.2}


def op_tiny_target(backend: str) -> Target:
    return Target("ratio", OP_TINY_TARGETS.get(backend, 1.1))


def _pair(ctx: Context, arr: np.ndarray):
    with side("multidev"):
        x = ctx.md.asarray(arr)
    with side("native"):
        n = ctx.nat.tensor(arr)
    return x, n


def op_cases(ctx: Context) -> list[Case]:
    """``a + b`` on 1 and 1,000 elements; ``a + b`` on 1e6 elements; a 512² matmul. Both
    sides are the same Python expression on their own tensors."""
    rng = np.random.default_rng(0)
    name = ctx.nat.name
    repeats = 7 if ctx.quick else 21
    out = []
    for n in (1, 1000, 10**6):
        (x, na), (y, nb) = (_pair(ctx, rng.standard_normal(n, dtype=np.float32)) for _ in "ab")
        tiny = n < 10**6
        out.append(
            Case(
                f"op_tiny ({n:,})" if tiny else "op_large (1e6 add)",
                {"md": lambda a=x, b=y: a + b, "native": lambda a=na, b=nb: a + b},
                [
                    Row(
                        "native",
                        name,
                        op_tiny_target(ctx.backend) if tiny else Target("ratio", 1.03),
                    )
                ],
                repeats=repeats,
                budget_s=0.05 if tiny else 0.1,
            )
        )
    m, nm = _pair(ctx, rng.standard_normal((512, 512), dtype=np.float32))
    out.append(
        Case(
            "op_large (512² matmul)",
            {"md": lambda a=m: a @ a, "native": lambda a=nm: a @ a},
            [Row("native", name, Target("ratio", 1.03))],
            repeats=repeats,
            budget_s=0.1,
        )
    )
    return out


def to_device_case(ctx: Context) -> list[Case]:
    """``x.to(x.device)``: returns x itself; the baseline is an empty call."""
    with side("multidev"):
        x = ctx.md.ones(8)
        dev = x.device
        if x.to(dev) is not x:
            raise AssertionError("Expected x.to(x.device) to return x itself")
    return [
        Case(
            "to_device_noop",
            {"md": lambda: x.to(dev), "native": lambda: None},
            [Row("native", "empty call", Target("absolute", 1e-6))],
            repeats=7 if ctx.quick else 21,
            describe=lambda t: (
                {"absolute_s": t["md"].median},
                f"absolute {fmt_time(t['md'].median)} per call",
            ),
        )
    ]


# ---------------------------------------------------------------- training


def _mlp_case(ctx: Context, name: str, width: int, batch: int, repeats: int, target: float):
    """Forward + MSE loss + backward + SGD step of Linear-ReLU-Linear-ReLU-Linear
    (width → width → width → 10), the same initial weights on both sides."""
    md, nat = ctx.md, ctx.nat
    lr = 1e-3
    rng = np.random.default_rng(1)
    X = rng.standard_normal((batch, width), dtype=np.float32)
    Y = rng.standard_normal((batch, 10), dtype=np.float32)
    with side("multidev"):
        nn = md.nn
        md.manual_seed(0)
        net = nn.Sequential(
            nn.Linear(width, width),
            nn.ReLU(),
            nn.Linear(width, width),
            nn.ReLU(),
            nn.Linear(width, 10),
        )
        opt = md.optim.SGD(net.parameters(), lr=lr)
        x, y = md.asarray(X), md.asarray(Y)
        mse = nn.functional.mse_loss
        record = md.autograd.record

        def md_step():
            with record():
                loss = mse(net(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        linears = [net[i] for i in (0, 2, 4)]
        weights = [
            (np.array(lin.weight.numpy(), copy=True), np.array(lin.bias.numpy(), copy=True))
            for lin in linears
        ]
        md_loss = float(md_step().item())
        ctx.nat.sync()
    with side("native"):
        nat_step = nat.mlp_step(weights, X, Y, lr)
        nat_loss = nat.loss_value(nat_step())
        nat.sync()
    rel = abs(md_loss - nat_loss) / max(abs(nat_loss), 1e-30)
    check = "same first loss" if rel < 1e-4 else f"first losses differ: {md_loss} vs {nat_loss}"
    return Case(
        name,
        {"md": md_step, "native": nat_step},
        [Row("native", f"{nat.name} (own layers + SGD)", Target("ratio", target))],
        repeats=repeats,
        warmup=1 if width > 1000 else 3,
        number=1 if width > 1000 else None,
        budget_s=0.2,
        note=check,
        extra={"first_loss": {"md": md_loss, "native": nat_loss}},
    )


def mlp_small_case(ctx: Context) -> list[Case]:
    return [_mlp_case(ctx, "mlp_small (256 wide, batch 32)", 256, 32, 7 if ctx.quick else 21, 1.10)]


def mlp_large_case(ctx: Context) -> list[Case]:
    return [
        _mlp_case(ctx, "mlp_large (4096 wide, batch 512)", 4096, 512, 3 if ctx.quick else 7, 1.03)
    ]


# ---------------------------------------------------------------- checkpoints

#: 16 weights of 1024 × 4096 and 16 biases of 4096, float32: 256.25 MiB
CKPT_LAYERS = 16
CKPT_SHAPE = (1024, 4096)


def _state(quick: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(2)
    shape = (CKPT_SHAPE[0] // 4, CKPT_SHAPE[1]) if quick else CKPT_SHAPE
    state = {}
    for i in range(CKPT_LAYERS):
        state[f"layers.{i}.weight"] = rng.standard_normal(shape, dtype=np.float32)
        state[f"layers.{i}.bias"] = rng.standard_normal(shape[1], dtype=np.float32)
    return state


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _throughput(nbytes: int, rows: list[Row]):
    def describe(t: dict[str, Any]) -> tuple[dict, str]:
        rates = {k: nbytes / v.median for k, v in t.items()}
        parts = [f"multidev {rates['md'] / 1e9:.2f} GB/s"]
        parts += [f"{row.label} {rates[row.side] / 1e9:.2f} GB/s" for row in rows]
        return {"bytes": nbytes, "bytes_per_s": rates}, ", ".join(parts)

    return describe


def ckpt_cases(ctx: Context) -> list[Case]:
    """``md.save`` / ``md.load`` of a 256 MB float32 state dict against the framework's own
    save/load and against ``safetensors.numpy`` (plain, and followed by an fsync of the file,
    the durability ``md.save`` gives). Loading reads every byte: a sum over each tensor, in the
    framework, on every side. The safetensors side converts between framework tensors and
    NumPy arrays through the adapter's own ``to_numpy``/``from_numpy``, the conversions
    ``md.save``/``md.load`` make (zero-copy where the framework allows), so that the ratio
    measures multidev's work, not a host copy only one side pays."""
    import safetensors.numpy as stn

    md, nat = ctx.md, ctx.nat
    arrays = _state(ctx.quick)
    nbytes = sum(a.nbytes for a in arrays.values())
    p_md, p_nat, p_st = (os.path.join(ctx.tmp, f) for f in ("md.safetensors", "native", "st"))
    with side("multidev"):
        state_md = {k: md.asarray(v) for k, v in arrays.items()}

        def md_save():
            md.save(state_md, p_md)

        md_save()

        def md_load():
            for t in md.load(p_md).values():
                nat.touch(t.native)

        md_load()
    with side("native"):
        natives = {k: t.native for k, t in state_md.items()}
        if nat.name == "tensorflow":
            natives = nat.variables(natives)
            like = nat.variables({k: np.zeros_like(v) for k, v in arrays.items()})
        else:
            like = natives

        def nat_save():
            nat.save(natives, p_nat)

        def nat_load():
            for t in nat.load(p_nat, like).values():
                nat.touch(t)

        nat_save()
        nat_load()
    with side("safetensors"):
        bk = md.registry.current()
        dev = md.default_device()

        def st_save():
            stn.save_file({k: bk.to_numpy(t.native) for k, t in state_md.items()}, p_st)

        def st_save_fsync():
            st_save()
            _fsync(p_st)

        def st_load():
            for a in stn.load_file(p_st).values():
                nat.touch(bk.from_numpy(a, dev))

        st_save()
        st_load()

    repeats = 3 if ctx.quick else 7
    mib = nbytes / 2**20
    throughput = Target("throughput", 0.9)
    save_rows = [
        Row("native", nat.save_label),
        Row("safetensors", "safetensors.numpy", throughput),
        Row("st_fsync", "safetensors.numpy + fsync"),
    ]
    save = Case(
        f"ckpt_save ({mib:.0f} MiB)",
        {"md": md_save, "native": nat_save, "safetensors": st_save, "st_fsync": st_save_fsync},
        save_rows,
        repeats=repeats,
        warmup=1,
        number=1,
        describe=_throughput(nbytes, save_rows),
    )
    load_rows = [Row("native", nat.load_label), Row("safetensors", "safetensors.numpy", throughput)]
    load = Case(
        f"ckpt_load ({mib:.0f} MiB)",
        {"md": md_load, "native": nat_load, "safetensors": st_load},
        load_rows,
        repeats=repeats,
        warmup=1,
        number=1,
        describe=_throughput(nbytes, load_rows),
    )
    return [save, load]


from cnn_cases import lenet_step_case, resnet18_step_case  # noqa: E402  (as below)
from sequence_cases import gru_step_case  # noqa: E402  (it builds on the classes above)

#: case group -> builder; the NumPy backend runs only the op cases (it has no autograd)
BUILDERS: dict[str, Callable[[Context], list[Case]]] = {
    "op": op_cases,
    "to_device_noop": to_device_case,
    "mlp_small": mlp_small_case,
    "mlp_large": mlp_large_case,
    "ckpt": ckpt_cases,
    "gru_step": gru_step_case,
    "lenet_step": lenet_step_case,
    "resnet18_step": resnet18_step_case,
}
NUMPY_GROUPS = ("op", "to_device_noop")
