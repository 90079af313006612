"""ModelStreamInfer and the decoupled example backends (square, repeat), through real clients.

One server process serves Triton's decoupled examples (configurations as in Triton's
python_backend examples/decoupled, on the built-in `square` and `repeat` backends), identity
models and a decoupled Python-backend model (gen_stream, which notes each request it finds
cancelled through `request.is_cancelled()`); `tritonclient.grpc` (start_stream / async_stream_infer / stop_stream) and
`tritonclient.grpc.aio` (stream_infer) drive it, plus raw stubs where the clients hide the wire.
What Triton sends was checked against Triton 2.51 (tools/reference-triton.sh).
"""

from __future__ import annotations

import asyncio
import queue
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as aioclient
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pbg
from tritonclient.utils import InferenceServerException

from models import identity_config, write_model
from server_process import ServerProcess

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
    write_model(repo, "identity_int32", identity_config(
        "identity_int32", "TYPE_INT32", max_batch_size=0))
    write_model(repo, "identity_slow", identity_config(
        "identity_slow", "TYPE_INT32", max_batch_size=0,
        extra='parameters { key: "execute_delay_ms" value: { string_value: "300" } }'))
    # A decoupled Triton Python-backend model that notes each request it saw cancelled.
    shutil.copytree(GEN_STREAM, repo / "gen_stream", ignore=shutil.ignore_patterns("__pycache__"))
    with ServerProcess([repo]) as process:
        process.repo = repo
        yield process


@pytest.fixture
def client(stream_server):
    with grpcclient.InferenceServerClient(stream_server.grpc_url) as c:
        yield c


# -- helpers -----------------------------------------------------------------------------------


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




# -- square ------------------------------------------------------------------------------------


def test_square_sends_n_responses_then_the_empty_final(client):
    got = Collector()
    client.start_stream(callback=got)
    try:
        client.async_stream_infer(
            "square_int32", square_inputs(3), request_id="sq3", enable_empty_final_response=True
        )
        items = got.wait_count(4)
    finally:
        client.stop_stream()
    assert [error for _, error in items] == [None] * 4
    results = [result for result, _ in items]
    data, final = results[:3], results[3]
    assert [int(r.as_numpy("OUT")[0]) for r in data] == [3, 3, 3]
    assert [r.as_numpy("OUT").shape for r in data] == [(1,)] * 3
    assert [is_final(r) for r in data] == [False] * 3
    assert is_final(final)
    assert final.get_response().outputs == []
    assert {r.get_response().id for r in results} == {"sq3"}
    assert final.get_response().model_name == "square_int32"
    assert data[0].get_response().model_version == "1"


def test_square_without_empty_final_sends_only_the_data(client):
    got = Collector()
    client.start_stream(callback=got)
    client.async_stream_infer("square_int32", square_inputs(2), request_id="plain")
    # Half-close: the server ends the stream once the request has finished.
    client.stop_stream()
    assert outputs_of(got.items) == [2, 2]
    assert [is_final(result) for result, _ in got.items] == [False, False]


def test_square_zero_sends_only_the_final_flag(client):
    got = Collector()
    client.start_stream(callback=got)
    client.async_stream_infer("square_int32", square_inputs(0), request_id="none")
    client.async_stream_infer(
        "square_int32", square_inputs(0), request_id="zero", enable_empty_final_response=True
    )
    client.stop_stream()
    # Without the option nothing at all reaches the client; with it, the empty final only.
    assert len(got.items) == 1
    result, error = got.items[0]
    assert error is None
    response = result.get_response()
    assert response.id == "zero"
    assert response.outputs == []
    assert is_final(result)


def test_concurrent_requests_on_one_stream_all_complete_with_their_ids(client):
    got = Collector()
    counts = {f"req-{n}": n for n in (4, 1, 3, 2, 0)}
    client.start_stream(callback=got)
    try:
        for request_id, n in counts.items():
            client.async_stream_infer(
                "square_int32", square_inputs(n), request_id=request_id,
                enable_empty_final_response=True,
            )
        got.wait_for(lambda items: sum(
            1 for r, _ in items if r is not None and is_final(r)) == len(counts))
    finally:
        client.stop_stream()
    assert all(error is None for _, error in got.items)
    by_id: dict[str, list[Any]] = {}
    for result, _ in got.items:
        by_id.setdefault(result.get_response().id, []).append(result)
    assert set(by_id) == set(counts)
    for request_id, n in counts.items():
        responses = by_id[request_id]
        assert [int(r.as_numpy("OUT")[0]) for r in responses[:-1]] == [n] * n
        assert [is_final(r) for r in responses] == [False] * n + [True]


def test_error_response_from_the_model_keeps_the_stream_open(client):
    got = Collector()
    client.start_stream(callback=got)
    try:
        # CUSTOM_FAIL_COUNT 1: the last of the N responses is "simulated failure".
        client.async_stream_infer(
            "square_fail", square_inputs(2), request_id="f", enable_empty_final_response=True
        )
        client.async_stream_infer(
            "square_int32", square_inputs(1), request_id="next", enable_empty_final_response=True
        )
        got.wait_for(lambda items: sum(
            1 for r, _ in items if r is not None and is_final(r)) == 2)
    finally:
        client.stop_stream()
    errors = [error for _, error in got.items if error is not None]
    assert [e.message() for e in errors] == ["simulated failure"]
    assert outputs_of(got.items) == [2, 1] or outputs_of(got.items) == [1, 2]


def test_backends_check_their_models_as_triton_does(tmp_path):
    """Batch-1 requests on a batching square model; configurations the backends refuse."""
    write_model(tmp_path, "square_batch", SQUARE.format(name="square_batch", extra="").replace(
        "max_batch_size: 0", "max_batch_size: 4"))
    write_model(tmp_path, "square_bad", """
        name: "square_bad"
        backend: "square"
        model_transaction_policy { decoupled: True }
        input [ { name: "IN" data_type: TYPE_INT32 dims: [ 2 ] } ]
        output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
        """)
    write_model(tmp_path, "repeat_bad", REPEAT.format(name="repeat_bad", optional="").replace(
        'name: "DELAY" data_type: TYPE_UINT32', 'name: "DELAY" data_type: TYPE_INT32'))
    with ServerProcess([tmp_path], "--exit-on-error=false") as process:
        with grpcclient.InferenceServerClient(process.grpc_url) as c:
            assert c.is_model_ready("square_batch")
            assert not c.is_model_ready("square_bad")
            assert not c.is_model_ready("repeat_bad")
            got = Collector()
            c.start_stream(callback=got)
            tensor = grpcclient.InferInput("IN", [1, 1], "INT32")
            tensor.set_data_from_numpy(np.array([[3]], dtype=np.int32))
            c.async_stream_infer("square_batch", [tensor], request_id="b")
            c.stop_stream()
            assert [r.as_numpy("OUT").tolist() for r, _ in got.items] == [[[3]]] * 3
        log = process.log()
    assert "expected IN shape to be [1], got [2]" in log
    assert "expected DELAY datatype to be UINT32, got TYPE_INT32" in log


# -- repeat ------------------------------------------------------------------------------------


def test_repeat_streams_each_element_in_order(client):
    got = Collector()
    client.start_stream(callback=got)
    try:
        client.async_stream_infer(
            "repeat_int32", repeat_inputs([4, 2, 0, 1], [30, 10, 20, 5], wait=5),
            request_id="rep", enable_empty_final_response=True,
        )
        items = got.wait_count(5)
    finally:
        client.stop_stream()
    assert all(error is None for _, error in items)
    assert outputs_of(items[:4]) == [4, 2, 0, 1]
    assert outputs_of(items[:4], "IDX") == [0, 1, 2, 3]
    assert items[0][0].as_numpy("IDX").dtype == np.uint32
    assert [is_final(r) for r, _ in items] == [False] * 4 + [True]


def test_repeat_requests_interleave_on_one_instance(client):
    """WAIT shorter than the delays lets one instance answer several requests at once."""
    got = Collector()
    client.start_stream(callback=got)
    try:
        client.async_stream_infer("repeat_int32", repeat_inputs([1, 2, 3], [50, 50, 50]),
                                  request_id="a", enable_empty_final_response=True)
        client.async_stream_infer("repeat_int32", repeat_inputs([7, 8], [10, 10]),
                                  request_id="b", enable_empty_final_response=True)
        got.wait_for(lambda items: sum(
            1 for r, _ in items if r is not None and is_final(r)) == 2)
    finally:
        client.stop_stream()
    per_id: dict[str, list[int]] = {"a": [], "b": []}
    for result, _ in got.items:
        if result.as_numpy("OUT") is not None:
            per_id[result.get_response().id].append(int(result.as_numpy("OUT")[0]))
    assert per_id == {"a": [1, 2, 3], "b": [7, 8]}


def test_repeat_with_empty_input_and_optional_inputs(client):
    got = Collector()
    client.start_stream(callback=got)
    try:
        client.async_stream_infer("repeat_int32", repeat_inputs([], []), request_id="empty",
                                  enable_empty_final_response=True)
        client.async_stream_infer("repeat_optional", [int32_input("IN", [5, 6])],
                                  request_id="opt", enable_empty_final_response=True)
        got.wait_for(lambda items: sum(
            1 for r, _ in items if r is not None and is_final(r)) == 2)
    finally:
        client.stop_stream()
    by_id: dict[str, list[Any]] = {}
    for result, error in got.items:
        assert error is None
        by_id.setdefault(result.get_response().id, []).append(result)
    assert [is_final(r) for r in by_id["empty"]] == [True]
    assert outputs_of([(r, None) for r in by_id["opt"]]) == [5, 6]


def test_repeat_mismatched_in_and_delay(client):
    got = Collector()
    client.start_stream(callback=got)
    client.async_stream_infer("repeat_int32", repeat_inputs([1, 2], [1]), request_id="mm")
    client.stop_stream()
    assert len(got.items) == 1
    _, error = got.items[0]
    assert error.message() == "expected IN and DELAY shape to match, got [2] and [1]"


# -- errors on the stream ----------------------------------------------------------------------


def test_errors_arrive_on_the_stream_and_the_next_request_works(client):
    got = Collector()
    client.start_stream(callback=got)
    try:
        client.async_stream_infer("no_such_model", square_inputs(1), request_id="u")
        client.async_stream_infer("square_int32", [], request_id="m")
        client.async_stream_infer("square_int32", square_inputs(2), request_id="ok",
                                  enable_empty_final_response=True)
        got.wait_for(lambda items: len(items) == 5)
    finally:
        client.stop_stream()
    errors = sorted(error.message() for _, error in got.items if error is not None)
    assert errors == [
        "Request for unknown model: 'no_such_model' is not found",
        "[request id: m] expected 1 inputs but got 0 inputs for model 'square_int32'. Got "
        "input(s) [], but missing required input(s) ['IN']. Please provide all required "
        "input(s).",
    ]
    assert outputs_of(got.items) == [2, 2]


def test_errors_carry_the_request_id_on_the_wire(stream_server):
    """Triton fills only the id for a request that fails before running, and id, model name and
    version (as sent) plus triton_final_response for an error response from the model."""
    with grpc.insecure_channel(stream_server.grpc_url) as channel:
        stub = pbg.GRPCInferenceServiceStub(channel)
        requests = [
            raw_request("no_such_model", [1], id="u"),
            raw_request("square_fail", [1], id="f"),
        ]
        responses = list(stub.ModelStreamInfer(iter(requests)))
    unknown = next(r for r in responses if r.infer_response.id == "u")
    assert unknown.error_message == "Request for unknown model: 'no_such_model' is not found"
    assert unknown.infer_response == pb.ModelInferResponse(id="u")
    failed = next(r for r in responses if r.infer_response.id == "f")
    assert failed.error_message == "simulated failure"
    assert failed.infer_response.model_name == "square_fail"
    assert failed.infer_response.model_version == ""
    assert failed.infer_response.parameters[FINAL].bool_param is False
    assert not failed.infer_response.outputs


def test_requests_for_ordinary_models_are_answered_in_arrival_order(stream_server):
    """As Triton: non-decoupled responses (and early errors) keep the order of the requests."""
    with grpc.insecure_channel(stream_server.grpc_url) as channel:
        stub = pbg.GRPCInferenceServiceStub(channel)
        requests = [
            raw_request("identity_slow", [7], id="slow", input_name="INPUT0"),
            raw_request("no_such_model", [1], id="err"),
            raw_request("identity_int32", [8], id="fast", input_name="INPUT0"),
            raw_request("square_int32", [2], id="dec"),
        ]
        ids = [r.infer_response.id for r in stub.ModelStreamInfer(iter(requests))]
    assert [i for i in ids if i != "dec"] == ["slow", "err", "fast"]
    assert ids.count("dec") == 2


def test_unparsable_message_ends_the_stream_like_triton(stream_server):
    with grpc.insecure_channel(stream_server.grpc_url) as channel:
        call = channel.stream_stream(
            "/inference.GRPCInferenceService/ModelStreamInfer",
            request_serializer=None,
            response_deserializer=pb.ModelStreamInferResponse.FromString,
        )
        responses = call(iter([b"\xff\xff\xff", raw_request("square_int32", [1]).SerializeToString()]))
        # Triton's Read fails: reading stops and the stream ends with OK.
        assert list(responses) == []
        assert responses.code() == grpc.StatusCode.OK


def test_triton_grpc_error_header_ends_the_stream_with_the_status(client):
    got = Collector()
    client.start_stream(callback=got, headers={"triton_grpc_error": "true"})
    try:
        client.async_stream_infer("no_such_model", square_inputs(1), request_id="u")
        client.async_stream_infer("square_fail", square_inputs(3), request_id="f")
        got.wait_for(lambda items: any(
            e is not None and e.status() == "StatusCode.UNKNOWN" for _, e in items))
    finally:
        client.stop_stream()
    errors = [e for _, e in got.items if e is not None]
    # An error before the request runs is still a message; the model's error is the status.
    assert errors[0].message() == "Request for unknown model: 'no_such_model' is not found"
    assert errors[-1].message() == "simulated failure"
    assert outputs_of(got.items) == [3, 3]


# -- ordinary models, unary calls --------------------------------------------------------------


def test_non_decoupled_model_over_the_stream(client):
    got = Collector()
    client.start_stream(callback=got)
    try:
        client.async_stream_infer("identity_int32", [int32_input("INPUT0", [1, 2, 3])],
                                  request_id="id1", enable_empty_final_response=True)
        client.async_stream_infer("identity_int32", [int32_input("INPUT0", [9])],
                                  request_id="id2")
        got.wait_count(2)
    finally:
        client.stop_stream()
    # One response each, final, even with the empty-final option: there is no empty final.
    assert len(got.items) == 2
    (first, e1), (second, e2) = got.items
    assert e1 is None and e2 is None
    assert first.as_numpy("OUTPUT0").tolist() == [1, 2, 3]
    assert second.as_numpy("OUTPUT0").tolist() == [9]
    assert [first.get_response().id, second.get_response().id] == ["id1", "id2"]
    assert is_final(first) and is_final(second)


def test_unary_infer_on_decoupled_model_fails_as_triton(client):
    with pytest.raises(InferenceServerException) as info:
        client.infer("square_int32", square_inputs(1))
    assert info.value.status() == "StatusCode.UNIMPLEMENTED"
    assert info.value.message() == (
        "ModelInfer RPC doesn't support models with decoupled transaction policy"
    )


def test_http_infer_on_decoupled_model_fails_as_triton(stream_server):
    import tritonclient.http as httpclient

    with httpclient.InferenceServerClient(stream_server.http_url) as c:
        data = np.array([1], dtype=np.int32)
        tensor = httpclient.InferInput("IN", [1], "INT32")
        tensor.set_data_from_numpy(data)
        with pytest.raises(InferenceServerException) as info:
            c.infer("square_int32", [tensor])
    assert "doesn't support models with decoupled transaction policy" in info.value.message()


# -- aio ---------------------------------------------------------------------------------------


def test_aio_stream_infer(stream_server):
    async def main() -> list[tuple[Any, Any]]:
        async with aioclient.InferenceServerClient(stream_server.grpc_url) as c:
            async def requests():
                yield {"model_name": "square_int32", "inputs": square_inputs(3),
                       "request_id": "a1"}
                yield {"model_name": "identity_int32",
                       "inputs": [int32_input("INPUT0", [4, 5])], "request_id": "a2"}
                yield {"model_name": "repeat_int32",
                       "inputs": repeat_inputs([6, 7], [5, 5]), "request_id": "a3"}

            # The server ends the stream once the client is done sending and all finished.
            return [item async for item in c.stream_infer(requests())]

    items = asyncio.run(main())
    assert all(error is None for _, error in items)
    by_id: dict[str, list[Any]] = {}
    for result, _ in items:
        by_id.setdefault(result.get_response().id, []).append(result)
    assert [int(r.as_numpy("OUT")[0]) for r in by_id["a1"]] == [3, 3, 3]
    assert [r.as_numpy("OUTPUT0").tolist() for r in by_id["a2"]] == [[4, 5]]
    assert [int(r.as_numpy("OUT")[0]) for r in by_id["a3"]] == [6, 7]
    assert is_final(by_id["a2"][0])


def test_aio_cancel_mid_stream_then_a_new_stream_works(stream_server):
    async def main() -> list[int]:
        async with aioclient.InferenceServerClient(stream_server.grpc_url) as c:
            stop = asyncio.Event()

            async def requests():
                yield {"model_name": "repeat_int32",
                       "inputs": repeat_inputs(list(range(20)), [400] * 20), "request_id": "c"}
                await stop.wait()

            stream = c.stream_infer(requests())
            first, error = await stream.__anext__()
            assert error is None
            stream.cancel()
            stop.set()

            async def again():
                yield {"model_name": "square_int32", "inputs": square_inputs(2)}

            return [int(r.as_numpy("OUT")[0]) async for r, _ in c.stream_infer(again())]

    assert asyncio.run(main()) == [2, 2]
    wait_until_idle(stream_server, "repeat_int32")


# -- client going away -------------------------------------------------------------------------


def wait_until_idle(server: ServerProcess, model: str, timeout: float = 5.0) -> None:
    """The cancelled request ends early (the model stops at cancellation); without that it
    would stay pending for the rest of its ~8 s of delays."""
    deadline = time.monotonic() + timeout
    while server.metric("nv_inference_pending_request_count", model) != 0:
        assert time.monotonic() < deadline, "cancelled request still pending"
        time.sleep(0.05)


def test_closing_the_stream_mid_way_leaves_the_server_healthy(stream_server, client):
    got = Collector()
    client.start_stream(callback=got)
    client.async_stream_infer(
        "repeat_int32", repeat_inputs(list(range(20)), [400] * 20), request_id="long"
    )
    got.wait_count(1)
    client.stop_stream(cancel_requests=True)
    wait_until_idle(stream_server, "repeat_int32")

    assert client.is_server_live() and client.is_server_ready()
    again = Collector()
    client.start_stream(callback=again)
    client.async_stream_infer("square_int32", square_inputs(2), request_id="after")
    client.stop_stream()
    assert outputs_of(again.items) == [2, 2]


def test_client_process_vanishing_mid_stream(stream_server):
    """A client that drops its connection without a word (channel closed under the call)."""
    channel = grpc.insecure_channel(stream_server.grpc_url)
    stub = pbg.GRPCInferenceServiceStub(channel)
    hold: queue.Queue[Any] = queue.Queue()

    def requests():
        yield raw_request("repeat_int32", list(range(20)), id="gone",
                          extra={"DELAY": [400] * 20, "WAIT": [0]})
        hold.get()  # never sends more, never half-closes

    call = stub.ModelStreamInfer(requests())
    first = next(call)
    assert first.infer_response.id == "gone"
    channel.close()
    hold.put(None)
    wait_until_idle(stream_server, "repeat_int32")
    with grpcclient.InferenceServerClient(stream_server.grpc_url) as c:
        assert c.is_server_ready()


# -- a decoupled python model: errors, ids, cancellation seen by request.is_cancelled() ---------


def gen_inputs(count: int, delay_ms: int = 0, fail_at: int = -1) -> list[grpcclient.InferInput]:
    text = grpcclient.InferInput("text_input", [1], "BYTES")
    text.set_data_from_numpy(np.array([b"t"], dtype=np.object_))
    return [text, int32_input("count", [count]), int32_input("delay_ms", [delay_ms]),
            int32_input("fail_at", [fail_at])]


def gen_message(id: str, count: int, delay_ms: int = 0, fail_at: int = -1
                ) -> pb.ModelInferRequest:
    """A raw gen_stream request asking for the empty final response."""
    request = pb.ModelInferRequest(model_name="gen_stream", id=id)
    request.parameters["triton_enable_empty_final_response"].bool_param = True
    request.inputs.add(name="text_input", datatype="BYTES", shape=[1])
    request.raw_input_contents.append(b"\x01\x00\x00\x00t")
    for name, value in (("count", count), ("delay_ms", delay_ms), ("fail_at", fail_at)):
        request.inputs.add(name=name, datatype="INT32", shape=[1])
        request.raw_input_contents.append(np.array([value], np.int32).tobytes())
    return request


def seen_cancelled(server: ServerProcess) -> list[str]:
    log = server.repo / "gen_stream" / "cancelled.txt"
    return log.read_text().split() if log.exists() else []


def wait_until_cancelled(server: ServerProcess, *ids: str, timeout: float = 10.0) -> None:
    """The model saw each request cancelled (it polls request.is_cancelled() between
    responses) and stopped early; without that each would run for ~10 s."""
    deadline = time.monotonic() + timeout
    while not set(ids) <= set(seen_cancelled(server)):
        assert time.monotonic() < deadline, f"model never saw {ids} cancelled"
        time.sleep(0.05)
    wait_until_idle(server, "gen_stream")


def test_python_model_error_mid_stream_keeps_ids_and_the_stream(stream_server):
    """As Triton 2.51 sends them: every message of the request carries its id; the error one
    has error_message, the model name and no outputs; the stream serves the next request."""
    with grpc.insecure_channel(stream_server.grpc_url) as channel:
        stub = pbg.GRPCInferenceServiceStub(channel)
        got = list(stub.ModelStreamInfer(iter([gen_message("pe", 3, fail_at=1)])))
        assert [(m.error_message, m.infer_response.id, m.infer_response.model_version,
                 m.infer_response.parameters[FINAL].bool_param,
                 [o.name for o in m.infer_response.outputs]) for m in got] == [
            ("", "pe", "1", False, ["text_output", "index"]),
            ("failed at 1", "pe", "", False, []),
            ("", "pe", "1", False, ["text_output", "index"]),
            ("", "pe", "", True, []),
        ]
        assert all(m.infer_response.model_name == "gen_stream" for m in got)
        again = list(stub.ModelStreamInfer(iter([gen_message("ok", 1)])))
        assert [m.infer_response.id for m in again] == ["ok", "ok"]


def test_python_model_sees_the_client_cancel_the_stream(stream_server, client):
    got = Collector()
    client.start_stream(callback=got)
    for request_id in ("cancel-1", "cancel-2"):
        client.async_stream_infer("gen_stream", gen_inputs(100, delay_ms=100),
                                  request_id=request_id)
    got.wait_for(lambda items: {r.get_response().id for r, _ in items if r} ==
                 {"cancel-1", "cancel-2"})
    client.stop_stream(cancel_requests=True)
    wait_until_cancelled(stream_server, "cancel-1", "cancel-2")

    again = Collector()
    client.start_stream(callback=again)
    client.async_stream_infer("gen_stream", gen_inputs(2), request_id="after")
    client.stop_stream()
    assert [r.get_response().id for r, _ in again.items] == ["after", "after"]
    assert [int(r.as_numpy("index")[0]) for r, _ in again.items] == [0, 1]


def test_python_model_sees_the_client_vanish(stream_server):
    channel = grpc.insecure_channel(stream_server.grpc_url)
    stub = pbg.GRPCInferenceServiceStub(channel)
    hold: queue.Queue[Any] = queue.Queue()

    def requests():
        yield gen_message("vanish", 100, delay_ms=100)
        hold.get()  # never half-closes

    call = stub.ModelStreamInfer(requests())
    assert next(call).infer_response.id == "vanish"
    channel.close()
    hold.put(None)
    wait_until_cancelled(stream_server, "vanish")


def test_python_model_sees_an_aio_stream_cancelled(stream_server):
    async def main() -> None:
        async with aioclient.InferenceServerClient(stream_server.grpc_url) as c:
            stop = asyncio.Event()

            async def requests():
                yield {"model_name": "gen_stream", "request_id": "aio-cancel",
                       "inputs": gen_inputs(100, delay_ms=100)}
                await stop.wait()

            stream = c.stream_infer(requests())
            result, error = await stream.__anext__()
            assert error is None and result.get_response().id == "aio-cancel"
            stream.cancel()
            stop.set()

    asyncio.run(main())
    wait_until_cancelled(stream_server, "aio-cancel")


# -- raw requests ------------------------------------------------------------------------------


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
