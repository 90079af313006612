"""Restricted APIs: `--http-restricted-api` / `--grpc-restricted-protocol` (Triton's
RestrictedFeatures).

A group of endpoints (health, metadata, inference, ...) can require a header `<key>: <value>`;
a call without it gets HTTP 403 or gRPC UNAVAILABLE with Triton's messages. Every endpoint's
group is listed here, in one place, so an endpoint added to either frontend is covered by
adding its path or RPC name below. Nothing is checked (and nothing costs) when no group is
restricted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import grpc

# Triton's group names, in the order its help text lists them.
GROUPS = (
    "health", "metadata", "inference", "shared-memory", "model-config", "model-repository",
    "statistics", "trace", "logging",
)

# HTTP: (path pattern, group), first match wins. The method does not matter: Triton checks the
# restriction before the method, so a restricted path answers 403 to every method.
_MODEL = r"/v2/models/[^/]+(?:/versions/[0-9]+)?"
_HTTP_ROUTES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(pattern), group)
    for pattern, group in (
        (r"/v2/health/(?:live|ready)", "health"),
        (r"/v2", "metadata"),
        (r"/v2/models/stats", "statistics"),
        (_MODEL, "metadata"),
        (_MODEL + r"/ready", "health"),
        (_MODEL + r"/config", "model-config"),
        (_MODEL + r"/(?:infer|generate|generate_stream)", "inference"),
        (_MODEL + r"/stats", "statistics"),
        (r"/v2/models/[^/]+/trace/setting", "trace"),
        (r"/v2/trace/setting", "trace"),
        (r"/v2/logging", "logging"),
        (r"/v2/repository/index", "model-repository"),
        (r"/v2/repository/models/[^/]+/(?:load|unload)", "model-repository"),
        (r"/v2/(?:systemsharedmemory|cudasharedmemory)(?:/region/[^/]+)?"
         r"/(?:status|register|unregister)", "shared-memory"),
    )
]

# gRPC: RPC name -> group, for inference.GRPCInferenceService and grpc.health.v1.Health.
GRPC_METHODS: dict[str, str] = {
    "ServerLive": "health",
    "ServerReady": "health",
    "ModelReady": "health",
    "Check": "health",
    "ServerMetadata": "metadata",
    "ModelMetadata": "metadata",
    "ModelInfer": "inference",
    "ModelStreamInfer": "inference",
    "ModelConfig": "model-config",
    "ModelStatistics": "statistics",
    "RepositoryIndex": "model-repository",
    "RepositoryModelLoad": "model-repository",
    "RepositoryModelUnload": "model-repository",
    "SystemSharedMemoryStatus": "shared-memory",
    "SystemSharedMemoryRegister": "shared-memory",
    "SystemSharedMemoryUnregister": "shared-memory",
    "CudaSharedMemoryStatus": "shared-memory",
    "CudaSharedMemoryRegister": "shared-memory",
    "CudaSharedMemoryUnregister": "shared-memory",
    "TraceSetting": "trace",
    "LogSettings": "logging",
}

# Triton prefixes the key with this in gRPC metadata (grpc_server.cc).
GRPC_HEADER_PREFIX = "triton-grpc-protocol-"


@dataclass(frozen=True)
class Restriction:
    """The header a restricted group requires; `key` as given (messages show it so)."""

    key: str
    value: str


def parse_restriction(flag: str, text: str) -> tuple[list[str], Restriction]:
    """`<groups>:<key>=<value>` -> (groups, restriction), with Triton's messages; ValueError
    for a malformed setting or an unknown group."""
    groups_text, colon, setting = text.partition(":")
    key, equals, value = setting.partition("=")
    if not colon or not equals:
        raise ValueError(
            f"{flag} option format is '<config name>:<setting>=<value>'. Got {text}"
        )
    groups = groups_text.split(",")
    for group in groups:
        if group not in GROUPS:
            raise ValueError(f"unknown restricted {_feature(flag)} '{group}' ")
    return groups, Restriction(key, value)


def _feature(flag: str) -> str:
    """What Triton's messages call a group: a gRPC "protocol", an HTTP "api"."""
    return "protocol" if flag.startswith("--grpc") else "api"


def build_restrictions(flag: str, values: Iterable[str]) -> dict[str, Restriction]:
    """Every occurrence of the flag -> group -> restriction; a group named twice is an error."""
    restrictions: dict[str, Restriction] = {}
    for text in values:
        groups, restriction = parse_restriction(flag, text)
        for group in groups:
            if group in restrictions:
                raise ValueError(
                    f"restricted {_feature(flag)} '{group}' can not be specified in multiple "
                    "config groups"
                )
            restrictions[group] = restriction
    return restrictions


def http_group(path: str) -> str | None:
    """The group of an HTTP path (None: not an API endpoint; it answers 404 anyway)."""
    for pattern, group in _HTTP_ROUTES:
        if pattern.fullmatch(path):
            return group
    return None


class HttpRestrictions:
    """Checks HTTP requests' headers against the restricted groups."""

    def __init__(self, restrictions: dict[str, Restriction]) -> None:
        self._restrictions = {
            group: (r.key, r.key.lower().encode("latin-1"), r.value.encode("latin-1"))
            for group, r in restrictions.items()
        }

    def refusal(self, path: str, headers: list[tuple[bytes, bytes]]) -> str | None:
        """Triton's message if this request lacks its group's header, else None."""
        group = http_group(path)
        if group is None or group not in self._restrictions:
            return None
        key, wire_key, value = self._restrictions[group]
        for name, given in headers:
            if name == wire_key and given == value:
                return None
        return f"This API is restricted, expecting header '{key}'"


def restrict_grpc(handlers: dict[str, Any], restrictions: dict[str, Restriction]
                  ) -> dict[str, Any]:
    """The handlers, with each restricted RPC checking its caller's metadata first."""
    restricted = dict(handlers)
    for name, handler in handlers.items():
        group = GRPC_METHODS.get(name)
        if group in restrictions:
            restricted[name] = _guarded(handler, restrictions[group])
    return restricted


def _guarded(handler: Any, restriction: Restriction) -> Any:
    """`handler` (a grpc.RpcMethodHandler, or the gRPC frontend's ImmediateUnary, which has a
    `body`) checking the caller's metadata first."""
    key = GRPC_HEADER_PREFIX + restriction.key
    wire_key = key.lower()
    message = f"This protocol is restricted, expecting header '{key}'"

    def allowed(context: Any) -> bool:
        return any(k == wire_key and v == restriction.value
                   for k, v in context.invocation_metadata() or ())

    body = getattr(handler, "body", None)
    if body is not None:

        def immediate(request: Any, call: Any) -> None:
            if not allowed(call.context):
                return call.abort(grpc.StatusCode.UNAVAILABLE, message)
            body(request, call)

        return handler._replace(body=immediate)

    if handler.unary_unary is not None:
        inner: Callable[..., Any] = handler.unary_unary

        async def unary(request: Any, context: Any) -> Any:
            if not allowed(context):
                await context.abort(grpc.StatusCode.UNAVAILABLE, message)
            return await inner(request, context)

        return grpc.unary_unary_rpc_method_handler(
            unary, handler.request_deserializer, handler.response_serializer
        )

    stream_stream = handler.stream_stream
    assert stream_stream is not None  # every Triton method is unary or a bidirectional stream
    stream_inner: Callable[..., Any] = stream_stream

    async def stream(requests: Any, context: Any) -> Any:
        if not allowed(context):
            await context.abort(grpc.StatusCode.UNAVAILABLE, message)
        async for response in stream_inner(requests, context):
            yield response

    return grpc.stream_stream_rpc_method_handler(
        stream, handler.request_deserializer, handler.response_serializer
    )


__all__ = [
    "GROUPS", "GRPC_METHODS", "HttpRestrictions", "Restriction", "build_restrictions",
    "http_group", "restrict_grpc",
]
