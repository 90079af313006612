"""vLLM's `POST /tokenize` and `POST /detokenize`, answered by the model's own tokenizer.

vLLM's OpenAI server tokenizes a completion prompt (`{model, prompt, add_special_tokens=true,
return_token_strs=false}`) or chat messages rendered with the chat template (`{model,
messages, add_generation_prompt=true, continue_final_message=false, add_special_tokens=false,
chat_template_kwargs, tools, return_token_strs}`) into `{count, max_model_len, tokens,
token_strs}`, and turns `{model, tokens}` back into `{prompt}`; `vllm bench serve` asks both to
align its prompts with the server's tokenizer. Here each question is one InferenceRequest for
the model with the llm backend's `tokenize` or `detokenize` input (llm/prompt.py), so the text
is tokenized exactly as a completion or chat request to that model would be, by the tokenizer
and chat template the model loaded; `max_model_len` is the model's configuration parameter of
that name. As in vLLM, `model` may be left out when one model is served.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ...errors import TritonError
from ...request import InferenceRequest, InferenceResponse, RequestedOutput
from .protocol import (
    OpenAiError,
    chat_messages,
    prompt_options,
    read_field,
    scalar_input,
)


def tokenize_request(document: dict[str, Any], model: str) -> tuple[InferenceRequest, bool]:
    """The request for /tokenize's body (a prompt, or chat `messages`) and whether the token
    strings are wanted."""
    request = InferenceRequest(model)
    chat = "messages" in document
    if chat:
        text = json.dumps(chat_messages(document))
        request.inputs["apply_chat_template"] = scalar_input("apply_chat_template", "BOOL", True)
    else:
        text = read_field(document, "prompt", (str,), required=True)
    request.inputs["text_input"] = scalar_input("text_input", "BYTES", text.encode("utf-8"))
    request.inputs["tokenize"] = scalar_input("tokenize", "BOOL", True)
    options = prompt_options(document, chat, tools=chat)
    if options:
        request.inputs["prompt_options"] = scalar_input("prompt_options", "BYTES",
                                                        json.dumps(options).encode())
    strings = bool(read_field(document, "return_token_strs", (bool,)))
    request.requested_outputs = [RequestedOutput("token_ids")] + (
        [RequestedOutput("token_strs")] if strings else [])
    return request, strings


def detokenize_request(document: dict[str, Any], model: str) -> InferenceRequest:
    """The request for /detokenize's body: `tokens`, a list of non-negative token ids."""
    tokens = read_field(document, "tokens", (list,), required=True)
    if not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in tokens):
        raise OpenAiError(400, "'tokens' must be a list of token ids (non-negative integers)",
                          param="tokens")
    request = InferenceRequest(model)
    request.inputs["text_input"] = scalar_input("text_input", "BYTES", json.dumps(tokens).encode())
    request.inputs["detokenize"] = scalar_input("detokenize", "BOOL", True)
    request.requested_outputs = [RequestedOutput("text_output")]
    return request


class TokenizerAnswer:
    """Collects the one response to a tokenizer request; answers with `render(outputs)` or
    the error, through `send(status, document)`."""

    def __init__(self, send: Callable[[int, Any], None],
                 render: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.send = send
        self.render = render
        self.outputs: dict[str, Any] = {}
        self.failed = False

    def __call__(self, response: InferenceResponse | None, final: bool) -> None:
        if self.failed:
            return
        if response is not None and response.error is not None:
            self.failed = True
            error = OpenAiError.from_triton(response.error)
            return self.send(error.status, error.body)
        if response is not None:
            self.outputs.update({t.name: t.data.reshape(-1) for t in response.outputs})
        if final:
            try:
                document = self.render(self.outputs)
            except (KeyError, UnicodeDecodeError) as exc:  # a model that answered otherwise
                error = OpenAiError.from_triton(TritonError.internal(
                    f"the model's tokenizer answer lacks what /tokenize needs: {exc}"))
                return self.send(error.status, error.body)
            self.send(200, document)


def tokens_document(outputs: dict[str, Any], strings: bool,
                    max_model_len: int | None) -> dict[str, Any]:
    """vLLM's TokenizeResponse."""
    tokens = [int(t) for t in outputs["token_ids"]]
    return {"count": len(tokens), "max_model_len": max_model_len, "tokens": tokens,
            "token_strs": [bytes(s).decode("utf-8") for s in outputs["token_strs"]]
            if strings else None}


def text_document(outputs: dict[str, Any]) -> dict[str, Any]:
    """vLLM's DetokenizeResponse."""
    return {"prompt": bytes(outputs["text_output"][0]).decode("utf-8")}
