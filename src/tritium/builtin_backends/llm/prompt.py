"""The prompt a request gives the model, and the tokenizer's own answers (tokenize, detokenize).

`text_input` is a prompt, or, with `apply_chat_template`, chat messages as JSON rendered with
the model's chat template. A prompt may come as token ids instead, in the optional
`prompt_token_ids` input (INT64, `text_input` then empty): taken as they are, special tokens
included, as vLLM's OpenAI server takes a token-id prompt; an id outside the model's vocabulary
is refused in vLLM's words, and the prompt's text (what an echo shows) is their decoding. The
optional `prompt_options` input (JSON, the names and defaults of vLLM's request fields) says
how: `add_special_tokens` (default true for a prompt, false after the chat template, which
writes the model's special tokens itself), `add_generation_prompt` (default true, false with
`continue_final_message`), `continue_final_message` (the last message left open for the model to
go on with), `chat_template_kwargs` (the template's own variables) and `tools` (the template's
tool list). A chat template sent with the request is refused, as vLLM refuses one unless started
with --trust-request-chat-template: the model's own renders.

Two inputs make a request a question for the tokenizer, answered at once with one final
response and no engine step (what vLLM's `/tokenize` and `/detokenize` answer; the OpenAI
frontend serves those routes through them, so it needs no tokenizer of its own): `tokenize`
(BOOL) answers the tokens of the prompt as generation would see it, in `token_ids` (INT64) and
`token_strs` (BYTES, the tokenizer's strings for them); `detokenize` (BOOL) reads `text_input`
as a JSON list of token ids and answers their text in `text_output`.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tritium.backend import RESPONSE_COMPLETE_FINAL, InferenceResponse, Request, Tensor, TritonError

from .request_inputs import flag, string, text_input, token_ids

if TYPE_CHECKING:
    from .runner import Checkpoint

# The options' names (vLLM's request fields) and the JSON types they take.
_OPTIONS: dict[str, type] = {"add_special_tokens": bool, "add_generation_prompt": bool,
                             "continue_final_message": bool, "chat_template_kwargs": dict,
                             "tools": list}


@dataclass
class PromptOptions:
    """How text_input becomes tokens (None: the default for a prompt or for chat)."""

    add_special_tokens: bool | None = None
    add_generation_prompt: bool | None = None
    continue_final_message: bool = False
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] | None = None


def read_options(request: Request) -> PromptOptions:
    """The request's `prompt_options`, checked (INVALID_ARG naming what is wrong)."""
    text = string(request, "prompt_options")
    if text is None:
        return PromptOptions()
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TritonError.invalid_arg(f"prompt_options must be a JSON object: {exc}") from None
    if not isinstance(document, dict):
        raise TritonError.invalid_arg("prompt_options must be a JSON object")
    kwargs = document.get("chat_template_kwargs") or {}
    if document.get("chat_template") is not None or (
            isinstance(kwargs, dict) and kwargs.get("chat_template") is not None):
        raise TritonError.invalid_arg(
            "a chat template sent with the request is refused (as vLLM refuses one without "
            "--trust-request-chat-template): the model's own chat template renders the messages")
    unknown = sorted(set(document) - set(_OPTIONS) - {"chat_template"})
    if unknown:
        raise TritonError.invalid_arg(f"prompt_options: unknown key(s) {', '.join(unknown)}; "
                                      f"known: {', '.join(_OPTIONS)}")
    for name, kind in _OPTIONS.items():
        value = document.get(name)
        if value is not None and not isinstance(value, kind):
            raise TritonError.invalid_arg(f"prompt_options: '{name}' must be a JSON "
                                          f"{'boolean' if kind is bool else kind.__name__}")
    tools = document.get("tools")
    if tools is not None and not all(isinstance(tool, dict) for tool in tools):
        raise TritonError.invalid_arg("prompt_options: 'tools' must be a list of objects")
    options = PromptOptions(document.get("add_special_tokens"),
                            document.get("add_generation_prompt"),
                            bool(document.get("continue_final_message")), dict(kwargs), tools)
    if options.continue_final_message and options.add_generation_prompt:
        raise TritonError.invalid_arg(
            "Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
    return options


def prompt_tokens(checkpoint: Checkpoint, request: Request,
                  limit: int | None = None) -> tuple[str, list[int]]:
    """The request's prompt text (rendered, for chat messages; decoded, for token ids) and its
    token ids. With a `limit` (max_model_len), a prompt of `limit` tokens or more, which leaves
    no room for output, is refused; one that cannot have fewer is refused before it is
    tokenized whole (`_refuse_past`)."""
    options = read_options(request)
    text = text_input(request)
    chat = bool(flag(request, "apply_chat_template", False))
    ids = token_ids(request, "prompt_token_ids")
    if ids is not None:
        return _token_prompt(checkpoint, ids, text, chat, limit)
    if chat:
        text = _render_chat(checkpoint, text, options)
    special = options.add_special_tokens
    special = not chat if special is None else special
    if limit is not None:
        _refuse_past(checkpoint, text, special, limit)
    tokens = _tokenize(checkpoint, text, special)
    if limit is not None and len(tokens) >= limit:
        raise _too_long(limit, f"{len(tokens)} input tokens")
    return text, tokens


def _token_prompt(checkpoint: Checkpoint, ids: list[int], text: str, chat: bool,
                  limit: int | None) -> tuple[str, list[int]]:
    """A prompt given as token ids, checked as vLLM's engine checks one (an empty one, an id
    past the vocabulary: the embedding has no row for it), with its decoded text."""
    if text:
        raise TritonError.invalid_arg(
            "give the prompt in text_input or in prompt_token_ids, not both: with "
            "prompt_token_ids, text_input must be empty")
    if chat:
        raise TritonError.invalid_arg(
            "apply_chat_template renders chat messages given in text_input, not token ids")
    if not ids:
        raise TritonError.invalid_arg("The decoder prompt cannot be empty")
    if limit is not None and len(ids) >= limit:
        raise _too_long(limit, f"{len(ids)} input tokens")
    vocab = checkpoint.vocab_size
    high, low = max(ids), min(ids)
    if high >= vocab or low < 0:
        raise TritonError.invalid_arg(
            f"Token id {high if high >= vocab else low} is out of vocabulary")
    return str(checkpoint.tokenizer.decode(ids)), ids


def _tokenize(checkpoint: Checkpoint, text: str, special: bool) -> list[int]:
    try:
        return list(checkpoint.tokenizer(text, add_special_tokens=special).input_ids)
    except (TypeError, ValueError) as exc:  # text the tokenizer takes no (lone surrogates)
        raise TritonError.invalid_arg(f"the prompt cannot be tokenized: {exc}") from None


def _refuse_past(checkpoint: Checkpoint, text: str, special: bool, limit: int) -> None:
    """Refuse a prompt of `limit` tokens or more from its beginning alone.

    Tokenizing megabytes of text takes the model's thread (every request to the model waits)
    for seconds per megabyte and ~150 bytes per token. No token of the vocabulary is longer
    than the longest token string, so twice `limit` times that many characters are at least
    2 x `limit` tokens (however the cut splits a word): if they are, the whole prompt is too
    long. A tokenizer whose normalizer drops characters (collapsing spaces) can make fewer
    tokens of them; then the whole prompt is tokenized as before.
    """
    head = 2 * limit * checkpoint.longest_token
    if len(text) <= head:
        return
    count = len(_tokenize(checkpoint, text[:head], special))
    if count >= limit:
        raise _too_long(limit, f"at least {count} input tokens (in the first {head} of its "
                               f"{len(text)} characters)")


def _too_long(limit: int, tokens: str) -> TritonError:
    """A prompt past max_model_len, in the words of vLLM's OpenAI server (its check of the
    prompt's length; OpenAI's own message starts alike). Clients tell the refusal by them:
    aiperf counts an error whose message holds "maximum context" or "context length" in its
    context_overflow_count, where Tritium's own wording counted nothing."""
    return TritonError.invalid_arg(
        f"This model's maximum context length is {limit} tokens. However, your request has "
        f"{tokens}. Please reduce the length of the input messages.")


def answer_tokenizer_request(checkpoint: Checkpoint, request: Request) -> bool:
    """Answer a `tokenize` or `detokenize` request at once; False for any other request."""
    if flag(request, "detokenize", False):
        outputs = [_text("text_output", _detokenize(checkpoint, text_input(request)))]
    elif flag(request, "tokenize", False):
        _, ids = prompt_tokens(checkpoint, request)
        strings = checkpoint.tokenizer.convert_ids_to_tokens(ids)
        outputs = [Tensor("token_ids", "INT64", (len(ids),), np.array(ids, dtype=np.int64)),
                   Tensor("token_strs", "BYTES", (len(ids),),
                          np.array([s.encode("utf-8") for s in strings], dtype=np.object_))]
    else:
        return False
    wanted = set(request.requested_output_names)
    if wanted:
        outputs = [t for t in outputs if t.name in wanted]
    sender = request.response_sender
    if sender is not None:
        sender.send(InferenceResponse(outputs=outputs), RESPONSE_COMPLETE_FINAL)
    return True


def _detokenize(checkpoint: Checkpoint, text: str) -> str:
    try:
        ids = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TritonError.invalid_arg(
            f"with detokenize, text_input must be a JSON list of token ids: {exc}") from None
    if not isinstance(ids, list) or not all(
            isinstance(t, int) and not isinstance(t, bool) for t in ids):
        raise TritonError.invalid_arg(
            "with detokenize, text_input must be a JSON list of token ids (integers)")
    vocab = checkpoint.vocab_size
    outside = sorted({t for t in ids if not 0 <= t < vocab})
    if outside:
        raise TritonError.invalid_arg(f"token id(s) {outside} are out of vocabulary. "
                                      f"Vocabulary size: {vocab}")
    return str(checkpoint.tokenizer.decode(ids))


def _render_chat(checkpoint: Checkpoint, text: str, options: PromptOptions) -> str:
    try:
        messages = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TritonError.invalid_arg(
            f"with apply_chat_template, text_input must be JSON chat messages: {exc}"
        ) from None
    if not isinstance(messages, list) or not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages
    ):
        raise TritonError.invalid_arg(
            "with apply_chat_template, text_input must be a JSON list of "
            '{"role": ..., "content": ...} objects'
        )
    tokenizer = checkpoint.tokenizer
    if not getattr(tokenizer, "chat_template", None):
        raise TritonError.invalid_arg(
            "the model's tokenizer has no chat template (tokenizer_config.json chat_template)"
        )
    # The template's own variables only: the rendering's parameters are the request's fields.
    parameters = inspect.signature(tokenizer.apply_chat_template).parameters
    taken = sorted(k for k in options.chat_template_kwargs
                   if k in parameters and parameters[k].kind is not inspect.Parameter.VAR_KEYWORD)
    if taken:
        raise TritonError.invalid_arg(
            f"chat_template_kwargs: {', '.join(taken)} is not a template variable (give "
            "add_generation_prompt, continue_final_message and tools as fields of their own)")
    generation_prompt = options.add_generation_prompt
    if generation_prompt is None:
        generation_prompt = not options.continue_final_message
    try:
        return str(tokenizer.apply_chat_template(
            messages, tools=options.tools, tokenize=False,
            add_generation_prompt=generation_prompt,
            continue_final_message=options.continue_final_message,
            **options.chat_template_kwargs))
    except Exception as exc:  # jinja errors from the template
        raise TritonError.invalid_arg(f"the chat template failed: {exc}") from None


def _text(name: str, value: str) -> Tensor:
    return Tensor(name, "BYTES", (1,), np.array([value.encode("utf-8")], dtype=np.object_))
