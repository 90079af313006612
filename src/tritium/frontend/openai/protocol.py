"""OpenAI's API shapes: reading completion/chat bodies into Triton vLLM-backend requests, and
writing OpenAI's responses, stream chunks and error bodies.

What Triton's own OpenAI-compatible frontend (triton-inference-server/server python/openai)
does, against the core only: a body becomes an InferenceRequest for the model named `model`
with the vLLM-backend inputs (`text_input`, `stream`, `sampling_parameters`,
`exclude_input_in_output`, `return_finish_reason`, `return_num_*_tokens`); chat messages travel
as JSON with `apply_chat_template`, so the model's tokenizer renders them with its own chat
template. Only n=1 is served; parameters with no counterpart here (logprobs, echo, best_of, ...)
are refused with a 400 naming them rather than silently ignored.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import numpy as np

from ...errors import TritonError
from ...request import InferenceRequest
from ...tensor import Tensor

# OpenAI sampling fields -> vLLM sampling parameters (same meaning).
_SAMPLING = ("temperature", "top_p", "seed", "max_tokens", "top_k", "min_tokens", "ignore_eos")
_UNLIMITED = 2**31 - 1
_UNSUPPORTED = ("logprobs", "top_logprobs", "best_of", "suffix", "logit_bias", "tools",
                "tool_choice", "functions", "function_call", "response_format",
                "presence_penalty", "frequency_penalty")


class OpenAiError(Exception):
    """An error answered with OpenAI's body and an HTTP status."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"error": {"message": message, "type": kind, "param": param, "code": code}}

    @classmethod
    def from_triton(cls, error: TritonError) -> OpenAiError:
        status = error.http_status
        kind = {400: "invalid_request_error", 404: "invalid_request_error",
                501: "invalid_request_error", 503: "service_unavailable_error"}
        return cls(status, error.message, kind.get(status, "internal_server_error"))


def parse_body(body: bytes) -> dict[str, Any]:
    try:
        document = json.loads(body or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise OpenAiError(400, f"the request body is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise OpenAiError(400, "the request body must be a JSON object")
    return document


def _field(document: dict[str, Any], name: str, kinds: tuple[type, ...],
           required: bool = False) -> Any:
    value = document.get(name)
    if value is None:
        if required:
            raise OpenAiError(400, f"'{name}' is a required property", param=name)
        return None
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise OpenAiError(400, f"'{name}' must be {names}", param=name)
    return value


def _sampling(document: dict[str, Any], max_tokens_field: str = "max_tokens") -> dict[str, Any]:
    for name in _UNSUPPORTED:
        if document.get(name) not in (None, False, 0, [], {}):
            raise OpenAiError(400, f"'{name}' is not supported by this server", param=name)
    n = _field(document, "n", (int,))
    if n is not None and n != 1:
        raise OpenAiError(400, f"only n=1 is supported, got n={n}", param="n")
    sampling: dict[str, Any] = {}
    for name in _SAMPLING:
        kinds: tuple[type, ...] = (bool,) if name == "ignore_eos" else (
            (int,) if name in ("seed", "max_tokens", "top_k", "min_tokens") else (int, float))
        value = _field(document, name, kinds)
        if value is not None:
            sampling[name] = value
    if max_tokens_field != "max_tokens":
        value = _field(document, max_tokens_field, (int,))
        if value is not None:
            sampling["max_tokens"] = value
    stop = document.get("stop")
    if stop is not None:
        if isinstance(stop, str):
            stop = [stop]
        if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
            raise OpenAiError(400, "'stop' must be a string or a list of strings", param="stop")
        sampling["stop"] = stop
    return sampling


def completion_request(document: dict[str, Any]) -> tuple[str, str, dict[str, Any], bool]:
    """/v1/completions: (model, prompt, sampling parameters, stream)."""
    model = _field(document, "model", (str,), required=True)
    prompt = document.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise OpenAiError(400, "'prompt' must be a string (one prompt per request; token id "
                          "prompts are not supported)", param="prompt")
    if document.get("echo"):
        raise OpenAiError(400, "'echo' is not supported by this server", param="echo")
    sampling = _sampling(document)
    sampling.setdefault("max_tokens", 16)  # OpenAI's default for completions
    return model, prompt, sampling, bool(_field(document, "stream", (bool,)))


def chat_request(document: dict[str, Any]) -> tuple[str, str, dict[str, Any], bool]:
    """/v1/chat/completions: (model, messages as JSON, sampling parameters, stream)."""
    model = _field(document, "model", (str,), required=True)
    messages = _field(document, "messages", (list,), required=True)
    if not messages:
        raise OpenAiError(400, "'messages' must hold at least one message", param="messages")
    plain = []
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise OpenAiError(400, "each message must be an object with a 'role'",
                              param="messages")
        content = message.get("content")
        if isinstance(content, list):  # content parts: the text ones, joined
            content = "".join(p.get("text", "") for p in content
                              if isinstance(p, dict) and p.get("type") == "text")
        if content is not None and not isinstance(content, str):
            raise OpenAiError(400, "a message's 'content' must be a string or content parts",
                              param="messages")
        plain.append({"role": message["role"], "content": content or ""})
    sampling = _sampling(document, "max_completion_tokens")
    if "max_tokens" not in sampling:
        # Chat has no small default: until EOS or the model's length limit (the engine caps
        # max_tokens there).
        sampling["max_tokens"] = _UNLIMITED
    return model, json.dumps(plain), sampling, bool(_field(document, "stream", (bool,)))


def infer_request(model: str, text: str, sampling: dict[str, Any], stream: bool,
                  chat: bool) -> InferenceRequest:
    """The InferenceRequest a Triton vLLM-backend client would send for this body."""
    request = InferenceRequest(model)

    def add(name: str, datatype: str, value: Any) -> None:
        data = np.array([value], dtype=np.object_ if datatype == "BYTES" else np.bool_)
        request.inputs[name] = Tensor(name, datatype, (1,), data)

    add("text_input", "BYTES", text.encode("utf-8"))
    add("stream", "BOOL", stream)
    add("sampling_parameters", "BYTES",
        json.dumps({k: v for k, v in sampling.items() if v is not None}).encode())
    add("exclude_input_in_output", "BOOL", True)
    for switch in ("return_finish_reason", "return_num_input_tokens",
                   "return_num_output_tokens"):
        add(switch, "BOOL", True)
    if chat:
        add("apply_chat_template", "BOOL", True)
    return request


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def now() -> int:
    return int(time.time())


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}
