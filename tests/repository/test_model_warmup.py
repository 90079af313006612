"""A model's `model_warmup` samples run on each of its instances before it serves, as in Triton:
`batch_size` requests of batch 1 in one execution, `count` times; inputs of zeros, random bytes
or a file in the model's `warmup/` folder (STRING inputs too); undeclared inputs (sequence
controls) passed through; counted in the statistics; a sample answered with an error fails
the load with Triton's message, and the server goes on serving.

The Python model writes what each execution saw into a file beside the repository, so each
test reads exactly which instance ran which requests."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from support.models import write_model
from support.server_process import ServerProcess

RECORDER = '''
import json
import os

import numpy as np
import triton_python_backend_utils as pb_utils

EVENTS = os.path.join(os.path.dirname(__file__), "..", "..", "events.jsonl")


def describe(tensor):
    data = tensor.as_numpy()
    values = [v.decode() if isinstance(v, bytes) else v for v in data.reshape(-1).tolist()]
    return {"shape": list(data.shape), "dtype": str(data.dtype), "values": values}


class TritonPythonModel:
    def initialize(self, args):
        self.instance = args["model_instance_name"]
        config = json.loads(args["model_config"])
        self.fail = config["parameters"].get("fail", {}).get("string_value", "")
        self.outputs = [o["name"] for o in config["output"]]
        self.batching = config["max_batch_size"] > 0

    def execute(self, requests):
        seen = [{t.name(): describe(t) for t in request.inputs()} for request in requests]
        with open(EVENTS, "a") as f:
            f.write(json.dumps({"instance": self.instance, "requests": seen}) + "\\n")
        if self.fail == "raise":
            raise RuntimeError("execute raised")
        responses = []
        for request in requests:
            if self.fail == "respond":
                responses.append(pb_utils.InferenceResponse(
                    error=pb_utils.TritonError("An Error Occurred")))
                continue
            batch = request.inputs()[0].as_numpy().shape[0] if self.batching else None
            out = np.zeros((batch, 1) if batch else (1,), np.float32)
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor(name, out) for name in self.outputs]))
        return responses
'''


def serve(repo: Path, *models: str, args: tuple[str, ...] = ()) -> ServerProcess:
    return ServerProcess([repo], "--model-control-mode=explicit", "--log-verbose=1",
                         *(f"--load-model={m}" for m in models), *args)


def events(repo: Path) -> list[dict]:
    path = repo / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


BATCHING = '''
name: "warm"
backend: "python"
max_batch_size: 8
input { name: "ZERO" data_type: TYPE_FP32 dims: [ 4 ] }
input { name: "RANDOM" data_type: TYPE_INT32 dims: [ 3 ] }
input { name: "FILE" data_type: TYPE_FP32 dims: [ 2 ] }
input { name: "TEXT" data_type: TYPE_STRING dims: [ 2 ] }
output { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] }
instance_group [ { count: 2 kind: KIND_CPU } ]
model_warmup [
  {
    name: "mixed sample"
    batch_size: 3
    count: 2
    inputs { key: "ZERO" value: { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } }
    inputs { key: "RANDOM" value: { data_type: TYPE_INT32 dims: [ 3 ] random_data: true } }
    inputs { key: "FILE" value: { data_type: TYPE_FP32 dims: [ 2 ] input_data_file: "floats" } }
    inputs { key: "TEXT" value: { data_type: TYPE_STRING dims: [ 2 ] input_data_file: "words" } }
  },
  {
    name: "empty strings"
    batch_size: 1
    inputs { key: "ZERO" value: { data_type: TYPE_FP32 dims: [ 4 ] random_data: true } }
    inputs { key: "RANDOM" value: { data_type: TYPE_INT32 dims: [ 3 ] zero_data: true } }
    inputs { key: "FILE" value: { data_type: TYPE_FP32 dims: [ 2 ] zero_data: true } }
    inputs { key: "TEXT" value: { data_type: TYPE_STRING dims: [ 2 ] random_data: true } }
  },
  { name: "skipped" batch_size: 0 }
]
'''


def write_batching_model(repo: Path) -> Path:
    model = write_model(repo, "warm", BATCHING, files={"1/model.py": RECORDER})
    (model / "warmup").mkdir()
    # Three floats: the sample uses the first two, as Triton reads the start of the file.
    (model / "warmup" / "floats").write_bytes(np.array([1.5, -2.0, 9.0], np.float32).tobytes())
    words = b"".join(struct.pack("<I", len(w)) + w for w in (b"ab", b"xyz"))
    (model / "warmup" / "words").write_bytes(words)
    return model


def test_each_instance_runs_each_sample_count_times_before_serving(
        tmp_path: Path, grpc_client_of) -> None:
    write_batching_model(tmp_path)
    with serve(tmp_path, "warm") as server:
        client = grpc_client_of(server)
        warmups = events(tmp_path)
        # Per instance: "mixed sample" twice (3 requests each), "empty strings" once.
        by_instance: dict[str, list[dict]] = {}
        for event in warmups:
            by_instance.setdefault(event["instance"], []).append(event)
        assert sorted(by_instance) == ["warm_0_0", "warm_0_1"]
        for runs in by_instance.values():
            assert [len(run["requests"]) for run in runs] == [3, 3, 1]
            for request in runs[0]["requests"] + runs[1]["requests"]:
                assert request["ZERO"] == {"shape": [1, 4], "dtype": "float32",
                                           "values": [0.0] * 4}
                assert request["RANDOM"]["shape"] == [1, 3]
                assert request["RANDOM"]["dtype"] == "int32"
                assert request["FILE"] == {"shape": [1, 2], "dtype": "float32",
                                           "values": [1.5, -2.0]}
                assert request["TEXT"]["shape"] == [1, 2]
                assert request["TEXT"]["values"] == ["ab", "xyz"]
            single = runs[2]["requests"][0]
            assert single["ZERO"]["shape"] == [1, 4]
            assert single["RANDOM"]["values"] == [0, 0, 0]
            assert single["FILE"]["values"] == [0.0, 0.0]
            assert single["TEXT"] == {"shape": [1, 2], "dtype": "object", "values": ["", ""]}
        log = server.log()
        for instance in ("warm_0_0", "warm_0_1"):
            for iteration in (1, 2):
                assert (f"model 'warm' instance {instance} is running warmup sample "
                        f"'mixed sample' for iteration {iteration}") in log
            assert (f"model 'warm' instance {instance} is running warmup sample "
                    "'empty strings' for iteration 1") in log
        assert "Skipping batch 0 warmup sample 'skipped'" in log
        assert "failed to run warmup" not in log

        # As in Triton, the warmup requests count in the model's statistics.
        stats = client.get_inference_statistics("warm", as_json=True)["model_stats"][0]
        assert int(stats["inference_count"]) == 2 * (2 * 3 + 1)
        assert int(stats["execution_count"]) == 2 * 3
        assert int(stats["inference_stats"]["success"]["count"]) == 2 * (2 * 3 + 1)

        # Warmup is done once per instance: serving runs no more of it.
        inputs = []
        for name, datatype, shape in (("ZERO", "FP32", [1, 4]), ("RANDOM", "INT32", [1, 3]),
                                      ("FILE", "FP32", [1, 2]), ("TEXT", "BYTES", [1, 2])):
            tensor = grpcclient.InferInput(name, shape, datatype)
            tensor.set_data_from_numpy(
                np.array([[b"a", b"b"]], np.object_) if datatype == "BYTES"
                else np.ones(shape, np.float32 if datatype == "FP32" else np.int32))
            inputs.append(tensor)
        assert client.infer("warm", inputs).as_numpy("OUT").shape == (1, 1)
        assert len(events(tmp_path)) == len(warmups) + 1


SEQUENCE = '''
name: "stateful"
backend: "python"
max_batch_size: 0
input { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] }
output { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] }
sequence_batching {
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] }
  ]
}
instance_group [ { count: 1 kind: KIND_CPU } ]
model_warmup [{
  name: "sequence sample"
  batch_size: 2
  inputs { key: "INPUT" value: { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true } }
  inputs { key: "START" value: { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true } }
  inputs { key: "READY" value: { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true } }
}]
'''


def test_control_inputs_of_a_sample_reach_the_model_without_a_batch_dimension(
        tmp_path: Path) -> None:
    write_model(tmp_path, "stateful", SEQUENCE, files={"1/model.py": RECORDER})
    with serve(tmp_path, "stateful") as server:
        [run] = events(tmp_path)
        assert run["instance"] == "stateful_0_0"
        assert run["requests"] == [
            {name: {"shape": [1], "dtype": "int32", "values": [0]}
             for name in ("INPUT", "START", "READY")}
        ] * 2
        assert ("model 'stateful' instance stateful_0_0 is running warmup sample "
                "'sequence sample' for iteration 1") in server.log()


ONE_INPUT = '''
name: "{name}"
backend: "python"
max_batch_size: 0
input {{ name: "INPUT" data_type: TYPE_FP32 dims: [ 4 ] }}
output {{ name: "OUTPUT" data_type: TYPE_FP32 dims: [ 1 ] }}
instance_group [ {{ count: {count} kind: KIND_CPU }} ]
parameters {{ key: "fail" value: {{ string_value: "{fail}" }} }}
model_warmup [{{
  name: "zero sample"
  batch_size: 1
  inputs {{ key: "INPUT" value: {{ data_type: TYPE_FP32 dims: [ 4 ] {data} }} }}
}}]
'''


def one_input(repo: Path, name: str, fail: str = "", data: str = "zero_data: true",
              count: int = 1) -> Path:
    return write_model(repo, name, ONE_INPUT.format(name=name, fail=fail, data=data,
                                                    count=count),
                       files={"1/model.py": RECORDER})


@pytest.mark.parametrize(("fail", "message"), [
    ("respond", "failed to run warmup sample 'zero sample': An Error Occurred; "),
    # The Python backend's message for an exception from execute.
    ("raise", "failed to run warmup sample 'zero sample': Failed to process the request(s) "
              "for model 'failing_0_0', message: RuntimeError: execute raised"),
])
def test_a_sample_answered_with_an_error_fails_the_load(
        tmp_path: Path, grpc_client_of, fail: str, message: str) -> None:
    one_input(tmp_path, "failing", fail=fail)
    one_input(tmp_path, "fine")
    with serve(tmp_path, "fine") as server:
        client = grpc_client_of(server)
        with pytest.raises(InferenceServerException) as caught:
            client.load_model("failing")
        assert message in str(caught.value)
        assert not client.is_model_ready("failing")
        assert (f"failed to load 'failing' version 1: Invalid argument: {message}"
                in server.log())
        assert ("model 'failing' instance failing_0_0 failed to run warmup sample "
                "'zero sample'") in server.log()
        # The server goes on serving its other model.
        assert client.is_model_ready("fine")


@pytest.mark.parametrize(("data", "files", "message"), [
    ('input_data_file: "short"', {"warmup/short": "abc"},
     "[request id: <id_unknown>] warmup setting expects 16 bytes, but the data provided from "
     "shortonly has 3 bytes"),
    ('input_data_file: "absent"', {},
     "failed to open text file for read "),
    ("", {}, "[request id: <id_unknown>] warmup setting expects input 'INPUT' to have "
             "input_data_type set"),
])
def test_a_sample_that_cannot_be_built_fails_the_load(
        tmp_path: Path, grpc_client_of, data: str, files: dict[str, str], message: str) -> None:
    model = one_input(tmp_path, "bad", data=data)
    for relative, text in files.items():
        (model / relative).parent.mkdir(exist_ok=True)
        (model / relative).write_text(text)
    with serve(tmp_path) as server:
        client = grpc_client_of(server)
        with pytest.raises(InferenceServerException) as caught:
            client.load_model("bad")
        assert message in str(caught.value)
        assert events(tmp_path) == []


DECOUPLED = '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            request.get_response_sender().send(
                flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
'''


def test_a_decoupled_model_warms_up_on_its_final_flag(tmp_path: Path, grpc_client_of) -> None:
    model = one_input(tmp_path, "decoupled")
    (model / "config.pbtxt").write_text(
        (model / "config.pbtxt").read_text()
        + "model_transaction_policy { decoupled: true }\n")
    (model / "1" / "model.py").write_text(DECOUPLED)
    with serve(tmp_path, "decoupled") as server:
        assert grpc_client_of(server).is_model_ready("decoupled")
        assert ("model 'decoupled' instance decoupled_0_0 is running warmup sample "
                "'zero sample' for iteration 1") in server.log()
        assert "failed to run warmup" not in server.log()


def test_instances_an_instance_group_update_adds_are_warmed_up(
        tmp_path: Path, grpc_client_of) -> None:
    model = one_input(tmp_path, "grown")
    with serve(tmp_path, "grown") as server:
        client = grpc_client_of(server)
        assert [e["instance"] for e in events(tmp_path)] == ["grown_0_0"]
        (model / "config.pbtxt").write_text(
            (model / "config.pbtxt").read_text().replace("count: 1", "count: 2"))
        client.load_model("grown")
        # The kept instance is not warmed up again; the new one is, before it serves.
        assert [e["instance"] for e in events(tmp_path)] == ["grown_0_0", "grown_0_1"]


def test_with_the_rate_limiter_warmup_waits_for_the_instances_resources(
        tmp_path: Path, grpc_client_of) -> None:
    model = one_input(tmp_path, "limited", count=2)
    (model / "config.pbtxt").write_text((model / "config.pbtxt").read_text().replace(
        "kind: KIND_CPU", "kind: KIND_CPU rate_limiter { resources [ { name: \"R\" count: 1 } ] }"))
    with serve(tmp_path, "limited", args=("--rate-limit=execution_count",
                                          "--rate-limit-resource=R:1")) as server:
        assert grpc_client_of(server).is_model_ready("limited")
        assert sorted(e["instance"] for e in events(tmp_path)) == ["limited_0_0", "limited_0_1"]
