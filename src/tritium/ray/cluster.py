"""The server's connection to a Ray cluster: a Ray driver in namespace `tritium`, and the
actors it starts for this server's instances.

Actors are named `<server id>.<random>/<model>/<version>/<instance>/<serial>` (a serial per
actor this server made: a reload's new instances run beside the old ones until the swap), so
several Tritium servers (one per machine, behind any load balancer) serve the same repository
against one cluster with their own instances, and `ray list actors` shows which is which. When
the server exits, Ray ends its actors with it.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ..backend.server_api import ServerApi
from ..errors import TritonError
from .instance_actor import CONCURRENCY_GROUPS, MAX_CONCURRENCY, InstanceActor, InstanceSpec
from .owner_calls import SharedFamilies

log = logging.getLogger("tritium.ray")

NAMESPACE = "tritium"
# How long a new instance may wait for a node with room (and a request for a lost instance's
# replacement) before failing with UNAVAILABLE.
DEFAULT_TIMEOUT_S = 60.0


class RayCluster:
    """What this server's instances on Ray share: the connection, the server they answer to
    (BLS, model control, custom metric families) and a pool for calls that may block."""

    def __init__(self, address: str, server: ServerApi, server_id: str,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        try:
            ray.init(address=address, namespace=NAMESPACE, log_to_driver=True,
                     configure_logging=False)
        except Exception as exc:
            raise TritonError.unavailable(
                f"unable to connect to the Ray cluster at '{address}': {exc}"
            ) from None
        self.server = server
        self.timeout_s = timeout_s
        self.token = f"{server_id}.{uuid.uuid4().hex[:8]}"
        self.families = SharedFamilies(server.metrics)
        self._serials = itertools.count(1)
        # Answers calls from actors that may block (model readiness, loading a model).
        self.pool = ThreadPoolExecutor(8, thread_name_prefix="tritium-ray-calls")
        class_options: dict[str, Any] = {"concurrency_groups": CONCURRENCY_GROUPS,
                                         "max_concurrency": MAX_CONCURRENCY}
        self._actor_class = ray.remote(**class_options)(InstanceActor)
        log.info("connected to the Ray cluster at '%s' (%s), actors named '%s/...'", address,
                 ray.get_runtime_context().gcs_address, self.token)

    def new_actor(self, options: dict[str, Any], spec: InstanceSpec) -> Any:
        """Start an actor for `spec` under the model's Ray actor `options` (not waited for)."""
        options = dict(options)
        strategy = options.get("scheduling_strategy")
        if isinstance(strategy, dict):
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(**strategy)
        name = "/".join((self.token, spec.model, str(spec.version),
                         spec.instance_name, str(next(self._serials))))
        return self._actor_class.options(name=name, **options).remote(spec)

    def close(self) -> None:
        """After every model is unloaded: leave the cluster."""
        self.pool.shutdown(wait=False)
        ray.shutdown()
