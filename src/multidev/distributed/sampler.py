"""``DistributedSampler``: each rank's share of a dataset's indices, epoch after epoch."""

from __future__ import annotations

from collections.abc import Iterator, Sized

import numpy as np

from ..random import host_permutation

__all__ = ["DistributedSampler"]


class DistributedSampler:
    """Indices of ``dataset`` (anything with ``len``) for one rank: rank r of W gets every
    W-th index starting at r of a permutation that is the same on every rank (seeded by
    ``seed + epoch``; call ``set_epoch`` each epoch). With ``drop_last=False`` the list is
    padded by repeating its start so that every rank gets ``ceil(len / W)`` indices.

    ``num_replicas`` and ``rank`` default to the process group's.
    """

    def __init__(
        self,
        dataset: Sized,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        from . import get_rank, get_world_size

        world = get_world_size() if num_replicas is None else int(num_replicas)
        r = get_rank() if rank is None else int(rank)
        if world < 1 or not 0 <= r < world:
            raise ValueError(
                f"Expected 0 <= rank < num_replicas. Received: rank={r}, num_replicas={world}."
            )
        self.n = len(dataset)
        self.num_replicas, self.rank = world, r
        self.shuffle, self.seed, self.drop_last = bool(shuffle), int(seed), bool(drop_last)
        self.epoch = 0
        if drop_last:
            self.num_samples = self.n // world
        else:
            self.num_samples = -(-self.n // world)
        self.total_size = self.num_samples * world

    def set_epoch(self, epoch: int) -> None:
        """Use the permutation of ``epoch`` next (every rank must pass the same number)."""
        self.epoch = int(epoch)

    def __iter__(self) -> Iterator[int]:
        if self.shuffle:
            order = host_permutation(self.n, self.seed + self.epoch)
        else:
            order = np.arange(self.n)
        if self.total_size > self.n:
            order = np.resize(order, self.total_size) if self.n else order
        order = order[: self.total_size]
        return iter(order[self.rank : self.total_size : self.num_replicas].tolist())

    def __len__(self) -> int:
        return self.num_samples
