"""Compiled Triton backends (TRITONBACKEND_* in C++) served by Tritium through its own C API.

The backends under tests/support/native_backends are compiled here against Tritium's header and
libtritonserver.so; one server process serves them next to Tritium's Python backends, and the
real tritonclient drives both over HTTP and gRPC (streams for the decoupled one).
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import json
import queue
import signal
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


# Execute batches run through the CPython extension (the hot path) when it builds, else through
# ctypes: every test here runs against a server on each path.
RUNNERS = {"hotpath": "the hot path", "ctypes": "ctypes"}


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    """(backend directory, model repository): compiled and written once for the module."""
    base = tmp_path_factory.mktemp("native")
    backends = compile_backends(base / "backends", {
        "native_identity": "identity", "native_repeat": "repeat", "native_errors": "errors",
        "native_bls": "bls", "native_accumulate": "accumulate", "native_queries": "queries",
        "native_iterate": "iterate",
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
    bls_io = ('max_batch_size: 8\n'
              'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
              'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n')
    write_model(repo, "bls", 'backend: "native_bls"\n' + bls_io)
    write_model(repo, "bls_raw", 'backend: "native_bls"\n' + bls_io +
                'parameters { key: "raw_input" value: { string_value: "1" } }\n')
    accumulate_io = ('backend: "native_accumulate"\n'
                     'input [ { name: "INPUT" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
                     'output [ { name: "OUTPUT" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
                     'instance_group [ { kind: KIND_CPU count: 2 } ]\n')  # a slot per sequence
    state = ('state [ { input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_FP32'
             ' dims: [ 1 ] %s } ]')
    write_model(repo, "accumulate", accumulate_io + f"sequence_batching {{ {state % ''} }}\n")
    write_model(repo, "accumulate_in_place", accumulate_io
                + f"sequence_batching {{ {state % 'use_same_buffer_for_input_output: true'} }}\n"
                + 'parameters { key: "in_place" value: { string_value: "1" } }\n')
    write_model(repo, "accumulate_stateless", accumulate_io + "sequence_batching { }\n")
    write_model(repo, "iterate", 'backend: "native_iterate"\n' + errors_io +
                'sequence_batching { iterative_sequence: true }\n')
    write_model(repo, "iterate_plain", 'backend: "native_iterate"\n' + errors_io)
    write_model(repo, "queries", 'backend: "native_queries"\n'
                'input [ { name: "MODEL" data_type: TYPE_STRING dims: [ 1 ] } ]\n'
                'output [ { name: "ANSWER" data_type: TYPE_STRING dims: [ 1 ] } ]\n')
    # Backends in a model's own folders (Triton searches <model>/<version>/, then <model>/,
    # before the backend directory): a name the backend directory does not have.
    local = compile_backends(base / "local", {"model_local": "identity"})
    library = local / "model_local" / "libtriton_model_local.so"
    fp32_local = 'backend: "model_local"\n' + fp32
    write_model(repo, "in_model_folder", fp32_local, {"libtriton_model_local.so": library})
    write_model(repo, "in_version_folder", fp32_local, {
        "1/libtriton_model_local.so": library, "libtriton_model_local.so": library})
    return backends, repo


@pytest.fixture(scope="module", params=list(RUNNERS))
def server(request, repository):
    backends, repo = repository
    env = {"TRITIUM_NATIVE_HOTPATH": "1" if request.param == "hotpath" else "0"}
    with ServerProcess([repo], f"--backend-directory={backends}",
                       "--backend-config=native_identity,answer=42", env=env) as process:
        process.runner = request.param
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
def test_identity_every_datatype_matches_the_python_identity(request, server, protocol):
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


def test_execute_batches_run_through_the_runner_asked_for(server, http):
    assert http.is_model_ready("identity_all")
    assert f"Execute batches through {RUNNERS[server.runner]}" in _log_line(
        server, "Execute batches through")


def test_backend_library_in_the_model_folder_then_the_version_folder(server, http):
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    for model in ("in_model_folder", "in_version_folder"):
        tensor = httpclient.InferInput("INPUT0", [2, 3], "FP32")
        tensor.set_data_from_numpy(data)
        np.testing.assert_array_equal(http.infer(model, [tensor]).as_numpy("OUTPUT0"), data)
    loaded = [line for line in server.log_messages() if "loaded backend 'model_local'" in line]
    # One backend per library file, the version folder's first where both are present.
    assert len(loaded) == 2
    assert any(line.endswith("in_model_folder/libtriton_model_local.so") for line in loaded)
    assert any(line.endswith("in_version_folder/1/libtriton_model_local.so") for line in loaded)


def test_backend_config_reaches_the_backend_log(server, http):
    assert http.is_model_ready("identity_all") and http.is_model_ready("in_model_folder")
    # Two backends built from identity.cc log their config, in whatever order their models
    # load: native_identity, named by --backend-config, and model_local, which is not.
    lines = _log_lines(server, "identity backend config", count=2)
    configured = [line for line in lines if '"answer":"42"' in line]
    assert len(configured) == 1
    # The server's own settings reach every backend, as Triton's do.
    for setting in ('"auto-complete-config":"true"', '"backend-directory":',
                    '"min-compute-capability":"6.000000"', '"default-max-batch-size":"4"'):
        assert all(setting in line for line in lines), setting


def _log_line(server, text: str, timeout: float = 10.0) -> str:
    """The server's first log line holding `text` (log records are written by a thread)."""
    return _log_lines(server, text, 1, timeout)[0]


def _log_lines(server, text: str, count: int, timeout: float = 10.0) -> list[str]:
    """The server's log messages holding `text`, once there are at least `count` of them."""
    deadline = time.monotonic() + timeout
    while True:
        lines = [line for line in server.log_messages() if text in line]
        if len(lines) >= count:
            return lines
        if time.monotonic() > deadline:
            raise AssertionError(f"fewer than {count} log lines with {text!r}:\n"
                                 f"{server.log()[-2000:]}")
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


def test_a_segfaulting_backend_takes_its_server_down_with_the_stacks_in_the_log(repository):
    # As in Triton, a backend runs in the server's process: a crash ends the process (a server
    # of its own here). Before it dies, the log names what was running.
    backends, repo = repository
    with ServerProcess([repo], f"--backend-directory={backends}", "--model-control-mode=explicit",
                       "--load-model=errors") as process:
        client = httpclient.InferenceServerClient(process.http_url)
        assert _errors(client, 3).as_numpy("OUTPUT0").tolist() == [3]
        with pytest.raises(Exception):  # noqa: B017 - the connection drops, whatever the type
            _errors(client, -11)
        assert process.wait_exit() == -signal.SIGSEGV
        log = process.log()
        assert "Fatal Python error: Segmentation fault" in log
        assert "model_instance_execute" in log


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


@pytest.mark.parametrize("model", ["bls", "bls_raw"])
def test_bls_through_server_infer_async(http, grpc, model):
    """bls_raw sends its input as a raw one (TRITONSERVER_InferenceRequestAddRawInput):
    identity_fp32's configuration names it INPUT0, FP32, of shape [1, 3] (batching, [-1])."""
    data = np.array([[1.5, -2.0, 3.25]], np.float32)
    for module, client in ((httpclient, http), (grpcclient, grpc)):
        tensor = module.InferInput("INPUT0", [1, 3], "FP32")
        tensor.set_data_from_numpy(data)
        result = client.infer(model, [tensor])
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), 2 * data)


def _ask(client, model: str, **options) -> dict:
    module = httpclient if isinstance(client, httpclient.InferenceServerClient) else grpcclient
    tensor = module.InferInput("MODEL", [1], "BYTES")
    tensor.set_data_from_numpy(np.array([model.encode()], dtype=np.object_))
    return json.loads(client.infer("queries", [tensor], **options).as_numpy("ANSWER")[0])


def test_request_id_correlation_and_parameters_reach_the_backend(http, grpc):
    parameters = {"text": "abc", "count": 7, "flag": True}
    for client, extra in ((http, {"ratio": 0.5}), (grpc, {})):  # gRPC takes no double (Triton)
        sent = {**parameters, **extra}
        got = _ask(client, "?request", request_id="r-17", parameters=sent)
        assert got == {"id": "r-17", "flags": 0, "correlation": 0, "parameters": sent}
    assert _ask(grpc, "?request", sequence_id=42)["correlation"] == 42
    assert _ask(grpc, "?request", sequence_id="s-9")["correlation"] == "s-9"


def test_server_queries_answer_what_the_endpoints_answer(http):
    assert _ask(http, "no_such_model") == {"server_ready": True, "model_ready": False}
    batched = _ask(http, "identity_fp32")
    assert batched["model_ready"] and batched["server_ready"]
    assert batched["batch"] == 2 and batched["transaction"] == 1  # FIRST_DIM, ONE_TO_ONE
    assert batched["server"] == http.get_server_metadata()
    assert batched["model"] == http.get_model_metadata("identity_fp32")
    assert batched["config"] == http.get_model_config("identity_fp32")
    ready = {entry["name"] for entry in http.get_model_repository_index()
             if entry.get("state") == "READY"}
    assert {entry["name"] for entry in batched["index"]} == ready
    decoupled = _ask(http, "repeat")
    assert decoupled["batch"] == 1 and decoupled["transaction"] == 2  # UNKNOWN, DECOUPLED


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


def _accumulate(grpc, model: str, sequence: int, values: list[float]) -> list[float]:
    sums = []
    for index, value in enumerate(values):
        tensor = grpcclient.InferInput("INPUT", [1], "FP32")
        tensor.set_data_from_numpy(np.array([value], np.float32))
        result = grpc.infer(model, [tensor], sequence_id=sequence, sequence_start=index == 0,
                            sequence_end=index == len(values) - 1)
        sums.append(float(result.as_numpy("OUTPUT")[0]))
    return sums


def test_a_state_using_the_same_buffer_is_updated_in_place(grpc):
    """use_same_buffer_for_input_output: TRITONBACKEND_StateBuffer hands out the state input's
    own memory, and what the backend writes there is the state, without StateUpdate (Triton's
    L0_implicit_state single_state_buffer); each sequence has its own."""
    assert _accumulate(grpc, "accumulate_in_place", 301, [1.0, 2.0, 4.0]) == [1.0, 3.0, 7.0]
    assert _accumulate(grpc, "accumulate_in_place", 302, [10.0, 5.0]) == [10.0, 15.0]


def test_a_state_of_a_model_without_states_is_refused_with_tritons_message(grpc):
    with pytest.raises(InferenceServerException) as failed:
        _accumulate(grpc, "accumulate_stateless", 401, [1.0])
    assert failed.value.message() == (
        "unable to add state 'STATE_OUT'. State configuration is missing for model "
        "'accumulate_stateless'.")


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_rescheduled_requests_run_again_in_an_iterative_sequence(http, grpc, protocol):
    client, module = (http, httpclient) if protocol == "http" else (grpc, grpcclient)

    def tensors(wanted: int) -> list:
        tensor = module.InferInput("INPUT0", [1], "INT32")
        tensor.set_data_from_numpy(np.array([wanted], np.int32))
        return [tensor]

    def runs(model: str, wanted: int) -> int:
        return int(client.infer(model, tensors(wanted)).as_numpy("OUTPUT0")[0])

    wanted = [3, 1, 5, 2]  # interleaved iterative sequences, one per request
    if protocol == "http":
        pending = [http.async_infer("iterate", tensors(n)) for n in wanted]
        answers = [int(p.get_result().as_numpy("OUTPUT0")[0]) for p in pending]
    else:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda n: runs("iterate", n), wanted))
    assert answers == wanted
    before = client.get_inference_statistics("iterate")
    stats = before["model_stats"][0] if protocol == "http" else before.model_stats[0]
    count = stats["inference_count"] if protocol == "http" else stats.inference_count
    assert int(count) >= 11  # every run counts, as in Triton
    with pytest.raises(InferenceServerException,
                       match="not configured to handle such a flag") as refused:
        runs("iterate_plain", 2)
    assert refused.value.status() in ("400", "StatusCode.INVALID_ARGUMENT")
    assert runs("iterate_plain", 1) == 1  # the server keeps serving


def test_unimplemented_functions_answer_unsupported_by_name():
    from tritium.backend.native import build

    lib = ctypes.CDLL(str(build.library_path()))
    lib.TRITONCACHE_CacheEntryNew.restype = ctypes.c_void_p
    lib.TRITONSERVER_ErrorCode.argtypes = [ctypes.c_void_p]
    lib.TRITONSERVER_ErrorMessage.argtypes = [ctypes.c_void_p]
    lib.TRITONSERVER_ErrorMessage.restype = ctypes.c_char_p
    error = lib.TRITONCACHE_CacheEntryNew(ctypes.byref(ctypes.c_void_p()))
    assert lib.TRITONSERVER_ErrorCode(ctypes.c_void_p(error)) == 5  # TRITONSERVER_ERROR_UNSUPPORTED
    assert b"TRITONCACHE_CacheEntryNew" in lib.TRITONSERVER_ErrorMessage(ctypes.c_void_p(error))
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


def test_without_python_headers_execute_batches_fall_back_to_ctypes(monkeypatch, caplog):
    from tritium.backend.native import batch, build
    from tritium.backend.native.host import library
    from tritium.errors import TritonError

    def no_headers():
        raise TritonError.unavailable("the native hot path needs Python's C headers (Python.h)")

    monkeypatch.setattr(batch, "_runner", None)
    monkeypatch.setattr(build, "hotpath_path", no_headers)
    monkeypatch.delenv(batch.HOTPATH_ENV, raising=False)
    with caplog.at_level("WARNING", logger="tritium.backend.native"):
        runner = batch.runner(library())
    assert isinstance(runner, batch.CtypesRunner)
    assert "through ctypes, slower" in caplog.text and "Python.h" in caplog.text
