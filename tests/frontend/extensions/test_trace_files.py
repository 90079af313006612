"""Trace files, as Triton writes them in its "triton" trace mode (`--trace-config
triton,file=F --trace-config level=TIMESTAMPS`): which requests are traced (rate, count, each
model's own setting), what a trace holds (the frontend's and the server's activities, in
order; an ensemble's steps as child traces), and when the file and its indexed siblings are
written (log_frequency, the last of `count`, a replaced setting, the server's stop)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from support.models import identity_config, write_model
from support.server_process import ServerProcess

# INFER_RESPONSE_COMPLETE: the frontend has the response (Triton's response callback).
HTTP_ORDER = ["HTTP_RECV_START", "HTTP_RECV_END", "REQUEST_START", "QUEUE_START",
              "COMPUTE_START", "COMPUTE_INPUT_END", "COMPUTE_OUTPUT_START", "COMPUTE_END",
              "REQUEST_END", "INFER_RESPONSE_COMPLETE", "HTTP_SEND_START", "HTTP_SEND_END"]
GRPC_ORDER = ["GRPC_WAITREAD_START", "GRPC_WAITREAD_END", *HTTP_ORDER[2:-2], "GRPC_SEND_START",
              "GRPC_SEND_END"]


BLS_CALLER = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X")
            for trace in (request.trace(), None):  # only the first joins the trace
                pb_utils.InferenceRequest(
                    model_name="identity_fp32", requested_output_names=["OUTPUT0"],
                    inputs=[pb_utils.Tensor("INPUT0", x.as_numpy())], trace=trace).exec()
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", x.as_numpy())]))
        return responses
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("trace_files")
    write_model(repo, "bls_caller", 'backend: "python"\nmax_batch_size: 8\n'
                'input { name: "X" data_type: TYPE_FP32 dims: [ -1 ] }\n'
                'output { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] }\n',
                files={"1/model.py": BLS_CALLER})
    write_model(repo, "identity_fp32", identity_config("identity_fp32"))
    write_model(repo, "other", identity_config("other"))
    write_model(repo, "custom", identity_config("custom", extra=(
        'parameters [ { key: "enable_custom_tracing" value: { string_value: "true" } },\n'
        '  { key: "nested_span_count" value: { string_value: "2" } } ]')))
    write_model(repo, "chain", 'name: "chain"\nplatform: "ensemble"\nmax_batch_size: 8\n'
                'input { name: "X" data_type: TYPE_FP32 dims: [ -1 ] }\n'
                'output { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] }\n'
                'ensemble_scheduling {\n'
                '  step { model_name: "identity_fp32" model_version: -1\n'
                '         input_map { key: "INPUT0" value: "X" }\n'
                '         output_map { key: "OUTPUT0" value: "t" } }\n'
                '  step { model_name: "other" model_version: -1\n'
                '         input_map { key: "INPUT0" value: "t" }\n'
                '         output_map { key: "OUTPUT0" value: "Y" } }\n'
                '}\n')
    return repo


def _serve(repo: Path, trace_file: Path, *settings: str) -> ServerProcess:
    flags = [f"--trace-config=triton,file={trace_file}", "--trace-config=level=TIMESTAMPS"]
    return ServerProcess([repo], *flags, *(f"--trace-config={s}" for s in settings))


def _http_infer(process: ServerProcess, model: str = "identity_fp32", request_id: str = ""
                ) -> None:
    client = httpclient.InferenceServerClient(process.http_url)
    tensor = httpclient.InferInput("X" if model in ("chain", "bls_caller") else "INPUT0",
                                   [1, 2], "FP32")
    tensor.set_data_from_numpy(np.ones((1, 2), np.float32))
    client.infer(model, [tensor], request_id=request_id)


def _grpc_infer(process: ServerProcess, model: str = "identity_fp32") -> None:
    client = grpcclient.InferenceServerClient(process.grpc_url)
    tensor = grpcclient.InferInput("INPUT0", [1, 2], "FP32")
    tensor.set_data_from_numpy(np.ones((1, 2), np.float32))
    client.infer(model, [tensor])


def _traces(path: Path) -> dict[int, dict]:
    """The file's objects merged by trace id (as Triton's qa/common/trace_summary.py reads
    them): the request's header fields and its activities' names and times, in file order."""
    text = path.read_text()
    if not text.endswith("]"):
        text += "]"  # a file still being written: its array ends when the server stops
    traces: dict[int, dict] = {}
    for entry in json.loads(text):
        trace = traces.setdefault(entry["id"], {"names": [], "times": []})
        for stamp in entry.get("timestamps", ()):
            trace["names"].append(stamp["name"])
            trace["times"].append(stamp["ns"])
        trace.update({k: v for k, v in entry.items() if k not in ("id", "timestamps")})
    return traces


def test_each_request_is_traced_from_the_frontend_to_its_answer(repo: Path,
                                                                 tmp_path: Path) -> None:
    trace_file = tmp_path / "trace.json"
    with _serve(repo, trace_file, "rate=1") as process:
        _http_infer(process, request_id="first")
        _grpc_infer(process)
        _http_infer(process, "chain")
    assert trace_file.read_text().endswith("]")  # the array ends when the server stops
    traces = _traces(trace_file)
    http, grpc_trace, chain, *steps = traces.values()
    assert http["model_name"] == "identity_fp32" and http["model_version"] == 1
    assert http["request_id"] == "first" and "parent_id" not in http
    assert http["names"] == HTTP_ORDER
    assert http["times"] == sorted(http["times"])
    assert grpc_trace["names"] == GRPC_ORDER
    assert grpc_trace["times"] == sorted(grpc_trace["times"])
    # An ensemble's steps are traced as children of its trace, written with it.
    chain_id = list(traces)[2]
    assert chain["model_name"] == "chain" and chain["names"][0] == "HTTP_RECV_START"
    # The ensemble itself executes nothing (Triton's shows no COMPUTE_* either).
    assert not any(name.startswith("COMPUTE") for name in chain["names"])
    assert [(s["model_name"], s["parent_id"]) for s in steps] == [
        ("identity_fp32", chain_id), ("other", chain_id)]
    assert all(s["names"][0] == "REQUEST_START" and s["names"][-1] == "REQUEST_END"
               for s in steps)


def test_stream_requests_are_traced(repo: Path, tmp_path: Path) -> None:
    trace_file = tmp_path / "trace.json"
    with _serve(repo, trace_file, "rate=1") as process:
        client = grpcclient.InferenceServerClient(process.grpc_url)
        got: list = []
        client.start_stream(callback=lambda result, error: got.append((result, error)))
        tensor = grpcclient.InferInput("INPUT0", [1, 2], "FP32")
        tensor.set_data_from_numpy(np.ones((1, 2), np.float32))
        client.async_stream_infer("identity_fp32", [tensor], request_id="s1")
        client.stop_stream()
        assert [error for _, error in got] == [None]
    (trace,) = _traces(trace_file).values()
    assert trace["request_id"] == "s1" and trace["names"] == GRPC_ORDER
    assert trace["times"] == sorted(trace["times"])


def test_rate_count_and_a_replaced_setting(repo: Path, tmp_path: Path) -> None:
    """Every rate-th request is traced; a new count is counted down (and reported so), its
    last trace writes `<file>.0`; the setting it replaced wrote its traces to the file."""
    trace_file = tmp_path / "trace.json"
    with _serve(repo, trace_file, "rate=2") as process:
        for _ in range(6):
            _http_infer(process)
        client = httpclient.InferenceServerClient(process.http_url)
        client.update_trace_settings(settings={"trace_rate": "1", "trace_count": "2"})
        assert len(_traces(trace_file)) == 3  # written when its setting was replaced
        for _ in range(4):
            _http_infer(process)
        assert client.get_trace_settings()["trace_count"] == "0"
        assert len(_traces(Path(f"{trace_file}.0"))) == 2
        # A later update that does not set the count keeps what is left of it (Triton's).
        assert client.update_trace_settings(settings={"trace_rate": "2"})["trace_count"] == "0"
    assert len(_traces(trace_file)) == 3
    assert not Path(f"{trace_file}.1").exists()


def test_log_frequency_writes_indexed_files(repo: Path, tmp_path: Path) -> None:
    trace_file = tmp_path / "trace.json"
    with _serve(repo, trace_file, "rate=1", "triton,log-frequency=2") as process:
        for _ in range(5):
            _http_infer(process)
        assert [len(_traces(Path(f"{trace_file}.{i}"))) for i in range(2)] == [2, 2]
    # The one left over is written at the stop, to the next indexed file.
    assert len(_traces(Path(f"{trace_file}.2"))) == 1
    assert not trace_file.exists()


def test_a_models_own_setting(repo: Path, tmp_path: Path) -> None:
    """A model's setting is its own (here: tracing off for it); the others follow the
    global one."""
    trace_file = tmp_path / "trace.json"
    with _serve(repo, trace_file, "rate=1") as process:
        client = httpclient.InferenceServerClient(process.http_url)
        client.update_trace_settings("other", {"trace_level": ["OFF"]})
        _http_infer(process, "other")
        _http_infer(process, "identity_fp32")
    assert [t["model_name"] for t in _traces(trace_file).values()] == ["identity_fp32"]


def test_no_file_without_tracing(repo: Path, tmp_path: Path) -> None:
    trace_file = tmp_path / "trace.json"
    with ServerProcess([repo], f"--trace-config=triton,file={trace_file}") as process:
        _http_infer(process)
    assert not trace_file.exists()


def test_a_python_models_bls_request_joins_the_trace_it_names(repo: Path, tmp_path: Path
                                                             ) -> None:
    """`pb_utils.InferenceRequest(..., trace=request.trace())` is traced as a child of the
    request (Triton's L0_trace bls_simple); a BLS request without it is not traced."""
    trace_file = tmp_path / "trace.json"
    with _serve(repo, trace_file, "rate=1") as process:
        _http_infer(process, "bls_caller")
    caller, *children = _traces(trace_file).values()
    assert caller["model_name"] == "bls_caller"
    caller_id = next(iter(_traces(trace_file)))
    assert [(c["model_name"], c["parent_id"]) for c in children] == [
        ("identity_fp32", caller_id)]


def test_a_backends_own_activities_are_in_its_requests_trace(repo: Path, tmp_path: Path
                                                             ) -> None:
    """The identity backend's `enable_custom_tracing` (Triton's example of
    TRITONSERVER_InferenceTraceReportActivity), among the server's activities by time."""
    trace_file = tmp_path / "trace.json"
    with _serve(repo, trace_file, "rate=1") as process:
        _http_infer(process, "custom")
    (trace,) = _traces(trace_file).values()
    custom = [n for n in trace["names"] if n.startswith("CUSTOM")]
    assert custom == ["CUSTOM_ACTIVITY_START", "CUSTOM_ACTIVITY_END", "CUSTOM_SINGLE_ACTIVITY",
                      "CUSTOM_ACTIVITY0_START", "CUSTOM_SINGLE_ACTIVITY",
                      "CUSTOM_ACTIVITY1_START", "CUSTOM_SINGLE_ACTIVITY",
                      "CUSTOM_ACTIVITY1_END", "CUSTOM_ACTIVITY0_END"]
    names = trace["names"]
    assert names.index("COMPUTE_START") < names.index("CUSTOM_ACTIVITY_START")
    assert names.index("CUSTOM_ACTIVITY0_END") < names.index("REQUEST_END")
    assert trace["times"] == sorted(trace["times"])


def _tensor_records(path: Path) -> list[tuple[int, str, dict]]:
    return [(entry["id"], entry["activity"], entry["tensor"])
            for entry in json.loads(path.read_text()) if "activity" in entry]


def test_the_tensors_level_records_inputs_and_outputs(repo: Path, tmp_path: Path) -> None:
    trace_file = tmp_path / "trace.json"
    with _serve(repo, trace_file, "rate=1", "level=TENSORS") as process:
        client = httpclient.InferenceServerClient(process.http_url)
        tensor = httpclient.InferInput("X", [1, 3], "FP32")
        tensor.set_data_from_numpy(np.array([[0.5, 2.0, 1e-7]], np.float32))
        client.infer("chain", [tensor])
    records = _tensor_records(trace_file)
    chain_id = next(i for i, t in _traces(trace_file).items() if t.get("model_name") == "chain")
    values = {"data": "0.5,2,1e-07", "shape": "1,3", "dtype": "FP32"}
    # The ensemble's own request and each step's: its inputs as queued, its outputs as sent,
    # in Triton's format (floats as C++ streams them).
    assert (chain_id, "TENSOR_QUEUE_INPUT", {"name": "X", **values}) in records
    assert (chain_id, "TENSOR_BACKEND_OUTPUT", {"name": "Y", **values}) in records
    steps = [r for r in records if r[0] != chain_id]
    assert [(activity, t["name"]) for _, activity, t in steps] == [
        ("TENSOR_QUEUE_INPUT", "INPUT0"), ("TENSOR_BACKEND_OUTPUT", "OUTPUT0")] * 2
    assert '"data":"0.5,2,1e-07"' in trace_file.read_text()  # written without spaces


def test_the_tensors_level_alone_records_no_timestamps(repo: Path, tmp_path: Path) -> None:
    trace_file = tmp_path / "trace.json"
    flags = [f"--trace-config=triton,file={trace_file}", "--trace-config=level=TENSORS",
             "--trace-config=rate=1"]
    with ServerProcess([repo], *flags) as process:
        _http_infer(process)
    entries = json.loads(trace_file.read_text())
    assert [entry["activity"] for entry in entries] == ["TENSOR_QUEUE_INPUT",
                                                        "TENSOR_BACKEND_OUTPUT"]
