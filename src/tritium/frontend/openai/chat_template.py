"""The chat template of `--openai-tokenizer`: chat messages rendered to a prompt in the frontend.

Triton's vLLM backend takes a prompt, not messages; Triton's OpenAI frontend renders chat
messages with the chat template of the tokenizer named by its `--tokenizer` and sends the text.
Here the same, for the models that take no messages themselves (no `apply_chat_template`
input; the llm backend renders with its own model's tokenizer). The tokenizer is a local
folder, read once at startup with transformers (nothing is downloaded), so a wrong folder stops
the server with one line rather than failing every chat request.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class ChatTemplate:
    """A tokenizer folder's chat template."""

    def __init__(self, folder: str) -> None:
        if not (Path(folder) / "tokenizer_config.json").is_file():
            raise ValueError(f"--openai-tokenizer {folder}: no tokenizer_config.json there; "
                             "give the folder of a Hugging Face tokenizer (nothing is "
                             "downloaded)")
        try:
            from transformers import AutoTokenizer
        except ImportError:
            raise ValueError("--openai-tokenizer needs transformers: pip install "
                             "'transformers>=5'") from None
        try:
            self.tokenizer: Any = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ValueError(f"--openai-tokenizer {folder}: {exc}") from None
        if not self.tokenizer.chat_template:
            raise ValueError(f"--openai-tokenizer {folder}: the tokenizer has no chat template")

    def render(self, messages: list[dict[str, str]]) -> str:
        """The prompt for `messages`, ending where the assistant's answer begins."""
        return str(self.tokenizer.apply_chat_template(messages, tokenize=False,
                                                      add_generation_prompt=True))
