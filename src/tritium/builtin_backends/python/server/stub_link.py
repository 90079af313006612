"""What the execute path, the async channel and the BLS executor see of a stub process.

`StubProcess` (`stub_launcher.py`) creates its `AsyncChannel`, which reads and writes the stub's
sockets, rings and request tables; typing that back-reference as this protocol, not as
`StubProcess`, keeps the package's imports one way: the launcher imports the channel, the
channel imports only this leaf.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Protocol

from tritium.backend import InferenceRequest, ModelInstance, ServerApi

from ..wire import messages
from ..wire.shm_ring import Ring
from ..wire.shm_tensors import TensorWriter
from .backend_state import BackendState


class AsyncProgress(Protocol):
    """How far the async channel has read: an execute waits for the frames the stub sent
    before its answer."""

    processed: int

    def wait_processed(self, count: int) -> None: ...


class InstanceOwner(Protocol):
    """The instance a stub serves, as the channel sees it: where its responses' statistics go."""

    instance: ModelInstance


class Endpoint(Protocol):
    """One channel the stub side sends BLS requests and calls on: the stub's own async socket
    (the `StubLink` itself), or the channel of a process forked from the stub, which has no
    ring (its tensors come and go in one-off segments)."""

    async_conn: messages.Connection | None
    from_stub: Ring | None
    writer: TensorWriter | None


class StubLink(Protocol):
    """The server's end of one stub: its sockets and rings, the requests it holds, its fate."""

    name: str
    backend: BackendState
    server: ServerApi
    decoupled: bool
    output_names: list[str]
    exec_conn: messages.Connection | None
    async_conn: messages.Connection | None
    from_stub: Ring | None
    writer: TensorWriter | None
    handles: itertools.count[int]
    # Requests the stub may still answer, by handle; decoupled ones rescheduled, by request.
    requests: dict[int, InferenceRequest]
    rescheduled: dict[InferenceRequest, int]
    dead: bool
    stopping: bool

    @property
    def owner(self) -> InstanceOwner | None: ...

    @property
    def channel(self) -> AsyncProgress: ...

    def on_death(self) -> None: ...

    def fail_unanswered(self, requests: Iterable[InferenceRequest]) -> None: ...
