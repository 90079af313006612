"""One model instance placed on Ray, from the owning server (server side of `instance_actor`).

It plays the backend's part for the server's ModelInstance (which keeps its own rules: one
execute at a time, statistics, rate limits, unanswered requests failed): execute ships the
batch to the actor and hands each response to its request's sender.

Failure, as the python backend treats a dead stub: when the actor dies (killed, out of memory,
its node lost), the requests it held fail with UNAVAILABLE naming the instance, readiness says
no, and a new actor is placed in the background, on any node with room (Ray decides, under the
same options). An execute that comes meanwhile waits for the new actor up to the placement
timeout, so later requests succeed.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import GetTimeoutError, RayError

from ..errors import TritonError
from ..request import RESPONSE_COMPLETE_FINAL, InferenceRequest, InferenceResponse
from . import wire
from .owner_calls import OwnerCalls

if TYPE_CHECKING:
    from ..backend.handles import ModelInstance as InstanceHandle
    from .cluster import RayCluster
    from .instance_actor import InstanceSpec

log = logging.getLogger("tritium.ray")

_READY_TIMEOUT_S = 5.0
_FINALIZE_TIMEOUT_S = 30.0
_RETRY_MAX_S = 30.0


class RayInstance:
    def __init__(self, cluster: RayCluster, handle: InstanceHandle,
                 options: dict[str, Any], spec: InstanceSpec) -> None:
        self._cluster = cluster
        self.name = handle.name
        self.model = handle.model.name
        self._decoupled = handle.model.config.model_transaction_policy.decoupled
        self._options = options
        self._spec = spec
        self._cond = threading.Condition()
        self._actor: Any = None
        self._generation = 0
        self._generations = itertools.count(1)
        self._lost_reason: str | None = None
        self._closing = False
        self._inflight: dict[int, InferenceRequest] = {}
        self._keys = itertools.count(1)
        self._threads: list[threading.Thread] = []
        self.node_id = ""
        self.pid = 0

    # -- placement ---------------------------------------------------------------------------

    def start(self) -> None:
        """Place the first actor; raises TritonError when it cannot be placed or started."""
        self._install(*self._place(self._cluster.timeout_s))

    def _place(self, timeout: float | None) -> tuple[Any, int, str, int]:
        """A started actor, its generation and where it runs; waits for room up to `timeout`
        (None: until the instance closes). Its stream is read from the start: the model may
        call its server while it initializes (BLS, metric families, logs)."""
        generation = next(self._generations)
        actor = self._cluster.new_actor(self._options, self._spec)
        calls = OwnerCalls(self._cluster.server, self._cluster.families,
                           self._cluster.pool, actor, self._lookup, self._respond)
        reader = threading.Thread(target=self._read_events, args=(actor, calls, generation),
                                  name=f"{self.name}-ray-events", daemon=True)
        self._threads.append(reader)
        reader.start()
        ref = actor.start.remote()
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while not ray.wait([ref], timeout=1.0)[0]:
                if self._closing:
                    raise TritonError.unavailable(f"instance '{self.name}' is closing")
                if deadline is not None and time.monotonic() > deadline:
                    raise TritonError.unavailable(
                        f"no node of the Ray cluster had room for instance '{self.name}' of "
                        f"model '{self.model}' (actor options {self._options}) within "
                        f"{timeout:g} s"
                    )
            status, detail = ray.get(ref)
        except RayError as exc:
            ray.kill(actor)
            raise TritonError.unavailable(
                f"the Ray actor of instance '{self.name}' of model '{self.model}' failed to "
                f"start: {_reason(exc)}"
            ) from None
        except BaseException:
            ray.kill(actor)
            raise
        if status != "ok":
            ray.kill(actor)
            raise wire.error_from_wire(detail)
        node_id, pid = detail
        return actor, generation, node_id, pid

    def _install(self, actor: Any, generation: int, node_id: str, pid: int) -> None:
        with self._cond:
            if self._closing:
                ray.kill(actor)
                return
            self._generation = generation
            self._actor = actor
            self._lost_reason = None
            self.node_id, self.pid = node_id, pid
            self._cond.notify_all()
        log.info("instance '%s' of model '%s' runs on Ray node %s (pid %d)", self.name,
                 self.model, node_id, pid)

    def _read_events(self, actor: Any, calls: OwnerCalls, generation: int) -> None:
        reason: BaseException | None = None
        try:
            for ref in actor.events.remote():
                calls.handle(ray.get(ref))
        except RayError as exc:
            reason = exc
        finally:
            calls.drop()
        if reason is not None:
            self._lost(generation, reason)

    def _lost(self, generation: int, reason: BaseException) -> None:
        """The actor of `generation` died: fail what it held and place a new one."""
        with self._cond:
            if generation != self._generation or self._closing or self._lost_reason:
                return
            self._lost_reason = _reason(reason)
            held = list(self._inflight.values())
            self._inflight.clear()
            node = self.node_id
        log.error("instance '%s' of model '%s' lost its Ray actor (node %s): %s; placing it "
                  "again", self.name, self.model, node, self._lost_reason)
        error = self._lost_error()
        for request in held:
            _fail(request, error)
        replacer = threading.Thread(target=self._replace, name=f"{self.name}-ray-replace",
                                    daemon=True)
        self._threads.append(replacer)
        replacer.start()

    def _lost_error(self) -> TritonError:
        return TritonError.unavailable(
            f"instance '{self.name}' of model '{self.model}' was lost: its Ray actor on node "
            f"{self.node_id} died ({self._lost_reason})"
        )

    def _replace(self) -> None:
        delay = 1.0
        while not self._closing:
            try:
                self._install(*self._place(None))
                return
            except TritonError as exc:
                if self._closing:
                    return
                log.error("placing instance '%s' of model '%s' again failed: %s (retrying in "
                          "%g s)", self.name, self.model, exc, delay)
            with self._cond:
                self._cond.wait(delay)
            delay = min(delay * 2, _RETRY_MAX_S)

    # -- serving -----------------------------------------------------------------------------

    def _live_actor(self) -> tuple[Any, int]:
        """The current actor; while one is being placed again, wait for it (bounded)."""
        timeout = self._cluster.timeout_s
        with self._cond:
            if not self._cond.wait_for(
                lambda: self._closing or (self._actor is not None and not self._lost_reason),
                timeout,
            ):
                raise TritonError.unavailable(
                    f"instance '{self.name}' of model '{self.model}' is not placed on the Ray "
                    f"cluster (lost: {self._lost_reason}); no node had room for it within "
                    f"{timeout:g} s"
                )
            if self._closing:
                raise TritonError.unavailable(f"instance '{self.name}' is being unloaded")
            return self._actor, self._generation

    def execute(self, requests: Sequence[InferenceRequest]) -> None:
        actor, generation = self._live_actor()
        keys = []
        with self._cond:
            for request in requests:
                key = next(self._keys)
                self._inflight[key] = request
                keys.append(key)
        batch = [wire.request_to_wire(key, request)
                 for key, request in zip(keys, requests, strict=True)]
        try:
            error, answered = ray.get(actor.execute.remote(batch))
        except RayError as exc:
            self._lost(generation, exc)
            self._forget(keys, lost=True)
            return
        for key, response, flags in answered:
            self._respond(key, wire.response_from_wire(response), flags)
        self._forget(keys, lost=False, failed=error is not None)
        if error is not None:
            raise wire.error_from_wire(error)

    def _forget(self, keys: list[int], *, lost: bool, failed: bool = False) -> None:
        """Drop the batch's requests that will get no more responses (a decoupled model's
        open ones stay until their final response); fail any the lost actor still held."""
        with self._cond:
            gone = [self._inflight.pop(key) for key in keys if key in self._inflight and (
                lost or failed or not self._decoupled
                or _completed(self._inflight[key]))]
        if lost:
            error = self._lost_error()
            for request in gone:
                _fail(request, error)

    def _lookup(self, key: int) -> InferenceRequest | None:
        return self._inflight.get(key)

    def _respond(self, key: int, response: InferenceResponse | None, flags: int) -> None:
        with self._cond:
            request = (self._inflight.pop(key, None) if flags & RESPONSE_COMPLETE_FINAL
                       else self._inflight.get(key))
        if request is not None and not _completed(request):
            assert request.response_sender is not None
            request.response_sender.send(response, flags)

    def is_ready(self) -> bool:
        with self._cond:
            actor = None if self._closing or self._lost_reason else self._actor
        if actor is None:
            return False
        try:
            return bool(ray.get(actor.ready.remote(), timeout=_READY_TIMEOUT_S))
        except (RayError, GetTimeoutError):
            return False

    def close(self) -> None:
        """Finalize the instance in its actor, then end the actor."""
        with self._cond:
            self._closing = True
            actor, self._actor = self._actor, None
            self._cond.notify_all()
        if actor is not None:
            try:
                ray.get(actor.finalize.remote(), timeout=_FINALIZE_TIMEOUT_S)
            except (RayError, GetTimeoutError) as exc:
                log.warning("finalizing instance '%s' on Ray failed: %s", self.name,
                            _reason(exc))
            ray.kill(actor)
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(_FINALIZE_TIMEOUT_S)
        with self._cond:
            held = list(self._inflight.values())
            self._inflight.clear()
        for request in held:
            _fail(request, TritonError.unavailable(
                f"instance '{self.name}' of model '{self.model}' was unloaded"))


def _completed(request: InferenceRequest) -> bool:
    sender = request.response_sender
    return sender is None or sender.is_completed


def _fail(request: InferenceRequest, error: TritonError) -> None:
    if not _completed(request):
        request.respond_error(error)


def _reason(exc: BaseException) -> str:
    """The first line of Ray's (long) error text."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
