"""HTTP routes of the statistics, logging and trace extensions.

`routes.HttpApp` hands these paths here; each route returns the JSON document to answer with,
raises TritonError (answered with its status), or raises MethodNotAllowed.
"""

from __future__ import annotations

from typing import Any

from ...server import InferenceServer
from ..extensions import logging_api, trace_api
from ..extensions.statistics_api import statistics_json

# Server-level paths served here.
PATHS = frozenset({"/v2/models/stats", "/v2/logging", "/v2/trace/setting"})
# First path segment after /v2/models/<name>[/versions/<v>] served here.
MODEL_KINDS = frozenset({b"stats", b"trace"})


class MethodNotAllowed(Exception):
    """The path exists, the method does not."""


class ExtensionRoutes:
    def __init__(self, server: InferenceServer) -> None:
        self.server = server

    def server_route(self, path: str, method: bytes, body: bytes) -> dict[str, Any]:
        if path == "/v2/models/stats":
            _expect(method, b"GET")
            return statistics_json(self.server.model_statistics())
        if path == "/v2/logging":
            if method == b"GET":
                return self.server.log_settings.as_json()
            _expect(method, b"POST")
            return logging_api.http_update(self.server.log_settings, body)
        return self._trace("", method, body)

    def model_route(self, name: str, version: str, rest: list[bytes], method: bytes,
                    body: bytes) -> dict[str, Any] | None:
        """None: no such path (404)."""
        if rest == [b"stats"]:
            _expect(method, b"GET")
            return statistics_json(self.server.model_statistics(name, version))
        if rest == [b"trace", b"setting"] and not version:
            return self._trace(name, method, body)
        return None

    def _trace(self, model: str, method: bytes, body: bytes) -> dict[str, Any]:
        if method == b"GET":
            return trace_api.http_get(self.server, model)
        _expect(method, b"POST")
        return trace_api.http_update(self.server, model, body)


def _expect(method: bytes, allowed: bytes) -> None:
    if method != allowed:
        raise MethodNotAllowed()


__all__ = ["MODEL_KINDS", "PATHS", "ExtensionRoutes", "MethodNotAllowed"]
