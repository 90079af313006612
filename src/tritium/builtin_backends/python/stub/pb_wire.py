"""pb_utils objects on the wire, stub side: the tensors, responses and errors a model hands the
stub, in the form `messages` carries them, and responses from the server back as pb_utils
objects.

Runs in the stub process: standard library, numpy and the transport only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..wire.shm_tensors import Block, read_tensors

# TRITONSERVER_DataType code (pb_utils.Tensor.triton_dtype()) -> wire datatype.
WIRE_OF_CODE = {
    1: "BOOL", 2: "UINT8", 3: "UINT16", 4: "UINT32", 5: "UINT64", 6: "INT8", 7: "INT16",
    8: "INT32", 9: "INT64", 10: "FP16", 11: "FP32", 12: "FP64", 13: "BYTES", 14: "BF16",
}
# pb_utils.TritonError code -> the server's error code name.
_CODE_NAMES = ["UNKNOWN", "INTERNAL", "NOT_FOUND", "INVALID_ARG", "UNAVAILABLE", "UNSUPPORTED",
               "ALREADY_EXISTS", "CANCELLED"]


def wire_tensors(tensors: Iterable[Any]) -> list[tuple[str, str, Any]]:
    """pb_utils Tensors -> [(name, datatype, array)], as `TensorWriter.pack` takes them (a
    tensor in GPU memory copied to the host)."""
    return [(t._name, WIRE_OF_CODE[t._dtype], t._host_array()) for t in tensors]


def wire_response(response: Any, descriptors: list) -> tuple:
    """A pb_utils InferenceResponse whose outputs are packed at `descriptors` -> its wire form."""
    error = response._error
    wire_error = None if error is None else (_CODE_NAMES[int(error.code())], error.message())
    parameters = response._parameters
    return descriptors, wire_error, None if parameters == "{}" else parameters


def pb_response(pb: Any, wire: tuple, block: Block | None) -> Any:
    """A response from the server -> a pb_utils InferenceResponse (tensors copied out)."""
    descriptors, error, parameters = wire
    tensors = [pb.Tensor._from_server(name, array, datatype == "BF16") for name, datatype, array
               in read_tensors(descriptors, block, True)]
    pb_error = None
    if error is not None:
        code, message = error
        pb_error = pb.TritonError(message, getattr(pb.TritonError, code, 1))
    response = pb.InferenceResponse(output_tensors=tensors, error=pb_error)
    if parameters:
        response._parameters = parameters
    return response
