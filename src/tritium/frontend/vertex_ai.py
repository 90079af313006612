"""Triton's Vertex AI endpoint (`--allow-vertex-ai`, on by default when AIP_MODE=PREDICTION).

Vertex AI sends a container two kinds of request, on the port AIP_HTTP_PORT names: a GET on
AIP_HEALTH_ROUTE (the server's readiness) and a POST on AIP_PREDICT_ROUTE (an inference of the
default model: `--vertex-ai-default-model`, or the repository's only model). A predict request
with an `X-Vertex-Ai-Triton-Redirect: <path>` header is any of the KServe routes instead (infer,
metadata, readiness, configuration and statistics of a model, server metadata and health,
shared memory, the repository), and `metrics` the Prometheus text; it is answered as that route
(read routes as if they were a GET), under the HTTP endpoint's `--http-restricted-api`: Triton
2.51 applies none here, so the redirect reached every group an operator had restricted on the
HTTP port (the predict and health routes themselves stay open, as Vertex AI calls them). Anything
else is a bare 400, as Triton answers it.

Infer bodies are KServe's, with the JSON header's length in the Content-Type
(`application/vnd.vertex-ai-triton.binary+json;json-header-size=<N>`) and no compression;
binary answers are labelled as KServe labels them. This is the HTTP frontend's app with its own
router and infer dialect, on the same HTTP server.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable

from ..errors import TritonError
from ..server import InferenceServer
from .extensions.restricted_api import Restriction
from .http.connection import HttpConnection, Request
from .http.endpoint import HttpEndpoint
from .http.infer_dialect import content_type_dialect
from .http.routes import HttpApp

log = logging.getLogger("tritium.http")

BINARY_TYPE = "application/vnd.vertex-ai-triton.binary+json"
REDIRECT_HEADER = b"x-vertex-ai-triton-redirect"
SERVICE = "Vertex AI HTTPService"

# The KServe routes a redirect may name (Triton's patterns), with the method each is read as.
_MODEL = re.compile(r"/v2/models/([^/]+)(?:/versions/([0-9]+))?(?:/(infer|ready|config|stats))?")
_HEALTH = re.compile(r"/v2/health/(?:live|ready)")
_SHARED_MEMORY = re.compile(
    r"/v2/(?:system|cuda)sharedmemory(?:/region/[^/]+)?/(status|register|unregister)")
_REPOSITORY = re.compile(r"/v2/repository(?:/[^/]+)?/(?:index|models/[^/]+/(?:load|unload))")


def _redirect_method(path: str) -> bytes | None:
    """The method a redirected request to `path` is served as; None: not a redirect target."""
    if path in ("/v2", "/v2/models/stats") or _HEALTH.fullmatch(path):
        return b"GET"
    model = _MODEL.fullmatch(path)
    if model is not None:
        return b"POST" if model.group(3) == "infer" else b"GET"
    memory = _SHARED_MEMORY.fullmatch(path)
    if memory is not None:
        return b"GET" if memory.group(1) == "status" else b"POST"
    if _REPOSITORY.fullmatch(path):
        return b"POST"
    return None


def _route_pattern(route: str) -> re.Pattern[str]:
    """Triton matches the environment's routes as regular expressions (a plain route matches
    itself); one that is not a valid expression is taken as it is written."""
    try:
        return re.compile(route)
    except re.error:
        return re.compile(re.escape(route))


class VertexAiApp(HttpApp):
    """The predict and health routes over the HTTP frontend's handlers."""

    def __init__(self, server: InferenceServer, predict_route: str, health_route: str,
                 metrics_text: Callable[[], bytes] | None, max_input_size: int,
                 restrictions: dict[str, Restriction] | None = None) -> None:
        # The restrictions apply to redirects (HttpApp's routing), not the two routes here.
        super().__init__(server, restrictions, max_input_size)
        self.dialect = content_type_dialect(BINARY_TYPE, labels_response=False)
        self.predict_path = predict_route
        self.health_path = health_route
        self._predict = _route_pattern(predict_route)
        self._health = _route_pattern(health_route)
        self.default_model = ""  # settled when the endpoint starts (the models are loaded)
        self.metrics_text = metrics_text

    def _route(self, conn: HttpConnection, request: Request) -> None:
        path = request.path
        if log.isEnabledFor(logging.DEBUG):
            log.debug("Vertex AI request: %s %s", request.method.decode("latin-1"), path)
        if self._health.fullmatch(path):
            return self.health_route(conn, request.method, live=False)
        if self._predict.fullmatch(path):
            redirect = next((v for k, v in request.headers if k == REDIRECT_HEADER), None)
            if redirect is None:
                return self.infer_route(conn, self.default_model, "", request)
            if request.method != b"POST":
                return conn.respond(405, b"content-length: 0\r\n")
            if self._redirect(conn, request, "/" + redirect.decode("latin-1")):
                return None
        log.debug("Vertex AI error: %s %s - 400", request.method.decode("latin-1"), path)
        conn.respond(400, b"content-length: 0\r\n")

    def _redirect(self, conn: HttpConnection, request: Request, path: str) -> bool:
        """Serve the request as the route `path` names; False: no such route."""
        log.debug("Redirecting Vertex AI request: %s", path)
        if path == "/metrics":
            if self.metrics_text is None:  # metrics are off: Triton's metrics call fails
                conn.respond(400, b"content-length: 0\r\n")
            else:
                text = self.metrics_text()
                conn.respond(200, b"content-length: %d\r\ncontent-type: text/plain; "
                             b"charset=utf-8\r\n" % len(text), text)
            return True
        method = _redirect_method(path)
        if method is None:
            return False
        redirected = Request(method, path.encode("utf-8"), request.headers, request.body)
        redirected.recv_start_ns, redirected.recv_end_ns = request.recv_start_ns, \
            request.recv_end_ns
        super()._route(conn, redirected)
        return True


def default_model(server: InferenceServer, named: str) -> str:
    """The model a plain predict request infers: `named`, which must be loaded, or the only
    model the server has ready (TritonError with Triton's messages otherwise)."""
    ready = [entry["name"] for entry in server.repository_index(ready_only=True)]
    if not named:
        if len(ready) != 1:
            raise TritonError.invalid_arg(
                "Expect the model repository contains only a single model if default model "
                "is not specified")
        return ready[0]
    if named not in ready:
        raise TritonError.invalid_arg(f"Expect the default model '{named}' is loaded")
    return named


class VertexAiFrontend(HttpEndpoint):
    """The Vertex AI endpoint of one InferenceServer on address:port."""

    def __init__(self, server: InferenceServer, address: str, port: int, default_model: str,
                 metrics_text: Callable[[], bytes] | None, max_input_size: int,
                 restrictions: dict[str, Restriction] | None = None) -> None:
        self.server = server
        self.named_model = default_model
        self.app = VertexAiApp(server, os.environ.get("AIP_PREDICT_ROUTE", ""),
                               os.environ.get("AIP_HEALTH_ROUTE", ""), metrics_text,
                               max_input_size, restrictions)
        super().__init__(self.app, address, port, SERVICE, max_input_size=max_input_size)

    async def start(self) -> None:
        """Start once the models are loaded, as Triton creates the endpoint: OSError in
        Triton's words if a route is not set or there is no default model."""
        try:
            if not self.app.predict_path:
                raise TritonError.invalid_arg(
                    "API_PREDICT_ROUTE is not defined for Vertex AI endpoint")
            if not self.app.health_path:
                raise TritonError.invalid_arg(
                    "AIP_HEALTH_ROUTE is not defined for Vertex AI endpoint")
            self.app.default_model = default_model(self.server, self.named_model)
        except TritonError as exc:
            raise OSError(f"failed to start Vertex AI service: {exc.code.status_text} - "
                          f"{exc.message}") from None
        await super().start()


__all__ = ["BINARY_TYPE", "REDIRECT_HEADER", "VertexAiFrontend", "default_model"]
