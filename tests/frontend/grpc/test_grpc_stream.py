"""ModelStreamInfer through real clients: errors on the stream, ordinary models on it, aio
streams, and clients that go away mid-stream.

`tritonclient.grpc` (start_stream / async_stream_infer / stop_stream) and `tritonclient.grpc.aio`
(stream_infer) drive the server of grpc_stream_fixtures.py, plus raw stubs where the clients hide
the wire. The decoupled example backends are in test_decoupled_example_backends.py, a decoupled
Python model's errors and cancellation in test_grpc_stream_python_model.py.
What Triton sends was checked against Triton 2.51 (tools/reference-triton.sh).
"""

from __future__ import annotations

import asyncio
import queue
from typing import Any

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as aioclient
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pbg
from tritonclient.utils import InferenceServerException

from support.grpc_stream_fixtures import (
    FINAL,
    Collector,
    client,  # noqa: F401
    int32_input,
    is_final,
    outputs_of,
    raw_request,
    repeat_inputs,
    square_inputs,
    stream_server,  # noqa: F401
    wait_until_idle,
)

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
        good = raw_request("square_int32", [1]).SerializeToString()
        responses = call(iter([b"\xff\xff\xff", good]))
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


def test_an_ordinary_model_that_sends_several_responses_answers_with_the_first(client):
    """As Triton 2.51 writes it (L0_grpc_state_cleanup test_non_decoupled_streaming_multi_
    response): one message per request, the first response, once the request is complete."""
    got = Collector()
    client.start_stream(callback=got)
    try:
        client.async_stream_infer("repeat_non_decoupled", repeat_inputs(
            [100, 101, 102, 103], [0, 0, 0, 0]), request_id="0")
        client.async_stream_infer("identity_int32", [int32_input("INPUT0", [7])],
                                  request_id="after")
        got.wait_count(2)
    finally:
        client.stop_stream()
    # Held in arrival order: any other response of the first request would come before the
    # second request's answer.
    assert [error for _, error in got.items] == [None, None]
    (first, _), (after, _) = got.items
    assert first.get_response().id == "0"
    assert (int(first.as_numpy("OUT")[0]), int(first.as_numpy("IDX")[0])) == (100, 0)
    assert after.as_numpy("OUTPUT0").tolist() == [7]


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
    # Triton's verbose line, which its L0_request_cancellation greps the log for.
    stream_server.wait_log("Cancellation notification received for ModelStreamInferHandler")


# -- client going away -------------------------------------------------------------------------


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


def test_classification_on_the_stream(client):
    got = Collector()
    client.start_stream(callback=got)
    try:
        client.async_stream_infer(
            "identity_int32", [int32_input("INPUT0", [3, 9, 1])],
            outputs=[grpcclient.InferRequestedOutput("OUTPUT0", class_count=2)])
        (result, error), = got.wait_count(1)
    finally:
        client.stop_stream()
    assert error is None
    assert result.as_numpy("OUTPUT0").tolist() == [b"9:1", b"3:0"]
