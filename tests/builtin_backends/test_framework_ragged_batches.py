"""Ragged batching in the framework backends, as Triton's ragged_batching.md describes it: an
`allow_ragged_batch` input reaches the model as one flat tensor of the whole batch, the
configured `batch_input` tensors tell the model where each request's part lies, and a
BATCH_SCATTER_WITH_INPUT_SHAPE `batch_output` goes back to each request in the shape of its input.

The requests of different shapes go down one gRPC stream (so they queue in order) to an ONNX or
TorchScript model whose dynamic batcher waits for a full batch (max_batch_size 4, a long queue
delay): they run as one batch, and each response shows what the model was fed.
"""

from __future__ import annotations

import queue
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from onnx import TensorProto

from support import onnx_models, torch_models
from support.models import write_model
from support.server_process import ServerProcess

# (target name, kind, data type, rank the model sees)
BATCH_INPUTS = [
    ("COUNT", "BATCH_ELEMENT_COUNT", "TYPE_INT32", 1),
    ("ACC", "BATCH_ACCUMULATED_ELEMENT_COUNT", "TYPE_FP32", 1),
    ("ACC_ZERO", "BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO", "TYPE_INT32", 1),
    ("MAX_SHAPE", "BATCH_MAX_ELEMENT_COUNT_AS_SHAPE", "TYPE_FP32", 1),
    ("ITEM_SHAPE", "BATCH_ITEM_SHAPE", "TYPE_FP32", 2),
    ("ITEM_FLAT", "BATCH_ITEM_SHAPE_FLATTEN", "TYPE_INT32", 1),
]
ONNX_TYPES = {"TYPE_INT32": TensorProto.INT32, "TYPE_FP32": TensorProto.FLOAT}

BACKENDS = ["onnxruntime", "pytorch"]
MODELS = {"onnxruntime": "ragged_onnx", "pytorch": "ragged_torch"}

# Three requests of 4 batch items: [2, 1, 3] (two items), [1, 2, 2], [1, 1, 1].
SHAPES = [(2, 1, 3), (1, 2, 2), (1, 1, 1)]
EXPECTED = {
    "COUNT": ([6, 4, 1], [3]),
    "ACC": ([6, 10, 11], [3]),
    "ACC_ZERO": ([0, 6, 10, 11], [4]),
    "MAX_SHAPE": ([0] * 6, [6]),
    "ITEM_SHAPE": ([1, 3, 1, 3, 2, 2, 1, 1], [4, 2]),
    "ITEM_FLAT": ([1, 3, 1, 3, 2, 2, 1, 1], [8]),
}


def ragged_config(name: str, backend: str) -> str:
    outputs = ['{ name: "RAGGED_OUT" data_type: TYPE_FP32 dims: [ -1, -1 ] }']
    entries = []
    for target, kind, data_type, rank in BATCH_INPUTS:
        outputs += [f'{{ name: "{target}_OUT" data_type: {data_type} dims: [ -1 ] }}',
                    f'{{ name: "{target}_SHAPE" data_type: TYPE_INT64 dims: [ {rank} ] }}']
        entries.append(f'{{ kind: {kind} target_name: "{target}" data_type: {data_type} '
                       'source_input: "RAGGED" }')
    return f"""
        name: "{name}"
        backend: "{backend}"
        max_batch_size: 4
        input [ {{ name: "RAGGED" data_type: TYPE_FP32 dims: [ -1, -1 ]
                   allow_ragged_batch: true }} ]
        output [ {", ".join(outputs)} ]
        batch_input [ {", ".join(entries)} ]
        batch_output [ {{ target_name: "RAGGED_OUT" kind: BATCH_SCATTER_WITH_INPUT_SHAPE
                          source_input: "RAGGED" }} ]
        dynamic_batching {{ max_queue_delay_microseconds: 60000000 }}
        """


def add_ragged_model(repo: Path, name: str, backend: str = "onnxruntime") -> None:
    write_model(repo, name, ragged_config(name, backend))
    if backend == "onnxruntime":
        reports = [(target, ONNX_TYPES[kind], rank) for target, _, kind, rank in BATCH_INPUTS]
        onnx_models.save(onnx_models.batch_inputs(reports), repo / name / "1" / "model.onnx")
    else:  # names without <name>__<index>: forward() takes the batch inputs after RAGGED
        torch_models.save(torch_models.BatchInputReport(), repo / name / "1" / "model.pt")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("ragged")
    for backend in BACKENDS:
        add_ragged_model(repo, MODELS[backend], backend)
    with ServerProcess([repo]) as process:
        yield process


def stream_batch(server: ServerProcess, model: str, shapes: list[tuple[int, ...]]) -> list:
    """Send one request per shape down one stream; the results, in order."""
    results: queue.Queue = queue.Queue()
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        client.start_stream(callback=lambda result, error: results.put((result, error)))
        try:
            for index, shape in enumerate(shapes):
                tensor = grpcclient.InferInput("RAGGED", list(shape), "FP32")
                tensor.set_data_from_numpy(data(index, shape))
                client.async_stream_infer(model, [tensor], request_id=str(index))
            answers = [results.get(timeout=120) for _ in shapes]
        finally:
            client.stop_stream()
    for _, error in answers:
        assert error is None, error
    return sorted((result for result, _ in answers),
                  key=lambda r: int(r.get_response().id))


def data(index: int, shape: tuple[int, ...]) -> np.ndarray:
    count = int(np.prod(shape))
    return np.arange(100 * index, 100 * index + count, dtype=np.float32).reshape(shape)


@pytest.mark.parametrize("backend", BACKENDS)
def test_ragged_input_reaches_the_model_flat_and_scatters_back(
    server: ServerProcess, backend: str
) -> None:
    results = stream_batch(server, MODELS[backend], SHAPES)
    for index, (result, shape) in enumerate(zip(results, SHAPES, strict=True)):
        # The model saw one flat input; each request gets its own part, in its own shape.
        np.testing.assert_array_equal(result.as_numpy("RAGGED_OUT"), data(index, shape))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("target", [b[0] for b in BATCH_INPUTS])
def test_each_batch_input_kind(server: ServerProcess, backend: str, target: str) -> None:
    results = stream_batch(server, MODELS[backend], SHAPES)
    values, shape = EXPECTED[target]
    data_type = next(b[2] for b in BATCH_INPUTS if b[0] == target)
    for result, request_shape in zip(results, SHAPES, strict=True):
        items = request_shape[0]  # one copy of what the model saw per batch item
        seen = result.as_numpy(f"{target}_OUT")
        assert seen.dtype == (np.int32 if data_type == "TYPE_INT32" else np.float32)
        np.testing.assert_array_equal(seen, np.array([values] * items, dtype=seen.dtype))
        np.testing.assert_array_equal(result.as_numpy(f"{target}_SHAPE"), [shape] * items)


def test_a_model_that_does_not_take_a_flat_ragged_input_is_refused(tmp_path: Path) -> None:
    write_model(tmp_path, "not_flat", """
        backend: "onnxruntime"
        max_batch_size: 8
        input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] allow_ragged_batch: true },
                { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] } ]
        output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
                 { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] } ]
        """)
    onnx_models.save(onnx_models.add_sub(), tmp_path / "not_flat" / "1" / "model.onnx")
    add_ragged_model(tmp_path, "flat")
    with ServerProcess([tmp_path], "--exit-on-error=false", "--strict-readiness=false") as server:
        index = models_by_name(server)
    assert index["flat"].state == "READY"
    assert index["not_flat"].state == "UNAVAILABLE"
    assert index["not_flat"].reason == (
        "unable to load model 'not_flat', configuration expects model provides input "
        "with shape [-1]  for ragged input 'INPUT0', model provides [-1,4]"
    )


def models_by_name(server: ServerProcess) -> dict:
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        return {m.name: m for m in client.get_model_repository_index().models}
