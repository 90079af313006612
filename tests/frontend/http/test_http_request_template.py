"""A header that decoded once is decoded again from its template (`_TEMPLATES`): the request and
output plan made from the template must be the ones the full decoding makes of the same body,
whatever the id, parameters, inputs and outputs, and a body whose tensor bytes are bad must fail
with the full decoding's error. Headers naming shared memory, carrying JSON data or an id are
never kept."""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tritium.errors import TritonError
from tritium.frontend.http import request as http_request
from tritium.frontend.http.request import decode_infer_request

_NAMES = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=6)
_KINDS = st.sampled_from([("FP32", "<f4"), ("INT64", "<i8"), ("BOOL", "?"), ("BYTES", None)])
_PARAMETERS = st.fixed_dictionaries({}, optional={
    "sequence_id": st.integers(0, 2**40) | st.text(max_size=4),
    "sequence_start": st.booleans(),
    "sequence_end": st.booleans(),
    "priority": st.integers(0, 9),
    "timeout": st.integers(0, 10**6),
    "binary_data_output": st.booleans(),
    "custom": st.integers(-5, 5) | st.text(max_size=4) | st.booleans(),
})
_OUTPUT_PARAMETERS = st.fixed_dictionaries({}, optional={
    "binary_data": st.booleans(), "classification": st.integers(0, 3)})


@st.composite
def _bodies(draw: Any) -> tuple[bytes, int]:
    header: dict[str, Any] = {}
    if draw(st.booleans()):
        header["id"] = draw(st.text(max_size=5))
    parameters = draw(_PARAMETERS)
    if parameters:
        header["parameters"] = parameters
    tail = b""
    inputs = []
    for name in draw(st.lists(_NAMES, min_size=1, max_size=3, unique=True)):
        datatype, dtype = draw(_KINDS)
        shape = draw(st.lists(st.integers(0, 3), min_size=1, max_size=2))
        count = int(np.prod(shape))
        if dtype is None:
            data = b"".join(struct.pack("<I", len(item)) + item
                            for item in draw(st.lists(st.binary(max_size=3), min_size=count,
                                                      max_size=count)))
        else:
            data = np.arange(count).astype(dtype).tobytes()
        inputs.append({"name": name, "datatype": datatype, "shape": shape,
                       "parameters": {"binary_data_size": len(data)}})
        tail += data
    header["inputs"] = inputs
    outputs = draw(st.lists(st.tuples(_NAMES, _OUTPUT_PARAMETERS), max_size=3,
                            unique_by=lambda o: o[0]))
    if outputs:
        header["outputs"] = [{"name": name, "parameters": params} for name, params in outputs]
    text = json.dumps(header).encode()
    return text + tail, len(text)


def _decode(body: bytes, header_length: int) -> tuple[Any, Any]:
    return decode_infer_request("m", 3, body, header_length, None, None)  # type: ignore[arg-type]


def _described(request: Any, plan: Any) -> dict[str, Any]:
    """Everything a decoded request and plan say, tensors as (datatype, shape, dtype, bytes)."""
    fields = {name: getattr(request, name) for name in type(request).__slots__
              if name not in ("inputs", "requested_outputs", "form")}
    fields["inputs"] = [(name, t.datatype, t.shape, t.data.dtype.str, t.data.tolist())
                        for name, t in request.inputs.items()]
    fields["requested_outputs"] = [(o.name, o.parameters) for o in request.requested_outputs]
    fields["plan"] = (plan.default_binary, plan.requested, plan.regions, plan.classifies,
                      plan.labels)
    return fields


@settings(max_examples=300, deadline=None)
@given(_bodies())
def test_a_request_from_its_template_is_the_decoded_one(case: tuple[bytes, int]) -> None:
    body, header_length = case
    http_request._TEMPLATES.clear()
    decoded = _described(*_decode(body, header_length))
    kept = (body[:header_length], len(body)) in http_request._TEMPLATES
    assert kept == (not decoded["id"])  # a header with an id is not kept
    assert _described(*_decode(body, header_length)) == decoded  # from the template
    # The template's request owns its containers: changing one leaves the next intact.
    request, plan = _decode(body, header_length)
    request.parameters["changed"] = 1
    plan.requested["changed"] = (True, 0)
    for output in request.requested_outputs:
        output.parameters["changed"] = 1
    assert _described(*_decode(body, header_length)) == decoded


def test_bad_tensor_bytes_fail_as_the_full_decoding_fails() -> None:
    header = json.dumps({"inputs": [
        {"name": "A", "datatype": "FP32", "shape": [1, 2], "parameters": {"binary_data_size": 8}},
        {"name": "B", "datatype": "BYTES", "shape": [1], "parameters": {"binary_data_size": 6}},
    ]}).encode()
    good = header + np.ones(2, "<f4").tobytes() + struct.pack("<I", 2) + b"ok"
    bad = header + np.ones(2, "<f4").tobytes() + struct.pack("<I", 9) + b"ok"  # too long
    http_request._TEMPLATES.clear()
    with pytest.raises(TritonError) as fresh:
        _decode(bad, len(header))
    _decode(good, len(header))
    assert (header, len(good)) in http_request._TEMPLATES
    with pytest.raises(TritonError) as templated:
        _decode(bad, len(header))
    assert (templated.value.code, templated.value.message) == (
        fresh.value.code, fresh.value.message)


def test_json_data_and_shared_memory_headers_are_not_kept() -> None:
    http_request._TEMPLATES.clear()
    body = json.dumps({"inputs": [{"name": "A", "datatype": "INT32", "shape": [2],
                                   "data": [1, 2]}]}).encode()
    _decode(body, len(body))
    assert http_request._TEMPLATES == {}
