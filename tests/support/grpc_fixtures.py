"""What the gRPC frontend tests share: clients and a raw stub on the shared server, and builders
and decoders for raw ModelInfer protobufs.

Test modules import the fixtures and helpers they use from here.
"""

from __future__ import annotations

import struct
from typing import Any

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pbg

SERVING = b"\x08\x01"
NOT_SERVING = b"\x08\x02"


@pytest.fixture(scope="module")
def client(server) -> grpcclient.InferenceServerClient:
    with grpcclient.InferenceServerClient(server.grpc_url) as c:
        yield c


@pytest.fixture(scope="module")
def channel(server) -> grpc.Channel:
    ch = grpc.insecure_channel(
        server.grpc_url,
        options=[("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)],
    )
    yield ch
    ch.close()


@pytest.fixture(scope="module")
def stub(channel) -> pbg.GRPCInferenceServiceStub:
    return pbg.GRPCInferenceServiceStub(channel)


def tensor(name: str, datatype: str, shape: list[int], **contents: list[Any]):
    t = pb.ModelInferRequest.InferInputTensor(name=name, datatype=datatype, shape=shape)
    for field, values in contents.items():
        getattr(t.contents, field).extend(values)
    return t


def infer_request(model: str, inputs: list, raws: list[bytes] = (), version: str = "",
                  outputs: list[str] = (), id: str = "", params: dict | None = None):
    r = pb.ModelInferRequest(model_name=model, model_version=version, id=id, inputs=inputs)
    r.raw_input_contents.extend(raws)
    for name in outputs:
        r.outputs.add(name=name)
    for key, value in (params or {}).items():
        p = r.parameters[key]
        if isinstance(value, bool):
            p.bool_param = value
        elif isinstance(value, int):
            p.int64_param = value
        elif isinstance(value, float):
            p.double_param = value
        else:
            p.string_param = value
    return r


def output_array(response: pb.ModelInferResponse, name: str) -> np.ndarray:
    """Decode one output the way tritonclient does (raw_output_contents by index)."""
    for index, out in enumerate(response.outputs):
        if out.name == name:
            raw = response.raw_output_contents[index]
            if out.datatype == "BYTES":
                items, offset = [], 0
                while offset < len(raw):
                    (length,) = struct.unpack_from("<I", raw, offset)
                    items.append(raw[offset + 4 : offset + 4 + length])
                    offset += 4 + length
                return np.array(items, dtype=np.object_).reshape(tuple(out.shape))
            dtype = {"BF16": np.uint16}.get(out.datatype) or grpcclient.triton_to_np_dtype(
                out.datatype
            )
            return np.frombuffer(raw, dtype=dtype).reshape(tuple(out.shape))
    raise AssertionError(f"no output {name} in {[o.name for o in response.outputs]}")


def bytes_wire(*items: bytes) -> bytes:
    return b"".join(struct.pack("<I", len(i)) + i for i in items)


F4 = np.arange(4, dtype=np.float32).reshape(1, 4)
I16 = np.arange(16, dtype=np.int32).reshape(1, 16)


def good_fp32_request():
    return infer_request("identity_fp32", [tensor("INPUT0", "FP32", [1, 4])], [F4.tobytes()])


def assert_still_serving(stub) -> None:
    response = stub.ModelInfer(good_fp32_request())
    np.testing.assert_array_equal(output_array(response, "OUTPUT0"), F4)
