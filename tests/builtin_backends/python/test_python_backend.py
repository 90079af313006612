"""The python backend: unmodified Triton Python-backend models, one stub process per instance.

Here the transport, ordinary, failing, parallel and decoupled models, BLS, custom metrics and
readiness; stub crashes in test_python_backend_crashes.py, Python-based backends and execution
environments in test_python_backend_environments.py.
The models live in tests/support/python_models/ (repo/: one per behaviour; backends/ +
pybased_repo/: a Python-based backend; bad_repo/: a model whose initialize fails; env_model/: a
model run in an execution environment). Every test drives a real server process with tritonclient.
"""

from __future__ import annotations

import json
import os
import re
import threading
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient

from support.python_backend_fixtures import (
    MODELS,
    REPO,
    add_sub_inputs,
    error_of,
    grpc,  # noqa: F401
    grpc_input,
    http,  # noqa: F401
    http_input,
    server,  # noqa: F401
    stream,
    wait_for,
)
from support.server_process import ServerProcess

# -- the transport, alone ---------------------------------------------------------------------


def test_ring_blocks_wrap_and_are_freed_over_a_released_prefix() -> None:
    from tritium.builtin_backends.python.wire.shm_ring import Ring

    producer, fd = Ring.create(1024, "test")
    consumer = Ring(fd, 1024)
    os.close(fd)
    a = producer.alloc(400)
    b = producer.alloc(400)
    assert a is not None and b is not None
    assert producer.alloc(400) is None  # only 224 bytes left: the caller goes one-off
    consumer.release(*b[:2])  # out of order: nothing is free until `a` is released too
    assert producer.alloc(300) is None
    consumer.release(*a[:2])
    c = producer.alloc(300)  # does not fit in the 224-byte tail: placed at the start
    assert c is not None and c[2] == Ring.HEADER and c[0] == 800 and c[1] == 1324
    consumer.release(*c[:2])
    assert producer.alloc(724) == (1324, 2048, Ring.HEADER + 300)  # the whole free tail


def test_tensor_blocks_round_trip_through_a_ring_and_one_off_segments() -> None:
    from collections import deque

    from tritium.builtin_backends.python.wire.shm_ring import Ring
    from tritium.builtin_backends.python.wire.shm_tensors import (
        TensorWriter,
        open_block,
        read_tensors,
    )

    producer, fd = Ring.create(4096, "test")
    consumer = Ring(fd, 4096)
    os.close(fd)
    writer = TensorWriter(producer, "test")
    small = np.arange(12, dtype=np.int16).reshape(3, 4)[:, ::2]  # not contiguous
    text = np.array([[b"a", b""], [b"xyz", "\u00e9".encode()]], dtype=np.object_)
    big = np.arange(2000, dtype=np.float64)  # 16 KB: more than the ring
    for tensors in ([("S", "INT16", small), ("T", "BYTES", text)], [("B", "FP64", big)]):
        descriptors, block, fds = writer.pack(tensors)
        received = deque(os.dup(fd) for fd in fds)
        for fd in fds:
            os.close(fd)
        opened = open_block(block, consumer, received)
        out = read_tensors(descriptors, opened, True)
        opened.release()
        for (name, datatype, array), (got_name, got_type, got) in zip(tensors, out, strict=True):
            assert (got_name, got_type) == (name, datatype)
            assert got.shape == array.shape and got.tolist() == array.tolist()
    assert producer._consumed[0] == producer._head  # everything was released


# -- ordinary models ---------------------------------------------------------------------------


def test_add_sub_over_http_and_grpc(http, grpc) -> None:
    result = http.infer("add_sub", add_sub_inputs())
    np.testing.assert_allclose(result.as_numpy("OUTPUT0"), np.arange(4) + 0.5)
    np.testing.assert_allclose(result.as_numpy("OUTPUT1"), np.arange(4) - 0.5)
    result = grpc.infer("add_sub", add_sub_inputs(grpc_input))
    np.testing.assert_allclose(result.as_numpy("OUTPUT0"), np.arange(4) + 0.5)
    assert result.as_numpy("OUTPUT0").dtype == np.float32


def test_only_the_requested_outputs_come_back(http) -> None:
    result = http.infer("add_sub", add_sub_inputs(),
                        outputs=[httpclient.InferRequestedOutput("OUTPUT1")])
    assert [o["name"] for o in result.get_response()["outputs"]] == ["OUTPUT1"]
    np.testing.assert_allclose(result.as_numpy("OUTPUT1"), np.arange(4) - 0.5)


def test_many_requests_in_a_row_reuse_the_rings(grpc) -> None:
    # More bytes than one ring holds, so the rings wrap around many times.
    big = np.random.default_rng(0).random((4,), dtype=np.float32)
    for i in range(300):
        inputs = [grpc_input("INPUT0", big + i, "FP32"), grpc_input("INPUT1", big, "FP32")]
        np.testing.assert_allclose(grpc.infer("add_sub", inputs).as_numpy("OUTPUT1"),
                                   np.full(4, i, np.float32), rtol=1e-5)


def test_tensors_larger_than_the_rings_and_rings_wrapping(grpc) -> None:
    rng = np.random.default_rng(1)
    # 8 MB each way: more than a ring (4 MiB) holds, so one-off segments carry them.
    big = rng.random(2_000_000, dtype=np.float32)
    result = grpc.infer("big_identity", [grpc_input("IN", big, "FP32")])
    np.testing.assert_array_equal(result.as_numpy("OUT"), big * 2)
    # 400 KB requests: the rings wrap around several times.
    for _ in range(40):
        data = rng.random(100_000, dtype=np.float32)
        result = grpc.infer("big_identity", [grpc_input("IN", data, "FP32")])
        np.testing.assert_array_equal(result.as_numpy("OUT"), data * 2)


def test_initialize_args_and_request_fields(http) -> None:
    inputs = [http_input("IN", np.array([1], np.int32), "INT32")]
    result = http.infer("args_echo", inputs, request_id="req-7", sequence_id=42,
                        parameters={"color": "blue", "n": 3})
    seen = json.loads(result.as_numpy("ARGS")[0])
    assert seen["model_name"] == "args_echo"
    assert seen["model_version"] == "1"
    assert seen["model_instance_kind"] == "CPU"
    assert seen["model_instance_name"] == "args_echo_0"
    assert seen["model_instance_device_id"] == "0"
    assert seen["model_repository"] == str(REPO / "args_echo")
    assert seen["get_model_dir"] == str(REPO / "args_echo" / "1")
    assert seen["model_config"]["name"] == "args_echo"
    assert seen["model_config"]["input"][0]["name"] == "IN"
    request = seen["request"]
    assert request["id"] == "req-7"
    assert request["correlation_id"] == 42
    assert request["parameters"] == {"color": "blue", "n": 3}
    assert request["requested_output_names"] == ["ARGS"]
    assert seen["is_model_ready"] == {"add_sub": True, "args_echo": True, "nope": False}
    assert seen["load_model"].startswith("Failed to load model: ")
    # Response parameters reach the client.
    assert result.get_response()["parameters"] == {"answered_by": "args_echo"}


def test_model_log_lines_reach_the_server_log(server) -> None:
    model_file = REPO / "args_echo" / "1" / "model.py"
    lines = model_file.read_text().splitlines()
    info = next(i for i, line in enumerate(lines, 1) if "log_info" in line)
    warn = next(i for i, line in enumerate(lines, 1) if "log_warn" in line)
    wait_for(lambda: "args_echo warns" in server.log())
    log = server.log()
    # As Triton's Python backend writes them: the model's file and line head the line.
    assert f' model.py:{info}] "args_echo instance args_echo_0 is ready"' in log
    assert re.search(rf'\nW[0-9: .]+ \d+ model\.py:{warn}\] "args_echo warns"', log)


def test_auto_complete_config(http) -> None:
    config = http.get_model_config("auto_complete")
    assert config["max_batch_size"] == 8
    assert [i["name"] for i in config["input"]] == ["INPUT0", "INPUT1"]
    assert [o["name"] for o in config["output"]] == ["OUTPUT0", "OUTPUT1"]
    assert config["input"][0]["data_type"] == "TYPE_FP32"
    assert config["input"][0]["dims"] == [4]
    assert "dynamic_batching" in config
    result = http.infer("auto_complete", add_sub_inputs(shape=(2, 4)))
    np.testing.assert_allclose(result.as_numpy("OUTPUT0"), np.arange(8).reshape(2, 4) + 0.5)


def test_bytes_tensors(http, grpc) -> None:
    text = np.array([b"hello", b"", "wörld".encode(), b"\x00\xffbin"], dtype=np.object_)
    for client, make in ((http, http_input), (grpc, grpc_input)):
        result = client.infer("bytes_model", [make("TEXT", text, "BYTES")])
        assert list(result.as_numpy("UPPER")) == [t.upper() for t in text]
        assert list(result.as_numpy("LENGTH")) == [5, 0, len("wörld".encode()), 5]


def test_async_execute(http) -> None:
    result = http.infer("async_add", add_sub_inputs())
    np.testing.assert_allclose(result.as_numpy("OUTPUT0"), np.arange(4) + 0.5)


# -- errors ------------------------------------------------------------------------------------


def error_model(http, mode: int):
    return http.infer("error_model", [http_input("MODE", np.array([mode], np.int32), "INT32")])


def test_error_responses_reach_their_request(http) -> None:
    err = error_of(lambda: error_model(http, 1))
    assert err.message() == "mode 1 failed"
    assert err.status() == "500"  # TritonError's default code is INTERNAL
    err = error_of(lambda: error_model(http, 2))
    assert err.message() == "no such thing"
    assert err.status() == "404"  # NOT_FOUND
    assert error_model(http, 0).as_numpy("OUT").tolist() == [0]


def test_an_exception_in_execute_fails_the_batch_with_its_message(http) -> None:
    err = error_of(lambda: error_model(http, 3))
    model_file = REPO / "error_model" / "1" / "model.py"
    # Triton's words, traceback of the model's own frames included.
    assert err.message().startswith(
        "Failed to process the request(s) for model 'error_model_0', message: "
        "ValueError: mode 3 raised\n\nAt:\n"
    )
    assert f"  {model_file}(" in err.message()
    assert "tritium/builtin_backends/python" not in err.message()  # the stub's own frames
    assert error_model(http, 0).as_numpy("OUT").tolist() == [0]  # still serving


def test_wrong_returns_fail_with_tritons_messages(http) -> None:
    prefix = "Failed to process the request(s) for model 'error_model_0', message: "
    err = error_of(lambda: error_model(http, 4))
    assert err.message() == prefix + (
        "Number of InferenceResponse objects do not match the number of InferenceRequest "
        "objects. InferenceRequest(s) size is:1, and InferenceResponse(s) size is:2\n"
    )
    err = error_of(lambda: error_model(http, 5))
    assert err.message() == prefix + (
        "Expected a list in the execute return, found type '<class 'tuple'>'."
    )
    # Returning None without answering: Triton never answers; we fail the request.
    err = error_of(lambda: error_model(http, 6))
    assert "without sending a response" in err.message()


def test_a_non_decoupled_model_may_answer_through_the_response_sender(http) -> None:
    assert error_model(http, 7).as_numpy("OUT").tolist() == [7]


def test_failed_initialize_fails_the_load(tmp_path: Path) -> None:
    server = ServerProcess([MODELS / "bad_repo"])
    with pytest.raises(RuntimeError) as info:
        server.start()
    log = server.log()
    model_file = MODELS / "bad_repo" / "init_error" / "1" / "model.py"
    # The load fails with the exception as Triton words it (the model's frames only).
    assert (f"ValueError: initialize failed on purpose\n\nAt:\n  {model_file}(6): initialize"
            in log.replace("\\n", "\n"))
    assert "Failed to initialize Python stub: ValueError: initialize failed on purpose" in log
    assert "failed to load all models" in str(info.value)


# -- instances run in parallel --------------------------------------------------------------------


def test_two_instances_execute_in_parallel(server) -> None:
    def busy(out: dict, key: str) -> None:
        client = httpclient.InferenceServerClient(server.http_url, network_timeout=60)
        inputs = [http_input("SECONDS", np.array([1.0], np.float32), "FP32")]
        result = client.infer("busy", inputs)
        out[key] = (float(result.as_numpy("START")[0]), float(result.as_numpy("END")[0]),
                    int(result.as_numpy("PID")[0]))

    results: dict = {}
    threads = [threading.Thread(target=busy, args=(results, k)) for k in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    (start_a, end_a, pid_a), (start_b, end_b, pid_b) = results["a"], results["b"]
    assert pid_a != pid_b  # one process per instance
    # Each busy-looped a full second while the other was busy-looping too.
    assert start_a < end_b and start_b < end_a
    assert end_a - start_a >= 1.0 and end_b - start_b >= 1.0


# -- decoupled models -------------------------------------------------------------------------


def test_decoupled_square_streams_n_responses_then_the_final_flag(grpc) -> None:
    sends = [("square", f"sq{n}", [grpc_input("IN", np.array([n], np.int32), "INT32")])
             for n in (3, 0, 5)]
    got = stream(grpc, sends)
    for n in (3, 0, 5):
        results = got[f"sq{n}"]
        values = [r.as_numpy("OUT").tolist() for r in results[:-1]]
        assert values == [[n]] * n
        final = results[-1].get_response()
        assert final.parameters["triton_final_response"].bool_param
        assert not final.outputs  # the final flag came alone


def test_decoupled_async_execute_with_an_error_response(grpc) -> None:
    sends = [("repeat", "rep", [grpc_input("IN", np.array([4, -1, 6], np.int32), "INT32")])]
    got = stream(grpc, sends)
    assert [r.as_numpy("OUT").tolist() for r in got["rep"]] == [[4], [6]]
    assert [r.as_numpy("IDX").tolist() for r in got["rep"]] == [[0], [2]]
    assert got["<errors>"] == ["negative value at 1"]


def test_decoupled_models_refuse_http_and_unary_grpc(http, grpc) -> None:
    err = error_of(lambda: http.infer("square", [http_input("IN", np.array([1], np.int32),
                                                            "INT32")]))
    assert "doesn't support models with decoupled transaction policy" in err.message()
    err = error_of(lambda: grpc.infer("square", [grpc_input("IN", np.array([1], np.int32),
                                                            "INT32")]))
    assert "doesn't support models with decoupled transaction policy" in err.message()


# -- BLS ---------------------------------------------------------------------------------------


def bls(http, model_name: str):
    names = np.array([model_name.encode()], dtype=np.object_)
    return http.infer("bls", [http_input("MODEL_NAME", names, "BYTES"), *add_sub_inputs()])


def test_bls_sync_to_another_python_model(http) -> None:
    result = bls(http, "add_sub")
    np.testing.assert_allclose(result.as_numpy("OUTPUT0"), np.arange(4) + 0.5)
    np.testing.assert_allclose(result.as_numpy("OUTPUT1"), np.arange(4) - 0.5)


def test_bls_errors_are_surfaced(http) -> None:
    err = error_of(lambda: bls(http, "no_such_model"))
    assert err.message().startswith(
        "Failed to process the request(s) for model 'bls_0', message: TritonModelException: "
        "Model no_such_model - Error when running inference: Failed for execute the inference "
        "request. Model 'no_such_model' is not ready."
    )
    # A request the model refuses: the server's own validation message comes back
    # (Triton checks the requested outputs first: square has no OUTPUT0).
    err = error_of(lambda: bls(http, "square"))
    assert "Model square - Error when running inference: " in err.message()
    assert "unexpected inference output 'OUTPUT0' for model 'square'" in err.message()


def test_bls_async(http) -> None:
    result = http.infer("bls_async", add_sub_inputs())
    np.testing.assert_allclose(result.as_numpy("OUTPUT0"), np.arange(4) + 0.5)
    np.testing.assert_allclose(result.as_numpy("OUTPUT1"), np.arange(4) - 0.5)


def bls_decoupled(http, n: int, use_async: bool, single: bool = False):
    inputs = [http_input("IN", np.array([n], np.int32), "INT32"),
              http_input("ASYNC", np.array([use_async]), "BOOL")]
    if single:
        inputs.append(http_input("SINGLE", np.array([True]), "BOOL"))
    return http.infer("bls_decoupled", inputs)


@pytest.mark.parametrize("use_async", [False, True])
def test_bls_to_a_decoupled_model(http, use_async: bool) -> None:
    for n in (4, 0):
        result = bls_decoupled(http, n, use_async)
        assert result.as_numpy("SUM").tolist() == [n * n]
        assert result.as_numpy("COUNT").tolist() == [n]
        # A second loop over the same response iterator replays every response, as Triton's.
        assert result.as_numpy("SEEN").tolist() == [n + 1]
        assert result.as_numpy("REPLAYED").tolist() == [n + 1]


def test_bls_to_a_decoupled_model_without_decoupled_fails(http) -> None:
    err = error_of(lambda: bls_decoupled(http, 2, False, single=True))
    assert ("Model square - Error when running inference: Model square is using the "
            "decoupled. The current BLS request call doesn't support models using the decoupled "
            "transaction policy.") in err.message()


# -- custom metrics ---------------------------------------------------------------------------


def scrape(server: ServerProcess) -> str:
    with urllib.request.urlopen(server.metrics_url, timeout=10) as response:
        return response.read().decode()


def test_custom_metrics_are_exported(server, http) -> None:
    for value in (5.0, 50.0, 500.0):
        result = http.infer("custom_metrics", [http_input("VALUE", np.array([value]), "FP64")])
    assert result.as_numpy("COUNT").tolist() == [3.0]
    text = scrape(server)
    labels = 'model="custom_metrics",version="1"'
    assert "# TYPE tritium_test_requests_total counter" in text
    assert f"tritium_test_requests_total{{{labels}}} 3" in text
    assert "# TYPE tritium_test_last_value gauge" in text
    assert f"tritium_test_last_value{{{labels}}} 500" in text
    assert "# TYPE tritium_test_values histogram" in text
    assert f'tritium_test_values_count{{{labels}}} 3' in text


# -- readiness ---------------------------------------------------------------------------------


def test_is_ready_feeds_model_readiness(http) -> None:
    def set_ready(flag: bool) -> bool:
        result = http.infer("readiness", [http_input("READY", np.array([flag]), "BOOL")])
        return bool(result.as_numpy("WAS_READY")[0])

    assert http.is_model_ready("readiness")
    assert set_ready(False) is True
    assert not http.is_model_ready("readiness")
    assert set_ready(True) is False
    assert http.is_model_ready("readiness")
