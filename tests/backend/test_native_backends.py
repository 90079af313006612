"""Compiled Triton backends (TRITONBACKEND_* in C++) served by Tritium through its own C API.

The backends under tests/support/native_backends are compiled here against Tritium's header and
libtritonserver.so; one server process serves them next to Tritium's Python backends, and the
real tritonclient drives both over HTTP and gRPC (streams for the decoupled one).
"""

from __future__ import annotations

import ctypes
import queue
import time

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

from support.native_fixtures import compile_backends, write_model
from support.server_process import ServerProcess

DTYPES = [np.bool_, np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32,
          np.int64, np.float16, np.float32, np.float64, np.object_]


def _type(dtype: type) -> str:
    return "STRING" if dtype is np.object_ else np_to_triton_dtype(np.dtype(dtype))


def _io(count: int) -> str:
    lines = []
    for kind, prefix in (("input", "INPUT"), ("output", "OUTPUT")):
        entries = ", ".join(
            f'{{ name: "{prefix}{i}" data_type: TYPE_{_type(d)} dims: [ -1 ] }}'
            for i, d in enumerate(DTYPES[:count]))
        lines.append(f"{kind} [ {entries} ]")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("native")
    backends = compile_backends(base / "backends", {
        "native_identity": "identity", "native_repeat": "repeat", "native_errors": "errors",
        "native_bls": "bls", "native_accumulate": "accumulate",
    })
    repo = base / "models"
    all_io = _io(len(DTYPES))
    write_model(repo, "identity_all", f'backend: "native_identity"\nmax_batch_size: 0\n{all_io}')
    write_model(repo, "py_identity_all", f'backend: "identity"\nmax_batch_size: 0\n{all_io}')
    fp32 = ('max_batch_size: 8\ninput [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
            'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
            'dynamic_batching { max_queue_delay_microseconds: 20000 }\n')
    write_model(repo, "identity_fp32", 'backend: "native_identity"\n' + fp32)
    write_model(repo, "py_identity_fp32", 'backend: "identity"\n' + fp32)
    repeat_io = ('model_transaction_policy { decoupled: true }\n'
                 'input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] } ]\n'
                 'output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] },'
                 ' { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] } ]\n')
    write_model(repo, "repeat", 'backend: "native_repeat"\n' + repeat_io)
    errors_io = ('input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
                 'output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]\n')
    write_model(repo, "errors", 'backend: "native_errors"\n' + errors_io)
    write_model(repo, "errors_exec", 'backend: "native_errors"\n' + errors_io +
                'parameters { key: "execute_error" value: { string_value: "1" } }\n')
    write_model(repo, "bls", 'backend: "native_bls"\nmax_batch_size: 8\n'
                'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
                'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n')
    write_model(repo, "accumulate", 'backend: "native_accumulate"\n'
                'input [ { name: "INPUT" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
                'output [ { name: "OUTPUT" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
                'sequence_batching { state [ { input_name: "STATE_IN" output_name: "STATE_OUT"'
                ' data_type: TYPE_FP32 dims: [ 1 ] } ] }\n'
                'instance_group [ { kind: KIND_CPU count: 2 } ]\n')  # a slot per sequence
    with ServerProcess([repo], f"--backend-directory={backends}",
                       "--backend-config=native_identity,answer=42") as process:
        yield process


@pytest.fixture(scope="module")
def http(server):
    return httpclient.InferenceServerClient(server.http_url, concurrency=16)


@pytest.fixture(scope="module")
def grpc(server):
    return grpcclient.InferenceServerClient(server.grpc_url)


def _all_inputs(module, rng):
    inputs, arrays = [], {}
    for i, dtype in enumerate(DTYPES):
        if dtype is np.object_:
            array = np.array([b"caf\xc3\xa9", b"", b"\x00\x01bytes"], dtype=np.object_)
        elif dtype is np.bool_:
            array = rng.integers(0, 2, 5).astype(np.bool_)
        else:
            array = (rng.random(5) * 100).astype(dtype)
        datatype = np_to_triton_dtype(np.dtype(dtype))
        tensor = module.InferInput(f"INPUT{i}", list(array.shape), datatype)
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
        arrays[f"OUTPUT{i}"] = array
    return inputs, arrays


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_identity_every_datatype_matches_the_python_identity(request, protocol):
    client = request.getfixturevalue(protocol)
    module = httpclient if protocol == "http" else grpcclient
    inputs, expected = _all_inputs(module, np.random.default_rng(3))
    native = client.infer("identity_all", inputs)
    python = client.infer("py_identity_all", inputs)
    for name, array in expected.items():
        got = native.as_numpy(name)
        assert got.dtype == python.as_numpy(name).dtype
        np.testing.assert_array_equal(got, array)
        np.testing.assert_array_equal(got, python.as_numpy(name))


def test_only_requested_outputs_come_back(http):
    inputs, expected = _all_inputs(httpclient, np.random.default_rng(4))
    result = http.infer("identity_all", inputs,
                        outputs=[httpclient.InferRequestedOutput("OUTPUT3")])
    assert [o["name"] for o in result.get_response()["outputs"]] == ["OUTPUT3"]
    np.testing.assert_array_equal(result.as_numpy("OUTPUT3"), expected["OUTPUT3"])


def test_batched_concurrent_requests_on_two_preferred_instances(http, grpc):
    config = http.get_model_config("identity_fp32")
    # No instance_group in the config: the backend's preferred group (2 CPU instances).
    assert [(g["kind"], g["count"]) for g in config["instance_group"]] == [("KIND_CPU", 2)]
    arrays = [np.full((1, 3), i, np.float32) for i in range(16)]
    pending = []
    for array in arrays:
        tensor = httpclient.InferInput("INPUT0", [1, 3], "FP32")
        tensor.set_data_from_numpy(array)
        pending.append(http.async_infer("identity_fp32", [tensor]))
    for array, job in zip(arrays, pending, strict=True):
        np.testing.assert_array_equal(job.get_result().as_numpy("OUTPUT0"), array)
    stats = grpc.get_inference_statistics("identity_fp32", as_json=True)["model_stats"][0]
    assert int(stats["inference_count"]) >= 16
    assert int(stats["execution_count"]) <= int(stats["inference_count"])
    assert int(stats["inference_stats"]["compute_infer"]["count"]) >= 16
    tensor = grpcclient.InferInput("INPUT0", [2, 2], "FP32")
    same = np.arange(4, dtype=np.float32).reshape(2, 2)
    tensor.set_data_from_numpy(same)
    native = grpc.infer("identity_fp32", [tensor]).as_numpy("OUTPUT0")
    python = grpc.infer("py_identity_fp32", [tensor]).as_numpy("OUTPUT0")
    np.testing.assert_array_equal(native, python)


def test_backend_config_reaches_the_backend_log(server, http):
    assert http.is_model_ready("identity_all")
    line = _log_line(server, "identity backend config")
    assert '"answer": "42"' in line and '"backend-directory"' in line


def _log_line(server, text: str, timeout: float = 10.0) -> str:
    """The server's log line holding `text` (log records are written by a thread)."""
    deadline = time.monotonic() + timeout
    while True:
        for line in server.log().splitlines():
            if text in line:
                return line
        if time.monotonic() > deadline:
            raise AssertionError(f"no log line with {text!r}:\n{server.log()[-2000:]}")
        time.sleep(0.05)


def _stream(grpc_client, model, values):
    results: queue.Queue = queue.Queue()
    grpc_client.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        tensor = grpcclient.InferInput("IN", [len(values)], "INT32")
        tensor.set_data_from_numpy(np.array(values, np.int32))
        grpc_client.async_stream_infer(model, [tensor])
        out = []
        for _ in values:
            result, error = results.get(timeout=30)
            assert error is None, error
            out.append((int(result.as_numpy("OUT")[0]), int(result.as_numpy("IDX")[0])))
        return out
    finally:
        grpc_client.stop_stream()


def test_decoupled_responses_from_the_backend_thread(server):
    client = grpcclient.InferenceServerClient(server.grpc_url)
    values = list(range(10, 30))
    got = _stream(client, "repeat", values)
    assert got == [(v, i) for i, v in enumerate(values)]


def _errors(http_client, value, model="errors"):
    tensor = httpclient.InferInput("INPUT0", [1], "INT32")
    tensor.set_data_from_numpy(np.array([value], np.int32))
    return http_client.infer(model, [tensor])


def test_errors_per_request_and_from_execute_leave_the_server_serving(server, http, grpc):
    with pytest.raises(InferenceServerException, match="negative input -3") as bad:
        _errors(http, -3)
    assert bad.value.status() == "400"
    with pytest.raises(InferenceServerException, match="execute failed on purpose") as failed:
        _errors(http, 1, "errors_exec")
    assert failed.value.status() == "503"
    with pytest.raises(InferenceServerException,
                       match="released a request without sending its final response"):
        _errors(http, -8)
    with pytest.raises(InferenceServerException, match="without sending a response"):
        _errors(http, -9)
    assert _errors(http, 7).as_numpy("OUTPUT0").tolist() == [7]
    assert "the final response of this request was already sent" in _log_line(
        server, "second send refused")
    tensor = grpcclient.InferInput("INPUT0", [1], "INT32")
    tensor.set_data_from_numpy(np.array([5], np.int32))
    assert grpc.infer("errors", [tensor]).as_numpy("OUTPUT0").tolist() == [5]


def test_custom_metrics_on_the_metrics_endpoint(server, http):
    before = server.metric("native_test_requests_total", "errors") if _has_metric(server) else 0
    _errors(http, 11)
    _errors(http, 12)
    server.wait_metric("native_test_requests_total", "errors", before + 2)
    assert server.metric("native_test_last_value", "errors") == 12


def _has_metric(server) -> bool:
    import urllib.request
    text = urllib.request.urlopen(server.metrics_url).read().decode()
    return "native_test_requests_total" in text


def test_bls_through_server_infer_async(http, grpc):
    data = np.array([[1.5, -2.0, 3.25]], np.float32)
    for module, client in ((httpclient, http), (grpcclient, grpc)):
        tensor = module.InferInput("INPUT0", [1, 3], "FP32")
        tensor.set_data_from_numpy(data)
        np.testing.assert_array_equal(client.infer("bls", [tensor]).as_numpy("OUTPUT0"), 2 * data)


def test_implicit_state_with_the_sequence_batcher(grpc):
    def step(sequence, value, start=False, end=False):
        tensor = grpcclient.InferInput("INPUT", [1], "FP32")
        tensor.set_data_from_numpy(np.array([value], np.float32))
        result = grpc.infer("accumulate", [tensor], sequence_id=sequence, sequence_start=start,
                            sequence_end=end)
        return float(result.as_numpy("OUTPUT")[0])

    assert step(101, 1.0, start=True) == 1.0
    assert step(202, 10.0, start=True) == 10.0
    assert step(101, 2.0) == 3.0
    assert step(202, 5.0) == 15.0
    assert step(101, 4.0, end=True) == 7.0
    assert step(101, 1.0, start=True, end=True) == 1.0


def test_unimplemented_functions_answer_unsupported_by_name():
    from tritium.backend.native import build

    lib = ctypes.CDLL(str(build.library_path()))
    lib.TRITONSERVER_ServerOptionsNew.restype = ctypes.c_void_p
    lib.TRITONSERVER_ErrorCode.argtypes = [ctypes.c_void_p]
    lib.TRITONSERVER_ErrorMessage.argtypes = [ctypes.c_void_p]
    lib.TRITONSERVER_ErrorMessage.restype = ctypes.c_char_p
    error = lib.TRITONSERVER_ServerOptionsNew(ctypes.byref(ctypes.c_void_p()))
    assert lib.TRITONSERVER_ErrorCode(ctypes.c_void_p(error)) == 5  # TRITONSERVER_ERROR_UNSUPPORTED
    assert b"TRITONSERVER_ServerOptionsNew" in lib.TRITONSERVER_ErrorMessage(ctypes.c_void_p(error))
    major, minor = ctypes.c_uint32(), ctypes.c_uint32()
    assert lib.TRITONBACKEND_ApiVersion(ctypes.byref(major), ctypes.byref(minor)) == 0
    assert (major.value, minor.value) == (1, 19)
    assert lib.TRITONSERVER_ApiVersion(ctypes.byref(major), ctypes.byref(minor)) == 0
    assert (major.value, minor.value) == (1, 34)


def test_without_a_compiler_only_native_backends_are_unavailable(tmp_path):
    backends = tmp_path / "backends" / "native_identity"
    backends.mkdir(parents=True)
    # Any file of the right name: the server must fail before opening it, for want of its
    # own libtritonserver.so (an empty cache, and no compiler on PATH).
    (backends / "libtriton_native_identity.so").write_bytes(b"\x7fELF")
    repo = tmp_path / "models"
    fp32 = ('max_batch_size: 8\ninput [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
            'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n')
    write_model(repo, "native", 'backend: "native_identity"\n' + fp32)
    write_model(repo, "python", 'backend: "identity"\n' + fp32)
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    env = {"PATH": str(empty_bin), "CXX": "", "TRITIUM_NATIVE_CACHE": str(tmp_path / "cache")}
    with ServerProcess([repo], f"--backend-directory={tmp_path / 'backends'}",
                       "--exit-on-error=false", env=env) as process:
        client = httpclient.InferenceServerClient(process.http_url)
        index = {m["name"]: m for m in client.get_model_repository_index()}
        assert index["native"]["state"] == "UNAVAILABLE"
        assert "C++ compiler" in index["native"]["reason"]
        tensor = httpclient.InferInput("INPUT0", [1, 2], "FP32")
        tensor.set_data_from_numpy(np.ones((1, 2), np.float32))
        assert client.infer("python", [tensor]).as_numpy("OUTPUT0").tolist() == [[1.0, 1.0]]
