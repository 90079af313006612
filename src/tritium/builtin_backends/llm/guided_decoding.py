"""Guided decoding (vLLM's structured outputs): output held to JSON, or to a JSON schema.

A request's sampling parameters name it as vLLM's do, `structured_outputs` (vLLM >= 0.12) or
`guided_decoding` (before): `{"json": <schema object or its JSON text>}` or
`{"json_object": true}`; the OpenAI frontend sends them for `response_format`. The grammar is
compiled with xgrammar, the library vLLM uses by default, against the model's tokenizer (once
per model, on first use; compiled grammars are cached by xgrammar), when the request is
admitted, so a bad schema fails that request alone. Each sequence then keeps a matcher: before
a token is sampled the tokens the grammar forbids get -inf (the request's other logits
processors are applied first), and each token sampled advances the matcher. Once the document
is complete the grammar allows only the end-of-sequence token, so the answer stops there.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

import torch

from tritium.backend import TritonError

KEYS = ("structured_outputs", "guided_decoding")
_KINDS = ("json", "json_object")


@dataclass(frozen=True)
class GuidedSpec:
    """What the output must be: any JSON value (`json_object`) or one matching `schema`."""

    schema: str | None  # JSON text of the schema; None for json_object


def parse_guided(key: str, value: dict[str, Any]) -> GuidedSpec | None:
    """The spec of a `structured_outputs`/`guided_decoding` object."""
    given = {k: v for k, v in value.items() if v is not None and v is not False}
    given.pop("backend", None)  # vLLM's choice of library: xgrammar is the one here
    unknown = sorted(set(given) - set(_KINDS))
    if unknown:
        raise TritonError.invalid_arg(
            f"{key} {', '.join(unknown)} is not supported; the llm backend supports "
            f"{' and '.join(_KINDS)}"
        )
    if len(given) > 1:
        raise TritonError.invalid_arg(f"{key} takes one of {', '.join(_KINDS)}, not both")
    if "json" in given:
        schema = given["json"]
        return GuidedSpec(schema if isinstance(schema, str) else json.dumps(schema))
    return GuidedSpec(None) if "json_object" in given else None


class Grammars:
    """One model's grammar compiler over its tokenizer (xgrammar imported on first use)."""

    def __init__(self, tokenizer: Any, vocab_size: int) -> None:
        self._tokenizer = tokenizer
        self._vocab_size = vocab_size
        self._compiler: Any = None
        self._lock = threading.Lock()

    def compile(self, spec: GuidedSpec) -> Any:
        """The compiled grammar of `spec` (INVALID_ARG for a schema xgrammar refuses)."""
        compiler = self._get_compiler()
        try:
            if spec.schema is None:
                return compiler.compile_builtin_json_grammar()
            return compiler.compile_json_schema(spec.schema)
        except (RuntimeError, ValueError) as exc:
            raise TritonError.invalid_arg(f"the JSON schema cannot be used: {exc}") from None

    def _get_compiler(self) -> Any:
        with self._lock:
            if self._compiler is None:
                try:
                    import xgrammar
                except ImportError:
                    raise TritonError.unavailable(
                        "guided decoding (structured outputs) needs xgrammar: "
                        "pip install xgrammar"
                    ) from None
                info = xgrammar.TokenizerInfo.from_huggingface(
                    self._tokenizer, vocab_size=self._vocab_size)
                self._compiler = xgrammar.GrammarCompiler(info)
            return self._compiler


class GrammarConstraint:
    """One sequence's matcher over a compiled grammar."""

    def __init__(self, compiled: Any, vocab_size: int) -> None:
        import xgrammar

        self._xgrammar = xgrammar
        self._matcher = xgrammar.GrammarMatcher(compiled)
        self._bitmask = xgrammar.allocate_token_bitmask(1, vocab_size)

    def apply(self, logits: torch.Tensor) -> None:
        """Forbid, in one row of logits [vocab], the tokens the grammar does not allow next."""
        if self._matcher.is_terminated():
            return
        self._matcher.fill_next_token_bitmask(self._bitmask)
        bitmask = self._bitmask.to(logits.device, non_blocking=True)
        self._xgrammar.apply_token_bitmask_inplace(logits[None], bitmask)

    def add(self, token: int) -> None:
        """A token the sequence generated."""
        if not self._matcher.is_terminated():
            self._matcher.accept_token(token)
