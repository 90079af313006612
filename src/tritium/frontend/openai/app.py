"""The OpenAI-compatible routes: /v1/models, /v1/completions, /v1/chat/completions.

Beside them, the utility routes benchmark clients and orchestrators ask the same port for:
`GET /metrics` (the metrics port's Prometheus text, as Triton's OpenAI frontend and vLLM serve
it; `vllm bench serve` scrapes it), `GET /health/ready` (Triton's OpenAI frontend: 200 when the
server is ready, else 400) and `GET /health` (vLLM's liveness probe: 200 while the server lives).

Served on a port of its own (`--openai-port`), like Triton's OpenAI-compatible frontend (a
separate server, port 9000 by default): OpenAI clients expect their own paths, bodies and error
shapes at the root of a base URL, which would sit badly beside KServe's `/v2` routes, Triton's
HTTP restrictions and its `{"error": "..."}` bodies. The models offered are the ready models
with the text-generation interface of Triton's vLLM backend (a `text_input` input and a
`text_output` output: the llm backend's, Triton's vLLM backend's, a Python model's of that
shape), as Triton's OpenAI frontend offers vLLM and TensorRT-LLM models; a request becomes
one InferenceRequest per choice (`n` for each of its prompts) through `InferenceServer` (never
the backend itself;
chat messages for a model that takes none are rendered first with `--openai-tokenizer`),
carrying those of the optional inputs the model declares, and their decoupled responses become
one JSON answer or server-sent events ending with `data: [DONE]`, each chunk naming its
choice's index. A client that goes away mid-stream cancels its requests (the HTTP connection
marks them), which frees their slots in the engine.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from functools import partial
from typing import Any, cast

from ...errors import TritonError
from ...request import InferenceResponse
from ...server import InferenceServer
from ...version import __version__
from ..http.connection import HttpConnection, Request
from ..http.endpoint import HttpEndpoint
from ..loop_bridge import each_on_loop
from .chat_template import ChatTemplate
from .logprobs import CompletionLogprobs, chat_logprobs
from .protocol import (
    Generation,
    OpenAiError,
    chat_request,
    completion_request,
    new_id,
    now,
    parse_body,
    read_field,
    usage,
)
from .tokenization import (
    TokenizerAnswer,
    detokenize_request,
    text_document,
    tokenize_request,
    tokens_document,
)

log = logging.getLogger("tritium.openai")

_JSON = b"content-type: application/json\r\n"
_SSE = b"content-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\n"


def _send_json(conn: HttpConnection, status: int, document: Any) -> None:
    body = json.dumps(document).encode()
    conn.respond(status, b"content-length: %d\r\n%s" % (len(body), _JSON), body)


class OpenAiApp:
    """Routes OpenAI requests to the InferenceServer (an `http_server.Handler`)."""

    def __init__(self, server: InferenceServer, chat_template: ChatTemplate | None = None,
                 metrics_text: Callable[[], bytes] | None = None) -> None:
        self.server = server
        self.chat_template = chat_template
        self.metrics_text = metrics_text

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
                                          "data": [self._card(m) for m in self._models()]})
        if path.startswith("/v1/models/"):
            self._method(request, b"GET")
            name = path[len("/v1/models/"):]
            self._check_model(name)
            return _send_json(conn, 200, self._card(name))
        if path in _UTILITIES:
            self._method(request, b"GET")
            return _UTILITIES[path](self, conn)
        if path == "/v1/completions":
            self._method(request, b"POST")
            document = parse_body(request.body)
            return self._generate(conn, document, completion_request(document))
        if path == "/v1/chat/completions":
            self._method(request, b"POST")
            document = parse_body(request.body)
            return self._generate(conn, document, chat_request(document))
        if path in ("/tokenize", "/detokenize"):
            self._method(request, b"POST")
            return self._tokenizer(conn, path, parse_body(request.body))
        raise OpenAiError(404, f"no route for {request.method.decode()} {request.path}",
                          "invalid_request_error", code="not_found")

    def _metrics(self, conn: HttpConnection) -> None:
        if self.metrics_text is None:
            raise OpenAiError(404, "metrics are off on this server (--allow-metrics=false); "
                                   "start it with metrics on to scrape /metrics",
                              "invalid_request_error", code="not_found")
        body = self.metrics_text()
        conn.respond(200, b"content-length: %d\r\ncontent-type: text/plain; charset=utf-8\r\n"
                     % len(body), body)

    def _ready(self, conn: HttpConnection) -> None:
        if not self.server.is_ready():
            raise OpenAiError(400, "the server is not ready for inference requests (it is "
                                   "starting, stopping, or a model failed with "
                                   "--strict-readiness); retry when GET /health/ready is 200",
                              "invalid_request_error", code="not_ready")
        conn.respond(200, b"content-length: 0\r\n", b"")

    def _live(self, conn: HttpConnection) -> None:
        if not self.server.is_live():
            raise OpenAiError(503, "the server is not live; it is stopping",
                              "service_unavailable_error", code="not_live")
        conn.respond(200, b"content-length: 0\r\n", b"")

    def _version(self, conn: HttpConnection) -> None:
        _send_json(conn, 200, {"version": __version__})

    @staticmethod
    def _method(request: Request, method: bytes) -> None:
        if request.method != method:
            raise OpenAiError(405, f"method {request.method.decode()} is not allowed here; use "
                              f"{method.decode()}", "invalid_request_error")

    def _models(self) -> list[str]:
        names = sorted({entry["name"] for entry in self.server.repository_index(ready_only=True)})
        return [n for n in names if self._interface(n) is not None]

    def _interface(self, name: str) -> tuple[set[str], set[str]] | None:
        """The model's input and output names if it generates text, else None."""
        try:
            config = self.server.model_config(name)
        except TritonError:
            return None
        inputs = {tensor.name for tensor in config.input}
        outputs = {tensor.name for tensor in config.output}
        return (inputs, outputs) if "text_input" in inputs and "text_output" in outputs \
            else None

    def _check_model(self, name: str) -> tuple[set[str], set[str]]:
        interface = self._interface(name)
        if interface is None:
            raise OpenAiError(404, f"The model `{name}` does not exist.", "invalid_request_error",
                              param="model", code="model_not_found")
        return interface

    def _max_model_len(self, name: str) -> int | None:
        """The model's `max_model_len` parameter (the llm backend sets it), else None."""
        parameter = self.server.model_config(name).parameters.get("max_model_len")
        value = parameter.string_value if parameter is not None else ""
        return int(value) if value.isdigit() else None

    def _card(self, name: str) -> dict[str, Any]:
        """vLLM's model card: OpenAI's fields, and root, parent, max_model_len, permission."""
        permission = {"id": new_id("modelperm"), "object": "model_permission",
                      "created": now(), "allow_create_engine": False, "allow_sampling": True,
                      "allow_logprobs": True, "allow_search_indices": False,
                      "allow_view": True, "allow_fine_tuning": False, "organization": "*",
                      "group": None, "is_blocking": False}
        return {"id": name, "object": "model", "created": 0, "owned_by": "tritium",
                "root": name, "parent": None, "max_model_len": self._max_model_len(name),
                "permission": [permission]}

    def _tokenizer(self, conn: HttpConnection, path: str, document: dict[str, Any]) -> None:
        """/tokenize or /detokenize: a question for the model's tokenizer (tokenization.py)."""
        name = read_field(document, "model", (str,))
        if name is None:  # as vLLM: the served model
            served = self._models()
            if len(served) != 1:
                raise OpenAiError(400, f"'model' is required: this server serves "
                                  f"{len(served)} models ({', '.join(served)})", param="model")
            name = served[0]
        inputs, _ = self._check_model(name)
        question = path[1:]
        if question not in inputs:
            raise OpenAiError(400, f"the model `{name}` has no tokenizer to ask (it has no "
                              f"'{question}' input, which models on the llm backend have)",
                              param="model")
        render: Callable[[dict[str, Any]], dict[str, Any]]
        if question == "tokenize":
            infer, strings = tokenize_request(document, name)
            render = partial(tokens_document, strings=strings,
                             max_model_len=self._max_model_len(name))
        else:
            infer, render = detokenize_request(document, name), text_document

        def send(status: int, answer: Any) -> None:
            if not conn.closed:
                _send_json(conn, status, answer)

        each_on_loop(self.server.infer_async, infer, TokenizerAnswer(send, render))

    def _generate(self, conn: HttpConnection, document: dict[str, Any],
                  generation: Generation) -> None:
        inputs, outputs = self._check_model(generation.model)
        if generation.prompt_options and "prompt_options" not in inputs:
            names = ", ".join(generation.prompt_options)
            raise OpenAiError(400, f"the model `{generation.model}` takes no prompt options "
                              f"({names}: it has no 'prompt_options' input)",
                              param=next(iter(generation.prompt_options)))
        if generation.token_prompts and "prompt_token_ids" not in inputs:
            raise OpenAiError(400, f"the model `{generation.model}` takes no token-id prompts "
                              "(it has no 'prompt_token_ids' input, which models on the llm "
                              "backend have): send the prompt as text", param="prompt")
        if generation.chat and "apply_chat_template" not in inputs:
            if self.chat_template is None:
                raise OpenAiError(
                    400, f"the model `{generation.model}` takes no chat messages (it has no "
                    "'apply_chat_template' input) and the server has no --openai-tokenizer "
                    "to render them: send its prompt to /v1/completions", param="messages")
            messages = cast(str, generation.prompts[0])  # chat: one prompt, messages as JSON
            generation.prompts = [self.chat_template.render(json.loads(messages))]
        if generation.top_logprobs is not None and "logprobs" not in outputs:
            raise OpenAiError(400, f"the model `{generation.model}` does not return logprobs "
                              "(it has no 'logprobs' output)", param="logprobs")
        requests = generation.requests(inputs)
        answer = (_StreamAnswer if generation.stream else _Answer)(conn, generation)
        options = document.get("stream_options")
        if isinstance(options, dict):
            answer.include_usage = options.get("include_usage") is True
            # vLLM's extension: usage so far on every chunk too (aiperf's --per-chunk-usage).
            answer.continuous_usage = answer.include_usage and \
                options.get("continuous_usage_stats") is True
        answer.requests = requests
        for index, request in enumerate(requests):
            each_on_loop(self.server.infer_async, request, answer.for_choice(index))
        # A client that goes away before the end cancels the requests.
        conn.pending = _Pending(requests)


class _Pending:
    """The requests of one answer, cancelled together (what the connection marks)."""

    def __init__(self, requests: list[Any]) -> None:
        self.requests = requests

    @property
    def cancelled(self) -> bool:
        return any(r.cancelled for r in self.requests)

    @cancelled.setter
    def cancelled(self, value: bool) -> None:
        for request in self.requests:
            request.cancelled = value


class _Choice:
    """One choice's prompt, text, finish reason, token count and logprobs so far."""

    def __init__(self, index: int, generation: Generation) -> None:
        self.index = index
        self.prompt = index // generation.n  # which of the request's prompts
        prompt = generation.prompts[self.prompt]
        # What an echo shows: a token-id prompt's text comes from the model (`prompt_text`).
        self.prompt_text = prompt if isinstance(prompt, str) else ""
        self.text: list[str] = []
        self.finish_reason: str | None = None
        self.completion_tokens = 0
        self.done = False
        self.finish_sent = False  # streaming: a chunk carried the finish reason
        self.logprobs: list[Any] = []  # the backend's entries not yet answered
        self.prompt_logprobs: list[Any] = []
        self.offsets = CompletionLogprobs(generation.top_logprobs or 0)


class _Answer:
    """Collects the responses of every choice; answers once with the whole completion."""

    def __init__(self, conn: HttpConnection, generation: Generation) -> None:
        self.conn = conn
        self.generation = generation
        self.model = generation.model
        self.chat = generation.chat
        self.id = new_id("chatcmpl" if self.chat else "cmpl")
        self.created = now()
        self.choices = [_Choice(i, generation)
                        for i in range(len(generation.prompts) * generation.n)]
        self.requests: list[Any] = []
        self.prompt_tokens = [0] * len(generation.prompts)  # each prompt's, counted once
        self.failed = False
        self.include_usage = False  # streaming: a last chunk with usage (stream_options)
        self.continuous_usage = False  # streaming: usage on every chunk as well

    def for_choice(self, index: int) -> Any:
        def on_response(response: InferenceResponse | None, final: bool) -> None:
            self.on_response(self.choices[index], response, final)
        return on_response

    def on_response(self, choice: _Choice, response: InferenceResponse | None,
                    final: bool) -> None:
        if self.conn.closed or self.failed:
            return
        try:
            if response is not None and response.error is not None:
                return self._fail(response.error)
            if response is not None:
                self.take(choice, response)
            if final:
                choice.done = True
                self.finish_choice(choice)
                if all(c.done for c in self.choices):
                    self.finish()
        except Exception as exc:  # a bug: end the answer rather than leave the client waiting
            log.exception("OpenAI: answering for '%s' failed", self.model)
            self._fail(TritonError.internal(str(exc) or type(exc).__name__))

    def _fail(self, error: TritonError) -> None:
        self.failed = True
        for request in self.requests:  # the other choices are not wanted any more
            request.cancelled = True
        self.fail(error)

    def take(self, choice: _Choice, response: InferenceResponse) -> str:
        values = {t.name: t.data.reshape(-1)[0] for t in response.outputs}
        # With echo and max_tokens 0 the one token generated is counted, not shown (vLLM).
        delta = "" if self.generation.echo_only else \
            values.get("text_output", b"").decode("utf-8")
        choice.text.append(delta)
        if "prompt_text" in values:
            choice.prompt_text = values["prompt_text"].decode("utf-8")
        self.prompt_tokens[choice.prompt] = int(values.get("num_input_tokens",
                                                           self.prompt_tokens[choice.prompt]))
        choice.completion_tokens += int(values.get("num_output_tokens", 0))
        reason = values.get("finish_reason", b"None").decode()
        if reason != "None":
            choice.finish_reason = reason
        if "logprobs" in values:
            choice.logprobs += json.loads(values["logprobs"])
        if "prompt_logprobs" in values:
            choice.prompt_logprobs = json.loads(values["prompt_logprobs"])
        return delta

    def logprobs(self, choice: _Choice, prompt: bool = False) -> dict[str, Any] | None:
        """The logprobs of the tokens taken since the last call (with the prompt's first)."""
        if self.generation.top_logprobs is None:
            return None
        entries, choice.logprobs = choice.logprobs, []
        if prompt:
            entries, choice.prompt_logprobs = choice.prompt_logprobs + entries, []
        if self.chat:
            return chat_logprobs(entries, self.generation.top_logprobs)
        return choice.offsets.render(entries)

    def finish_choice(self, choice: _Choice) -> None:
        """A choice's last response came (the whole answer waits for every choice)."""

    def choice(self, choice: _Choice) -> dict[str, Any]:
        text = "".join(choice.text)
        logprobs = self.logprobs(choice, prompt=self.generation.echo)
        if self.chat:
            message = {"role": "assistant", "content": text}
            return {"index": choice.index, "message": message, "logprobs": logprobs,
                    "finish_reason": choice.finish_reason}
        if self.generation.echo:
            text = choice.prompt_text + text
        return {"index": choice.index, "text": text, "logprobs": logprobs,
                "finish_reason": choice.finish_reason}

    def document(self, choices: list[dict[str, Any]], chunk: bool) -> dict[str, Any]:
        kind = ("chat.completion" if self.chat else "text_completion") + (
            ".chunk" if chunk and self.chat else "")
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model,
                "choices": choices}

    def usage(self) -> dict[str, int]:
        return usage(sum(self.prompt_tokens), sum(c.completion_tokens for c in self.choices))

    def finish(self) -> None:
        document = self.document([self.choice(c) for c in self.choices], False)
        document["usage"] = self.usage()
        _send_json(self.conn, 200, document)

    def fail(self, error: TritonError) -> None:
        failure = OpenAiError.from_triton(error)
        _send_json(self.conn, failure.status, failure.body)


class _StreamAnswer(_Answer):
    """Server-sent events: chunks per response and choice, finish reasons, usage, `[DONE]`."""

    started = False

    def _event(self, document: Any) -> None:
        if not self.started:
            self.started = True
            self.conn.start_stream(200, _SSE)
        if self.continuous_usage and isinstance(document, dict) and "choices" in document \
                and "usage" not in document:
            document["usage"] = self.usage()
        payload = document if isinstance(document, bytes) else json.dumps(document).encode()
        self.conn.send_chunk(b"data: " + payload + b"\n\n")

    def take(self, choice: _Choice, response: InferenceResponse) -> str:
        first = not choice.text
        tokens = choice.completion_tokens
        delta = super().take(choice, response)
        if first and self.chat:
            role = self.document([{"index": choice.index,
                                   "delta": {"role": "assistant", "content": ""},
                                   "logprobs": None, "finish_reason": None}], True)
            if self.continuous_usage:  # before this response's tokens
                role["usage"] = usage(sum(self.prompt_tokens),
                                      self.usage()["completion_tokens"]
                                      - (choice.completion_tokens - tokens))
            self._event(role)
        if first and self.generation.echo:  # the prompt (and its logprobs) first
            delta = choice.prompt_text + delta
        # A chunk per response that carries tokens, even with no text yet (held back), and
        # the finish reason on the last token's chunk, as vLLM streams: benchmark clients
        # time each token by its chunk.
        if delta or choice.logprobs or choice.completion_tokens > tokens:
            self._event(self.document([self._chunk_choice(choice, delta, choice.finish_reason,
                                                          first)], True))
            choice.finish_sent = choice.finish_reason is not None
        return delta

    def _chunk_choice(self, choice: _Choice, text: str | None, finish_reason: str | None,
                      first: bool = False) -> dict[str, Any]:
        logprobs = self.logprobs(choice, prompt=first and self.generation.echo) \
            if text is not None else None
        if self.chat:
            delta = {"content": text} if text is not None else {}
            return {"index": choice.index, "delta": delta, "logprobs": logprobs,
                    "finish_reason": finish_reason}
        return {"index": choice.index, "text": text or "", "logprobs": logprobs,
                "finish_reason": finish_reason}

    def finish_choice(self, choice: _Choice) -> None:
        if not choice.finish_sent:
            self._event(self.document([self._chunk_choice(choice, None, choice.finish_reason)],
                                      True))

    def finish(self) -> None:
        if self.include_usage:
            last = self.document([], True)
            last["usage"] = self.usage()
            self._event(last)
        self._event(b"[DONE]")
        self.conn.end_stream()

    def fail(self, error: TritonError) -> None:
        if not self.started:
            return super().fail(error)
        self._event(OpenAiError.from_triton(error).body)
        self._event(b"[DONE]")
        self.conn.end_stream()


_UTILITIES: dict[str, Callable[[OpenAiApp, HttpConnection], None]] = {
    "/metrics": OpenAiApp._metrics, "/health/ready": OpenAiApp._ready, "/health": OpenAiApp._live,
    "/version": OpenAiApp._version}


class OpenAiFrontend(HttpEndpoint):
    """The OpenAI-compatible API for one InferenceServer on address:port."""

    def __init__(self, server: InferenceServer, address: str, port: int,
                 tokenizer: str | None = None,
                 metrics_text: Callable[[], bytes] | None = None) -> None:
        chat_template = ChatTemplate(tokenizer) if tokenizer is not None else None
        super().__init__(OpenAiApp(server, chat_template, metrics_text), address, port,
                         "OpenAI-compatible HTTPService")

