"""Triton's SageMaker endpoint: the HTTP frontend's app with SageMaker's routes and framing.

- `GET /ping`: the server's readiness (SAGEMAKER_TRITON_PING_MODE=live: its liveness).
- `POST /invocations`: an inference of SAGEMAKER_TRITON_DEFAULT_MODEL_NAME (Triton infers the
  model "unspecified_SAGEMAKER_TRITON_DEFAULT_MODEL_NAME" when it is not set).
- `/models`: the multi-model endpoint (`multi_model`): GET lists, POST loads,
  `GET|DELETE /models/<name>` describes or unloads, `POST /models/<name>/invoke` infers.
- Anything else: a bare 400.

Infer bodies are KServe's, the JSON header's length in the Content-Type
(`application/vnd.sagemaker-triton.binary+json;json-header-size=<N>`) both ways, never
compressed; an inference that fails once submitted answers 400 (507 when out of memory), as
SageMaker expects.
"""

from __future__ import annotations

import logging
import os
import re
from functools import partial

from ...server import InferenceServer
from ..http.connection import HttpConnection, Request
from ..http.endpoint import HttpEndpoint
from ..http.infer_dialect import content_type_dialect
from ..http.repository import Answer, run_later
from ..http.routes import HttpApp, send_answer
from .multi_model import TARGET_MODEL_HEADER, MultiModels, failure_status

log = logging.getLogger("tritium.http")

BINARY_TYPE = "application/vnd.sagemaker-triton.binary+json"
SERVICE = "Sagemaker HTTPService"
UNSPECIFIED_MODEL = "unspecified_SAGEMAKER_TRITON_DEFAULT_MODEL_NAME"
_MODELS = re.compile(r"/models(?:/)?([^/]+)?(/invoke)?")
_EMPTY = b"content-length: 0\r\n"


class SageMakerApp(HttpApp):
    """SageMaker's routes over the HTTP frontend's handlers."""

    def __init__(self, server: InferenceServer, max_input_size: int) -> None:
        super().__init__(server, None, max_input_size)
        self.dialect = content_type_dialect(BINARY_TYPE, labels_response=True,
                                            failure_status=failure_status)
        self.ping_live = os.environ.get("SAGEMAKER_TRITON_PING_MODE", "ready") == "live"
        self.default_model = os.environ.get("SAGEMAKER_TRITON_DEFAULT_MODEL_NAME",
                                            UNSPECIFIED_MODEL)
        self.models = MultiModels(server)

    def _route(self, conn: HttpConnection, request: Request) -> None:
        path = request.path
        method = request.method
        if log.isEnabledFor(logging.DEBUG):
            log.debug("SageMaker request: %s %s", method.decode("latin-1"), path)
        if path == "/ping":
            return self.health_route(conn, method, live=self.ping_live)
        if path == "/invocations":
            return self.infer_route(conn, self.default_model, "", request)
        match = _MODELS.fullmatch(path)
        if match is not None:
            name, invoke = match.group(1) or "", match.group(2)
            target = next((v.decode("utf-8", "replace") for k, v in request.headers
                           if k == TARGET_MODEL_HEADER), None)
            # As Triton reads them: the method decides, then whether `/invoke` follows.
            if method == b"GET":
                if not name:
                    return send_answer(conn, request, (200, self.models.listing()))
                return send_answer(conn, request, self.models.describe(name))
            if method == b"POST":
                if invoke:
                    return self._invoke(conn, request, name, target)
                return self._later(conn, request, partial(self.models.load, request.body,
                                                          target))
            if method == b"DELETE":
                return self._later(conn, request, partial(self.models.unload, name, target))
        log.debug("SageMaker error: %s %s - 400", method.decode("latin-1"), path)
        conn.respond(400, _EMPTY)

    def _invoke(self, conn: HttpConnection, request: Request, name: str,
                target: str | None) -> None:
        if not self.models.loaded(name):
            return conn.respond(404, _EMPTY)
        log.info("Invoking SageMaker TargetModel: %s", target or name)
        self.infer_route(conn, target or name, "", request)

    def _later(self, conn: HttpConnection, request: Request, work: partial[Answer]) -> None:
        """A load or unload: run on a worker thread, answered from the loop once done."""
        run_later(lambda _server, _body: work(), self.server, request.body,
                  partial(send_answer, conn, request))


class SageMakerFrontend(HttpEndpoint):
    """The SageMaker endpoint of one InferenceServer on address:port."""

    def __init__(self, server: InferenceServer, address: str, port: int,
                 max_input_size: int) -> None:
        self.app = SageMakerApp(server, max_input_size)
        super().__init__(self.app, address, port, SERVICE, max_input_size=max_input_size)


__all__ = ["BINARY_TYPE", "SERVICE", "SageMakerFrontend", "UNSPECIFIED_MODEL"]
