"""The model repository extension over gRPC: RepositoryIndex, RepositoryModelLoad and
RepositoryModelUnload, with Triton's status codes (the same TritonError codes as over HTTP).
Parameters of the wrong kind and a `repository_name` are refused before anything loads, in
Triton 2.51's words.

A load or unload is queued with the model's others (the server runs them one at a time per
model on its model-control workers) and awaited: no thread waits for it, and the event loop
keeps serving other RPCs meanwhile. The index reads the repositories on a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from tritonclient.grpc import service_pb2 as pb

from ...errors import TritonError
from ...server import InferenceServer

FILE_PREFIX = "file:"


class RepositoryService:
    """The three RPCs' bodies; the caller turns a TritonError into the gRPC status."""

    def __init__(self, server: InferenceServer) -> None:
        self.server = server

    async def index(self, request: pb.RepositoryIndexRequest) -> pb.RepositoryIndexResponse:
        _no_repository_name(request)
        entries = await _off_loop(self.server.repository_index, request.ready)
        response = pb.RepositoryIndexResponse()
        for entry in entries:
            response.models.add(**entry)
        return response

    async def load(self, request: pb.RepositoryModelLoadRequest) -> pb.RepositoryModelLoadResponse:
        _no_repository_name(request)
        parameters: dict[str, Any] = {}
        for key, value in request.parameters.items():
            if key == "config":
                parameters[key] = _param(value, "string_param", f"load parameter '{key}'")
            elif key.startswith(FILE_PREFIX):
                parameters[key] = _param(value, "bytes_param", f"load parameter '{key}'")
            else:
                raise TritonError.invalid_arg(f"unrecognized load parameter '{key}'.")
        await asyncio.wrap_future(self.server.request_load(request.model_name, parameters))
        return pb.RepositoryModelLoadResponse()

    async def unload(
        self, request: pb.RepositoryModelUnloadRequest
    ) -> pb.RepositoryModelUnloadResponse:
        _no_repository_name(request)
        dependents = request.parameters.get("unload_dependents")
        if dependents is not None:
            dependents = _param(dependents, "bool_param", "'unload_dependents' parameter")
        await asyncio.wrap_future(
            self.server.request_unload(request.model_name, bool(dependents)))
        return pb.RepositoryModelUnloadResponse()


def _no_repository_name(request: Any) -> None:
    if request.repository_name:
        raise TritonError.unsupported("'repository_name' specification is not supported")


def _param(value: pb.ModelRepositoryParameter, kind: str, what: str) -> Any:
    if value.WhichOneof("parameter_choice") != kind:
        raise TritonError.invalid_arg(f"invalid value type for {what}, expected {kind}.")
    return getattr(value, kind)


async def _off_loop(work: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(None, work, *args)
