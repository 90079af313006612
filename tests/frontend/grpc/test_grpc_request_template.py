"""A ModelInferRequest decoded once is decoded again from its template, keyed by the message's
bytes before its raw_input_contents: the request made from the template must be the one the
full decoding makes, whatever the fields, and a message laid out otherwise, or one whose raw
contents only look like the usual layout, must never leave a template. A message of a kept
template's size is tried against it before it is parsed: whatever its bytes, it must decode as
it would with no template kept."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tritonclient.grpc import service_pb2 as pb

from tritium.frontend.grpc import request_template
from tritium.frontend.grpc.infer_request import decode_infer_request, parse_infer_request

_NAMES = st.text(min_size=1, max_size=6)
_KINDS = st.sampled_from([("FP32", "<f4"), ("INT64", "<i8"), ("BOOL", "?"), ("BYTES", None)])


def _raw(dtype: str | None, count: int, width: int) -> bytes:
    if dtype is None:  # BYTES: length-prefixed elements (of 4 bytes: 8 bytes an element, as
        # many as an object array's items take)
        return b"".join(struct.pack("<I", width) + f"{i:0{width}d}".encode()[:width]
                        for i in range(count))
    return np.arange(count).astype(dtype).tobytes()


@st.composite
def _messages(draw: Any) -> pb.ModelInferRequest:
    message = pb.ModelInferRequest(model_name=draw(_NAMES),
                                   model_version=draw(st.sampled_from(["", "1", "7"])),
                                   id=draw(st.sampled_from(["", "", "r1"])))
    for key, kind, value in draw(st.lists(st.sampled_from([
            ("sequence_id", "int64_param", 5), ("sequence_id", "string_param", "s"),
            ("sequence_start", "bool_param", True), ("priority", "uint64_param", 2),
            ("timeout", "int64_param", 100), ("custom", "string_param", "x"),
            ("other", "double_param", 0.5)]), max_size=3, unique_by=lambda p: p[0])):
        setattr(message.parameters[key], kind, value)
    for name in draw(st.lists(_NAMES, min_size=1, max_size=3, unique=True)):
        datatype, dtype = draw(_KINDS)
        shape = draw(st.lists(st.integers(0, 3), min_size=1, max_size=2))
        tensor = message.inputs.add(name=name, datatype=datatype, shape=shape)
        if draw(st.booleans()):
            tensor.parameters["note"].string_param = "n"
        message.raw_input_contents.append(
            _raw(dtype, int(np.prod(shape)), draw(st.sampled_from([1, 4]))))
    for name in draw(st.lists(_NAMES, max_size=2, unique=True)):
        output = message.outputs.add(name=name)
        if draw(st.booleans()):
            output.parameters["classification"].int64_param = 2
    return message


def _forget_templates() -> None:
    request_template.TEMPLATES.clear()
    request_template.BY_SIZE.clear()


def _decode(data: bytes, keyed: bool = True) -> tuple[Any, Any]:
    message, raws, key = parse_infer_request(data)
    return decode_infer_request(message, raws, None, key if keyed else None)  # type: ignore[arg-type]


def _described(decoded: tuple[Any, Any]) -> dict[str, Any]:
    request, regions = decoded
    fields = {name: getattr(request, name) for name in type(request).__slots__
              if name not in ("inputs", "requested_outputs", "form")}
    fields["inputs"] = [(n, t.datatype, t.shape, t.data.dtype.str, t.data.tolist(), t.parameters)
                        for n, t in request.inputs.items()]
    fields["outputs"] = [(o.name, o.parameters) for o in request.requested_outputs]
    fields["regions"] = regions
    return fields


@settings(max_examples=300, deadline=None)
@given(_messages())
def test_a_request_from_its_template_is_the_decoded_one(message: pb.ModelInferRequest) -> None:
    data = message.SerializeToString()
    _forget_templates()
    full = _described(_decode(data, keyed=False))
    assert _described(_decode(data)) == full
    assert len(request_template.TEMPLATES) == (0 if message.id else 1)  # a message with an id: none
    assert _described(_decode(data)) == full  # from the template when there is one
    request, _ = _decode(data)
    request.parameters["changed"] = 1
    for tensor in request.inputs.values():
        tensor.parameters["changed"] = 1
    for output in request.requested_outputs:
        output.parameters["changed"] = 1
    assert _described(_decode(data)) == full  # the template's requests own their containers
    if request_template.TEMPLATES:  # and the requests of one template share their form
        assert _decode(data)[0].form is _decode(data)[0].form is not None


def _outcome(data: bytes) -> Any:
    """What decoding `data` gives: the request described, or the error's type and text."""
    try:
        return _described(_decode(data))
    except Exception as exc:
        return type(exc).__name__, str(exc)


@settings(max_examples=500, deadline=None)
@given(_messages(), st.data())
def test_a_message_of_a_kept_templates_size_decodes_as_itself(
        message: pb.ModelInferRequest, data: st.DataObject) -> None:
    """One byte of a templated message changed (in its fields, a raw entry's head or its
    bytes): the message has the template's size, and decodes as it does with no template."""
    kept = message.SerializeToString()
    at = data.draw(st.integers(0, len(kept) - 1))
    changed = kept[:at] + bytes([data.draw(st.integers(0, 255))]) + kept[at + 1 :]
    _forget_templates()
    expected = _outcome(changed)
    _forget_templates()
    _decode(kept)
    assert len(request_template.BY_SIZE) == (0 if message.id else 1)
    assert _outcome(changed) == expected


def _add_sub_message() -> pb.ModelInferRequest:
    message = pb.ModelInferRequest(model_name="add_sub")
    message.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 16])
    return message


def test_raw_contents_not_last_leave_no_template() -> None:
    message = _add_sub_message()
    head = message.SerializeToString()
    raw = np.ones(16, np.float32).tobytes()
    output = pb.ModelInferRequest(outputs=[pb.ModelInferRequest.InferRequestedOutputTensor(
        name="OUTPUT0")]).SerializeToString()
    data = head + b"\x3a\x40" + raw + output  # raw_input_contents, then outputs
    _forget_templates()
    assert parse_infer_request(data)[2] is None
    request, _ = _decode(data)
    assert [o.name for o in request.requested_outputs] == ["OUTPUT0"]
    assert request_template.TEMPLATES == {}


def test_raw_contents_that_look_like_the_layout_leave_no_template() -> None:
    """The outputs field follows the raw contents, and the raw bytes are chosen so that the
    message's end looks like one raw entry: the key then cuts through the raw entry, and no
    template may be kept under it (it would carry this message's outputs to any message that
    starts with those bytes)."""
    message = _add_sub_message()
    head = message.SerializeToString()
    output = pb.ModelInferRequest(outputs=[pb.ModelInferRequest.InferRequestedOutputTensor(
        name="OUTPUT0")]).SerializeToString()
    raw = bytearray(64)
    raw[len(output) - 2 : len(output)] = b"\x3a\x40"  # where the key's check looks
    data = head + b"\x3a\x40" + bytes(raw) + output
    _forget_templates()
    key = parse_infer_request(data)[2]
    assert key is not None and len(key) == len(head) + len(output)  # the look-alike layout
    request, _ = _decode(data)
    assert [o.name for o in request.requested_outputs] == ["OUTPUT0"]
    assert bytes(request.inputs["INPUT0"].data.tobytes()) == bytes(raw)
    assert request_template.TEMPLATES == {}
