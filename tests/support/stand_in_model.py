"""What `InferenceServer.resolve` returns, for the stand-in servers of the in-process frontend
tests: the model's configuration, and `submit` running the stand-in's `async infer(request)`
as a task on the loop, its response (or error) delivered as the final one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from tritium.errors import TritonError
from tritium.request import RESPONSE_COMPLETE_FINAL, InferenceResponse


class StandInModel:
    def __init__(self, config: Any, infer: Callable[[Any], Awaitable[InferenceResponse]],
                 tasks: set[asyncio.Task]) -> None:
        self.config = config
        self.labels: dict[str, list[str]] = {}
        self._infer = infer
        self._tasks = tasks

    @property
    def decoupled(self) -> bool:
        return self.config.model_transaction_policy.decoupled

    def submit(self, request: Any,
               deliver: Callable[[InferenceResponse | None, int], None]) -> None:
        async def run() -> None:
            try:
                response = await self._infer(request)
            except TritonError as exc:
                response = InferenceResponse(error=exc)
            deliver(response, RESPONSE_COMPLETE_FINAL)

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        pass

    def __enter__(self) -> StandInModel:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
