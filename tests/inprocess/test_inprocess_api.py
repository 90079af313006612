"""Triton's in-process Python API (`import tritonserver`) on Tritium.

The CPU cases of Triton core's python/test/test_api.py, on a model like its test model (every
`<type>_input` echoed as `<type>_output`, parameters as JSON), plus add_sub, the identity and
repeat backends, decoupled streaming and cancellation, errors, and frontends on demand answered
by the real tritonclient.
"""

from __future__ import annotations

import asyncio
import gc
import json
import queue
import re
import sys
import threading
import weakref
from pathlib import Path

import numpy
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

import tritonserver
from support.inprocess_models import inprocess_repository
from support.server_process import free_ports
from tritium.inprocess import device_memory
from tritonfrontend import KServeGrpc, KServeHttp

NOT_DECOUPLED = {"backend": "python", "parameters": {"decoupled": {"string_value": "False"}}}
DECOUPLED = {"backend": "python", "parameters": {"decoupled": {"string_value": "True"}}}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return inprocess_repository(tmp_path_factory.mktemp("inprocess"))


@pytest.fixture(scope="module")
def server(repo: Path):
    server = tritonserver.Server(
        server_id="TestServer",
        model_repository=str(repo),
        model_control_mode=tritonserver.ModelControlMode.EXPLICIT,
        startup_models=["add_sub", "identity_fp32", "repeat", "failing"],
        strict_model_config=False,
        exit_timeout=5,
    ).start(wait_until_ready=True)
    server.load("test", {"config": json.dumps(NOT_DECOUPLED)})
    yield server
    server.stop()


def echo_inputs() -> dict[str, numpy.ndarray]:
    return {
        "fp16_input": numpy.random.rand(1, 100).astype(numpy.float16),
        "bool_input": numpy.random.rand(1, 100) > 0.5,
    }


def assert_echoed(inputs: dict, response: tritonserver.InferenceResponse) -> None:
    for name, value in inputs.items():
        output = numpy.from_dlpack(response.outputs[name.replace("input", "output")])
        numpy.testing.assert_array_equal(numpy.asarray(value), output)


# -- the server ------------------------------------------------------------------------------


def test_not_started_server_refuses_calls():
    server = tritonserver.Server()
    with pytest.raises(tritonserver.InvalidArgumentError, match="Server not started"):
        server.ready()
    with pytest.raises(tritonserver.InvalidArgumentError):
        server.model("test")


def test_option_of_wrong_type_is_a_type_error():
    with pytest.raises(TypeError):
        tritonserver.Server(server_id=1).start()
    with pytest.raises(TypeError):
        tritonserver.Server(model_repository=1).start()


def test_missing_repository_is_internal_and_none_is_invalid(tmp_path: Path):
    with pytest.raises(tritonserver.InternalError, match="failed to stat file"):
        tritonserver.Server(model_repository=str(tmp_path / "foo")).start()
    with pytest.raises(tritonserver.InvalidArgumentError, match="Model repository must be"):
        tritonserver.Server(model_repository=None).start()


def test_start_twice_is_refused(server):
    with pytest.raises(tritonserver.InvalidArgumentError, match="already started"):
        server.start()


def test_health_metadata_and_models(server):
    assert server.live() and server.ready()
    metadata = server.metadata()
    assert metadata["name"] == "TestServer"
    assert "model_repository" in metadata["extensions"]
    models = server.models()
    assert models[("add_sub", 1)].state == "READY"
    assert models["broken"].version == -1  # never loaded: known by name only
    assert ("broken", -1) in models and models[("broken", -1)].state is None
    assert set(server.models(exclude_not_ready=True)) >= {("add_sub", 1), ("test", 1)}
    with pytest.raises(KeyError, match="Unknown Model"):
        models["nope"]


def test_model_metadata_config_and_properties(server):
    model = server.model("add_sub")
    assert model.ready()
    assert model.metadata()["inputs"][0] == {"name": "INPUT0", "datatype": "FP32", "shape": [4]}
    assert model.config()["backend"] == "python"
    assert model.batch_properties() == tritonserver.ModelBatchFlag.UNKNOWN
    assert server.model("identity_fp32").batch_properties() == tritonserver.ModelBatchFlag.FIRST_DIM
    assert model.transaction_properties() == tritonserver.ModelTxnPropertyFlag.ONE_TO_ONE
    assert (server.model("repeat").transaction_properties()
            == tritonserver.ModelTxnPropertyFlag.DECOUPLED)
    assert not server.model("broken").ready()
    with pytest.raises(tritonserver.TritonError):
        server.model("broken").metadata()


def test_create_request(server):
    request = server.models()["test"].create_request()
    assert request.model.name == "test"
    request = tritonserver.InferenceRequest(server.model("test"))
    request.inputs["fp16_input"] = numpy.array([[1.0]], numpy.float16)
    (response,) = list(server.model("test").infer(request))
    assert numpy.from_dlpack(response.outputs["fp16_output"]).tolist() == [[1.0]]


# -- inference -------------------------------------------------------------------------------


def test_basic_inference(server):
    inputs = echo_inputs()
    responses = list(server.model("test").infer(inputs=inputs, output_memory_type="cpu"))
    assert len(responses) == 1 and responses[0].final
    assert responses[0].model.name == "test"
    assert_echoed(inputs, responses[0])
    # Python lists become numpy arrays, as in Triton.
    inputs = {"bool_input": [[True, False, False, True]]}
    for response in server.model("test").infer(inputs=inputs, raise_on_error=True):
        assert_echoed(inputs, response)


def test_add_sub_and_identity(server):
    a = numpy.arange(4, dtype=numpy.float32)
    b = numpy.ones(4, dtype=numpy.float32)
    (response,) = server.model("add_sub").infer(inputs={"INPUT0": a, "INPUT1": b})
    assert numpy.from_dlpack(response.outputs["OUTPUT0"]).tolist() == [1, 2, 3, 4]
    assert numpy.from_dlpack(response.outputs["OUTPUT1"]).tolist() == [-1, 0, 1, 2]
    batch = numpy.arange(6, dtype=numpy.float32).reshape(2, 3)
    (response,) = server.model("identity_fp32", 1).infer(
        inputs={"INPUT0": batch}, request_id="r-7")
    assert response.request_id == "r-7"
    numpy.testing.assert_array_equal(numpy.from_dlpack(response.outputs["OUTPUT0"]), batch)


def test_basic_async_inference(server):
    inputs = echo_inputs()

    async def main() -> list:
        return [r async for r in server.model("test").async_infer(inputs=inputs)]

    (response,) = asyncio.run(main())
    assert response.final
    assert_echoed(inputs, response)


def test_many_threads_infer_at_once(server):
    results: list = [None] * 8

    def call(index: int) -> None:
        a = numpy.full(4, index, numpy.float32)
        (response,) = server.model("add_sub").infer(inputs={"INPUT0": a, "INPUT1": a})
        results[index] = numpy.from_dlpack(response.outputs["OUTPUT0"]).tolist()

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [[2.0 * i] * 4 for i in range(8)]


def test_inference_with_response_queue(server):
    response_queue: queue.SimpleQueue = queue.SimpleQueue()
    inputs = echo_inputs()
    iterators = [server.model("test").infer(inputs=inputs, response_queue=response_queue)
                 for _ in range(2)]
    # The queue fills without anyone iterating.
    for _ in range(2):
        assert_echoed(inputs, response_queue.get(timeout=30))
    for iterator in iterators:
        for response in iterator:
            assert_echoed(inputs, response)
    assert response_queue.empty()
    with pytest.raises(tritonserver.InvalidArgumentError, match="queue.SimpleQueue"):
        server.model("test").infer(inputs=inputs, response_queue=queue.Queue())


def test_async_inference_with_response_queue(server):
    inputs = echo_inputs()

    async def main() -> None:
        response_queue: asyncio.Queue = asyncio.Queue()
        iterators = [server.model("test").async_infer(inputs=inputs,
                                                      response_queue=response_queue)
                     for _ in range(2)]
        for _ in range(2):
            assert_echoed(inputs, await asyncio.wait_for(response_queue.get(), 30))
        for iterator in iterators:
            async for response in iterator:
                assert_echoed(inputs, response)
        assert response_queue.empty()
        with pytest.raises(tritonserver.InvalidArgumentError, match="asyncio.Queue"):
            server.model("test").async_infer(inputs=inputs, response_queue=queue.SimpleQueue())

    asyncio.run(main())


def test_parameters(server):
    fp16_input = numpy.random.rand(1, 100).astype(numpy.float16)
    parameters = {"int_parameter": 0, "float_parameter": 0.5, "bool_parameter": False,
                  "string_parameter": "test"}
    (response,) = server.model("test").infer(inputs={"fp16_input": fp16_input},
                                             parameters=parameters)
    assert json.loads(response.outputs["output_parameters"].to_string_array()[0]) == parameters
    for bad in ({"invalid": {"test": 1}}, {"invalid": None}):
        with pytest.raises(tritonserver.InvalidArgumentError, match="invalid"):
            server.model("test").infer(inputs={"fp16_input": fp16_input}, parameters=bad)


def test_requested_outputs(server):
    a = numpy.ones(4, numpy.float32)
    (response,) = server.model("add_sub").infer(inputs={"INPUT0": a, "INPUT1": a},
                                                requested_outputs=["OUTPUT1"])
    assert list(response.outputs) == ["OUTPUT1"]


def test_bytes_tensors(server):
    strings = tritonserver.Tensor.from_string_array([["hello", "wörld"]])
    assert strings.data_type == tritonserver.DataType.BYTES and strings.shape == [1, 2]
    (response,) = server.model("test").infer(inputs={"string_input": strings})
    output = response.outputs["string_output"]
    assert output.to_string_array().tolist() == [["hello", "wörld"]]
    assert output.to_bytes_array().tolist() == [[b"hello", "wörld".encode()]]
    # The tensor's memory is Triton's serialised form: a 4-byte length before each element.
    assert output.size == 4 + 5 + 4 + len("wörld".encode())
    with pytest.raises(tritonserver.InvalidArgumentError):
        tritonserver.Tensor.from_bytes_array(numpy.ones(2, numpy.float32))
    with pytest.raises(tritonserver.InvalidArgumentError):
        response.outputs["output_parameters"].__dlpack__()


# -- memory types and allocators ---------------------------------------------------------------


def test_unsupported_memory_type(server):
    with pytest.raises(tritonserver.InvalidArgumentError, match="Invalid memory type"):
        server.model("test").infer(
            inputs={"string_input": tritonserver.Tensor.from_string_array([["hello"]])},
            output_memory_type="unsupported")


no_gpu_memory = pytest.mark.skipif(
    device_memory.cupy() is not None,
    reason="cupy sees a CUDA device here: GPU memory is served (test_inprocess_gpu.py)")


@no_gpu_memory
def test_gpu_output_on_a_machine_without_gpus(server):
    """Triton's API without a GPU allocator (no cupy): the request fails with
    InvalidArgumentError when its response is read; the server keeps serving."""
    inputs = echo_inputs()
    with pytest.raises(tritonserver.InvalidArgumentError, match="Memory type gpu not supported"):
        list(server.model("test").infer(inputs=inputs, output_memory_type="gpu"))
    (response,) = server.model("test").infer(
        inputs=inputs, output_memory_type=(tritonserver.MemoryType.CPU, 0))
    assert response.outputs["fp16_output"].memory_type == tritonserver.MemoryType.CPU
    assert_echoed(inputs, response)
    with pytest.raises(tritonserver.UnsupportedError):
        response.outputs["fp16_output"].to_device("gpu:0")


@no_gpu_memory
def test_cuda_dlpack_objects_without_gpu_memory_are_refused():
    """A producer on a CUDA device (here one that only says so) cannot be read without cupy
    and a GPU: Triton's UnsupportedError, never a crash."""

    class OnDevice:
        def __dlpack_device__(self):
            return (tritonserver.DLDeviceType.kDLCUDA, 0)

        def __dlpack__(self, **kwargs):
            raise AssertionError("must not be read")

    with pytest.raises(tritonserver.UnsupportedError, match="not supported"):
        tritonserver.Tensor.from_dlpack(OnDevice())
    with pytest.raises(tritonserver.UnsupportedError, match="not supported"):
        tritonserver.MemoryBuffer.from_dlpack(OnDevice())
    host = tritonserver.Tensor.from_dlpack(numpy.arange(3, dtype=numpy.int32))
    with pytest.raises(tritonserver.UnsupportedError, match="not supported"):
        host.to_device((tritonserver.DLDeviceType.kDLCUDA, 0))
    assert host.to_device("cpu") is host


def test_output_memory_allocator(server):
    class CountingAllocator(tritonserver.MemoryAllocator):
        def __init__(self) -> None:
            self.calls: list[tuple[int, str]] = []

        def allocate(self, size, memory_type, memory_type_id, tensor_name):
            self.calls.append((size, tensor_name))
            return tritonserver.MemoryBuffer.from_dlpack(numpy.empty(size, numpy.uint8))

    allocator = CountingAllocator()
    a = numpy.arange(4, dtype=numpy.float32)
    (response,) = server.model("add_sub").infer(inputs={"INPUT0": a, "INPUT1": a},
                                                output_memory_allocator=allocator)
    assert sorted(allocator.calls) == [(16, "OUTPUT0"), (16, "OUTPUT1")]
    buffer = response.outputs["OUTPUT0"].memory_buffer
    assert numpy.from_dlpack(response.outputs["OUTPUT0"]).tolist() == [0, 2, 4, 6]
    assert buffer.data_ptr == buffer.owner.ctypes.data  # written into the allocator's memory


@no_gpu_memory
def test_bytes_outputs_honour_the_memory_type_asked_for(server):
    """Triton core's test_api.py: a request with only BYTES outputs asking for GPU memory where
    there is no GPU allocator fails with InvalidArgumentError, as other datatypes do."""
    strings = {"string_input": tritonserver.Tensor.from_string_array([["hello"]])}
    with pytest.raises(tritonserver.InvalidArgumentError, match="Memory type gpu not supported"):
        list(server.model("test").infer(inputs=strings, output_memory_type="gpu"))


def test_bytes_outputs_go_through_the_allocator(server):
    """BYTES outputs land, serialised, in the allocator's memory; an allocator that raises
    fails the request with InternalError (core's test_memory_allocator_exception)."""

    class Recording(tritonserver.MemoryAllocator):
        def __init__(self) -> None:
            self.names: list[str] = []

        def allocate(self, size, memory_type, memory_type_id, tensor_name):
            self.names.append(tensor_name)
            return tritonserver.MemoryBuffer.from_dlpack(numpy.empty(size, numpy.uint8))

    class Failing(tritonserver.MemoryAllocator):
        def allocate(self, *args, **kwargs):
            raise Exception("foo")

    strings = {"string_input": tritonserver.Tensor.from_string_array([["hello", "wörld"]])}
    recording = Recording()
    (response,) = server.model("test").infer(inputs=strings,
                                             output_memory_allocator=recording)
    assert sorted(recording.names) == ["output_parameters", "string_output"]
    output = response.outputs["string_output"]
    assert output.memory_buffer.data_ptr == output.memory_buffer.owner.ctypes.data
    assert output.to_string_array().tolist() == [["hello", "wörld"]]
    with pytest.raises(tritonserver.InternalError, match="foo"):
        list(server.model("test").infer(inputs=strings, output_memory_type="gpu",
                                        output_memory_allocator=Failing()))


# -- tensors and DLPack ------------------------------------------------------------------------


def test_arrays_from_dlpack_keep_the_tensor_alive():
    """Triton core's test_reference_counts: numpy.from_dlpack(tensor) holds the Tensor (so
    memory a custom allocator handed out lives as long as any array reading it); a reshaped
    tensor gives arrays of the new shape, the earlier ones keep theirs."""
    owner = numpy.ones(1 << 10)
    tensor = tritonserver.Tensor.from_dlpack(owner)
    assert sys.getrefcount(tensor) - 1 == 1
    array = numpy.from_dlpack(tensor)
    assert sys.getrefcount(tensor) - 1 == 2
    assert array.ctypes.data == owner.ctypes.data
    tensor.shape = [2, 1 << 9]
    reshaped = numpy.from_dlpack(tensor)
    alive = weakref.ref(tensor)
    del tensor
    assert alive() is not None
    assert array.shape == (1 << 10,) and reshaped.shape == (2, 1 << 9)
    del array, reshaped
    gc.collect()
    assert alive() is None


def test_tensor_from_numpy_shares_memory_with_torch():
    import torch

    array = numpy.random.rand(1, 3, 10, 10).astype(numpy.float32)
    tensor = tritonserver.Tensor.from_dlpack(array)
    assert tensor.data_type == tritonserver.DataType.FP32 and tensor.shape == [1, 3, 10, 10]
    assert tensor.__dlpack_device__() == (tritonserver.DLDeviceType.kDLCPU, 0)
    torch_tensor = torch.from_dlpack(tensor)
    assert torch_tensor.data_ptr() == array.ctypes.data
    numpy.testing.assert_array_equal(torch_tensor.numpy(), array)


def test_tensor_from_torch_and_reshaped_view():
    import torch

    owner = torch.arange(8, dtype=torch.int64)
    tensor = tritonserver.Tensor.from_dlpack(owner)
    assert tensor.data_type == tritonserver.DataType.INT64 and tensor.size == 64
    first = numpy.from_dlpack(tensor)
    tensor.shape = [2, 4]
    second = numpy.from_dlpack(tensor)
    assert first.shape == (8,) and second.shape == (2, 4)
    assert first.ctypes.data == second.ctypes.data == owner.data_ptr()


def test_tensor_refuses_strided_and_unknown_objects():
    with pytest.raises(tritonserver.InvalidArgumentError, match="contiguous"):
        tritonserver.Tensor.from_dlpack(numpy.arange(10)[::2])
    with pytest.raises(tritonserver.InvalidArgumentError, match="not supported"):
        tritonserver.Tensor._from_object(object())


# -- decoupled streaming and cancellation -----------------------------------------------------


def test_decoupled_model_streams_then_sends_empty_final(server):
    server.load("test", config=DECOUPLED)
    try:
        inputs = echo_inputs()
        responses = list(server.model("test").infer(inputs=inputs))
        assert [r.final for r in responses] == [False, True]
        assert_echoed(inputs, responses[0])
        assert responses[1].outputs == {}
    finally:
        server.load("test", config=NOT_DECOUPLED)


def repeat_inputs(count: int, delay_ms: int) -> dict[str, numpy.ndarray]:
    return {"IN": numpy.arange(count, dtype=numpy.int32),
            "DELAY": numpy.full(count, delay_ms, numpy.uint32),
            "WAIT": numpy.zeros(1, numpy.uint32)}


def test_stream_of_responses(server):
    values = [int(numpy.from_dlpack(r.outputs["OUT"])[0])
              for r in server.model("repeat").infer(inputs=repeat_inputs(5, 0)) if r.outputs]
    assert values == [0, 1, 2, 3, 4]


def test_async_stream_of_responses(server):
    async def main() -> list[int]:
        return [int(numpy.from_dlpack(r.outputs["IDX"])[0])
                async for r in server.model("repeat").async_infer(inputs=repeat_inputs(4, 0))
                if r.outputs]

    assert asyncio.run(main()) == [0, 1, 2, 3]


def test_cancel_stops_a_stream(server):
    responses = server.model("repeat").infer(inputs=repeat_inputs(200, 50))
    first = next(responses)
    assert not first.final and int(numpy.from_dlpack(first.outputs["IDX"])[0]) == 0
    responses.cancel()
    rest = list(responses)  # the stream ends (final flag) instead of sending all 200
    assert rest and rest[-1].final
    assert len(rest) < 100


def test_async_cancel_stops_a_stream(server):
    async def main() -> int:
        responses = server.model("repeat").async_infer(inputs=repeat_inputs(200, 50))
        count = 0
        async for response in responses:
            count += 1
            if count == 2:
                responses.cancel()
            if response.final:
                break
        return count

    assert 2 <= asyncio.run(main()) < 100


# -- errors ----------------------------------------------------------------------------------


def test_errors_raise_tritons_classes(server):
    with pytest.raises(tritonserver.NotFoundError, match="unknown model: 'nope'"):
        server.model("nope").infer(inputs={})
    a = numpy.ones(4, numpy.float32)
    with pytest.raises(tritonserver.InvalidArgumentError, match="missing required input"):
        server.model("add_sub").infer(inputs={"INPUT0": a})
    with pytest.raises(tritonserver.InvalidArgumentError, match="data-type is 'INT64'"):
        server.model("add_sub").infer(inputs={"INPUT0": [1, 2, 3, 4], "INPUT1": a})
    # Every API error is a tritonserver.TritonError, with the core's status code.
    assert issubclass(tritonserver.UnavailableError, tritonserver.TritonError)
    (response,) = server.model("add_sub").infer(inputs={"INPUT0": a, "INPUT1": a})
    assert response.error is None  # the server keeps serving


def test_error_response_raises_or_is_returned(server):
    inputs = {"IN": numpy.ones(2, numpy.float32)}
    with pytest.raises(tritonserver.InternalError, match="no thanks") as raised:
        list(server.model("failing").infer(inputs=inputs))
    assert isinstance(raised.value.args[-1], tritonserver.InferenceResponse)
    (response,) = server.model("failing").infer(inputs=inputs, raise_on_error=False)
    assert isinstance(response.error, tritonserver.InternalError) and response.final


def test_load_failure_and_unload(server):
    with pytest.raises(tritonserver.TritonError, match="cannot load weights.bin"):
        server.load("broken")
    assert server.models()[("broken", 1)].state == "UNAVAILABLE"
    with pytest.raises(tritonserver.InvalidArgumentError, match="must be bytes"):
        server.load("test", files={"1/model.py": "text"})
    server.load("identity_fp32")
    server.unload("identity_fp32", wait_until_unloaded=True)
    assert server.models()[("identity_fp32", 1)].state == "UNAVAILABLE"
    # As Triton 2.51 answers an unloaded model: NOT_FOUND, no available versions.
    with pytest.raises(tritonserver.NotFoundError, match="has no available versions"):
        server.model("identity_fp32").infer(inputs={"INPUT0": numpy.ones((1, 2), numpy.float32)})
    server.load("identity_fp32")
    assert server.model("identity_fp32").ready()


def test_metrics_and_statistics(server):
    a = numpy.ones(4, numpy.float32)
    list(server.model("add_sub").infer(inputs={"INPUT0": a, "INPUT1": a}))
    assert 'nv_inference_request_success{model="add_sub",version="1"}' in server.metrics()
    stats = server.model("add_sub").statistics()["model_stats"][0]
    assert stats["name"] == "add_sub" and stats["inference_count"] >= 1


# -- frontends on demand ----------------------------------------------------------------------


def test_frontends_serve_the_same_server(repo: Path):
    server = tritonserver.Server(
        model_repository=str(repo), model_control_mode=tritonserver.ModelControlMode.EXPLICIT,
        startup_models=["add_sub"]).start(wait_until_ready=True)
    try:
        addresses = server.start_frontends(http_port=0, grpc_port=0, metrics_port=0)
        a = numpy.arange(4, dtype=numpy.float32)
        http = httpclient.InferenceServerClient(addresses.http)
        inputs = [httpclient.InferInput("INPUT0", [4], "FP32"),
                  httpclient.InferInput("INPUT1", [4], "FP32")]
        for tensor in inputs:
            tensor.set_data_from_numpy(a)
        assert http.infer("add_sub", inputs).as_numpy("OUTPUT0").tolist() == [0, 2, 4, 6]
        http.close()
        grpc = grpcclient.InferenceServerClient(addresses.grpc)
        inputs = [grpcclient.InferInput("INPUT0", [4], "FP32"),
                  grpcclient.InferInput("INPUT1", [4], "FP32")]
        for tensor in inputs:
            tensor.set_data_from_numpy(a)
        assert grpc.infer("add_sub", inputs).as_numpy("OUTPUT1").tolist() == [0, 0, 0, 0]
        grpc.close()
        import urllib.request

        with urllib.request.urlopen(addresses.metrics_url) as answer:
            # Both requests over the frontends count in the one server's statistics.
            assert b'nv_inference_request_success{model="add_sub",version="1"} 2\n' in answer.read()
        # In-process requests still go straight to the same core.
        (response,) = server.model("add_sub").infer(inputs={"INPUT0": a, "INPUT1": a})
        assert response.final
    finally:
        server.stop()
    with pytest.raises(ConnectionRefusedError):  # stopping the server stopped its frontends
        httpclient.InferenceServerClient(addresses.http).is_server_live()


# -- the package and its options -------------------------------------------------------------


def test_tritium_exports_the_same_api():
    import tritium

    assert tritium.Server is tritonserver.Server and tritium.Tensor is tritonserver.Tensor
    # Tracebacks name the errors as Triton's do.
    assert tritonserver.InvalidArgumentError.__module__ == "tritonserver"


def test_log_file_gets_tritons_log_lines(repo: Path, tmp_path: Path):
    log_file = tmp_path / "server.log"
    server = tritonserver.Server(
        model_repository=str(repo), model_control_mode=tritonserver.ModelControlMode.EXPLICIT,
        startup_models=["identity_fp32"], log_info=True, log_file=str(log_file)).start()
    server.stop()
    text = log_file.read_text()
    assert re.search(r"^I\d{4} [\d:.]+ \d+ .*\] \"successfully loaded 'identity_fp32'\"$",
                     text, re.MULTILINE), text
    # The start-up tables, as Triton's ServerNew logs them.
    assert re.search(r"^\| identity_fp32 \| 1       \| READY  \|$", text, re.MULTILINE), text
    assert re.search(r"^\| model_control_mode +\| MODE_EXPLICIT +\|$", text, re.MULTILINE), text
    assert re.search(r"^\| identity +\| built-in", text, re.MULTILINE), text


def test_startup_model_that_fails_stops_start_with_exit_on_error(repo: Path):
    with pytest.raises(tritonserver.InternalError, match="failed to load all models"):
        tritonserver.Server(model_repository=str(repo),
                            model_control_mode=tritonserver.ModelControlMode.EXPLICIT,
                            startup_models=["broken"]).start()
    server = tritonserver.Server(model_repository=str(repo), exit_on_error=False,
                                 model_control_mode=tritonserver.ModelControlMode.EXPLICIT,
                                 startup_models=["broken", "identity_fp32"]).start()
    try:
        assert not server.ready()  # strict readiness: a model failed
        assert server.model("identity_fp32").ready()
    finally:
        server.stop()


@pytest.mark.parametrize("model", ["identity_fp32", "add_sub"])
def test_requests_leave_no_memory_behind(server, model):
    """Triton test_api's leak check: Python memory after 1000 requests stays within the bound
    Triton's test allows (120 kB), whatever the number of requests."""
    import gc
    import tracemalloc

    inputs = ({"INPUT0": numpy.ones((1, 16), numpy.float32)} if model == "identity_fp32" else
              {"INPUT0": numpy.ones(4, numpy.float32), "INPUT1": numpy.ones(4, numpy.float32)})
    for _ in range(100):  # warm-up: caches, lazily built specs
        list(server.model(model).infer(inputs=inputs))
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for _ in range(1000):
            for response in server.model(model).infer(inputs=inputs):
                numpy.from_dlpack(response.outputs["OUTPUT0"])
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 120_000


def test_tritonfrontend_services(repo: Path):
    """Triton's tutorial shape: KServeHttp/KServeGrpc services started and stopped on their
    own, or with the server."""
    http_port, grpc_port = free_ports(2)
    server = tritonserver.Server(
        model_repository=str(repo), model_control_mode=tritonserver.ModelControlMode.EXPLICIT,
        startup_models=["identity_fp32"]).start(wait_until_ready=True)
    try:
        http_service = KServeHttp.Server(server, KServeHttp.Options(address="127.0.0.1",
                                                                    port=http_port))
        http_service.start()
        with httpclient.InferenceServerClient(f"127.0.0.1:{http_port}") as client:
            assert client.is_model_ready("identity_fp32")
        with KServeGrpc(server, KServeGrpc.Options(address="127.0.0.1", port=grpc_port)) as grpc:
            assert grpc.port == grpc_port
            client = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")
            assert client.is_server_live()
            client.close()
        with pytest.raises(tritonserver.InvalidArgumentError,
                           match="Options.port must be 0 to 65535, got 70000"):
            KServeHttp.Options(port=70000)
    finally:
        server.stop()  # stops the HTTP service still running
    with pytest.raises(ConnectionRefusedError):
        httpclient.InferenceServerClient(f"127.0.0.1:{http_port}").is_server_live()


def test_poll_model_repository(tmp_path: Path):
    from support.models import identity_config, write_model

    write_model(tmp_path, "first", identity_config("first"))
    server = tritonserver.Server(model_repository=str(tmp_path),
                                 model_control_mode=tritonserver.ModelControlMode.POLL).start()
    try:
        write_model(tmp_path, "second", identity_config("second"))
        assert ("second", 1) not in server.models()  # only polled when told, as in Triton
        server.poll_model_repository()
        assert server.models()[("second", 1)].state == "READY"
        assert server.model("second").ready()
    finally:
        server.stop()
    server = tritonserver.Server(model_repository=str(tmp_path)).start()
    try:
        with pytest.raises(tritonserver.UnavailableError, match="polling is disabled"):
            server.poll_model_repository()
    finally:
        server.stop()


def test_tritonfrontend_options_are_checked_as_tritons(tmp_path: Path) -> None:
    """As Triton 2.51's L0_python_api test_kserve.py: option ranges and types, the options'
    own type, and a second start."""
    for bad in ({"port": -15}, {"thread_count": -5}, {"header_forward_pattern": 10}):
        with pytest.raises(tritonserver.InvalidArgumentError):
            KServeHttp.Options(**bad)
    for bad in ({"port": -5}, {"keepalive_timeout_ms": -20_000},
                {"infer_allocation_pool_size": "big pool"}, {"server_key": 10}):
        with pytest.raises(tritonserver.InvalidArgumentError):
            KServeGrpc.Options(**bad)
    options = KServeGrpc.Options(infer_compression_level=KServeGrpc.Grpc_compression_level.HIGH,
                                 reuse_port=True, infer_allocation_pool_size="12",
                                 http2_max_pings_without_data=10)
    assert (options.infer_compression_level, options.infer_allocation_pool_size) == (3, 12)

    from support.models import identity_config, write_model

    write_model(tmp_path, "identity_fp32", identity_config("identity_fp32"))
    server = tritonserver.Server(model_repository=str(tmp_path)).start(wait_until_ready=True)
    try:
        with pytest.raises(tritonserver.InvalidArgumentError, match=(
                "Incorrect type for options. options argument must be of type "
                "KServeHttp.Options")):
            KServeHttp.Server(server, {"port": 8001})
        (port,) = free_ports(1)
        service = KServeHttp(server, KServeHttp.Options(address="127.0.0.1", port=port))
        service.start()
        try:
            with pytest.raises(tritonserver.AlreadyExistsError,
                               match="server is already running."):
                service.start()
        finally:
            service.stop()
    finally:
        server.stop()


def test_kserve_grpc_options_are_applied(tmp_path: Path) -> None:
    """KServeGrpc's TLS options serve TLS, as `tritium serve --grpc-use-ssl` does (a
    plaintext client gets nothing); a compression level is accepted with them."""
    import trustme

    from support.models import identity_config, write_model

    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1")
    cert, key, root = tmp_path / "server.pem", tmp_path / "server.key", tmp_path / "ca.pem"
    issued.cert_chain_pems[0].write_to_path(cert)
    issued.private_key_pem.write_to_path(key)
    ca.cert_pem.write_to_path(root)
    write_model(tmp_path / "repo", "identity_fp32", identity_config("identity_fp32"))
    server = tritonserver.Server(model_repository=str(tmp_path / "repo")).start(
        wait_until_ready=True)
    try:
        (port,) = free_ports(1)
        options = KServeGrpc.Options(
            address="127.0.0.1", port=port, use_ssl=True, server_cert=str(cert),
            server_key=str(key), infer_compression_level=KServeGrpc.Grpc_compression_level.HIGH)
        with KServeGrpc(server, options):
            url = f"127.0.0.1:{port}"
            with grpcclient.InferenceServerClient(url, ssl=True,
                                                  root_certificates=str(root)) as client:
                assert client.is_server_live()
                tensor = grpcclient.InferInput("INPUT0", [1, 4], "FP32")
                tensor.set_data_from_numpy(numpy.ones((1, 4), numpy.float32))
                result = client.infer("identity_fp32", [tensor])
                assert result.as_numpy("OUTPUT0").tolist() == [[1.0] * 4]
            with grpcclient.InferenceServerClient(url) as plain, pytest.raises(
                    InferenceServerException, match="UNAVAILABLE|DEADLINE_EXCEEDED"):
                plain.is_server_live(client_timeout=3)
    finally:
        server.stop()
