"""The seeded shuffle's epochs, checked by behaviour (a second check beside the seed formula in
tests/test_data.py): every epoch is a new permutation, a loader resumed at epoch k gives the
order an uninterrupted loader gives in its epoch k, and the seed decides the orders."""

from __future__ import annotations

import numpy as np

import multidev as md
from multidev.data import DataLoader, TensorDataset

N = 24


def _orders(loader, epochs):
    return [np.concatenate([y.numpy() for _, y in loader]) for _ in range(epochs)]


def _loader(seed=11):
    data = TensorDataset(md.zeros((N, 1)), md.arange(N))
    return DataLoader(data, batch_size=5, shuffle=True, generator=seed)


def test_every_epoch_is_a_new_permutation_of_the_data():
    orders = _orders(_loader(), 4)
    for order in orders:
        assert sorted(order.tolist()) == list(range(N))
    assert len({tuple(o) for o in orders}) == 4


def test_a_loader_resumed_at_epoch_k_gives_epoch_k_s_order():
    orders = _orders(_loader(), 4)
    for k in (1, 3):
        resumed = _loader()
        resumed.load_state_dict({"epoch": k, "batch": 0, "seed": None})
        np.testing.assert_array_equal(_orders(resumed, 1)[0], orders[k])


def test_the_seed_decides_the_orders():
    np.testing.assert_array_equal(_orders(_loader(11), 2)[1], _orders(_loader(11), 2)[1])
    assert not np.array_equal(_orders(_loader(11), 1)[0], _orders(_loader(12), 1)[0])
