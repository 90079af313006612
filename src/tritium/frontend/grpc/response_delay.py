"""Triton's testing hook TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC=N for the gRPC frontend.

Triton (src/grpc/grpc_server.cc) holds back the answer of every non-inference RPC (health,
metadata, configuration, statistics, repository, shared memory, log and trace settings; errors
included, a restricted API's refusal too) by N seconds before writing it, logging "Delaying the
write of the response by N seconds" at verbose level 1. It does so on the one thread that
writes those answers, so the delays add up: an answer waits for the ones before it, and a call
the client has given up on still keeps the later ones waiting its full delay. ModelInfer and
ModelStreamInfer are never delayed. Triton's QA (L0_client_timeout) uses it to make client
timeouts expire deterministically.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import grpc

from ...scheduler.delay_hook import delay_count

log = logging.getLogger("tritium.frontend.grpc")

VARIABLE = "TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC"


class ResponseDelay:
    """The hook, read from the environment once per frontend (atoi, as Triton: 0 is off)."""

    def __init__(self) -> None:
        self.seconds = delay_count(VARIABLE)
        self._turn: asyncio.Lock | None = None  # made in the serving loop

    def delayed(self, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        """`handler` (a unary grpc.RpcMethodHandler) answering after its turn and the delay."""
        inner: Any = handler.unary_unary

        async def unary(request: Any, context: Any) -> Any:
            try:
                return await inner(request, context)
            finally:
                # Shielded: a call cancelled by its deadline still holds the writer its time.
                await asyncio.shield(self._wait())

        return grpc.unary_unary_rpc_method_handler(
            unary, handler.request_deserializer, handler.response_serializer
        )

    async def _wait(self) -> None:
        if self._turn is None:
            self._turn = asyncio.Lock()
        async with self._turn:
            log.debug("Delaying the write of the response by %d seconds", self.seconds)
            await asyncio.sleep(self.seconds)
