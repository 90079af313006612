"""ModelInferResponse bytes written by hand (the gRPC frontend's encoder) must be what protobuf
reads as the message the response stands for: names, version, id, parameters (the final flag
of a stream included), every output's name, datatype, shape and parameters, and its raw
contents, for any text (non-ASCII included), any shape and however often an entry is reused
from the encoder's cache."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tritonclient.grpc import service_pb2 as pb

from tritium.frontend.grpc.infer_response import encode_infer_response
from tritium.request import InferenceRequest, InferenceResponse
from tritium.tensor import Tensor

_TEXT = st.text(max_size=8)
_PARAMETERS = st.dictionaries(
    st.text(min_size=1, max_size=6),
    st.booleans() | st.integers(-(1 << 63), (1 << 64) - 1) | st.floats(allow_nan=False)
    | st.text(max_size=6),
    max_size=3,
)
_SHAPES = st.lists(st.integers(0, 3), min_size=0, max_size=3).map(tuple)
_KINDS = st.sampled_from([("FP32", np.float32), ("INT64", np.int64), ("BOOL", np.bool_),
                          ("BYTES", np.object_)])


@st.composite
def _tensors(draw: Any) -> Tensor:
    datatype, dtype = draw(_KINDS)
    shape = draw(_SHAPES)
    count = int(np.prod(shape))
    if dtype is np.object_:
        data = np.array([draw(st.binary(max_size=4)) for _ in range(count)],
                        dtype=np.object_).reshape(shape)
    else:
        data = np.arange(count).astype(dtype).reshape(shape)
    parameters = draw(st.one_of(st.just({}), _PARAMETERS))
    return Tensor(draw(_TEXT.filter(bool)), datatype, shape, data, parameters)


def _expected(response: InferenceResponse, final: bool | None) -> pb.ModelInferResponse:
    """The message as protobuf builds it."""
    message = pb.ModelInferResponse(model_name=response.model_name,
                                    model_version=response.model_version, id=response.id)
    for key, value in {**response.parameters}.items():
        _set(message.parameters[key], value)
    if final is not None:
        message.parameters["triton_final_response"].bool_param = final
    for tensor in response.outputs:
        entry = message.outputs.add(name=tensor.name, datatype=tensor.datatype,
                                    shape=tensor.shape)
        for key, value in tensor.parameters.items():
            _set(entry.parameters[key], value)
        if tensor.datatype == "BYTES":
            message.raw_output_contents.append(b"".join(
                len(item).to_bytes(4, "little") + item for item in tensor.data.reshape(-1)))
        else:
            message.raw_output_contents.append(tensor.data.tobytes())
    return message


def _set(param: Any, value: Any) -> None:
    if isinstance(value, bool):
        param.bool_param = value
    elif isinstance(value, int):
        if value >= 1 << 63:
            param.uint64_param = value
        else:
            param.int64_param = value
    elif isinstance(value, float):
        param.double_param = value
    else:
        param.string_param = value


@settings(max_examples=300, deadline=None)
@given(name=_TEXT, version=st.sampled_from(["", "1", "17"]), id_=_TEXT,
       parameters=st.one_of(st.just({}), _PARAMETERS),
       outputs=st.lists(_tensors(), max_size=3, unique_by=lambda t: t.name),
       final=st.sampled_from([None, True, False]), repeat=st.integers(1, 2))
def test_written_bytes_read_as_the_protobuf_message(
        name: str, version: str, id_: str, parameters: dict[str, Any], outputs: list[Tensor],
        final: bool | None, repeat: int) -> None:
    response = InferenceResponse(outputs=outputs, parameters=parameters, model_name=name,
                                 model_version=version, id=id_)
    request = InferenceRequest(name)
    for _ in range(repeat):  # the second time, from the encoder's cached fields
        written = encode_infer_response(response, request, final=final)
        assert pb.ModelInferResponse.FromString(written) == _expected(response, final)


def test_shape_dimensions_past_one_byte_and_the_cache_keyed_by_shape() -> None:
    """Multi-byte varints in the packed shape; two shapes of one output are two entries."""
    request = InferenceRequest("m")
    for shape in ((1, 300), (2, 100_000), (1, 300)):
        tensor = Tensor("OUT", "INT8", shape, np.zeros(shape, np.int8))
        response = InferenceResponse(outputs=[tensor], model_name="m", model_version="1")
        message = pb.ModelInferResponse.FromString(encode_infer_response(response, request))
        assert tuple(message.outputs[0].shape) == shape
        assert message.raw_output_contents[0] == bytes(int(np.prod(shape)))
