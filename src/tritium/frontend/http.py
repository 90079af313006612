"""The HTTP/REST frontend: KServe v2 with Triton's extensions, served by uvicorn.

A raw ASGI application with a small explicit router (the routes and answers of Triton's
http_server.cc: the same paths, the same status codes, `{"error": "..."}` bodies, empty 200/400
for health and readiness). Infer bodies are decoded in `http_request` and encoded in
`http_response`; `asgi_endpoint` serves it.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Awaitable, Callable
from urllib.parse import unquote_to_bytes

from ..errors import TritonError
from ..server import InferenceServer
from .asgi_endpoint import AsgiEndpoint
from .compression import accepted_encoding, compress, decompress
from .http_json import dumps
from .http_request import decode_infer_request, parse_header_length
from .http_response import encode_infer_response

log = logging.getLogger("tritium.http")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_JSON = b"application/json"
_TEXT = b"text/plain"
_OCTET = b"application/octet-stream"
_MODELS_PREFIX = "/v2/models/"
# Below this total size a binary response goes out as one joined buffer; above it, the header
# and each tensor are written as they are (no copy of large tensors).
_JOIN_LIMIT = 64 * 1024


def _headers(content_type: bytes | None, length: int, extra: list | None = None) -> list:
    headers = [(b"content-length", str(length).encode())]
    if content_type is not None:
        headers.append((b"content-type", content_type))
    if extra:
        headers.extend(extra)
    return headers


async def _reply(send: Send, status: int, body: bytes = b"",
                 content_type: bytes | None = _TEXT, extra: list | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": _headers(content_type, len(body), extra)})
    await send({"type": "http.response.body", "body": body})


async def _reply_json(send: Send, document: Any, status: int = 200) -> None:
    body = json.dumps(document, separators=(",", ":")).encode()
    await _reply(send, status, body, _JSON)


async def _reply_error(send: Send, status: int, message: str,
                       content_type: bytes | None = _JSON, extra: list | None = None) -> None:
    await _reply(send, status, dumps({"error": message}), content_type, extra)


async def _method_not_allowed(send: Send) -> None:
    await _reply_error(send, 405, "Method Not Allowed", _TEXT)


async def _not_found(send: Send) -> None:
    await _reply_error(send, 404, "Not Found", _TEXT)


async def _read_body(receive: Receive) -> bytes:
    message = await receive()
    body = message.get("body", b"")
    if not message.get("more_body", False):
        return body
    chunks = [body]
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ConnectionError("client disconnected")
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


class HttpApp:
    """The ASGI application: routes each request to the InferenceServer."""

    def __init__(self, server: InferenceServer) -> None:
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            await self._route(scope, receive, send)
        except ConnectionError:
            pass
        except Exception as exc:  # a bug here must not take the server down
            log.exception("HTTP %s %s failed", scope.get("method"), scope.get("path"))
            try:
                await _reply_error(send, 500, str(exc) or type(exc).__name__)
            except Exception:
                pass

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        method: str = scope["method"]
        if path.startswith(_MODELS_PREFIX):
            raw = scope.get("raw_path") or path.encode("utf-8")
            await self._model_route(raw.split(b"/")[3:], method, scope, receive, send)
        elif path == "/v2":
            if method != "GET":
                return await _method_not_allowed(send)
            await _reply_json(send, self.server.metadata())
        elif path == "/v2/health/live" or path == "/v2/health/ready":
            if method != "GET":
                return await _method_not_allowed(send)
            if path.endswith("live"):
                ok = self.server.is_live()
            else:
                ok = self.server.is_ready()
            await _reply(send, 200 if ok else 400)
        else:
            await _not_found(send)

    async def _model_route(self, parts: list[bytes], method: str, scope: Scope,
                           receive: Receive, send: Send) -> None:
        # /v2/models/{name}[/versions/{digits}][/ready|/infer|/config]
        if not parts or not parts[0]:
            return await _not_found(send)
        name = unquote_to_bytes(parts[0]).decode("utf-8", "replace")
        rest = parts[1:]
        version = ""
        if len(rest) >= 2 and rest[0] == b"versions" and rest[1].isdigit():
            version = rest[1].decode()
            rest = rest[2:]
        if not rest:
            if method != "GET":
                return await _method_not_allowed(send)
            return await self._guard(send, self._metadata(name, version, send))
        if len(rest) != 1:
            return await _not_found(send)
        kind = rest[0]
        if kind == b"infer":
            if method != "POST":
                return await _method_not_allowed(send)
            return await self._guard(send, self._infer(name, version, scope, receive, send))
        if kind == b"ready":
            if method != "GET":
                return await _method_not_allowed(send)
            if self.server.model_ready(name, version):
                return await _reply(send, 200)
            return await _reply_error(send, 400, "Model version not ready", _TEXT)
        if kind == b"config":
            if method != "GET":
                return await _method_not_allowed(send)
            return await self._guard(send, self._config(name, version, send))
        await _not_found(send)

    @staticmethod
    async def _guard(send: Send, handler: Awaitable[None]) -> None:
        """Run a handler; a TritonError becomes `{"error": ...}` with its HTTP status."""
        try:
            await handler
        except TritonError as exc:
            await _reply_error(send, exc.http_status, exc.message)

    async def _metadata(self, name: str, version: str, send: Send) -> None:
        await _reply_json(send, self.server.model_metadata(name, version))

    async def _config(self, name: str, version: str, send: Send) -> None:
        await _reply_json(send, self.server.model_config_json(name, version))

    async def _infer(self, name: str, version: str, scope: Scope,
                     receive: Receive, send: Send) -> None:
        model_version = int(version) if version else -1
        header_length_text = None
        content_encoding = None
        accept_encoding = None
        for key, value in scope["headers"]:
            if key == b"inference-header-content-length":
                header_length_text = value.decode("latin-1")
            elif key == b"content-encoding":
                content_encoding = value.decode("latin-1")
            elif key == b"accept-encoding":
                accept_encoding = value.decode("latin-1")
        # Like Triton: unknown and decoupled models are refused before the body is parsed, and
        # errors before parsing (and after inference) come as text/plain, the others as JSON.
        try:
            config = self.server.model_config(name, version)
            if config.model_transaction_policy.decoupled:
                raise TritonError.unsupported(
                    "HTTP end point doesn't support models with decoupled transaction policy"
                )
            if content_encoding and content_encoding not in ("identity", "gzip", "deflate"):
                return await _reply_error(
                    send, 501, "Unsupported compression type", _TEXT,
                    [(b"accept-encoding", b"gzip, deflate")],
                )
            body = await _read_body(receive)
            if content_encoding in ("gzip", "deflate"):
                body = decompress(body, content_encoding)
            header_length = parse_header_length(header_length_text, len(body))
        except TritonError as exc:
            return await _reply_error(send, exc.http_status, exc.message, _TEXT)

        request, plan = decode_infer_request(name, model_version, body, header_length, config)
        response = await self.server.infer(request)
        try:
            header, blobs = encode_infer_response(response, request, plan, config)
        except TritonError as exc:
            return await _reply_error(send, exc.http_status, exc.message, _TEXT)

        extra = []
        if blobs:
            content_type = _OCTET
            extra.append((b"inference-header-content-length", str(len(header)).encode()))
        else:
            content_type = _JSON
        if accept_encoding:
            encoding = accepted_encoding(accept_encoding)
            if encoding != "identity":
                payload = compress(b"".join([header, *blobs]), encoding)
                extra.append((b"content-encoding", encoding.encode()))
                return await _reply(send, 200, payload, content_type, extra)
        if not blobs:
            return await _reply(send, 200, header, content_type, extra)
        total = len(header) + sum(len(b) for b in blobs)
        if total <= _JOIN_LIMIT:
            return await _reply(send, 200, b"".join([header, *blobs]), content_type, extra)
        # Large tensors go out as they are, after the header: no joined copy.
        await send({"type": "http.response.start", "status": 200,
                    "headers": _headers(content_type, total, extra)})
        await send({"type": "http.response.body", "body": header, "more_body": True})
        last = len(blobs) - 1
        for index, blob in enumerate(blobs):
            await send({"type": "http.response.body", "body": blob, "more_body": index < last})


class HttpFrontend(AsgiEndpoint):
    """The HTTP/REST protocol for one InferenceServer on address:port."""

    def __init__(self, server: InferenceServer, address: str, port: int) -> None:
        super().__init__(HttpApp(server), address, port, "HTTPService")
