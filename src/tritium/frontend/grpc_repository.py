"""The model repository extension over gRPC: RepositoryIndex, RepositoryModelLoad and
RepositoryModelUnload, with Triton's status codes (the same TritonError codes as over HTTP).

A load blocks until the model settles, so it runs on a worker thread; the event loop keeps
serving other RPCs meanwhile.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from tritonclient.grpc import service_pb2 as pb

from ..server import InferenceServer

FILE_PREFIX = "file:"


class RepositoryService:
    """The three RPCs' bodies; the caller turns a TritonError into the gRPC status."""

    def __init__(self, server: InferenceServer) -> None:
        self.server = server

    async def index(self, request: pb.RepositoryIndexRequest) -> pb.RepositoryIndexResponse:
        entries = await _off_loop(self.server.repository_index, request.ready)
        response = pb.RepositoryIndexResponse()
        for entry in entries:
            response.models.add(**entry)
        return response

    async def load(self, request: pb.RepositoryModelLoadRequest) -> pb.RepositoryModelLoadResponse:
        parameters: dict[str, Any] = {}
        for key, value in request.parameters.items():
            if key == "config":
                parameters[key] = value.string_param
            elif key.startswith(FILE_PREFIX):
                parameters[key] = value.bytes_param
        await _off_loop(self.server.load_model, request.model_name, parameters)
        return pb.RepositoryModelLoadResponse()

    async def unload(
        self, request: pb.RepositoryModelUnloadRequest
    ) -> pb.RepositoryModelUnloadResponse:
        dependents = request.parameters.get("unload_dependents")
        await _off_loop(
            self.server.unload_model,
            request.model_name,
            bool(dependents is not None and dependents.bool_param),
        )
        return pb.RepositoryModelUnloadResponse()


async def _off_loop(work: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(None, work, *args)
