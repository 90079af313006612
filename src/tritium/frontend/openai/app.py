"""The OpenAI-compatible routes: /v1/models, /v1/completions, /v1/chat/completions.

Served on a port of its own (`--openai-port`), like Triton's OpenAI-compatible frontend (a
separate server, port 9000 by default): OpenAI clients expect their own paths, bodies and error
shapes at the root of a base URL, which would sit badly beside KServe's `/v2` routes, Triton's
HTTP restrictions and its `{"error": "..."}` bodies. The models offered are the ready models on
the llm backend; a request becomes an InferenceRequest through `InferenceServer` (never the
backend itself), and its decoupled responses become one JSON answer or server-sent events ending
with `data: [DONE]`. A client that goes away mid-stream cancels its request (the HTTP
connection marks it), which frees its slot in the engine.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ...errors import TritonError
from ...request import InferenceResponse
from ...server import InferenceServer
from ..http.server import HttpConnection, HttpEndpoint, Request
from ..loop_bridge import each_on_loop
from .protocol import (
    OpenAiError,
    chat_request,
    completion_request,
    infer_request,
    new_id,
    now,
    parse_body,
    usage,
)

log = logging.getLogger("tritium.openai")

LLM_BACKEND = "llm"
_JSON = b"content-type: application/json\r\n"
_SSE = b"content-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\n"


def _send_json(conn: HttpConnection, status: int, document: Any) -> None:
    body = json.dumps(document).encode()
    conn.respond(status, b"content-length: %d\r\n%s" % (len(body), _JSON), body)


class OpenAiApp:
    """Routes OpenAI requests to the InferenceServer (an `http_server.Handler`)."""

    def __init__(self, server: InferenceServer) -> None:
        self.server = server

    def __call__(self, conn: HttpConnection, request: Request) -> None:
        try:
            self._route(conn, request)
        except OpenAiError as exc:
            _send_json(conn, exc.status, exc.body)
        except TritonError as exc:
            error = OpenAiError.from_triton(exc)
            _send_json(conn, error.status, error.body)
        except ConnectionError:
            pass
        except Exception as exc:  # a bug: answer, and keep serving
            log.exception("OpenAI %s %s failed", request.method, request.path)
            error = OpenAiError(500, str(exc) or type(exc).__name__, "internal_server_error")
            _send_json(conn, 500, error.body)

    def _route(self, conn: HttpConnection, request: Request) -> None:
        path = request.path.rstrip("/")
        if path == "/v1/models":
            self._method(request, b"GET")
            return _send_json(conn, 200, {"object": "list",
                                          "data": [_model(m) for m in self._models()]})
        if path.startswith("/v1/models/"):
            self._method(request, b"GET")
            name = path[len("/v1/models/"):]
            self._check_model(name)
            return _send_json(conn, 200, _model(name))
        if path == "/v1/completions":
            self._method(request, b"POST")
            document = parse_body(request.body)
            model, prompt, sampling, stream = completion_request(document)
            return self._generate(conn, document, model, prompt, sampling, stream, chat=False)
        if path == "/v1/chat/completions":
            self._method(request, b"POST")
            document = parse_body(request.body)
            model, messages, sampling, stream = chat_request(document)
            return self._generate(conn, document, model, messages, sampling, stream, chat=True)
        raise OpenAiError(404, f"no route for {request.method.decode()} {request.path}",
                          "invalid_request_error", code="not_found")

    @staticmethod
    def _method(request: Request, method: bytes) -> None:
        if request.method != method:
            raise OpenAiError(405, f"method {request.method.decode()} is not allowed here; use "
                              f"{method.decode()}", "invalid_request_error")

    def _models(self) -> list[str]:
        names = sorted({entry["name"] for entry in self.server.repository_index(ready_only=True)})
        return [n for n in names if self._is_llm(n)]

    def _is_llm(self, name: str) -> bool:
        try:
            return self.server.model_config(name).backend == LLM_BACKEND
        except TritonError:
            return False

    def _check_model(self, name: str) -> None:
        if not self._is_llm(name):
            raise OpenAiError(404, f"The model `{name}` does not exist.", "invalid_request_error",
                              param="model", code="model_not_found")

    def _generate(self, conn: HttpConnection, document: dict[str, Any], model: str, text: str,
                  sampling: dict[str, Any], stream: bool, chat: bool) -> None:
        self._check_model(model)
        request = infer_request(model, text, sampling, stream, chat)
        answer = (_StreamAnswer if stream else _Answer)(conn, model, chat)
        options = document.get("stream_options")
        answer.include_usage = isinstance(options, dict) and options.get("include_usage") is True
        each_on_loop(self.server.infer_async, request, answer.on_response)
        # A client that goes away before the end cancels the request.
        conn.pending = request


class _Answer:
    """Collects the responses; answers once with the whole completion."""

    def __init__(self, conn: HttpConnection, model: str, chat: bool) -> None:
        self.conn = conn
        self.model = model
        self.chat = chat
        self.id = new_id("chatcmpl" if chat else "cmpl")
        self.created = now()
        self.text: list[str] = []
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.finish_reason: str | None = None
        self.include_usage = False  # streaming: a last chunk with usage (stream_options)

    def on_response(self, response: InferenceResponse | None, final: bool) -> None:
        if self.conn.closed:
            return
        try:
            if response is not None and response.error is not None:
                return self.fail(response.error)
            if response is not None:
                self.take(response)
            if final:
                self.finish()
        except Exception as exc:  # a bug: end the answer rather than leave the client waiting
            log.exception("OpenAI: answering for '%s' failed", self.model)
            self.fail(TritonError.internal(str(exc) or type(exc).__name__))

    def take(self, response: InferenceResponse) -> str:
        values = {t.name: t.data.reshape(-1)[0] for t in response.outputs}
        delta = values.get("text_output", b"").decode("utf-8")
        self.text.append(delta)
        self.prompt_tokens = int(values.get("num_input_tokens", self.prompt_tokens))
        self.completion_tokens += int(values.get("num_output_tokens", 0))
        reason = values.get("finish_reason", b"None").decode()
        if reason != "None":
            self.finish_reason = reason
        return delta

    def choice(self, text: str | None, finish_reason: str | None) -> dict[str, Any]:
        if self.chat:
            message = {"role": "assistant", "content": text}
            return {"index": 0, "message": message, "logprobs": None,
                    "finish_reason": finish_reason}
        return {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason}

    def document(self, choices: list[dict[str, Any]], chunk: bool) -> dict[str, Any]:
        kind = ("chat.completion" if self.chat else "text_completion") + (
            ".chunk" if chunk and self.chat else "")
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model,
                "choices": choices}

    def finish(self) -> None:
        document = self.document([self.choice("".join(self.text), self.finish_reason)], False)
        document["usage"] = usage(self.prompt_tokens, self.completion_tokens)
        _send_json(self.conn, 200, document)

    def fail(self, error: TritonError) -> None:
        failure = OpenAiError.from_triton(error)
        _send_json(self.conn, failure.status, failure.body)


class _StreamAnswer(_Answer):
    """Server-sent events: one chunk per response, the finish reason, usage, `[DONE]`."""

    started = False

    def _event(self, document: Any) -> None:
        if not self.started:
            self.started = True
            self.conn.start_stream(200, _SSE)
        payload = document if isinstance(document, bytes) else json.dumps(document).encode()
        self.conn.send_chunk(b"data: " + payload + b"\n\n")

    def take(self, response: InferenceResponse) -> str:
        delta = super().take(response)
        if not self.started and self.chat:
            self._event(self.document(
                [{"index": 0, "delta": {"role": "assistant", "content": ""},
                  "logprobs": None, "finish_reason": None}], True))
        if delta:
            self._event(self.document([self._chunk_choice(delta, None)], True))
        return delta

    def _chunk_choice(self, text: str | None, finish_reason: str | None) -> dict[str, Any]:
        if self.chat:
            delta = {"content": text} if text is not None else {}
            return {"index": 0, "delta": delta, "logprobs": None,
                    "finish_reason": finish_reason}
        return {"index": 0, "text": text or "", "logprobs": None, "finish_reason": finish_reason}

    def finish(self) -> None:
        self._event(self.document([self._chunk_choice(None, self.finish_reason)], True))
        if self.include_usage:
            last = self.document([], True)
            last["usage"] = usage(self.prompt_tokens, self.completion_tokens)
            self._event(last)
        self._event(b"[DONE]")
        self.conn.end_stream()

    def fail(self, error: TritonError) -> None:
        if not self.started:
            return super().fail(error)
        self._event(OpenAiError.from_triton(error).body)
        self._event(b"[DONE]")
        self.conn.end_stream()


class OpenAiFrontend(HttpEndpoint):
    """The OpenAI-compatible API for one InferenceServer on address:port."""

    def __init__(self, server: InferenceServer, address: str, port: int) -> None:
        super().__init__(OpenAiApp(server), address, port, "OpenAI-compatible HTTPService")


def _model(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "tritium"}
