"""md.parallel: one process, several devices. Runs on the active backend (MULTIDEV_BACKEND);
the multi-device cases need two devices of one kind (TensorFlow's logical CPUs, MXNet's
cpu(i), or two GPUs)."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import nn, parallel

BK = md.get_backend()
AUTOGRAD = "autograd" in md.registry.current().capabilities
CPUS = [d for d in md.devices() if d.type == "cpu"]
TWO_CPUS = CPUS[:2] if len(CPUS) >= 2 else None
GPUS = md.try_all_gpus() if md.num_gpus() else []


def _two_devices() -> list[md.Device]:
    if TWO_CPUS is None:
        pytest.skip(f"{BK} has one CPU device (two exist on TensorFlow and MXNet)")
    return TWO_CPUS


def _mlp() -> nn.Block:
    md.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))


def _data(n: int = 12) -> tuple[md.Tensor, md.Tensor]:
    rng = np.random.default_rng(0)
    X = md.asarray(rng.standard_normal((n, 6)).astype(np.float32))
    y = md.asarray(rng.integers(0, 3, n).astype(np.int64))
    return X, y


def test_split_batch_shards_rows_in_order_onto_each_device():
    devs = _two_devices()
    X, y = _data(7)
    xs, ys = parallel.split_batch(X, y, devs)
    assert [x.device for x in xs] == devs and [t.device for t in ys] == devs
    assert [x.shape[0] for x in xs] == [4, 3]
    np.testing.assert_array_equal(np.concatenate([x.numpy() for x in xs]), X.numpy())
    np.testing.assert_array_equal(np.concatenate([t.numpy() for t in ys]), y.numpy())


def test_split_batch_rejects_mismatched_or_too_small_batches():
    X, y = _data(3)
    with pytest.raises(ValueError, match="same number of examples"):
        parallel.split_batch(X, y[:2], [md.cpu()])
    with pytest.raises(ValueError, match="at least one example per device"):
        parallel.split_batch(X[:1], y[:1], _two_devices())


def test_replicate_gives_independent_copies_on_each_device():
    devs = _two_devices()
    net = _mlp()
    reps = parallel.replicate(net, devs)
    for rep, dev in zip(reps, devs, strict=True):
        assert rep is not net
        for p, q in zip(net.parameters(), rep.parameters(), strict=True):
            assert q is not p and q.device is dev
            np.testing.assert_array_equal(q.numpy(), p.numpy())
    first = next(reps[1].parameters())
    with md.no_grad():
        first.data[...] = 0.0
    assert np.any(next(net.parameters()).numpy() != 0)


def test_allreduce_writes_the_sum_into_every_device():
    devs = _two_devices()
    a = md.asarray(np.arange(6, dtype=np.float32).reshape(2, 3), device=devs[0])
    b = md.asarray(np.ones((2, 3), dtype=np.float32) * 10, device=devs[1])
    out = parallel.allreduce([a, b])
    want = np.arange(6, dtype=np.float32).reshape(2, 3) + 10
    for t, dev in zip(out, devs, strict=True):
        assert t.device is dev
        np.testing.assert_array_equal(t.numpy(), want)
    np.testing.assert_array_equal(a.numpy(), want)
    np.testing.assert_array_equal(b.numpy(), want)


def test_allreduce_rejects_mixed_shapes():
    devs = _two_devices()
    with pytest.raises(ValueError, match="one backend, shape and dtype"):
        parallel.allreduce([md.ones((2,), device=devs[0]), md.ones((3,), device=devs[1])])


def _train(net: nn.Block, steps: int = 5) -> list[np.ndarray]:
    opt = md.optim.SGD(net.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()
    X, y = _data()
    for _ in range(steps):
        with md.autograd.record():
            loss = loss_fn(net(X), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [p.numpy().copy() for p in net.parameters()]


def _assert_close(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    for g, w in zip(got, want, strict=True):
        assert np.linalg.norm(g - w) <= 1e-6 * np.linalg.norm(w)


def _check_data_parallel(devs: list[md.Device]) -> None:
    single = _train(_mlp().to(devs[0]))
    dp = parallel.DataParallel(_mlp(), devices=devs)
    got = _train(dp)
    assert all(p.device is devs[0] for p in dp.parameters())
    _assert_close(got, single)


@pytest.mark.skipif(not AUTOGRAD, reason=f"{BK} has no autograd")
def test_data_parallel_trains_like_one_device():
    _check_data_parallel(_two_devices())


@pytest.mark.skipif(not AUTOGRAD, reason=f"{BK} has no autograd")
def test_data_parallel_names_parameters_like_pytorch():
    dp = parallel.DataParallel(_mlp(), devices=[md.cpu()])
    assert [n for n, _ in dp.named_parameters()][:2] == ["module.0.weight", "module.0.bias"]


@pytest.mark.gpu
@pytest.mark.skipif(len(GPUS) < 2, reason="needs two GPUs: num_gpus() < 2")
@pytest.mark.skipif(not AUTOGRAD, reason=f"{BK} has no autograd")
def test_data_parallel_on_gpus_trains_like_one_gpu():
    _check_data_parallel(GPUS[:2])


@pytest.mark.gpu
@pytest.mark.skipif(len(GPUS) < 2, reason="needs two GPUs: num_gpus() < 2")
def test_allreduce_on_gpus():
    a = md.ones((4,), device=GPUS[0])
    b = md.ones((4,), device=GPUS[1]) * 2
    out = parallel.allreduce([a, b])
    for t in out:
        np.testing.assert_array_equal(t.numpy(), np.full(4, 3.0, np.float32))
