"""The HTTP infer response header of an all-binary answer is written from cached pieces; it must
be byte for byte what Triton's JSON writer (`dumps`) makes of the same document, for any model
name, version, id, output name and shape (non-ASCII and escapes included), however often an
entry is reused, and the binary parts must follow in output order."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tritium.frontend.extensions.json_codec import dumps
from tritium.frontend.http.json_data import LARGE_OUTPUT, json_from_array, json_text_in_slices
from tritium.frontend.http.request import OutputPlan
from tritium.frontend.http.response import encode_infer_response
from tritium.request import InferenceRequest, InferenceResponse
from tritium.tensor import Tensor

_TEXT = st.text(st.characters(codec="utf-8"), max_size=8)
_KINDS = st.sampled_from([("FP32", np.float32), ("INT8", np.int8), ("BOOL", np.bool_)])


@st.composite
def _tensors(draw: Any) -> Tensor:
    datatype, dtype = draw(_KINDS)
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    data = np.arange(int(np.prod(shape))).astype(dtype).reshape(shape)
    return Tensor(draw(_TEXT.filter(bool)), datatype, shape, data)


def _document(response: InferenceResponse, model_name: str, outputs: list[Tensor]
              ) -> dict[str, Any]:
    document: dict[str, Any] = {}
    if response.id:
        document["id"] = response.id
    document["model_name"] = model_name
    document["model_version"] = response.model_version
    document["outputs"] = [
        {"name": t.name, "datatype": t.datatype, "shape": list(t.shape),
         "parameters": {"binary_data_size": t.data.nbytes}} for t in outputs]
    return document


@settings(max_examples=300, deadline=None)
@given(name=_TEXT, request_name=_TEXT.filter(bool), version=st.sampled_from(["1", "12"]),
       id_=_TEXT, outputs=st.lists(_tensors(), max_size=3, unique_by=lambda t: t.name),
       ask=st.sampled_from(["all", "first", "default"]), repeat=st.integers(1, 2))
def test_all_binary_header_is_what_the_json_writer_makes(
        name: str, request_name: str, version: str, id_: str, outputs: list[Tensor], ask: str,
        repeat: int) -> None:
    response = InferenceResponse(outputs=outputs, model_name=name, model_version=version,
                                 id=id_)
    if ask == "default":  # binary_data_output: every output, binary
        plan, sent = OutputPlan(default_binary=True), outputs
    else:
        sent = outputs if ask == "all" else outputs[:1]
        plan = OutputPlan(requested={t.name: (True, 0) for t in sent})
    request = InferenceRequest(request_name)
    for _ in range(repeat):  # the second time, from the cached pieces
        header, blobs = encode_infer_response(response, request, plan, None)
        assert header == dumps(_document(response, name or request_name, sent))
        assert [bytes(b) for b in blobs] == [t.data.tobytes() for t in sent if t.data.nbytes]


def test_a_json_output_among_binary_ones_takes_the_writer_s_way() -> None:
    data = np.array([[1.5, 2.0]], np.float32)
    response = InferenceResponse(
        outputs=[Tensor("A", "FP32", (1, 2), data), Tensor("B", "FP32", (1, 2), data)],
        model_name="m", model_version="1")
    plan = OutputPlan(requested={"A": (True, 0), "B": (False, 0)})
    header, blobs = encode_infer_response(response, InferenceRequest("m"), plan, None)
    assert header == (b'{"model_name":"m","model_version":"1","outputs":['
                      b'{"name":"A","datatype":"FP32","shape":[1,2],'
                      b'"parameters":{"binary_data_size":8}},'
                      b'{"name":"B","datatype":"FP32","shape":[1,2],"data":[1.5,2.0]}]}')
    assert [bytes(b) for b in blobs] == [data.tobytes()]


@pytest.mark.parametrize("datatype, values", [
    ("FP32", np.array([0.1, np.nan, np.inf, -np.inf, -0.0, 3e38], np.float32)),
    ("FP64", np.array([1e-300, 0.1, np.nan], np.float64)),
    ("INT64", np.array([-(1 << 63), (1 << 63) - 1, 0], np.int64)),
    ("UINT64", np.array([(1 << 64) - 1, 1], np.uint64)),
    ("BOOL", np.array([True, False], np.bool_)),
])
def test_a_large_output_written_in_slices_is_the_text_written_whole(datatype, values):
    """Generate answers write outputs of LARGE_OUTPUT elements or more a slice at a time: the
    same text as the whole list written at once, across slice boundaries."""
    array = np.resize(values, 2 * LARGE_OUTPUT + 3)
    assert json_text_in_slices(datatype, array) == dumps(json_from_array(datatype, array))
