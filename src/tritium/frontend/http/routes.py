"""The HTTP/REST frontend: KServe v2 with Triton's extensions.

A small explicit router (the routes and answers of Triton's http_server.cc: the same paths, the
same status codes, `{"error": "..."}` bodies, empty 200/400 for health and readiness) over the
lean HTTP/1.1 `endpoint` and its `connection`s. Infer bodies are decoded in `request` and encoded in
`response`; the generate extension lives in `generate`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any
from urllib.parse import unquote_to_bytes

from ...errors import TritonError
from ...server import InferenceServer
from ..bulk_work import Decoding, later
from ..extensions.header_forward import HeaderPattern, forward_headers
from ..extensions.infer_failed import log_infer_failed
from ..extensions.json_codec import dumps
from ..extensions.restricted_api import HttpRestrictions, Restriction
from ..extensions.shared_memory import end_region_use
from ..loop_bridge import final_on_loop
from .bulk_decode import is_bulky, is_bulky_answer
from .compression import accepted_encoding, compress, decompress
from .connection import HttpConnection, Request
from .endpoint import HttpEndpoint
from .extension_routes import MODEL_KINDS, PATHS, ExtensionRoutes, MethodNotAllowed
from .generate import handle_generate
from .infer_dialect import KSERVE, InferDialect
from .limits import DEFAULT_MAX_INPUT_SIZE
from .repository import Answer, repository_handler, run_later
from .request import OutputPlan, decode_infer_request
from .response import encode_infer_response
from .shared_memory import PREFIXES as _SHM_PREFIXES
from .shared_memory import handle as _shared_memory_call
from .shared_memory import parse_path as _shared_memory_path

log = logging.getLogger("tritium.http")
# The method numbers Triton's verbose request line shows (libevhtp's htp_method).
_METHOD_CODES = {method: code for code, method in enumerate(
    (b"GET", b"HEAD", b"POST", b"PUT", b"DELETE", b"MKCOL", b"COPY", b"MOVE", b"OPTIONS",
     b"PROPFIND", b"PROPPATCH", b"LOCK", b"UNLOCK", b"TRACE", b"CONNECT", b"PATCH"))}

_JSON = b"application/json"
_TEXT = b"text/plain"
_MODELS_PREFIX = "/v2/models/"
_REPOSITORY_PREFIX = "/v2/repository/"
_ACCEPT_ENCODINGS = b"accept-encoding: gzip, deflate\r\n"
# A successful answer: its content type (None: none sent), extra header lines and body buffers.
_Body = tuple[bytes | None, bytes, list[Any]]


def _headers(content_type: bytes | None, length: int, extra: bytes = b"") -> bytes:
    """Header lines in the order the frontend has always sent them: length, type, the rest."""
    if content_type is None:
        return b"content-length: %d\r\n%s" % (length, extra)
    return b"content-length: %d\r\ncontent-type: %s\r\n%s" % (length, content_type, extra)


def _reply(conn: HttpConnection, status: int, body: bytes = b"",
           content_type: bytes | None = _TEXT, extra: bytes = b"") -> None:
    conn.respond(status, _headers(content_type, len(body), extra), body)


def _reply_json(conn: HttpConnection, document: Any, status: int = 200) -> None:
    body = json.dumps(document, separators=(",", ":")).encode()
    _reply(conn, status, body, _JSON)


def _reply_error(conn: HttpConnection, status: int, message: str,
                 content_type: bytes | None = _JSON, extra: bytes = b"") -> None:
    _reply(conn, status, dumps({"error": message}), content_type, extra)


def _method_not_allowed(conn: HttpConnection) -> None:
    _reply_error(conn, 405, "Method Not Allowed", _TEXT)


def _not_found(conn: HttpConnection) -> None:
    _reply_error(conn, 404, "Not Found", _TEXT)


def _internal_error(conn: HttpConnection, request: Request, exc: Exception) -> None:
    # A bug here must not take the server down.
    log.error("HTTP %s %s failed", request.method.decode("latin-1"), request.path, exc_info=exc)
    try:
        _reply_error(conn, 500, str(exc) or type(exc).__name__)
    except Exception:
        pass


class HttpApp:
    """Routes each request to the InferenceServer (a `server.Handler`)."""

    def __init__(self, server: InferenceServer,
                 restrictions: dict[str, Restriction] | None = None,
                 max_input_size: int = DEFAULT_MAX_INPUT_SIZE) -> None:
        self.server = server
        self.max_input_size = max_input_size
        self.header_forward: HeaderPattern | None = None  # --http-header-forward-pattern
        self.extensions = ExtensionRoutes(server)
        self.restrictions = HttpRestrictions(restrictions) if restrictions else None
        # How infer bodies are framed here (a cloud endpoint's app frames them its own way).
        self.dialect: InferDialect = KSERVE

    def __call__(self, conn: HttpConnection, request: Request) -> None:
        if log.isEnabledFor(logging.DEBUG):  # --log-verbose: Triton's line for each request
            log.debug("HTTP request: %d %s", _METHOD_CODES.get(request.method, -1),
                      request.path)
        try:
            self._route(conn, request)
        except ConnectionError:
            pass
        except Exception as exc:
            _internal_error(conn, request, exc)

    def _route(self, conn: HttpConnection, request: Request) -> None:
        path = request.path
        method = request.method
        if self.restrictions is not None:
            refusal = self.restrictions.refusal(path, request.headers)
            if refusal is not None:
                return _reply_error(conn, 403, refusal, _TEXT)
        if path.startswith(_MODELS_PREFIX) and path != "/v2/models/stats":
            return self._model_route(conn, request.raw_path.split(b"/")[3:], method, request)
        if path.startswith(_REPOSITORY_PREFIX):
            return self._repository(conn, request)
        if path == "/v2":
            if method != b"GET":
                return _method_not_allowed(conn)
            return _reply_json(conn, self.server.metadata())
        if path == "/v2/health/live" or path == "/v2/health/ready":
            return self.health_route(conn, method, live=path.endswith("live"))
        if path in PATHS:
            return self._extension(conn, self.extensions.server_route, path, method, request.body)
        if request.raw_path.startswith(_SHM_PREFIXES):
            return self._shared_memory(conn, request)
        return _not_found(conn)

    @staticmethod
    def _extension(conn: HttpConnection, route: Any, *args: Any) -> None:
        """A statistics, logging or trace route (extension_routes)."""
        try:
            document = route(*args)
        except MethodNotAllowed:
            return _reply_error(conn, 405, "Method Not Allowed")
        except TritonError as exc:
            return _reply_error(conn, exc.http_status, exc.message)
        if document is None:
            return _not_found(conn)
        _reply_json(conn, document)

    def _shared_memory(self, conn: HttpConnection, request: Request) -> None:
        call = _shared_memory_path(request.raw_path)
        if call is None:
            return _not_found(conn)
        cuda, name, action = call
        if request.method != (b"GET" if action == "status" else b"POST"):
            return _reply_error(conn, 405, "Method Not Allowed")
        try:
            document = _shared_memory_call(
                self.server.shared_memory, cuda, name, action, request.body
            )
        except TritonError as exc:
            return _reply_error(conn, exc.http_status, exc.message)
        _reply(conn, 200, b"" if document is None else dumps(document), _JSON)

    def _model_route(self, conn: HttpConnection, parts: list[bytes], method: bytes,
                     request: Request) -> None:
        # /v2/models/{name}[/versions/{digits}][/ready|/infer|/generate[_stream]|/config]
        if not parts or not parts[0]:
            return _not_found(conn)
        name = unquote_to_bytes(parts[0]).decode("utf-8", "replace")
        rest = parts[1:]
        version = ""
        if len(rest) >= 2 and rest[0] == b"versions" and rest[1].isdigit():
            version = rest[1].decode()
            rest = rest[2:]
        if not rest:
            if method != b"GET":
                return _method_not_allowed(conn)
            return self._guard(conn, self._metadata, name, version)
        if rest[0] in MODEL_KINDS:
            return self._extension(conn, self.extensions.model_route, name, version, rest,
                                   method, request.body)
        if len(rest) != 1:
            return _not_found(conn)
        kind = rest[0]
        if kind == b"infer":
            return self.infer_route(conn, name, version, request)
        if kind == b"generate" or kind == b"generate_stream":
            return handle_generate(
                self.server, conn, request, name, version, kind == b"generate_stream"
            )
        if kind == b"ready":
            if method != b"GET":
                return _method_not_allowed(conn)
            if self.server.model_ready(name, version):
                return _reply(conn, 200)
            return _reply_error(conn, 400, "Model version not ready", _TEXT)
        if kind == b"config":
            if method != b"GET":
                return _method_not_allowed(conn)
            return self._guard(conn, self._config, name, version)
        return _not_found(conn)

    def health_route(self, conn: HttpConnection, method: bytes, *, live: bool) -> None:
        """GET of the server's liveness or readiness: an empty 200, or 400 when it is not."""
        if method != b"GET":
            return _method_not_allowed(conn)
        ok = self.server.is_live() if live else self.server.is_ready()
        _reply(conn, 200 if ok else 400)

    def infer_route(self, conn: HttpConnection, name: str, version: str, request: Request,
                    dialect: InferDialect | None = None) -> None:
        """POST of an infer request for `name` (405 for another method), framed as `dialect`
        says (by default this app's)."""
        if request.method != b"POST":
            return _method_not_allowed(conn)
        try:
            self._infer(conn, name, version, request, dialect)
        except TritonError as exc:
            _reply_error(conn, exc.http_status, exc.message)

    @staticmethod
    def _guard(conn: HttpConnection, handler: Any, *args: Any) -> None:
        """Run a handler; a TritonError becomes `{"error": ...}` with its HTTP status."""
        try:
            handler(conn, *args)
        except TritonError as exc:
            _reply_error(conn, exc.http_status, exc.message)

    def _repository(self, conn: HttpConnection, request: Request) -> None:
        """Index, load, unload: answered from a worker thread once done (loads take time)."""
        handler = repository_handler(request.raw_path)
        if handler is None:
            return _not_found(conn)
        if request.method != b"POST":
            return _reply_error(conn, 405, "Method Not Allowed")  # JSON here, as Triton
        run_later(handler, self.server, request.body, partial(send_answer, conn, request))

    def _metadata(self, conn: HttpConnection, name: str, version: str) -> None:
        _reply_json(conn, self.server.model_metadata(name, version))

    def _config(self, conn: HttpConnection, name: str, version: str) -> None:
        _reply_json(conn, self.server.model_config_json(name, version))

    def _infer(self, conn: HttpConnection, name: str, version: str,
               http_request: Request, dialect: InferDialect | None = None) -> None:
        dialect = dialect or self.dialect
        model_version = int(version) if version else -1
        header_length_text = None
        content_encoding = None
        accept_encoding = None
        length_header = dialect.length_header
        compression = dialect.compression
        for key, value in http_request.headers:
            # A repeated header counts once, the first time, as in Triton (evhtp_kv_find).
            if key == length_header and header_length_text is None:
                header_length_text = value.decode("latin-1")
            elif not compression:
                continue
            elif key == b"content-encoding" and content_encoding is None:
                content_encoding = value.decode("latin-1")
            elif key == b"accept-encoding" and accept_encoding is None:
                accept_encoding = value.decode("latin-1")
        # Like Triton: unknown and decoupled models are refused before the body is parsed, and
        # errors before parsing (and after inference) come as text/plain, the others as JSON.
        # The model is looked up once: decode, inference and encode see the same version.
        try:
            model = self.server.resolve(name, version)
        except TritonError as exc:
            return _reply_error(conn, exc.http_status, exc.message, _TEXT)
        if model.decoupled:
            model.close()
            error = TritonError.unsupported(
                "HTTP end point doesn't support models with decoupled transaction policy")
            return _reply_error(conn, error.http_status, error.message, _TEXT)
        # Present but empty is as unknown as any other coding (Triton refuses it too).
        if content_encoding is not None and content_encoding not in (
            "identity", "gzip", "deflate"
        ):
            model.close()
            return _reply_error(
                conn, 501, "Unsupported compression type", _TEXT, _ACCEPT_ENCODINGS
            )
        decode = partial(self._decode, name, model_version, http_request.body, content_encoding,
                         header_length_text, model.config, dialect)
        if not is_bulky(http_request.body, content_encoding, header_length_text,
                        dialect.header_length):
            return self._decoded(conn, http_request, model, accept_encoding, dialect, decode)
        waiting = Decoding()
        conn.pending = waiting  # marked cancelled if the client goes away meanwhile
        later(decode, conn.loop, partial(
            self._after_decode, conn, http_request, model, accept_encoding, dialect, waiting))

    def _decode(self, name: str, model_version: int, body: bytes, content_encoding: str | None,
                header_length_text: str | None, config: Any, dialect: InferDialect
                ) -> tuple[Any, OutputPlan]:
        """The body -> (InferenceRequest, OutputPlan); faults before parsing raise _BodyError."""
        try:
            if content_encoding in ("gzip", "deflate"):
                body = decompress(body, content_encoding, self.max_input_size)
            header_length = dialect.header_length(header_length_text, len(body))
        except TritonError as exc:
            raise _BodyError(exc) from None
        return decode_infer_request(
            name, model_version, body, header_length, config, self.server.shared_memory
        )

    def _after_decode(self, conn: HttpConnection, http_request: Request, model: Any,
                      accept_encoding: str | None, dialect: InferDialect, waiting: Decoding,
                      decoded: Future[tuple[Any, OutputPlan]]) -> None:
        """A body decoded off the loop: the request goes on, unless its client has gone."""
        if waiting.cancelled:
            model.close()
            return
        conn.pending = None
        try:
            self._decoded(conn, http_request, model, accept_encoding, dialect, decoded.result)
        except ConnectionError:
            pass
        except TritonError as exc:
            _reply_error(conn, exc.http_status, exc.message)
        except Exception as exc:
            _internal_error(conn, http_request, exc)

    def _decoded(self, conn: HttpConnection, http_request: Request, model: Any,
                 accept_encoding: str | None, dialect: InferDialect,
                 decoded: Callable[[], tuple[Any, OutputPlan]]) -> None:
        # The model is held until submitted: closed unsubmitted if decoding failed.
        with model:
            try:
                request, plan = decoded()
            except _BodyError as exc:
                log_infer_failed(None, exc.error)
                return _reply_error(conn, exc.error.http_status, exc.error.message, _TEXT)
            except TritonError as exc:
                log_infer_failed(None, exc)
                raise
            if self.header_forward is not None and http_request.header_names is not None:
                forward_headers(request, self.header_forward, zip(
                    http_request.header_names, (value for _, value in http_request.headers),
                    strict=True))
            if plan.classifies:
                plan.labels = model.labels
            if self.server.trace_settings.active:
                self.server.trace_settings.start(request, "HTTP_RECV", http_request.recv_start_ns,
                                                 http_request.recv_end_ns)
            # If the frontend stops before the answer, the request is marked cancelled.
            conn.pending = request
            try:
                final_on_loop(model.submit, request, partial(
                    _answer, conn, http_request, request, plan, model.config, accept_encoding,
                    dialect), conn.loop)
            except TritonError as exc:
                log_infer_failed(request.id, exc)
                raise



class _BodyError(Exception):
    """A fault found before the body is parsed (its coding, its header length): answered as
    text/plain, as Triton does, where parse errors are JSON."""

    def __init__(self, error: TritonError) -> None:
        super().__init__(error.message)
        self.error = error


def send_answer(conn: HttpConnection, http_request: Request, answer: Answer) -> None:
    """A repository request's answer: a JSON document, `{"error": ...}`, or an empty 200."""
    status, document = answer
    try:
        if document is None:
            return _reply(conn, status, b"", _JSON)
        _reply_json(conn, document, status)
    except ConnectionError:
        pass
    except Exception as exc:
        _internal_error(conn, http_request, exc)


def _answer(conn: HttpConnection, http_request: Request, request: Any, plan: OutputPlan,
            config: Any, accept_encoding: str | None, dialect: InferDialect,
            response: Any) -> None:
    """The infer request's response, on the event loop: its body made, then sent. A body that
    takes long to make (a BYTES output of many elements, a large output in JSON, a large
    answer to compress: `bulk_decode.is_bulky_answer`) is made on the bulk thread, then sent
    from the loop."""
    encoding = accepted_encoding(accept_encoding) if accept_encoding else "identity"
    body = partial(_answer_body, response, request, plan, config, dialect, encoding)
    if response.error is None and is_bulky_answer(response.outputs, plan, encoding):
        return later(body, conn.loop, lambda made: _send_encoded(
            conn, http_request, request, dialect, response, made.result))
    _send_encoded(conn, http_request, request, dialect, response, body)


def _answer_body(response: Any, request: Any, plan: OutputPlan, config: Any,
                 dialect: InferDialect, encoding: str) -> _Body:
    """A successful response's content type, extra header lines and body buffers (not
    joined), compressed as the client's Accept-Encoding chose."""
    header, blobs = encode_infer_response(response, request, plan, config)
    extra = b""
    if blobs:
        content_type, extra = dialect.binary(len(header))
    else:
        content_type = dialect.json
    if encoding != "identity":
        extra += b"content-encoding: " + encoding.encode() + b"\r\n"
        return content_type, extra, [compress([header, *blobs], encoding)]
    return content_type, extra, [header, *blobs]


def _send_encoded(conn: HttpConnection, http_request: Request, request: Any,
                  dialect: InferDialect, response: Any, body: Callable[[], _Body]) -> None:
    """Send the answer `body()` gives, on the event loop; the request's shared-memory
    regions are let go once it has (its outputs are written into them meanwhile)."""
    try:
        trace = request.trace
        if trace is None:
            return _answer_untraced(conn, http_request, dialect, response, body)
        with trace.sending("HTTP_SEND"):
            _answer_untraced(conn, http_request, dialect, response, body)
    finally:
        end_region_use(request)


def _answer_untraced(conn: HttpConnection, http_request: Request, dialect: InferDialect,
                     response: Any, body: Callable[[], _Body]) -> None:
    try:
        error = response.error
        if error is not None:
            status = error.http_status
            if dialect.failure_status is not None:
                status = dialect.failure_status(error)
            return _reply_error(conn, status, error.message)
        _send_response(conn, body)
    except ConnectionError:
        pass
    except Exception as exc:
        _internal_error(conn, http_request, exc)


def _send_response(conn: HttpConnection, body: Callable[[], _Body]) -> None:
    try:
        content_type, extra, parts = body()
    except TritonError as exc:
        return _reply_error(conn, exc.http_status, exc.message, _TEXT)
    total = sum(len(part) for part in parts)
    # Large tensors go out as they are, after the header: no joined copy (`respond`).
    conn.respond(200, _headers(content_type, total, extra), parts=parts)


class HttpFrontend(HttpEndpoint):
    """The HTTP/REST protocol for one InferenceServer on address:port."""

    def __init__(self, server: InferenceServer, address: str, port: int,
                 restrictions: dict[str, Restriction] | None = None,
                 max_input_size: int = DEFAULT_MAX_INPUT_SIZE) -> None:
        self.app = HttpApp(server, restrictions, max_input_size)
        super().__init__(self.app, address, port, "HTTPService", max_input_size=max_input_size)

    def forward_headers(self, pattern: HeaderPattern) -> None:
        """--http-header-forward-pattern: matching request headers become request parameters."""
        self.keep_header_names = True
        self.app.header_forward = pattern
