"""OpenAI's API shapes: reading completion/chat bodies into Triton vLLM-backend requests, and
writing OpenAI's responses, stream chunks and error bodies.

What Triton's own OpenAI-compatible frontend (triton-inference-server/server python/openai)
does, against the core only: a body becomes an InferenceRequest for the model named `model` with
the vLLM-backend inputs (`text_input`, `stream`, `sampling_parameters`,
`exclude_input_in_output`, `return_finish_reason`, `return_num_*_tokens`); chat messages travel
as JSON with `apply_chat_template`, so the model's tokenizer renders them with its own chat
template. A completion's `prompt` may be several prompts (a list of strings, or of token-id
lists) and a prompt may be token ids, as in OpenAI's and vLLM's API: ids go in the llm backend's
`prompt_token_ids` input. `n` choices of each prompt are n requests (seeded seed, seed + 1, ...
as vLLM's n), all answered as one, prompt i's choice j at index i * n + j as vLLM numbers them;
`echo` puts the prompt before the text (with `max_tokens` 0, the prompt alone: vLLM generates
one token and answers without it); `logprobs` ask the backend for its `logprobs` and
`prompt_logprobs` outputs (logprobs.py turns them into OpenAI's shapes); `response_format`
becomes vLLM's `structured_outputs` sampling parameter, which vLLM's extra parameter of that
name (regex, choice, grammar too) is passed on as. Parameters with no counterpart here (tools,
suffix, best_of > n, ...) are refused with a 400 naming them rather than silently ignored.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import TritonError
from ...request import InferenceRequest
from ...tensor import Tensor

# OpenAI (and vLLM's extra) sampling fields -> vLLM sampling parameters (same meaning), with
# the JSON types each takes.
_NUMBER = (int, float)
_SAMPLING: dict[str, tuple[type, ...]] = {
    "temperature": _NUMBER, "top_p": _NUMBER, "min_p": _NUMBER, "seed": (int,),
    "max_tokens": (int,), "top_k": (int,), "min_tokens": (int,), "ignore_eos": (bool,),
    "presence_penalty": _NUMBER, "frequency_penalty": _NUMBER, "repetition_penalty": _NUMBER,
    "include_stop_str_in_output": (bool,), "skip_special_tokens": (bool,),
}
_UNLIMITED = 2**31 - 1
_MAX_INT64 = 2**63 - 1
_PROMPT_OPTIONS: dict[str, tuple[type, ...]] = {
    "add_special_tokens": (bool,), "add_generation_prompt": (bool,),
    "continue_final_message": (bool,), "chat_template": (str,), "chat_template_kwargs": (dict,)}
_UNSUPPORTED = ("suffix", "tools", "tool_choice", "functions", "function_call")
# OpenAI's bound on a logit_bias value.
_MAX_BIAS = 100.0
# OpenAI's bound on n: each choice is a request of its own, queued with everyone else's.
MAX_N = 128
# The most choices (prompts x n) one request makes: vLLM's default bound on the prompts of one
# completion request (VLLM_MAX_COMPLETION_PROMPTS), each a request in the model's queue.
MAX_CHOICES = 1024
# A \uD800-\uDFFF escape: what could make a lone surrogate, checked only then.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


# A prompt: its text (for chat, the messages as JSON), or its token ids.
Prompt = str | list[int]


@dataclass
class Generation:
    """A completion or chat body, read: what to ask the model, and how to answer."""

    model: str
    prompts: list[Prompt]  # completions: one or more; chat: one, the messages as JSON
    sampling: dict[str, Any]
    stream: bool
    chat: bool
    n: int = 1
    echo: bool = False
    echo_only: bool = False  # echo with max_tokens 0: the prompt alone, without the token
    top_logprobs: int | None = None  # logprobs asked for: how many top ones per token
    check_max_tokens: bool = False  # max_tokens was given: past max_model_len is an error
    prompt_options: dict[str, Any] = field(default_factory=dict)  # vLLM's, for the tokenizer

    @property
    def token_prompts(self) -> bool:
        return any(isinstance(prompt, list) for prompt in self.prompts)

    def requests(self, inputs: Collection[str]) -> list[InferenceRequest]:
        """One request per choice, prompt by prompt (choice j of prompt i at i * n + j), with
        those of its optional inputs the model declares (`inputs`): a seed gives choice j the
        seed + j, as vLLM's n does."""
        seed = self.sampling.get("seed")
        return [infer_request(self, prompt, {**self.sampling, "seed": seed + index}
                              if seed is not None else self.sampling, inputs)
                for prompt in self.prompts for index in range(self.n)]


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
        # ValueError: JSONDecodeError, and an integer of more than 4300 digits.
        document = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        raise OpenAiError(400, f"the request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise OpenAiError(400, "the request body is not valid JSON: it is nested too deeply"
                          ) from None
    if not isinstance(document, dict):
        raise OpenAiError(400, "the request body must be a JSON object")
    if _SURROGATE_ESCAPE.search(body):  # a lone one is text no tokenizer or encoder takes
        try:
            json.dumps(document, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise OpenAiError(400, f"the request body is not valid JSON: a string holds a "
                              f"lone surrogate ({exc.reason})") from None
    return document


def read_field(document: dict[str, Any], name: str, kinds: tuple[type, ...],
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


def _sampling(document: dict[str, Any], generation: Generation,
              max_tokens_field: str = "max_tokens") -> None:
    """The sampling parameters, n and the check of max_tokens, into `generation`."""
    for name in _UNSUPPORTED:
        if document.get(name) not in (None, False, 0, [], {}) and not (
                name == "tool_choice" and document[name] == "none"):  # vLLM's default
            raise OpenAiError(400, f"'{name}' is not supported by this server", param=name)
    if document.get("stream_options") is not None and not generation.stream:
        raise OpenAiError(400, "Stream options can only be defined when `stream=True`.",
                          param="stream_options")
    n = read_field(document, "n", (int,))
    if n is not None:
        if not 1 <= n <= MAX_N:
            raise OpenAiError(400, f"n must be between 1 and {MAX_N}, got {n}.", param="n")
        generation.n = n
    best_of = read_field(document, "best_of", (int,))
    if best_of is not None and best_of != generation.n:
        raise OpenAiError(400, f"best_of ({best_of}) other than n ({generation.n}) is not "
                          "supported by this server (as vLLM's V1 engine): ask for n samples",
                          param="best_of")
    sampling = generation.sampling
    for name, kinds in _SAMPLING.items():
        value = read_field(document, name, kinds)
        if value is not None:
            sampling[name] = value
    if max_tokens_field != "max_tokens":
        value = read_field(document, max_tokens_field, (int,))
        if value is not None:
            sampling["max_tokens"] = value
    generation.check_max_tokens = "max_tokens" in sampling
    stop = document.get("stop")
    if stop is not None:
        if isinstance(stop, str):
            stop = [stop]
        if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
            raise OpenAiError(400, "'stop' must be a string or a list of strings", param="stop")
        sampling["stop"] = stop
    stop_ids = document.get("stop_token_ids")
    if stop_ids is not None:
        if not isinstance(stop_ids, list) or not all(
                isinstance(t, int) and not isinstance(t, bool) for t in stop_ids):
            raise OpenAiError(400, "'stop_token_ids' must be a list of token ids",
                              param="stop_token_ids")
        sampling["stop_token_ids"] = stop_ids
    bias = read_field(document, "logit_bias", (dict,))
    if bias:
        sampling["logit_bias"] = _logit_bias(bias)
    guided = _response_format(read_field(document, "response_format", (dict,)))
    # vLLM's extra parameter: json, json_object, regex, choice or grammar, passed on as is.
    extra = read_field(document, "structured_outputs", (dict,))
    if extra is not None:
        if guided is not None:
            raise OpenAiError(400, "give response_format or structured_outputs, not both",
                              param="structured_outputs")
        guided = extra
    if guided is not None:
        sampling["structured_outputs"] = guided


def _response_format(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """response_format as vLLM's structured outputs: json_object, or json_schema's schema."""
    if value is None or value.get("type") == "text":
        return None
    kind = value.get("type")
    if kind == "json_object":
        return {"json_object": True}
    if kind == "json_schema":
        spec = value.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if not isinstance(schema, dict):
            raise OpenAiError(400, "response_format json_schema needs a 'json_schema' object "
                              "with a 'schema'", param="response_format")
        return {"json": schema}
    raise OpenAiError(400, f"response_format type {kind!r} is not supported: use text, "
                      "json_object or json_schema", param="response_format")


def _logit_bias(bias: dict[str, Any]) -> dict[str, float]:
    """Token id -> bias, each bias clipped to OpenAI's [-100, 100]."""
    clipped = {}
    for token, value in bias.items():
        try:
            int(token)
        except ValueError:
            raise OpenAiError(400, f"Found token_id `{token}` in logit_bias but token_id must "
                              "be an integer or string representing an integer",
                              param="logit_bias") from None
        if not isinstance(value, _NUMBER) or isinstance(value, bool):
            raise OpenAiError(400, "logit_bias values must be numbers", param="logit_bias")
        clipped[token] = min(_MAX_BIAS, max(-_MAX_BIAS, float(value)))
    return clipped


def _count(document: dict[str, Any], name: str) -> int | None:
    value = read_field(document, name, (int,))
    if value is not None and value < 0:
        raise OpenAiError(400, f"'{name}' must be non-negative, got {value}", param=name)
    return value


def completion_request(document: dict[str, Any]) -> Generation:
    """/v1/completions."""
    model = read_field(document, "model", (str,), required=True)
    generation = Generation(model, _prompts(document.get("prompt")), {},
                            bool(read_field(document, "stream", (bool,))), chat=False,
                            echo=bool(read_field(document, "echo", (bool,))))
    _sampling(document, generation)
    choices = len(generation.prompts) * generation.n
    if choices > MAX_CHOICES:
        raise OpenAiError(400, f"prompt list length {len(generation.prompts)} exceeds the "
                          f"maximum allowed count of {MAX_CHOICES}." if generation.n == 1 else
                          f"{len(generation.prompts)} prompts x n = {generation.n} make "
                          f"{choices} choices, more than the {MAX_CHOICES} one request may "
                          "ask: send fewer prompts per request", param="prompt")
    generation.prompt_options = prompt_options(document, chat=False)
    generation.sampling.setdefault("max_tokens", 16)  # OpenAI's default for completions
    if generation.echo and generation.sampling["max_tokens"] == 0:
        # vLLM: the prompt alone, from a request for one token whose answer is left out.
        generation.echo_only = True
        generation.sampling["max_tokens"] = 1
    generation.top_logprobs = _count(document, "logprobs")
    if generation.top_logprobs is not None:
        if not generation.echo_only:
            generation.sampling["logprobs"] = generation.top_logprobs
        if generation.echo:
            generation.sampling["prompt_logprobs"] = generation.top_logprobs
    return generation


def _prompts(prompt: Any) -> list[Prompt]:
    """The body's `prompt` as a list of prompts: a string, a list of strings, a list of token
    ids (one prompt) or a list of token-id lists, as OpenAI's API and vLLM's take it."""
    if prompt is None or prompt == "":
        raise OpenAiError(400, "Either prompt or prompt_embeds must be provided and non-empty.",
                          param="prompt")
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, list) and not prompt:
        raise OpenAiError(400, "You must pass at least one prompt", param="prompt")
    if isinstance(prompt, list) and all(isinstance(p, str) for p in prompt):
        return list(prompt)
    if isinstance(prompt, list) and all(_token_id(t) for t in prompt):
        return [_token_ids(prompt)]
    if isinstance(prompt, list) and all(
            isinstance(p, list) and all(_token_id(t) for t in p) for p in prompt):
        return [_token_ids(p) for p in prompt]
    raise OpenAiError(400, "'prompt' must be a string, a list of strings, a list of token ids "
                      "or a list of token-id lists", param="prompt")


def _token_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _token_ids(ids: list[int]) -> list[int]:
    """Token ids a request can carry (INT64); the model checks them against its vocabulary."""
    for token in ids:
        if token < 0:
            raise OpenAiError(400, f"token ids in 'prompt' must be non-negative, got {token}",
                              param="prompt")
        if token > _MAX_INT64:  # past INT64 is past any vocabulary
            raise OpenAiError(400, f"Token id {token} is out of vocabulary", param="prompt")
    return ids


def chat_messages(document: dict[str, Any]) -> list[dict[str, str]]:
    """The body's `messages`, each as {"role", "content"} (text content parts joined)."""
    messages = read_field(document, "messages", (list,), required=True)
    if not messages:
        raise OpenAiError(400, "'messages' must hold at least one message", param="messages")
    plain = []
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise OpenAiError(400, "each message must be an object with a 'role'",
                              param="messages")
        content = message.get("content")
        if isinstance(content, list):  # content parts: text only, joined
            content = "".join(_text_part(part) for part in content)
        if content is not None and not isinstance(content, str):
            raise OpenAiError(400, "a message's 'content' must be a string or content parts",
                              param="messages")
        plain.append({"role": message["role"], "content": content or ""})
    return plain


def _text_part(part: Any) -> str:
    """A content part's text: the models served here read text only, so an image, audio or
    unknown part is refused rather than dropped (the answer would ignore it)."""
    if isinstance(part, str):
        return part
    kind = part.get("type") if isinstance(part, dict) else None
    if kind != "text":
        raise OpenAiError(400, f"content part type {kind!r} is not supported: the models "
                          "served here take text parts only", param="messages")
    text = part.get("text")
    if not isinstance(text, str):
        raise OpenAiError(400, "a text content part's 'text' must be a string",
                          param="messages")
    return text


def prompt_options(document: dict[str, Any], chat: bool, tools: bool = False
                   ) -> dict[str, Any]:
    """vLLM's fields saying how the prompt becomes tokens, those given (the llm backend's
    `prompt_options`): add_special_tokens; for chat also add_generation_prompt,
    continue_final_message, chat_template, chat_template_kwargs (and tools, to /tokenize)."""
    names = _PROMPT_OPTIONS if chat else {"add_special_tokens": (bool,)}
    if tools:
        names = {**names, "tools": (list,)}
    options = {}
    for name, kinds in names.items():
        value = read_field(document, name, kinds)
        if value is not None:
            options[name] = value
    return options


def chat_request(document: dict[str, Any]) -> Generation:
    """/v1/chat/completions (the messages travel as JSON)."""
    model = read_field(document, "model", (str,), required=True)
    plain = chat_messages(document)
    generation = Generation(model, [json.dumps(plain)], {},
                            bool(read_field(document, "stream", (bool,))), chat=True)
    _sampling(document, generation, "max_completion_tokens")
    generation.prompt_options = prompt_options(document, chat=True)
    if "max_tokens" not in generation.sampling:
        # Chat has no small default: until EOS or the model's length limit (the engine caps
        # max_tokens there).
        generation.sampling["max_tokens"] = _UNLIMITED
    top = _count(document, "top_logprobs")
    if read_field(document, "logprobs", (bool,)):
        generation.top_logprobs = top or 0
        generation.sampling["logprobs"] = generation.top_logprobs
    elif top:
        raise OpenAiError(400, "when using `top_logprobs`, `logprobs` must be set to true.",
                          param="top_logprobs")
    return generation


def infer_request(generation: Generation, prompt: Prompt, sampling: dict[str, Any],
                  inputs: Collection[str]) -> InferenceRequest:
    """The InferenceRequest a Triton vLLM-backend client would send for one choice of
    `prompt`; of the optional inputs, those the model declares (`inputs`: Triton's vLLM
    backend, depending on its version, has no `return_*` switches; only the llm backend reads
    chat messages and token ids, the caller has checked the model takes them)."""
    request = InferenceRequest(generation.model)

    def add(name: str, datatype: str, value: Any) -> None:
        if name in inputs or name == "text_input":
            request.inputs[name] = scalar_input(name, datatype, value)

    if isinstance(prompt, list):  # token ids: text_input stays empty
        add("text_input", "BYTES", b"")
        request.inputs["prompt_token_ids"] = Tensor(
            "prompt_token_ids", "INT64", (len(prompt),), np.array(prompt, dtype=np.int64))
    else:
        add("text_input", "BYTES", prompt.encode("utf-8"))
    add("stream", "BOOL", generation.stream)
    add("sampling_parameters", "BYTES",
        json.dumps({k: v for k, v in sampling.items() if v is not None}).encode())
    add("exclude_input_in_output", "BOOL", True)
    for switch in ("return_finish_reason", "return_num_input_tokens",
                   "return_num_output_tokens"):
        add(switch, "BOOL", True)
    if generation.chat:
        add("apply_chat_template", "BOOL", True)
    if generation.check_max_tokens:
        add("check_max_tokens", "BOOL", True)
    if generation.prompt_options:
        add("prompt_options", "BYTES", json.dumps(generation.prompt_options).encode())
    return request


def scalar_input(name: str, datatype: str, value: Any) -> Tensor:
    """A one-element BYTES or BOOL input, as the vLLM backend's inputs are."""
    data = np.array([value], dtype=np.object_ if datatype == "BYTES" else np.bool_)
    return Tensor(name, datatype, (1,), data)


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def now() -> int:
    return int(time.time())


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}
