"""`multidev launch` on several machines, without a second machine: the launchers of the
nodes agree on every node's address (threads on 127.0.0.1 stand for the nodes), and on
TensorFlow each worker's ``TF_CONFIG`` is built from ``--nnodes/--node-rank/--master-addr/
--master-port`` alone."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import multidev as md
from multidev import distributed as dist
from multidev.distributed.launch import free_port, node_addresses

BK = md.get_backend()


def _nodes(nnodes: int, run: Callable[[int], Any]) -> list[Any]:
    """``run(node_rank)`` for every node, each in its own thread, node 0 last (the others
    must wait for it); the results in node order (an exception is re-raised)."""
    results: list[Any] = [None] * nnodes

    def one(rank: int) -> None:
        try:
            results[rank] = run(rank)
        except BaseException as e:  # re-raised below, in the test's thread
            results[rank] = e

    threads = [threading.Thread(target=one, args=(r,)) for r in range(nnodes - 1, -1, -1)]
    for t in threads:
        t.start()
        time.sleep(0.2)
    for t in threads:
        t.join(60)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results


def test_the_launchers_of_three_nodes_agree_on_every_address():
    port = free_port()
    got = _nodes(3, lambda r: node_addresses(3, r, "127.0.0.1", port, timeout=30))
    assert got == [["127.0.0.1"] * 3] * 3


def test_a_node_whose_master_never_comes_is_a_clear_error_in_bounded_time():
    port = free_port()
    start = time.monotonic()
    with pytest.raises(dist.DistributedError, match=r"Expected node 0's launcher .* node 0\."):
        node_addresses(2, 1, "127.0.0.1", port, timeout=1.0)
    assert time.monotonic() - start < 30


def test_node_0_names_the_nodes_that_did_not_come():
    """Node 0 of 3 meets node 1; node 2 never comes: node 0's error names node 2, node 1's
    says that node 0 answered."""
    port = free_port()
    with pytest.raises(dist.DistributedError) as caught:
        _nodes(2, lambda r: node_addresses(3, r, "127.0.0.1", port, timeout=2.0))
    assert "Received: nodes 0, 1 (2 s passed); missing: node 2." in str(caught.value)


def test_a_foreign_listener_on_the_port_is_not_taken_for_node_0():
    """Node 1 first finds another program on the port (a store of an earlier attempt, say),
    which never answers: it tries again until node 0's launcher listens there."""
    import socket

    port = free_port()
    foreign = socket.socket()
    foreign.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    foreign.bind(("127.0.0.1", port))
    foreign.listen(4)
    got: list[list[str]] = []
    node1 = threading.Thread(
        target=lambda: got.append(node_addresses(2, 1, "127.0.0.1", port, timeout=60))
    )
    node1.start()
    time.sleep(1.0)  # node 1 has connected to the foreign listener
    foreign.close()
    assert node_addresses(2, 0, "127.0.0.1", port, timeout=60) == ["127.0.0.1"] * 2
    node1.join(60)
    assert got == [["127.0.0.1"] * 2]


def test_one_node_needs_no_meeting():
    assert node_addresses(1, 0, "10.1.2.3", 1) == ["10.1.2.3"]


tf_only = pytest.mark.skipif(BK != "tensorflow", reason="TF_CONFIG is TensorFlow's")


@tf_only
def test_workers_of_several_machines_are_listed_node_by_node():
    from multidev_tensorflow.distributed import cluster_workers

    got = cluster_workers(["10.0.0.1", "10.0.0.2"], 2, 29500)
    assert got == ["10.0.0.1:29501", "10.0.0.1:29502", "10.0.0.2:29503", "10.0.0.2:29504"]


@tf_only
def test_tf_config_for_two_nodes_of_two_processes_names_all_four_workers():
    from multidev_tensorflow.distributed import worker_envs

    port = free_port()
    per_node = _nodes(
        2,
        lambda r: worker_envs(
            nproc_per_node=2, nnodes=2, node_rank=r, master_addr="127.0.0.1", master_port=port
        ),
    )
    configs = [json.loads(env["TF_CONFIG"]) for envs in per_node for env in envs]
    assert len(configs) == 4
    workers = [f"127.0.0.1:{port + 1 + r}" for r in range(4)]
    for rank, config in enumerate(configs):
        assert config["cluster"] == {"worker": workers}
        assert config["task"] == {"type": "worker", "index": rank}
