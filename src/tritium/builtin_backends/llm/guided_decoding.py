"""Guided decoding (vLLM's structured outputs): output held to JSON, a JSON schema, a regular
expression, one of a list of strings, or a grammar.

A request's sampling parameters name it as vLLM's do, `structured_outputs` (vLLM >= 0.12) or
`guided_decoding` (before): `{"json": <schema object or its JSON text>}`,
`{"json_object": true}`, `{"regex": "..."}`, `{"choice": ["...", ...]}` or
`{"grammar": "<EBNF, as xgrammar reads it>"}`; the OpenAI frontend sends them for
`response_format` and for vLLM's `structured_outputs` extra parameter. The grammar is
compiled with xgrammar, the library vLLM uses by default, against the model's tokenizer (once
per model, on first use; compiled grammars are cached by xgrammar), when the request is
admitted, so a bad schema fails that request alone. Each sequence then keeps a matcher: before
a token is sampled the tokens the grammar forbids get -inf (the request's other logits
processors are applied first), and each token sampled advances the matcher. Once the document
is complete the grammar allows only the end-of-sequence token, so the answer stops there.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from typing import Any

import torch

from tritium.backend import TritonError

KEYS = ("structured_outputs", "guided_decoding")
_KINDS = ("json", "json_object", "regex", "choice", "grammar")
_SOURCE_PREFIX = re.compile(r"^\[[0-9:]+\] \S+:\d+: ")


@dataclass(frozen=True)
class GuidedSpec:
    """What the output must be: `kind` (one of _KINDS) and its text (the JSON schema, the
    regular expression, the grammar; the choices as an EBNF grammar; empty for json_object)."""

    kind: str
    text: str


def parse_guided(key: str, value: dict[str, Any]) -> GuidedSpec | None:
    """The spec of a `structured_outputs`/`guided_decoding` object."""
    given = {k: v for k, v in value.items() if v is not None and v is not False}
    given.pop("backend", None)  # vLLM's choice of library: xgrammar is the one here
    unknown = sorted(set(given) - set(_KINDS))
    if unknown:
        raise TritonError.invalid_arg(
            f"{key} {', '.join(unknown)} is not supported; the llm backend supports "
            f"{', '.join(_KINDS)}"
        )
    if len(given) > 1:
        raise TritonError.invalid_arg(
            f"{key} takes one of {', '.join(_KINDS)}, not {' and '.join(sorted(given))}")
    if not given:
        return None
    kind, text = next(iter(given.items()))
    if kind == "json":
        return GuidedSpec(kind, text if isinstance(text, str) else json.dumps(text))
    if kind == "json_object":
        return GuidedSpec(kind, "")
    if kind == "choice":
        if type(text) is not list or not text or any(type(c) is not str for c in text):
            raise TritonError.invalid_arg(f"{key} choice must be a non-empty list of strings")
        return GuidedSpec("grammar", _choice_grammar(text))
    if type(text) is not str or not text:
        raise TritonError.invalid_arg(f"{key} {kind} must be a non-empty string")
    return GuidedSpec(kind, text)


def _choice_grammar(choices: list[str]) -> str:
    """The EBNF grammar of exactly one of `choices` (each a quoted string literal)."""
    quoted = ('"' + c.replace("\\", "\\\\").replace('"', '\\"') + '"' for c in choices)
    return "root ::= " + " | ".join(quoted)


class Grammars:
    """One model's grammar compiler over its tokenizer (xgrammar imported on first use)."""

    def __init__(self, tokenizer: Any, vocab_size: int) -> None:
        self._tokenizer = tokenizer
        self._vocab_size = vocab_size
        self._compiler: Any = None
        self._lock = threading.Lock()

    def compile(self, spec: GuidedSpec) -> Any:
        """The compiled grammar of `spec` (INVALID_ARG for what xgrammar refuses)."""
        compiler = self._get_compiler()
        try:
            if spec.kind == "json_object":
                return compiler.compile_builtin_json_grammar()
            if spec.kind == "json":
                return compiler.compile_json_schema(spec.text)
            if spec.kind == "regex":
                return compiler.compile_regex(spec.text)
            return compiler.compile_grammar(spec.text)
        except (RuntimeError, ValueError) as exc:
            what = {"json": "the JSON schema", "regex": "the regular expression"}.get(
                spec.kind, "the grammar")
            # xgrammar's C++ messages begin with a time and a source line: not the user's.
            reason = _SOURCE_PREFIX.sub("", str(exc)).strip()
            raise TritonError.invalid_arg(f"{what} cannot be used: {reason}") from None

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
