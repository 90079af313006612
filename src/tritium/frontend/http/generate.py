"""Triton's generate extension: `POST /v2/models/M[/versions/V]/generate` and `/generate_stream`.

A text-oriented body for LLM-style models, read as Triton's http_server.cc reads it
(GenerateRequestClass): each top-level JSON member whose name is a model input becomes that
input (a scalar or a list; a string is BYTES), every other member a request parameter, and the
members of `parameters` the same way. An input's shape comes from the model's metadata shape
(batch dimension included): fixed dimensions take their size, the innermost variable one takes
what is left of the top-level element count, the others 1.

Each response becomes one flat JSON object: `id` (when the request had one), `model_name`,
`model_version`, the response parameters, then every output by name (one element unwrapped to a
scalar), all in name order (Triton keeps them in a std::map). `/generate` answers with the one
response; a model that sends any other number of responses gets an error body under the first
response's status, as Triton sends it. `/generate_stream` answers with server-sent events,
`data: {...}\\n\\n` per response, the status taken from the first response (400 if it is an
error, whatever the error's code, as Triton 2.51 does); a later error arrives as a
`data: {"error": ...}` event. Errors before inference starts are ordinary JSON error
answers. A client that goes away mid-answer cancels the request (the HTTP connection marks it).

A body of a megabyte or more is decoded off the event loop (frontend/bulk_work.py), as infer
bodies are, its large numeric arrays read in slices (json_spans.py), so the GIL changes hands
while it is.
Triton 2.51 does not decompress generate bodies: any Content-Encoding but identity is refused
with 400, and responses are never compressed. Triton answers 500 for JSON it cannot read into a
tensor (its JSON helpers always say INTERNAL); those answer 400 here, as for infer.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any

from ...errors import TritonError
from ...request import InferenceRequest, InferenceResponse, log_prefix, parse_version
from ...server import InferenceServer
from ...tensor import Tensor, element_count, wire_datatype
from ..bulk_work import Decoding, later
from ..extensions.json_codec import NOT_STRING, dumps, nesting_too_deep, parse_error
from ..loop_bridge import each_on_loop
from .connection import HttpConnection, Request
from .json_data import (
    LARGE_OUTPUT,
    JsonSplice,
    array_from_json,
    json_from_array,
    json_text_in_slices,
)
from .json_spans import BULK, JsonSpan, load_generate_json

log = logging.getLogger("tritium.http")

_JSON_HEADERS = b"content-type: application/json\r\n"
_SSE_HEADERS = b"content-type: text/event-stream; charset=utf-8\r\n"
_SINGLE_RESPONSE = (
    "generate expects model to produce exactly 1 response, use generate stream for model that "
    "generates various number of responses"
)
_PARAMETERS = "parameters"


def handle_generate(server: InferenceServer, conn: HttpConnection, http_request: Request,
                    name: str, version: str, streaming: bool) -> None:
    """Answer one generate or generate_stream request on `conn`."""
    if http_request.method != b"POST":
        return _reply_error(conn, 405, "Method Not Allowed")
    try:
        model_version = parse_version(version)
        # One lookup: the body is read against the version the request then runs on.
        model = server.resolve(name, version)
    except TritonError as exc:
        return _reply_error(conn, exc.http_status, exc.message)
    for key, value in http_request.headers:
        if key == b"content-encoding":  # the first one counts, as in Triton
            if value != b"identity":
                model.close()
                return _reply_error(
                    conn, 400, "Unsupported content-encoding, only 'identity' is supported.")
            break
    decode = partial(_decode, name, model_version, http_request.body, model.config)
    if len(http_request.body) < BULK:
        return _decoded(conn, model, streaming, decode)
    waiting = Decoding()
    conn.pending = waiting  # marked cancelled if the client goes away meanwhile
    later(decode, conn.loop, partial(_after_decode, conn, model, streaming, waiting))


def _after_decode(conn: HttpConnection, model: Any, streaming: bool, waiting: Decoding,
                  decoded: Future[InferenceRequest]) -> None:
    """A body decoded off the loop: the request goes on, unless its client has gone."""
    if waiting.cancelled:
        model.close()
        return
    conn.pending = None
    try:
        _decoded(conn, model, streaming, decoded.result)
    except ConnectionError:
        pass
    except Exception as exc:  # a bug here must not take the server down
        log.error("generate: a request failed", exc_info=exc)
        _reply_error(conn, 500, str(exc) or type(exc).__name__)


def _decoded(conn: HttpConnection, model: Any, streaming: bool,
             decoded: Callable[[], InferenceRequest]) -> None:
    # The model is held until submitted: closed unsubmitted if decoding failed.
    with model:
        try:
            request = decoded()
        except TritonError as exc:
            return _reply_error(conn, exc.http_status, exc.message)
        answer = _Answer(conn, request, streaming)
        try:
            # Each response is encoded on the thread that sends it, not on the loop.
            each_on_loop(model.submit, request, answer.on_response, conn.loop,
                         partial(_encode, request=request))
        except TritonError as exc:
            return _reply_error(conn, exc.http_status, exc.message)
    # If the client goes away before the answer is complete, the request is marked cancelled.
    conn.pending = request


def _reply_error(conn: HttpConnection, status: int, message: str) -> None:
    body = dumps({"error": message})
    conn.respond(status, b"content-length: %d\r\n%s" % (len(body), _JSON_HEADERS), body)


# -- the request ---------------------------------------------------------------------------------


def _decode(model_name: str, model_version: int, body: bytes, config: Any) -> InferenceRequest:
    """The generate body as an InferenceRequest (raises TritonError with Triton's text)."""
    document = load_generate_json(body, [spec.name for spec in config.input])
    if not isinstance(document, dict):
        raise TritonError.invalid_arg("attempt to get members for non-object")
    request = InferenceRequest(model_name, model_version)
    if "id" in document:
        if type(document["id"]) is not str:
            raise parse_error("id", NOT_STRING)
        request.id = document["id"]
    batch = [-1] if config.max_batch_size > 0 else []
    specs = {
        spec.name: (wire_datatype(spec.data_type), batch + list(spec.dims))
        for spec in config.input
    }
    prefix = log_prefix(request.id)
    repeated = _repeated_input(body, specs)
    if repeated is not None:  # a JSON object keeps one of them: Triton adds both and refuses
        raise TritonError.invalid_arg(f"{prefix}input '{repeated}' already exists in request")
    for key, value in document.items():
        if key != _PARAMETERS:
            _map_member(request, key, value, specs, prefix)
            continue
        # The nested schema: its members map the same way as top-level ones.
        if key in specs:
            raise TritonError.invalid_arg(
                f"Keyword '{key}' for nested schema also given as input tensor name"
            )
        if not isinstance(value, dict):
            raise TritonError.invalid_arg(
                f"Expected JSON object for keyword: '{key}': attempt to access JSON non-object "
                "as object"
            )
        try:
            for nested_key, nested_value in value.items():
                _map_member(request, nested_key, nested_value, specs, prefix)
        except TritonError as exc:
            raise TritonError(exc.code, f"Converting keyword: '{key}': {exc.message}") from None
    return request


def _repeated_input(body: bytes, specs: dict[str, Any]) -> str | None:
    """The first input name a JSON object of the body gives twice (None if none does)."""
    quoted = (json.dumps(name, ensure_ascii=False).encode() for name in specs)
    if b"\\" not in body and all(body.count(name) < 2 for name in quoted):
        # No name written twice, and no escape that could spell one otherwise (a\/b in a
        # key is a/b): a second parse cannot find a repeat.
        return None
    repeated: list[str] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen and key in specs:
                repeated.append(key)
            seen.add(key)
        return dict(pairs)

    try:
        json.loads(body, object_pairs_hook=pairs_hook)
    except RecursionError:  # the first parse (orjson) takes a little deeper nesting
        raise nesting_too_deep() from None
    return repeated[0] if repeated else None


def _map_member(request: InferenceRequest, key: str, value: Any,
                specs: dict[str, tuple[str, list[int]]], prefix: str) -> None:
    """One member: the input of that name, else a request parameter."""
    spec = specs.get(key)
    if spec is not None and key in request.inputs:  # given at the top and in "parameters"
        raise TritonError.invalid_arg(f"{prefix}input '{key}' already exists in request")
    if spec is None:
        # Triton's SetTritonParameterFromJsonParameter: string, int, bool or (other) number.
        if type(value) not in (str, int, bool, float):
            raise TritonError.invalid_arg(
                f"parameter '{key}' has invalid type. It should be either 'int', 'bool', or "
                "'string'."
            )
        if type(value) is int and not -(1 << 63) <= value < (1 << 63):
            value = float(value)  # beyond int64: rapidjson reads it as a double
        request.parameters[key] = value
        return
    datatype, dims = spec
    count = value.flat_count() if type(value) is JsonSpan else None
    if count is not None:  # a large flat array: counted now, read in slices
        data = value
    else:
        data = value.read() if type(value) is JsonSpan else value
        data = data if type(data) is list else [data]
        count = len(data)
    shape = _shape(key, dims, count)
    array = array_from_json(key, datatype, shape, data, request.model_name, prefix)
    request.inputs[key] = Tensor(key, datatype, shape, array)


def _shape(name: str, dims: list[int], count: int) -> tuple[int, ...]:
    """Triton's two passes: fixed dimensions divide the element count, then the innermost
    variable dimension takes what is left and the other variable ones 1."""
    shape = list(dims)
    for dim in reversed(shape):
        if dim != -1:
            if dim == 0 or count % dim:
                raise _cannot_shape(name)
            count //= dim
    for index in range(len(shape) - 1, -1, -1):
        if shape[index] == -1:
            shape[index] = count
            count = 1
    if count != 1:
        raise _cannot_shape(name)
    return tuple(shape)


def _cannot_shape(name: str) -> TritonError:
    return TritonError.invalid_arg(
        f"The schema can not convert input '{name}' to tensor with proper shape"
    )


# -- the answer ----------------------------------------------------------------------------------


class _Answer:
    """Receives the request's responses on the event loop and writes them as Triton does."""

    __slots__ = ("conn", "request", "streaming", "status", "bodies")

    def __init__(self, conn: HttpConnection, request: InferenceRequest, streaming: bool) -> None:
        self.conn = conn
        self.request = request
        self.streaming = streaming
        self.status = 0  # set by the first response (or the flag-only final)
        # /generate: every response's body, sent (or refused) at the final flag.
        self.bodies: list[bytes] = []

    def on_response(self, encoded: tuple[bytes, bool] | None, final: bool) -> None:
        if self.conn.closed:
            return  # the client went away: the request is cancelled, its answers dropped
        try:
            self._write(encoded, final)
        except Exception:  # a bug: end this answer rather than leave the client waiting
            log.exception("generate: answering '%s' failed", self.request.model_name)
            self.request.cancelled = True
            self.conn.close()

    def _write(self, encoded: tuple[bytes, bool] | None, final: bool) -> None:
        body = b""
        status = 200
        if encoded is not None:
            body, failed = encoded
            if failed:
                status = 400  # Triton 2.51: any error in a response, whatever its code
        if self.status == 0:
            # Like Triton, both endpoints start a chunked answer at the first response.
            self.status = status
            self.conn.start_stream(status, _SSE_HEADERS if self.streaming else _JSON_HEADERS)
        if self.streaming:
            if body:
                self.conn.send_chunk(b"data: " + body + b"\n\n")
        elif encoded is not None:
            self.bodies.append(body)
        if not final:
            return
        if not self.streaming:
            bodies = self.bodies
            answer = bodies[0] if len(bodies) == 1 else dumps({"error": _SINGLE_RESPONSE})
            self.conn.send_chunk(answer)
        self.conn.end_stream()


def _encode(response: InferenceResponse, request: InferenceRequest) -> tuple[bytes, bool]:
    """A response as generate's flat JSON object, or its error as `{"error": ...}` (and
    whether it is an error)."""
    error = response.error
    if error is None:
        try:
            splice = JsonSplice()
            return splice.dumps(_fields(response, request, splice)), False
        except TritonError as exc:
            error = exc
        except Exception as exc:  # a bug: the client still gets an answer
            log.exception("generate: encoding a response of '%s' failed", request.model_name)
            error = TritonError.internal(str(exc) or type(exc).__name__)
    return dumps({"error": error.message}), True


def _fields(response: InferenceResponse, request: InferenceRequest, splice: JsonSplice
            ) -> dict[str, Any]:
    """The answer's fields in order, a large numeric output's text written apart (`splice`
    puts it in place)."""
    # The first of equal names wins (std::map::emplace): reserved fields, then parameters,
    # then outputs.
    fields: dict[str, Any] = {}
    if response.id:
        fields["id"] = response.id
    fields["model_name"] = response.model_name or request.model_name
    fields["model_version"] = str(response.model_version)
    for key, value in response.parameters.items():
        fields.setdefault(key, value)
    for tensor in response.outputs:
        if tensor.name in fields:
            continue
        count = element_count(tensor.shape)
        if count >= LARGE_OUTPUT and tensor.datatype != "BYTES":
            fields[tensor.name] = splice.placeholder(
                json_text_in_slices(tensor.datatype, tensor.data))
            continue
        data = json_from_array(tensor.datatype, tensor.data)
        fields[tensor.name] = data[0] if count == 1 else data
    return dict(sorted(fields.items()))


__all__ = ["handle_generate"]
