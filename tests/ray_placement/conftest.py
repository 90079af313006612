"""One simulated Ray cluster for every Ray test: a head and one worker node, 1 CPU each.

The tests connect to it as a Ray driver themselves only to look at and kill the servers'
actors (by the names Tritium gives them), never to serve.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    import ray
    from ray.cluster_utils import Cluster

    # A removed node is noticed in seconds rather than Ray's default half minute; a node
    # starts several actor processes at once, not one per CPU.
    for key, value in (("RAY_maximum_startup_concurrency", "4"),
                       ("RAY_health_check_period_ms", "1000"),
                       ("RAY_health_check_timeout_ms", "1000"),
                       ("RAY_health_check_failure_threshold", "5")):
        os.environ.setdefault(key, value)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, namespace="tritium-tests")
    yield cluster
    ray.shutdown()
    cluster.shutdown()
