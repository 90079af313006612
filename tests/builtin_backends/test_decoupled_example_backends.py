"""Triton's decoupled examples (configurations as in Triton's python_backend examples/decoupled)
on the built-in `square` and `repeat` backends, over ModelStreamInfer with tritonclient.grpc.
What Triton sends was checked against Triton 2.51 (tools/reference-triton.sh).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient

# `stream_server` is not used here by name: the `client` fixture needs it.
from support.grpc_stream_fixtures import (
    REPEAT,
    SQUARE,
    Collector,
    client,  # noqa: F401
    int32_input,
    is_final,
    outputs_of,
    repeat_inputs,
    square_inputs,
    stream_server,  # noqa: F401
)
from support.models import write_model
from support.server_process import ServerProcess

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


def _param(key: str, value: int) -> str:
    return f'parameters {{ key: "{key}" value: {{ string_value: "{value}" }} }}'


def test_square_reports_each_responses_statistics_as_triton(tmp_path):
    """Triton's L0_response_statistics: per response index, success, fail (simulated),
    empty and cancel, with the delays they took (infer 60 ms, output 40 ms, cancel 50 ms)."""
    delays = [_param("CUSTOM_INFER_DELAY_NS", 60_000_000),
              _param("CUSTOM_OUTPUT_DELAY_NS", 40_000_000)]
    write_model(tmp_path, "square_stats", SQUARE.format(name="square_stats", extra="\n".join(
        [*delays, _param("CUSTOM_FAIL_COUNT", 1), _param("CUSTOM_EMPTY_COUNT", 1)])))
    write_model(tmp_path, "square_cancel", SQUARE.format(name="square_cancel", extra="\n".join(
        [*delays, _param("CUSTOM_CANCEL_DELAY_NS", 50_000_000)])))
    with ServerProcess([tmp_path]) as process, grpcclient.InferenceServerClient(
            process.grpc_url) as c:
        got = Collector()
        c.start_stream(callback=got)
        c.async_stream_infer("square_stats", square_inputs(4))
        got.wait_count(3)  # two outputs and the simulated failure; the empty is not sent
        c.stop_stream()
        stats = c.get_inference_statistics("square_stats", as_json=True)
        got = Collector()
        c.start_stream(callback=got)
        c.async_stream_infer("square_cancel", square_inputs(4))
        got.wait_count(1)
        c.stop_stream(cancel_requests=True)
        deadline = time.monotonic() + 10
        cancelled: dict = {}
        while not any(int(e.get("cancel", {}).get("count", 0)) for e in cancelled.values()):
            assert time.monotonic() < deadline, cancelled
            time.sleep(0.05)
            cancelled = c.get_inference_statistics("square_cancel", as_json=True)[
                "model_stats"][0].get("response_stats", {})
    by_index = stats["model_stats"][0]["response_stats"]
    kinds = {index: sorted(k for k, v in entry.items() if int(v.get("count", 0)))
             for index, entry in by_index.items()}
    assert kinds == {"0": ["compute_infer", "compute_output", "success"],
                     "1": ["compute_infer", "compute_output", "success"],
                     "2": ["compute_infer", "compute_output", "fail"],
                     "3": ["compute_infer", "empty_response"]}
    assert 60e6 <= int(by_index["0"]["compute_infer"]["ns"]) < 600e6
    assert 40e6 <= int(by_index["2"]["compute_output"]["ns"]) < 400e6
    assert 100e6 <= int(by_index["1"]["success"]["ns"]) < 1000e6
    assert 60e6 <= int(by_index["3"]["empty_response"]["ns"]) < 600e6
    # Cancelled once its first response arrived, while the second was being made (as in
    # Triton's test): the second completes, the third it starts is the cancellation.
    assert [int(cancelled[i]["success"].get("count", 0)) for i in ("0", "1")] == [1, 1]
    assert int(cancelled["2"]["cancel"]["count"]) == 1
    assert 50e6 <= int(cancelled["2"]["cancel"]["ns"]) < 500e6


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
