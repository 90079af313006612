"""OpenAI's logprobs shapes from the llm backend's `logprobs`/`prompt_logprobs` outputs.

The backend sends, per token, vLLM's dict `{token id: {"logprob", "rank", "decoded_token"}}`
with the token itself first and the likeliest ones after it by rank. vLLM's OpenAI server
writes them as here: completions get `tokens`, `token_logprobs`, `top_logprobs` (the token and
the top N, keyed by their text) and `text_offset` (where each token starts in the text);
chat gets `content`, one `{token, logprob, bytes, top_logprobs}` per token, the top N by rank.
"""

from __future__ import annotations

from typing import Any

Entry = dict[str, dict[str, Any]]


def _token(entry: Entry) -> tuple[str, float | None]:
    first = next(iter(entry.values()))
    return first["decoded_token"], first["logprob"]


class CompletionLogprobs:
    """A completion choice's logprobs, grown as the backend's entries come."""

    def __init__(self, top: int) -> None:
        self.top = top
        self.offset = 0  # where the next token's text starts

    def render(self, entries: list[Entry]) -> dict[str, Any]:
        tokens, logprobs, tops, offsets = [], [], [], []
        for entry in entries:
            token, logprob = _token(entry)
            tokens.append(token)
            logprobs.append(logprob)
            # The token and the top N (vLLM's `num_output_top_logprobs >= i`), keyed by text.
            tops.append(None if logprob is None else {
                item["decoded_token"]: item["logprob"]
                for i, item in enumerate(entry.values()) if i <= self.top})
            offsets.append(self.offset)
            self.offset += len(token)
        return {"tokens": tokens, "token_logprobs": logprobs, "top_logprobs": tops,
                "text_offset": offsets}


def chat_logprobs(entries: list[Entry], top: int) -> dict[str, Any]:
    content = []
    for entry in entries:
        token, logprob = _token(entry)
        ranked = sorted((item for item in entry.values() if item["rank"] <= top),
                        key=lambda item: item["rank"])
        content.append({"token": token, "logprob": logprob, "bytes": _bytes(token),
                        "top_logprobs": [{"token": item["decoded_token"],
                                          "logprob": item["logprob"],
                                          "bytes": _bytes(item["decoded_token"])}
                                         for item in ranked]})
    return {"content": content}


def _bytes(token: str) -> list[int]:
    return list(token.encode("utf-8", errors="replace"))
