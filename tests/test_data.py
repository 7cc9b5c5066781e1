"""``md.data``: datasets, the DataLoader (order, batching, placement, worker processes,
resuming mid-epoch) and ``random_split``; ``md.random.get_state``/``set_state``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import multidev as md
from multidev.data import DataLoader, Dataset, TensorDataset, random_split

X = np.arange(46, dtype=np.float32).reshape(23, 2)
Y = np.arange(23, dtype=np.int64) % 3


class Squares(Dataset):
    """A dataset of dicts (module level, so that worker processes can unpickle it)."""

    def __len__(self):
        return 17

    def __getitem__(self, i):
        return {"x": np.full(3, i, np.float32), "y": i * i, "name": f"s{i}"}


class Failing(Squares):
    def __getitem__(self, i):
        if i == 5:
            raise KeyError("sample 5 is missing")
        return super().__getitem__(i)


class Sleepy(Squares):
    """Sample 0 blocks (a worker that hangs)."""

    def __getitem__(self, i):
        if i == 0:
            time.sleep(120)
        return super().__getitem__(i)


class Dying(Squares):
    """Sample 5 ends its worker process."""

    def __getitem__(self, i):
        if i == 5:
            os._exit(3)
        return super().__getitem__(i)


def with_a_lock(samples):
    """A collate_fn whose batch holds a lock, which does not pickle."""
    return {"x": np.stack([s["x"] for s in samples]), "lock": threading.Lock()}


def pair_sums(samples):
    """A collate_fn: the sum of each (x, y) pair's x, and the labels."""
    return (
        np.stack([np.asarray(x.numpy()).sum(keepdims=True) for x, _ in samples]),
        md.stack([y for _, y in samples]),
    )


def _rows(loader):
    return [tuple(np.asarray(t.numpy()).tolist() for t in batch) for batch in loader]


def test_batches_are_tensors_on_the_default_device_in_order():
    loader = DataLoader(TensorDataset(md.asarray(X), Y), batch_size=5)
    batches = list(loader)
    assert len(loader) == len(batches) == 5
    x, y = batches[-1]
    assert isinstance(x, md.Tensor) and x.backend == md.get_backend()
    assert x.device == md.default_device()
    assert x.dtype == md.float32 and y.dtype == md.int64
    np.testing.assert_array_equal(np.concatenate([b[0].numpy() for b in batches]), X)
    assert x.shape == (3, 2)
    dropped = DataLoader(TensorDataset(X, Y), batch_size=5, drop_last=True)
    assert len(dropped) == len(list(dropped)) == 4


def test_device_argument_places_batches():
    dev = md.devices()[-1]
    x, _ = next(iter(DataLoader(TensorDataset(X, Y), batch_size=4, device=dev)))
    assert x.device == dev


def test_seeded_shuffle_follows_the_documented_host_order():
    loader = DataLoader(TensorDataset(X, Y), batch_size=4, shuffle=True, generator=7)
    epochs = [np.concatenate([y.numpy() for _, y in loader]) for _ in range(2)]
    for epoch, labels in enumerate(epochs):
        seed = int(np.random.PCG64([7, epoch]).random_raw()) >> 1
        order = np.argsort(np.random.PCG64(seed).random_raw(len(X)), kind="stable")
        np.testing.assert_array_equal(labels, Y[order])
    assert not np.array_equal(epochs[0], epochs[1])
    again = DataLoader(TensorDataset(X, Y), batch_size=4, shuffle=True, generator=7)
    assert _rows(again) == _rows(
        DataLoader(TensorDataset(X, Y), batch_size=4, shuffle=True, generator=7)
    )


def test_unseeded_shuffle_follows_manual_seed():
    md.manual_seed(3)
    first = _rows(DataLoader(TensorDataset(X, Y), batch_size=4, shuffle=True))
    md.manual_seed(3)
    second = _rows(DataLoader(TensorDataset(X, Y), batch_size=4, shuffle=True))
    assert first == second
    assert first != _rows(DataLoader(TensorDataset(X, Y), batch_size=4, shuffle=True))


def test_default_collate_handles_dicts_numbers_and_strings():
    batch = next(iter(DataLoader(Squares(), batch_size=4)))
    assert batch["name"] == ["s0", "s1", "s2", "s3"]
    assert batch["y"].dtype == md.int64
    np.testing.assert_array_equal(batch["y"].numpy(), [0, 1, 4, 9])
    assert batch["x"].shape == (4, 3)


def test_worker_processes_yield_the_same_batches():
    ds = TensorDataset(X, Y)
    plain = _rows(DataLoader(ds, batch_size=3, shuffle=True, generator=1))
    workers = DataLoader(ds, batch_size=3, shuffle=True, generator=1, num_workers=2)
    assert _rows(workers) == plain
    custom = dict(batch_size=4, shuffle=True, generator=2, collate_fn=pair_sums)
    assert _rows(DataLoader(ds, num_workers=2, **custom)) == _rows(DataLoader(ds, **custom))
    sq = [b["y"].tolist() for b in DataLoader(Squares(), batch_size=5, num_workers=3)]
    assert sq == [b["y"].tolist() for b in DataLoader(Squares(), batch_size=5)]


def test_worker_errors_reach_the_caller():
    with pytest.raises(RuntimeError, match="sample 5 is missing"):
        list(DataLoader(Failing(), batch_size=2, num_workers=2))
    with pytest.raises(TypeError, match="pickle"):
        list(DataLoader(TensorDataset(X, Y), collate_fn=lambda s: s, num_workers=1))


def test_a_batch_that_does_not_pickle_names_its_type_and_worker():
    loader = DataLoader(Squares(), batch_size=4, collate_fn=with_a_lock, num_workers=2)
    with pytest.raises(md.DataLoaderError, match=r"worker 0 .*\['lock'\] is a _thread\.lock") as e:
        next(iter(loader))
    assert (e.value.worker, e.value.cause) == (0, "unpicklable batch")


def test_timeout_names_the_worker_that_hangs():
    loader = DataLoader(Sleepy(), batch_size=2, num_workers=2, timeout=1)
    with pytest.raises(md.DataLoaderError, match="worker 0 to build batch 0 within timeout=1") as e:
        list(loader)
    assert (e.value.worker, e.value.cause) == (0, "timeout")


def test_a_worker_that_dies_is_noticed_without_a_timeout():
    with pytest.raises(md.DataLoaderError, match="worker 0 exited with code 3") as e:
        list(DataLoader(Dying(), batch_size=2, num_workers=2))
    assert (e.value.worker, e.value.cause) == (0, "worker died")


@pytest.mark.parametrize("timeout", [-1, float("nan"), float("inf"), "1", True])
def test_bad_timeouts(timeout):
    with pytest.raises(ValueError, match="timeout"):
        DataLoader(Squares(), timeout=timeout)


UNGUARDED = """
import os
import numpy as np
import multidev as md
from multidev.data import DataLoader, TensorDataset

md.zeros(1, device=DEVICE)  # the backend's framework is started, as in a training script
print("TOP", os.getpid(), flush=True)
print("HAZARD", md.registry.framework(md.get_backend()).fork_hazard(), flush=True)
ds = TensorDataset(np.arange(20, dtype=np.float32))
try:
    rows = [b[0].numpy().tolist() for b in DataLoader(ds, batch_size=4, num_workers=2)]
    print("OK", rows == [b[0].numpy().tolist() for b in DataLoader(ds, batch_size=4)], flush=True)
except md.DataLoaderError as e:
    print("REFUSED", e.cause, "|", str(e).replace(chr(10), " "), flush=True)
"""


def _run_script(tmp_path: Path, text: str) -> list[str]:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(text))
    env = dict(os.environ, MULTIDEV_BACKEND=md.get_backend())
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def _check_unguarded(out: list[str]) -> str:
    """The script ran its top level once, and forked exactly when its own process said that
    was safe; returns that reason ("None" when safe)."""
    assert len([line for line in out if line.startswith("TOP")]) == 1, out  # ran once
    hazard = next(line for line in out if line.startswith("HAZARD "))[len("HAZARD ") :]
    if hazard == "None":
        assert out[-1] == "OK True", out
    else:
        assert out[-1].startswith("REFUSED main guard |"), out
        assert 'if __name__ == "__main__":' in out[-1] and hazard in out[-1]
    return hazard


def test_a_script_without_the_main_guard_forks_where_safe_else_refuses(tmp_path):
    _check_unguarded(_run_script(tmp_path, UNGUARDED.replace("DEVICE", "md.cpu()")))


@pytest.mark.gpu
def test_an_unguarded_script_that_used_the_gpu_is_refused_where_fork_would_break_it(tmp_path):
    """PyTorch's rule: a child forked after CUDA is initialised cannot use it, so a script
    that has put a tensor on the GPU gets the typed error, not workers that fail later."""
    if md.num_gpus() == 0:
        pytest.skip("no GPU: num_gpus() == 0")
    hazard = _check_unguarded(_run_script(tmp_path, UNGUARDED.replace("DEVICE", "md.gpu(0)")))
    if md.get_backend() == "torch":
        assert "CUDA is initialised" in hazard


GUARDED = """
import os
import numpy as np
import multidev as md
from multidev.data import DataLoader, TensorDataset

print("TOP", os.getpid(), flush=True)


def main():
    md.zeros(1)
    ds = TensorDataset(np.arange(20, dtype=np.float32))
    rows = [b[0].numpy().tolist() for b in DataLoader(ds, batch_size=4, num_workers=2)]
    print("OK", rows == [b[0].numpy().tolist() for b in DataLoader(ds, batch_size=4)], flush=True)


if __name__ == "__main__":
    main()
"""


def test_a_guarded_script_starts_its_workers_as_before(tmp_path):
    out = _run_script(tmp_path, GUARDED)
    # the spawned workers print their TOP lines at the same time, so those can interleave;
    # the main process prints its result once, after they are done
    assert out[-1] == "OK True" and "\n".join(out).count("OK") == 1, out


@pytest.mark.parametrize("num_workers", [0, 2])
def test_loader_resumes_mid_epoch(num_workers):
    def make():
        return DataLoader(TensorDataset(X, Y), batch_size=4, shuffle=True, num_workers=num_workers)

    md.manual_seed(5)
    reference = make()
    whole = [_rows(reference) for _ in range(3)]
    md.manual_seed(5)
    first = make()
    it = iter(first)
    head = [next(it) for _ in range(2)]
    state = json.loads(json.dumps(first.state_dict()))
    assert state["epoch"] == 0 and state["batch"] == 2
    rng = md.random.get_state()
    del it
    md.manual_seed(99)
    md.random.set_state(rng)
    resumed = make()
    resumed.load_state_dict(state)
    rest = _rows(resumed)
    assert _rows(head) + rest == whole[0]
    assert [_rows(resumed), _rows(resumed)] == whole[1:]
    assert resumed.state_dict() == {"epoch": 3, "batch": 0, "seed": None}


def test_load_state_dict_rejects_bad_positions():
    loader = DataLoader(TensorDataset(X, Y), batch_size=4)
    with pytest.raises(ValueError, match="'epoch', 'batch' and 'seed'"):
        loader.load_state_dict({"epoch": 0})
    with pytest.raises(ValueError, match="batch position <= 6"):
        loader.load_state_dict({"epoch": 0, "batch": 9, "seed": 1})
    with pytest.raises(ValueError, match="seed of the epoch"):
        loader.load_state_dict({"epoch": 0, "batch": 2, "seed": None})


@pytest.mark.parametrize(
    "bad",
    [
        {"seed": 2**70},
        {"seed": -1},
        {"seed": 1.5},
        {"seed": "7"},
        {"epoch": 2**64},
        {"epoch": -1},
        {"epoch": 2.0},
        {"batch": True},
    ],
)
def test_load_state_dict_refuses_out_of_range_values_before_changing_anything(bad):
    loader = DataLoader(TensorDataset(X, Y), batch_size=4, shuffle=True, generator=3)
    _rows(loader)
    it = iter(loader)
    next(it)
    before = loader.state_dict()
    name = next(iter(bad))
    with pytest.raises(md.StateDictError, match=f"'{name}'"):
        loader.load_state_dict({"epoch": 1, "batch": 1, "seed": 5, **bad})
    assert loader.state_dict() == before


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"batch_size": 0}, ValueError),
        ({"num_workers": -1}, ValueError),
        ({"generator": "seed"}, TypeError),
        ({"multiprocessing_context": "thread"}, ValueError),
    ],
)
def test_bad_loader_arguments(kwargs, error):
    with pytest.raises(error, match="Expected"):
        DataLoader(TensorDataset(X, Y), **kwargs)


def test_tensor_dataset_items_and_errors():
    ds = TensorDataset(md.asarray(X), md.asarray(Y))
    x, y = ds[4]
    np.testing.assert_array_equal(x.numpy(), X[4])
    assert y.item() == Y[4] and len(ds) == 23
    with pytest.raises(ValueError, match="same first dimension"):
        TensorDataset(X, Y[:5])


def test_random_split():
    ds = TensorDataset(X, Y)
    parts = random_split(ds, [10, 13], generator=4)
    idx = np.concatenate([p.indices for p in parts])
    assert [len(p) for p in parts] == [10, 13]
    assert sorted(idx.tolist()) == list(range(23))
    assert [p.indices.tolist() for p in random_split(ds, [10, 13], generator=4)] == [
        p.indices.tolist() for p in parts
    ]
    x, _ = parts[1][0]
    np.testing.assert_array_equal(x.numpy(), X[parts[1].indices[0]])
    batch = next(iter(DataLoader(parts[0], batch_size=10)))
    np.testing.assert_array_equal(batch[1].numpy(), Y[parts[0].indices])
    assert [len(p) for p in random_split(ds, [0.5, 0.25, 0.25])] == [12, 6, 5]
    with pytest.raises(ValueError, match="summing to the dataset's length 23"):
        random_split(ds, [10, 10])


def test_random_state_round_trip():
    md.manual_seed(11)
    md.rand(3)
    state = md.random.get_state()
    assert json.loads(json.dumps(state)) == state
    expected = md.randn(4).numpy().copy()
    md.manual_seed(0)
    md.random.set_state(state)
    np.testing.assert_array_equal(md.randn(4).numpy(), expected)
    with pytest.raises(ValueError, match="without"):
        md.random.set_state({"bit_generator": "PCG64"})
    with pytest.raises(ValueError, match="PCG64"):
        md.random.set_state({**state, "bit_generator": "MT19937"})
    with pytest.raises(TypeError, match="get_state"):
        md.random.set_state([1, 2])
