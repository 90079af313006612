"""PyTriton's shape on Tritium: functions bound as models, batched by the dynamic batcher,
answered over HTTP/gRPC (the real tritonclient and ModelClient) and in-process."""

from __future__ import annotations

import re
import tempfile
import threading
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

import tritonserver
from tritium.inprocess.pytriton import (
    ConstantPadder,
    DecoupledModelClient,
    DynamicBatcher,
    ModelClient,
    ModelConfig,
    PyTritonClientInferenceServerError,
    PyTritonClientModelDoesntSupportBatchingError,
    PyTritonRuntimeError,
    Tensor,
    Triton,
    TritonConfig,
    batch,
    first_value,
    group_by_values,
    sample,
)

FREE_PORTS = TritonConfig(http_port=0, grpc_port=0, metrics_port=0)


def vector(name: str, dtype=np.float32) -> Tensor:
    return Tensor(name=name, dtype=dtype, shape=(-1,))


class Gate:
    """Holds the first execution until released, recording every batch's size."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.sizes: list[int] = []

    def __call__(self, size: int) -> None:
        self.sizes.append(size)
        if len(self.sizes) == 1:
            self.entered.set()
            assert self.release.wait(60)


@pytest.fixture(scope="module")
def triton():
    gate = Gate()

    @batch
    def add_sub(a, b):
        gate(len(a))
        return {"sum": a + b, "diff": a - b}

    @sample
    def shout(text):
        return {"loud": np.vectorize(bytes.upper, otypes=[np.object_])(text)}

    @batch
    @group_by_values("scale")
    @first_value("scale")
    def scaled(x, scale):
        return {"y": x * scale, "seen": np.full((len(x), 1), scale, np.float32)}

    @batch
    @group_by_values("n", pad_fn=ConstantPadder(-1))
    def ranges(n):  # each group's rows get 0..n-1: the groups' widths differ
        return {"r": np.tile(np.arange(int(n[0][0]), dtype=np.int32), (len(n), 1))}

    @batch
    def fail(x):
        raise ValueError("bad input, sorry")

    @batch
    def count_up(n):
        for step in range(int(n[0][0])):
            yield {"step": np.full((len(n), 1), step, np.int32)}

    with Triton(config=FREE_PORTS) as triton:
        triton.bind("add_sub", add_sub, inputs=[vector("a"), vector("b")],
                    outputs=[vector("sum"), vector("diff")],
                    config=ModelConfig(max_batch_size=8,
                                       batcher=DynamicBatcher(max_queue_delay_microseconds=0)))
        triton.bind("shout", shout, inputs=[vector("text", np.bytes_)],
                    outputs=[vector("loud", np.bytes_)], config=ModelConfig(max_batch_size=4))
        triton.bind("scaled", scaled, inputs=[vector("x"), Tensor(name="scale", dtype=np.float32,
                                                                  shape=(1,))],
                    outputs=[vector("y"), Tensor(name="seen", dtype=np.float32, shape=(1,))],
                    config=ModelConfig(max_batch_size=8))
        triton.bind("ranges", ranges, inputs=[Tensor(name="n", dtype=np.int32, shape=(1,))],
                    outputs=[Tensor(name="r", dtype=np.int32, shape=(-1,))],
                    config=ModelConfig(max_batch_size=8))
        triton.bind("fail", fail, inputs=[vector("x")], outputs=[vector("y")])
        triton.bind("count_up", count_up, inputs=[Tensor(name="n", dtype=np.int32, shape=(1,))],
                    outputs=[Tensor(name="step", dtype=np.int32, shape=(1,))],
                    config=ModelConfig(max_batch_size=4, decoupled=True))
        triton.gate = gate  # type: ignore[attr-defined]
        gate.release.set()  # only the batching test holds it
        yield triton


def test_bound_function_over_http_grpc_and_in_process(triton):
    a = np.array([[1, 2, 3]], np.float32)
    b = np.array([[1, 1, 1]], np.float32)
    for module, url in ((httpclient, triton.http_url), (grpcclient, triton.grpc_url)):
        client = module.InferenceServerClient(url.split("://")[1])
        inputs = [module.InferInput("a", [1, 3], "FP32"), module.InferInput("b", [1, 3], "FP32")]
        inputs[0].set_data_from_numpy(a)
        inputs[1].set_data_from_numpy(b)
        result = client.infer("add_sub", inputs)
        assert result.as_numpy("sum").tolist() == [[2, 3, 4]]
        assert result.as_numpy("diff").tolist() == [[0, 1, 2]]
        config = client.get_model_config("add_sub")
        if not isinstance(config, dict):
            config = {"max_batch_size": config.config.max_batch_size}
        assert config["max_batch_size"] == 8
        client.close()
    (response,) = triton.server.model("add_sub").infer(inputs={"a": a, "b": b})
    assert np.from_dlpack(response.outputs["sum"]).tolist() == [[2, 3, 4]]


def test_model_client_batch_and_sample(triton):
    for url in (triton.http_url, triton.grpc_url):
        with ModelClient(url, "add_sub") as client:
            out = client.infer_batch(a=np.ones((2, 2)), b=np.zeros((2, 2)))
            assert out["sum"].tolist() == [[1, 1], [1, 1]] and out["sum"].dtype == np.float32
            out = client.infer_sample(np.array([5.0, 6.0]), np.array([1.0, 1.0]))
            assert out["diff"].tolist() == [4, 5]


def test_dynamic_batcher_batches_requests_that_wait(triton):
    """Eight callers at once: the first runs alone (held), the seven others queue meanwhile
    and reach the function as one batch."""
    gate = triton.gate
    gate.sizes.clear()
    gate.entered.clear()
    gate.release.clear()
    results: list = []

    def call(value: float) -> None:
        with ModelClient(triton.grpc_url, "add_sub") as client:
            results.append(client.infer_sample(a=np.array([value]), b=np.array([0.0]))["sum"])

    threads = [threading.Thread(target=call, args=(float(i),)) for i in range(8)]
    threads[0].start()
    assert gate.entered.wait(60)
    for t in threads[1:]:
        t.start()
    metrics = triton.server.metrics
    pending = re.compile(
        r'nv_inference_pending_request_count\{model="add_sub",version="1"\} (\S+)')
    waited = threading.Event()
    for _ in range(3000):  # until all eight are in the server (up to a minute)
        if float(pending.search(metrics()).group(1)) == 8 or waited.wait(0.02):
            break
    gate.release.set()
    for t in threads:
        t.join(60)
    assert sorted(r.tolist()[0] for r in results) == [float(i) for i in range(8)]
    assert gate.sizes == [1, 7]


def test_sample_decorator_and_bytes(triton):
    with ModelClient(triton.http_url, "shout") as client:
        out = client.infer_batch(text=np.array([[b"hi", b"there"]], dtype=np.object_))
    assert out["loud"].tolist() == [[b"HI", b"THERE"]]


def test_group_by_values_and_first_value(triton):
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    scale = np.array([[2], [10], [2], [10]], np.float32)
    with ModelClient(triton.grpc_url, "scaled") as client:
        out = client.infer_batch(x=x, scale=scale)
    np.testing.assert_array_equal(out["y"], x * scale)  # each row by its own group's scale
    assert out["seen"].reshape(-1).tolist() == [2, 10, 2, 10]


def test_group_by_values_pads_groups_of_different_output_shapes(triton):
    n = np.array([[2], [3], [2]], np.int32)
    with ModelClient(triton.http_url, "ranges") as client:
        out = client.infer_batch(n=n)
    assert out["r"].tolist() == [[0, 1, -1], [0, 1, 2], [0, 1, -1]]


def test_constant_padder_refuses_outputs_it_cannot_stack():
    with pytest.raises(PyTritonRuntimeError, match="must have the same dtype"):
        ConstantPadder()(({"y": np.zeros((1, 2), np.int32)}, {"y": np.zeros((1, 3), np.float32)}))
    padded = ConstantPadder(b"")(({"t": np.array([[b"a"]])}, {"t": np.array([[b"abc", b"d"]])}))
    assert [p["t"].tolist() for p in padded] == [[[b"a", b""]], [[b"abc", b"d"]]]


def test_function_error_reaches_the_client_and_the_server_keeps_serving(triton):
    with ModelClient(triton.http_url, "fail") as client, \
            pytest.raises(PyTritonClientInferenceServerError,
                          match="Error occurred during inference request. Message: .*bad input"):
        client.infer_batch(x=np.ones((1, 2)))
    with pytest.raises(tritonserver.InternalError, match="bad input, sorry"):
        list(triton.server.model("fail").infer(inputs={"x": np.ones((1, 2), np.float32)}))
    with ModelClient(triton.http_url, "add_sub") as client:
        assert client.infer_sample(a=np.ones(1), b=np.ones(1))["sum"].tolist() == [2]


def test_decoupled_generator_streams(triton):
    responses = list(triton.server.model("count_up").infer(
        inputs={"n": np.array([[3]], np.int32)}))
    steps = [int(np.from_dlpack(r.outputs["step"])[0][0]) for r in responses if r.outputs]
    assert steps == [0, 1, 2] and responses[-1].final


def test_one_instance_per_function_runs_concurrently():
    both = threading.Barrier(2, timeout=60)
    seen: list[str] = []

    def make(tag: str):
        @batch
        def infer(x):
            seen.append(tag)
            both.wait()  # only returns once the other instance is executing too
            return {"y": x}

        return infer

    with Triton(config=FREE_PORTS) as triton:
        triton.bind("pair", [make("first"), make("second")], inputs=[vector("x")],
                    outputs=[vector("y")], config=ModelConfig(max_batch_size=1))
        threads = [threading.Thread(target=lambda: list(triton.server.model("pair").infer(
            inputs={"x": np.ones((1, 1), np.float32)}))) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert sorted(seen) == ["first", "second"]


def test_stop_forgets_the_workspace_and_the_functions(tmp_path: Path):
    triton = Triton(config=FREE_PORTS)
    triton.bind("echo", batch(lambda x: {"y": x}), inputs=[vector("x")], outputs=[vector("y")])
    triton.run()  # bound before the server started: loaded at start
    workspace = triton._workspace
    assert (workspace / "echo" / "config.pbtxt").is_file()
    assert triton.is_alive()
    url = triton.http_url
    assert triton.stop() and not triton.stop()
    assert not workspace.exists()
    with pytest.raises(ConnectionRefusedError):
        httpclient.InferenceServerClient(url.split("://")[1]).is_server_live()


def test_invalid_model_name_and_unregistered_function(tmp_path: Path):
    with pytest.raises(ValueError, match="alphanumeric"):
        Triton(config=FREE_PORTS).bind("bad name", lambda r: r, inputs=[], outputs=[])
    model = tmp_path / "orphan"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text(
        'backend: "python_function"\nmax_batch_size: 0\n'
        'input [ { name: "x" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
        'output [ { name: "y" data_type: TYPE_FP32 dims: [ -1 ] } ]\n')
    server = tritonserver.Server(model_repository=str(tmp_path), exit_on_error=False).start()
    try:
        assert "no Python callable is registered" in server.models()[("orphan", 1)].reason
    finally:
        server.stop()


def test_decoupled_generator_over_a_grpc_stream(triton):
    import queue

    answers: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(triton.grpc_url.split("://")[1])
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    tensor = grpcclient.InferInput("n", [1, 1], "INT32")
    tensor.set_data_from_numpy(np.array([[4]], np.int32))
    client.async_stream_infer("count_up", [tensor], enable_empty_final_response=True)
    steps = []
    while True:
        result, error = answers.get(timeout=60)
        assert error is None
        if result.get_response().parameters["triton_final_response"].bool_param:
            break
        steps.append(int(result.as_numpy("step")[0][0]))
    client.stop_stream()
    client.close()
    assert steps == [0, 1, 2, 3]


def test_results_are_checked_strictly_when_asked():
    def wrong_dtype(requests):
        return [{"y": np.ones((1, 2), np.int64)} for _ in requests]

    def not_a_list(requests):
        return {"y": np.ones((1, 2), np.float32)}

    with Triton(config=FREE_PORTS) as triton:
        triton.bind("loose", wrong_dtype, inputs=[vector("x")], outputs=[vector("y")])
        triton.bind("strict", wrong_dtype, inputs=[vector("x")], outputs=[vector("y")],
                    strict=True)
        triton.bind("bad", not_a_list, inputs=[vector("x")], outputs=[vector("y")])
        inputs = {"x": np.ones((1, 2), np.float32)}
        (response,) = triton.server.model("loose").infer(inputs=inputs)
        assert np.from_dlpack(response.outputs["y"]).dtype == np.float32  # cast to FP32
        with pytest.raises(tritonserver.InternalError, match="has dtype int64, declared float32"):
            list(triton.server.model("strict").infer(inputs=inputs))
        with pytest.raises(tritonserver.InternalError, match="must be a list of response dicts"):
            list(triton.server.model("bad").infer(inputs=inputs))


def test_inputs_reach_the_function_in_the_order_the_model_declares():
    def classify(requests):  # unpacks values(), as PyTriton's perf_analyzer example does
        results = []
        for request in requests:
            sequence, labels = request.values()
            results.append({"first": sequence[:, :1], "count": np.array([[labels.shape[1]]])})
        return results

    with Triton(config=FREE_PORTS) as triton:
        triton.bind("classify", classify,
                    inputs=[Tensor(name="sequence", dtype=np.bytes_, shape=(1,)),
                            Tensor(name="labels", dtype=np.bytes_, shape=(-1,))],
                    outputs=[Tensor(name="first", dtype=np.bytes_, shape=(1,)),
                             Tensor(name="count", dtype=np.int64, shape=(1,))])
        client = grpcclient.InferenceServerClient(triton.grpc_url.split("://")[1])
        labels = grpcclient.InferInput("labels", [1, 3], "BYTES")  # sent first
        labels.set_data_from_numpy(np.array([[b"a", b"b", b"c"]], dtype=np.object_))
        sequence = grpcclient.InferInput("sequence", [1, 1], "BYTES")
        sequence.set_data_from_numpy(np.array([[b"text"]], dtype=np.object_))
        result = client.infer("classify", [labels, sequence])
        client.close()
    assert result.as_numpy("first").tolist() == [[b"text"]]
    assert result.as_numpy("count").tolist() == [[3]]


def test_bind_after_stop_serves_again_and_leaves_no_workspace(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where Triton makes its workspace
    triton = Triton(config=FREE_PORTS)  # the notebook's shape: run, stop, bind anew, run
    for factor in (2, 3):
        triton.bind("scale", batch(lambda x, f=factor: {"y": x * f}), inputs=[vector("x")],
                    outputs=[vector("y")])
        triton.run()
        with ModelClient(triton.http_url, "scale") as client:
            assert client.infer_sample(x=np.ones(2))["y"].tolist() == [factor, factor]
        triton.stop()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("tritium-pytriton")] == []


def test_frontends_metrics_included_listen_on_loopback_unless_told():
    with Triton(config=FREE_PORTS) as triton:
        assert triton.http_url.startswith("http://127.0.0.1:")
        assert triton.metrics_url.startswith("http://127.0.0.1:")
    config = TritonConfig(http_port=0, grpc_port=0, metrics_port=0, http_address="0.0.0.0")
    with Triton(config=config) as triton:
        assert triton.metrics_url.startswith("http://0.0.0.0:")  # follows HTTP, as tritonserver


def test_model_client_on_a_model_without_batching():
    with Triton(config=FREE_PORTS) as triton:
        triton.bind("double", lambda requests: [{"y": r["x"] * 2} for r in requests],
                    inputs=[vector("x")], outputs=[vector("y")],
                    config=ModelConfig(batching=False))
        with ModelClient(triton.grpc_url, "double") as client:
            assert not client.is_batching_supported
            assert client.infer_sample(x=np.array([1, 2]))["y"].tolist() == [2, 4]
            with pytest.raises(PyTritonClientModelDoesntSupportBatchingError,
                               match="use infer_sample"):
                client.infer_batch(x=np.ones((1, 2)))


def test_decoupled_client_reports_a_failed_stream_and_skips_an_abandoned_one():
    @batch
    def count(n):
        for step in range(int(n[0][0])):
            if step == 2 and int(n[0][0]) == 5:
                raise ValueError("five is too many")
            yield {"step": np.full((len(n), 1), step, np.int32)}

    with Triton(config=FREE_PORTS) as triton:
        triton.bind("count", count, inputs=[Tensor(name="n", dtype=np.int32, shape=(1,))],
                    outputs=[Tensor(name="step", dtype=np.int32, shape=(1,))],
                    config=ModelConfig(max_batch_size=4, decoupled=True))
        with DecoupledModelClient(triton.grpc_url, "count") as client:
            seen = []
            with pytest.raises(PyTritonClientInferenceServerError, match="five is too many"):
                for response in client.infer_sample(n=np.array([5], np.int32)):
                    seen.append(int(response["step"][0]))
            assert seen == [0, 1]
            for _ in client.infer_sample(n=np.array([4], np.int32)):
                break  # the rest of this stream is left unread
            steps = [int(r["step"][0]) for r in client.infer_sample(n=np.array([3], np.int32))]
            assert steps == [0, 1, 2]
