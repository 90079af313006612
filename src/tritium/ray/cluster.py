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
import socket
import threading
import time
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
# How long joining the cluster may take before the server gives up (and of it, how long the
# TCP probe of the head's address may wait for an answer).
CONNECT_TIMEOUT_S = 30.0
_PROBE_TIMEOUT_S = 10.0


def connect(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Join the cluster at `address` as a driver, or fail within `timeout_s` with a line that
    names the address and --ray-address. Ray itself retries an address where nothing answers
    for many minutes, and its own errors name its `--address` flag."""
    deadline = time.monotonic() + timeout_s
    if address != "auto":
        _probe(address, min(_PROBE_TIMEOUT_S, timeout_s))
    outcome: list[BaseException | None] = []

    def init() -> None:
        try:
            ray.init(address=address, namespace=NAMESPACE, log_to_driver=True,
                     configure_logging=False)
            outcome.append(None)
        except BaseException as exc:  # handed to the caller's thread
            outcome.append(exc)

    thread = threading.Thread(target=init, name="tritium-ray-connect", daemon=True)
    thread.start()
    thread.join(max(deadline - time.monotonic(), 0.0))
    if not outcome:
        raise _unreachable(address, f"no answer within {timeout_s:g} s")
    error = outcome[0]
    if error is None:
        return
    if address == "auto" and isinstance(error, ConnectionError):
        raise TritonError.unavailable(
            "--ray-address auto: no running Ray cluster found on this machine; start one "
            "(`ray start --head`) or give its head's address: --ray-address=<host>:6379"
        )
    raise _unreachable(address, str(error).splitlines()[0] if str(error) else repr(error))


def _probe(address: str, timeout_s: float) -> None:
    """A TCP connection to the head's address, so that an address where nothing listens
    fails at once instead of through Ray's retries."""
    target = address.split("://", 1)[-1]
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise _unreachable(address, "expected <host>:<port> (or 'auto')")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise _unreachable(address, exc.strerror or str(exc) or type(exc).__name__) from None


def _unreachable(address: str, reason: str) -> TritonError:
    return TritonError.unavailable(
        f"unable to connect to the Ray cluster at '{address}' (--ray-address): {reason}; "
        "check that its head node runs (`ray status`) and the address"
    )


class RayCluster:
    """What this server's instances on Ray share: the connection, the server they answer to
    (BLS, model control, custom metric families) and a pool for calls that may block."""

    def __init__(self, address: str, server: ServerApi, server_id: str,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        connect(address)
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
