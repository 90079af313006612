"""ModelInferRequest templates: a message decoded once is decoded again from its template.

Clients send the same fields with every request of a kind, and the same fields decode to the
same request but for its tensors' bytes (as HTTP's header templates, http/request.py), so the
decoded request is kept by the message's bytes before its raw_input_contents, and a message of
a kept template's size is tried against it before it is parsed at all (`infer_request` does
both). Kept for messages whose inputs are all raw contents, that name no shared memory and carry
no id. Bounded. Apart from `infer_request` because it is a cache with its own rules for what may
enter it, not part of Triton's checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tritonclient.grpc import service_pb2 as pb

from ...request import InferenceRequest, RequestedOutput, apply_parameters, log_prefix
from ...tensor import HeldDataError, Tensor, WireInput
from .protowire import SCAN_THRESHOLD, varint

# How many templates are kept (all are dropped when one more comes), and their keys' longest.
_TEMPLATE_LIMIT = 256
_TEMPLATE_KEY_LIMIT = 4096
_RAW_INPUT_TAG = b"\x3a"  # field 7 (raw_input_contents), wire type 2


def template_key(data: bytes, raws: Sequence[bytes | memoryview]) -> bytes | None:
    """`data` before its raw_input_contents when those are its last fields, each whole and in
    order (protobuf writes a message's fields in number order, raw_input_contents last); None
    for any other layout and for long keys."""
    end = len(data)
    for raw in reversed(raws):
        size = len(raw)
        head = _RAW_INPUT_TAG + varint(size)
        end -= len(head) + size
        if end < 0 or data[end : end + len(head)] != head:
            return None
    return bytes(data[:end]) if end <= _TEMPLATE_KEY_LIMIT else None


def _key_message(key: bytes) -> pb.ModelInferRequest | None:
    """`key` parsed, if it is whole fields holding no raw contents: then it ends where the
    message's raw_input_contents begin (its parse follows the message's own up to there), and
    every message starting with it and ending in raw contents only has the fields it has.
    Checked once, before a template is kept: without it, a message whose raw contents merely
    look like that layout could keep its own fields under another client's key."""
    try:
        message = pb.ModelInferRequest.FromString(key)
    except Exception:  # not whole fields (protobuf's DecodeError)
        return None
    return None if message.raw_input_contents else message


def keep_template(key: bytes, raws: Sequence[bytes | memoryview], request: InferenceRequest,
                   parameters: dict[str, Any]) -> None:
    message = _key_message(key)
    if message is None:
        return
    if len(TEMPLATES) >= _TEMPLATE_LIMIT:
        TEMPLATES.clear()
        BY_SIZE.clear()
    layout = []
    at = len(key)
    for raw in raws:
        head = _RAW_INPUT_TAG + varint(len(raw))
        start = at + len(head)
        layout.append((at, head, start, start + len(raw)))
        at = start + len(raw)
    template = Template(key, message, tuple(layout), request.model_name, request.model_version,
                         dict(parameters),
                         tuple((WireInput(t.name, t.datatype, t.shape), dict(t.parameters))
                               for t in request.inputs.values()),
                         tuple((o.name, dict(o.parameters)) for o in request.requested_outputs))
    TEMPLATES[key] = template
    # One template per message size (the last kept): the size picks the template to try
    # before parsing.
    BY_SIZE[at] = template


@dataclass(frozen=True, slots=True, eq=False)
class Template:
    """What a message decodes to, less its tensors' bytes; the `form` of its requests (compared
    by identity). `layout`: where each raw_input_contents entry's field head (tag and length)
    and bytes were in the message it was made from."""

    key: bytes
    message: pb.ModelInferRequest  # the key's fields; read, never changed
    layout: tuple[tuple[int, bytes, int, int], ...]  # head at, head, bytes start, bytes stop
    model: str
    version: int
    parameters: dict[str, Any]  # as apply_parameters takes them
    inputs: tuple[tuple[WireInput, dict[str, Any]], ...]
    outputs: tuple[tuple[str, dict[str, Any]], ...]

    def raws(self, data: bytes) -> list[bytes | memoryview] | None:
        """The raw contents of `data` if it is this template's fields followed by raw contents
        laid out as those it was made from (None otherwise: it is parsed)."""
        if not data.startswith(self.key):
            return None
        source: bytes | memoryview = memoryview(data) if len(data) >= SCAN_THRESHOLD else data
        raws: list[bytes | memoryview] = []
        for at, head, start, stop in self.layout:
            if data[at:start] != head:
                return None
            raws.append(source[start:stop])
        return raws

    def request(self, raws: Sequence[bytes | memoryview]) -> InferenceRequest:
        """A request of this template, its tensors from `raws` (each conversion checked)."""
        request = InferenceRequest(self.model, self.version)
        request.form = self
        if self.parameters:
            apply_parameters(request, self.parameters)
        model = self.model
        prefix = log_prefix("")
        inputs = request.inputs
        held = HeldDataError()
        for (wire, parameters), raw in zip(self.inputs, raws, strict=True):
            data = held.convert(wire.array, raw, model, prefix)
            if data is not None:
                inputs[wire.name] = Tensor(wire.name, wire.datatype, wire.shape, data,
                                           dict(parameters))
        held.check()
        requested = request.requested_outputs
        for name, parameters in self.outputs:
            requested.append(RequestedOutput(name, dict(parameters)))
        return request


TEMPLATES: dict[bytes, Template] = {}
BY_SIZE: dict[int, Template] = {}
