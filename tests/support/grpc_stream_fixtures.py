"""What the ModelStreamInfer tests share: a server with Triton's decoupled examples (square,
repeat on the built-in backends), identity models and the decoupled Python model gen_stream;
a stream callback that collects responses, and input and raw-request builders.

Test modules import the fixtures and helpers they use from here; each module gets its own server.
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2 as pb

from support.models import identity_config, write_model
from support.server_process import ServerProcess

SQUARE = """
name: "{name}"
backend: "square"
max_batch_size: 0
model_transaction_policy {{ decoupled: True }}
input [ {{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }} ]
output [ {{ name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }} ]
{extra}
"""

REPEAT = """
name: "{name}"
backend: "repeat"
max_batch_size: 0
model_transaction_policy {{ decoupled: True }}
input [
  {{ name: "IN" data_type: TYPE_INT32 dims: [ -1 ] }},
  {{ name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] {optional} }},
  {{ name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] {optional} }}
]
output [
  {{ name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }},
  {{ name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] }}
]
"""

FINAL = "triton_final_response"
GEN_STREAM = Path(__file__).resolve().parent / "python_models" / "generate" / "gen_stream"


@pytest.fixture(scope="module")
def stream_server(tmp_path_factory: pytest.TempPathFactory):
    repo: Path = tmp_path_factory.mktemp("stream_repo")
    write_model(repo, "square_int32", SQUARE.format(name="square_int32", extra=""))
    write_model(repo, "square_fail", SQUARE.format(
        name="square_fail",
        extra='parameters { key: "CUSTOM_FAIL_COUNT" value: { string_value: "1" } }',
    ))
    write_model(repo, "repeat_int32", REPEAT.format(name="repeat_int32", optional=""))
    write_model(repo, "repeat_optional", REPEAT.format(
        name="repeat_optional", optional="optional: true"))
    # Triton's L0_grpc_state_cleanup: the repeat backend, not decoupled, sends several
    # responses to one request.
    write_model(repo, "repeat_non_decoupled", REPEAT.format(
        name="repeat_non_decoupled", optional="").replace("decoupled: True", "decoupled: False"))
    write_model(repo, "identity_int32", identity_config(
        "identity_int32", "TYPE_INT32", max_batch_size=0))
    write_model(repo, "identity_slow", identity_config(
        "identity_slow", "TYPE_INT32", max_batch_size=0,
        extra='parameters { key: "execute_delay_ms" value: { string_value: "300" } }'))
    # A decoupled Triton Python-backend model that notes each request it saw cancelled.
    shutil.copytree(GEN_STREAM, repo / "gen_stream", ignore=shutil.ignore_patterns("__pycache__"))
    with ServerProcess([repo], "--log-verbose=1") as process:
        process.repo = repo
        yield process


@pytest.fixture
def client(stream_server):
    with grpcclient.InferenceServerClient(stream_server.grpc_url) as c:
        yield c


class Collector:
    """A start_stream callback that keeps every (result, error) and lets a test wait for them."""

    def __init__(self) -> None:
        self.items: list[tuple[Any, Any]] = []
        self._cond = threading.Condition()

    def __call__(self, result: Any, error: Any) -> None:
        with self._cond:
            self.items.append((result, error))
            self._cond.notify_all()

    def wait_for(self, predicate, timeout: float = 30.0) -> list[tuple[Any, Any]]:
        with self._cond:
            assert self._cond.wait_for(lambda: predicate(self.items), timeout), self.items
            return list(self.items)

    def wait_count(self, count: int, timeout: float = 30.0) -> list[tuple[Any, Any]]:
        return self.wait_for(lambda items: len(items) >= count, timeout)

    def finals(self) -> int:
        return sum(1 for result, _ in self.items if result is not None and is_final(result))


def is_final(result: Any) -> bool:
    params = result.get_response().parameters
    assert FINAL in params, "every streamed response carries triton_final_response"
    return params[FINAL].bool_param


def int32_input(name: str, values: list[int], datatype: str = "INT32") -> grpcclient.InferInput:
    dtype = np.int32 if datatype == "INT32" else np.uint32
    data = np.array(values, dtype=dtype)
    tensor = grpcclient.InferInput(name, list(data.shape), datatype)
    tensor.set_data_from_numpy(data)
    return tensor


def square_inputs(n: int) -> list[grpcclient.InferInput]:
    return [int32_input("IN", [n])]


def repeat_inputs(values: list[int], delays: list[int], wait: int = 0):
    return [
        int32_input("IN", values),
        int32_input("DELAY", delays, "UINT32"),
        int32_input("WAIT", [wait], "UINT32"),
    ]


def outputs_of(items: list[tuple[Any, Any]], name: str = "OUT") -> list[int]:
    return [
        int(result.as_numpy(name)[0])
        for result, error in items
        if error is None and result.as_numpy(name) is not None
    ]


def wait_until_idle(server: ServerProcess, model: str, timeout: float = 5.0) -> None:
    """The cancelled request ends early (the model stops at cancellation); without that it
    would stay pending for the rest of its ~8 s of delays."""
    deadline = time.monotonic() + timeout
    while server.metric("nv_inference_pending_request_count", model) != 0:
        assert time.monotonic() < deadline, "cancelled request still pending"
        time.sleep(0.05)


def raw_request(model: str, values: list[int], id: str = "", input_name: str = "IN",
                extra: dict[str, list[int]] | None = None) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name=model, id=id)
    tensors = [(input_name, "INT32", np.array(values, dtype=np.int32))]
    for name, data in (extra or {}).items():
        tensors.append((name, "UINT32", np.array(data, dtype=np.uint32)))
    for name, datatype, data in tensors:
        request.inputs.add(name=name, datatype=datatype, shape=list(data.shape))
        request.raw_input_contents.append(data.tobytes())
    return request
