"""Ensembles (`platform: "ensemble"`): steps run as a data flow through the server.

One server serves ensembles of built-in backends (identity, repeat) and Python models, plus
ensembles that fail validation (their UNAVAILABLE reasons are Triton 2.51's words, checked
against the reference server). Everything goes through tritonclient (http, grpc, streaming).
"""

from __future__ import annotations

import json
import queue
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.grpc_stream_fixtures import REPEAT
from support.models import identity_config, write_model
from support.server_process import ServerProcess

# A Python model: OUT = IN + 1, and INFO (one string per batch row) saying what it saw and
# when it ran: its request id and parameters, and its start and end time.
PYOP = """
import json, time
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        params = json.loads(args["model_config"]).get("parameters", {})
        self.delay = float(params.get("delay_ms", {}).get("string_value", "0")) / 1000
        self.fail = params.get("fail", {}).get("string_value", "")

    def execute(self, requests):
        responses = []
        for request in requests:
            start = time.time()
            time.sleep(self.delay)
            if self.fail:
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(self.fail)))
                continue
            x = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            info = json.dumps({"id": request.request_id(),
                               "parameters": json.loads(request.parameters()),
                               "start": start, "end": time.time()})
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUT", (x + 1).astype(np.float32)),
                pb_utils.Tensor("INFO", np.array([[info.encode()]] * x.shape[0], dtype=object)),
            ]))
        return responses
"""


def pyop_config(name: str, extra: str = "") -> str:
    return f"""
name: "{name}"
backend: "python"
max_batch_size: 8
input {{ name: "IN" data_type: TYPE_FP32 dims: [ -1 ] }}
output {{ name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] }}
output {{ name: "INFO" data_type: TYPE_STRING dims: [ 1 ] }}
{extra}
"""


def step(model: str, inputs: dict[str, str], outputs: dict[str, str]) -> str:
    maps = "".join(f' input_map {{ key: "{k}" value: "{v}" }}' for k, v in inputs.items())
    maps += "".join(f' output_map {{ key: "{k}" value: "{v}" }}' for k, v in outputs.items())
    return f'step {{ model_name: "{model}" model_version: -1{maps} }}'


def ensemble(name: str, inputs: str, outputs: str, steps: list[str],
             max_batch_size: int = 8) -> str:
    return (f'name: "{name}"\nplatform: "ensemble"\nmax_batch_size: {max_batch_size}\n'
            f"{inputs}\n{outputs}\nensemble_scheduling {{\n  " + "\n  ".join(steps) + "\n}\n")


X_FP32 = 'input { name: "X" data_type: TYPE_FP32 dims: [ -1 ] }'
Y_FP32 = 'output { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] }'
INFO = 'output { name: "INFO" data_type: TYPE_STRING dims: [ 1 ] }'
DELAY = 'parameters { key: "delay_ms" value { string_value: "400" } }'

# Broken ensembles and the reason Triton 2.51 gives for each (the same repository on the
# reference server printed these; the poll-time ones lack a quote, as Triton's do). Where a
# composing model failed to load, Triton also prefixes its reason with the code ("Internal: ").
INVALID = {
    "bad_cycle": (
        [step("id_fp32", {"INPUT0": "Y"}, {"OUTPUT0": "t"}),
         step("id_fp32", {"INPUT0": "t"}, {"OUTPUT0": "Y"})],
        X_FP32, Y_FP32, 8,
        "ensemble input 'X' for ensemble bad_cycle' is not used",
    ),
    "bad_twice": (
        [step("id_fp32", {"INPUT0": "X"}, {"OUTPUT0": "Y"}),
         step("id_fp32", {"INPUT0": "X"}, {"OUTPUT0": "Y"})],
        X_FP32, Y_FP32, 8,
        "ensemble tensor 'Y' can appear in an output map only once for ensemble 'bad_twice' "
        "step 1",
    ),
    "bad_unwritten": (
        [step("id_fp32", {"INPUT0": "X"}, {"OUTPUT0": "Y"})],
        X_FP32, Y_FP32 + '\noutput { name: "Z" data_type: TYPE_FP32 dims: [ -1 ] }', 8,
        "ensemble output 'Z' for ensemble bad_unwritten' is not used",
    ),
    "bad_unused": (
        [step("id_fp32", {"INPUT0": "X"}, {"OUTPUT0": "Y"}),
         step("id_fp32", {"INPUT0": "X"}, {"OUTPUT0": "dangling"})],
        X_FP32, Y_FP32, 8,
        "ensemble tensor 'dangling' is unused in ensemble 'bad_unused'",
    ),
    "bad_dtype": (
        [step("id_fp32", {"INPUT0": "X"}, {"OUTPUT0": "Y"})],
        'input { name: "X" data_type: TYPE_INT32 dims: [ -1 ] }', Y_FP32, 8,
        "in ensemble bad_dtype, ensemble tensor X: inconsistent data type: TYPE_INT32 is "
        "inferred from model bad_dtype while TYPE_FP32 is inferred from model id_fp32",
    ),
    "bad_shape": (
        [step("id_fp32", {"INPUT0": "X"}, {"OUTPUT0": "Y"})],
        X_FP32, 'output { name: "Y" data_type: TYPE_FP32 dims: [ 2, 3 ] }', 8,
        "in ensemble bad_shape, ensemble tensor Y: inconsistent shape: [-1,2,3] is inferred "
        "from model bad_shape while [-1,-1] is inferred from model id_fp32",
    ),
    "bad_missing": (
        [step("nosuch", {"IN": "X"}, {"OUT": "Y"})],
        X_FP32, Y_FP32, 8,
        "ensemble bad_missing contains models that are not available or ambiguous: nosuch",
    ),
    "bad_input_name": (
        [step("id_fp32", {"NOPE": "X"}, {"OUTPUT0": "Y"})],
        X_FP32, Y_FP32, 8,
        "in ensemble bad_input_name, ensemble tensor X is mapping to non-existing input NOPE "
        "in model id_fp32",
    ),
    "bad_batch": (
        [step("id_fp32", {"INPUT0": "X"}, {"OUTPUT0": "Y"})],
        X_FP32, Y_FP32, 16,
        "ensemble bad_batch allows maximum batch size 16, but it contains model id_fp32 which "
        "only allows maximum batch size to be 8",
    ),
    "bad_mixed_decoupled": (
        [step("repeat_int32", {"IN": "X"}, {"OUT": "t1"}),
         step("repeat_int32", {"IN": "X"}, {"OUT": "t2"}),
         step("id2_int32", {"INPUT0": "t1", "INPUT1": "t2"}, {"OUTPUT0": "Y", "OUTPUT1": "Y2"})],
        'input { name: "X" data_type: TYPE_INT32 dims: [ -1 ] }',
        'output { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] }\n'
        'output { name: "Y2" data_type: TYPE_INT32 dims: [ 1 ] }', 0,
        "in ensemble bad_mixed_decoupled, step of model 'bad_mixed_decoupled' receives inputs "
        "originated from different decoupled models",
    ),
    "bad_split_decoupled": (
        [step("repeat_int32", {"IN": "X"}, {"OUT": "Y"}),
         step("repeat_int32", {"IN": "X"}, {"OUT": "Y2"})],
        'input { name: "X" data_type: TYPE_INT32 dims: [ -1 ] }',
        'output { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] }\n'
        'output { name: "Y2" data_type: TYPE_INT32 dims: [ 1 ] }', 0,
        # The ensemble's own outputs may not come from two decoupled steps either.
        "in ensemble bad_split_decoupled, step of model 'bad_split_decoupled' receives inputs "
        "originated from different decoupled models",
    ),
    "bad_unconnected": (
        [step("id2_int32", {"INPUT0": "X", "INPUT1": "t"}, {"OUTPUT0": "Y", "OUTPUT1": "Y2"})],
        'input { name: "X" data_type: TYPE_INT32 dims: [ 1 ] }',
        'output { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] }\n'
        'output { name: "Y2" data_type: TYPE_INT32 dims: [ 1 ] }', 0,
        "output 'Y' for ensemble 'bad_unconnected' is not written: at least one of its "
        "depending tensors, 't', is not connected",
    ),
    "bad_dependency": (
        [step("id_broken", {"INPUT0": "X"}, {"OUTPUT1": "Y"})],
        X_FP32, Y_FP32, 8,
        "ensemble 'bad_dependency' depends on 'id_broken' which has no loaded version. Model "
        "'id_broken' loading failed with error: version 1 is at UNAVAILABLE state: identity "
        "model 'id_broken' needs an output for each input; missing OUTPUT0;",
    ),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo: Path = tmp_path_factory.mktemp("ensemble_repo")
    write_model(repo, "id_fp32", identity_config("id_fp32"))
    write_model(repo, "id_int32", identity_config("id_int32", "TYPE_INT32", "[ 1 ]",
                                                  max_batch_size=0))
    # the identity backend refuses it (no OUTPUT0 for INPUT0)
    write_model(repo, "id_broken", identity_config("id_broken").replace('"OUTPUT0"', '"OUTPUT1"'))
    write_model(repo, "id2_int32", identity_config("id2_int32", "TYPE_INT32", "[ 1 ]",
                                                   max_batch_size=0, inputs=2))
    write_model(repo, "repeat_int32", REPEAT.format(name="repeat_int32", optional="optional: true"))
    for name, extra in (("add_one", ""), ("slow_a", DELAY), ("slow_b", DELAY),
                        ("failing", 'parameters { key: "fail" value { string_value: '
                                    '"step went wrong" } }')):
        write_model(repo, name, pyop_config(name, extra), files={"1/model.py": PYOP})
    # identity then a Python model
    write_model(repo, "chain", ensemble("chain", X_FP32, f"{Y_FP32}\n{INFO}", [
        step("id_fp32", {"INPUT0": "X"}, {"OUTPUT0": "t"}),
        step("add_one", {"IN": "t"}, {"OUT": "Y", "INFO": "INFO"}),
    ]))
    # two slow steps reading the same input, each writing its own outputs
    write_model(repo, "diamond", ensemble("diamond", X_FP32, "\n".join(
        f'output {{ name: "{n}" data_type: {t} dims: [ {d} ] }}'
        for n, t, d in (("A", "TYPE_FP32", -1), ("B", "TYPE_FP32", -1),
                        ("INFO_A", "TYPE_STRING", 1), ("INFO_B", "TYPE_STRING", 1))), [
        step("slow_a", {"IN": "X"}, {"OUT": "A", "INFO": "INFO_A"}),
        step("slow_b", {"IN": "X"}, {"OUT": "B", "INFO": "INFO_B"}),
    ]))
    write_model(repo, "failing_chain", ensemble("failing_chain", X_FP32, f"{Y_FP32}\n{INFO}", [
        step("id_fp32", {"INPUT0": "X"}, {"OUTPUT0": "t"}),
        step("failing", {"IN": "t"}, {"OUT": "Y", "INFO": "INFO"}),
    ]))
    # a decoupled step (one response per element of X) feeding an identity step
    write_model(repo, "streaming", ensemble(
        "streaming", 'input { name: "X" data_type: TYPE_INT32 dims: [ -1 ] }',
        'output { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] }\n'
        'output { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] }', [
            step("repeat_int32", {"IN": "X"}, {"OUT": "t", "IDX": "IDX"}),
            step("id_int32", {"INPUT0": "t"}, {"OUTPUT0": "Y"}),
        ], max_batch_size=0))
    # an ensemble with an ensemble as a step
    write_model(repo, "nested", ensemble("nested", X_FP32, Y_FP32.replace('"Y"', '"Z"'), [
        step("chain", {"X": "X"}, {"Y": "t"}),
        step("id_fp32", {"INPUT0": "t"}, {"OUTPUT0": "Z"}),
    ]))
    # a step whose output has labels, in an ensemble whose output has none of its own
    write_model(repo, "id_labeled", identity_config("id_labeled").replace(
        'name: "OUTPUT0"', 'name: "OUTPUT0" label_filename: "labels.txt"'),
        files={"labels.txt": "".join(f"class{i}\n" for i in range(4))})
    write_model(repo, "labeled", ensemble("labeled", X_FP32, Y_FP32, [
        step("id_labeled", {"INPUT0": "X"}, {"OUTPUT0": "Y"})]))
    # a non-batching ensemble around a batching model: the batch dimension comes and goes
    write_model(repo, "unbatched", ensemble(
        "unbatched", 'input { name: "X" data_type: TYPE_FP32 dims: [ 3 ] }',
        'output { name: "Y" data_type: TYPE_FP32 dims: [ 3 ] }',
        [step("id_fp32", {"INPUT0": "X"}, {"OUTPUT0": "Y"})], max_batch_size=0))
    # two ensembles that use each other
    write_model(repo, "loop_a", ensemble("loop_a", X_FP32, Y_FP32, [
        step("loop_b", {"X": "X"}, {"Y": "Y"})]))
    write_model(repo, "loop_b", ensemble("loop_b", X_FP32, Y_FP32, [
        step("loop_a", {"X": "X"}, {"Y": "Y"})]))
    for name, (steps, inputs, outputs, batch, _) in INVALID.items():
        write_model(repo, name, ensemble(name, inputs, outputs, steps, batch))
    with ServerProcess([repo], "--exit-on-error=false") as process:
        yield process


@pytest.fixture
def http(server: ServerProcess) -> httpclient.InferenceServerClient:
    return httpclient.InferenceServerClient(server.http_url)


@pytest.fixture
def grpc(server: ServerProcess) -> grpcclient.InferenceServerClient:
    return grpcclient.InferenceServerClient(server.grpc_url)


def fp32_input(module, values: np.ndarray, name: str = "X"):
    tensor = module.InferInput(name, list(values.shape), "FP32")
    tensor.set_data_from_numpy(values)
    return tensor


def info(result, name: str = "INFO", row: int = 0) -> dict:
    return json.loads(result.as_numpy(name)[row][0])


def test_chain_of_builtin_and_python_steps_over_http_and_grpc(server, http, grpc) -> None:
    x = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)
    for module, client in ((httpclient, http), (grpcclient, grpc)):
        result = client.infer("chain", [fp32_input(module, x)], request_id="req-7",
                              parameters={"colour": "blue"})
        np.testing.assert_array_equal(result.as_numpy("Y"), x + 1)
        seen = info(result)
        # the request id and parameters reach the composing model, as in Triton
        assert seen["id"] == "req-7"
        assert seen["parameters"]["colour"] == "blue"
        response = result.get_response()
        assert (response["id"] if module is httpclient else response.id) == "req-7"


def test_ensemble_response_carries_triton_sequence_parameters(http) -> None:
    x = np.ones((1, 2), dtype=np.float32)
    response = http.infer("chain", [fp32_input(httpclient, x)]).get_response()
    assert response["model_name"] == "chain"
    assert response["parameters"] == {"sequence_id": 0, "sequence_start": False,
                                      "sequence_end": False}


def test_batched_request_flows_through_every_step(http) -> None:
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    result = http.infer("chain", [fp32_input(httpclient, x)])
    np.testing.assert_array_equal(result.as_numpy("Y"), x + 1)
    assert result.as_numpy("INFO").shape == (3, 1)


def test_ensemble_of_an_ensemble(http) -> None:
    x = np.array([[1.0, 2.0]], dtype=np.float32)
    result = http.infer("nested", [fp32_input(httpclient, x)], request_id="n1",
                        sequence_id=42, sequence_start=True)
    np.testing.assert_array_equal(result.as_numpy("Z"), x + 1)
    response = result.get_response()
    assert response["id"] == "n1"
    # the sequence settings travel through both levels (Triton 2.51 answers the same)
    assert response["parameters"] == {"sequence_id": 42, "sequence_start": True,
                                      "sequence_end": False}
    # a string sequence id comes back as a string (as Triton 2.51 for one level; with two,
    # Triton 2.51 crashes)
    for model in ("chain", "nested"):
        result = http.infer(model, [fp32_input(httpclient, x)], sequence_id="abc")
        assert result.get_response()["parameters"]["sequence_id"] == "abc"


def test_non_batching_ensemble_of_a_batching_model(http) -> None:
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    result = http.infer("unbatched", [fp32_input(httpclient, x)])
    # the step saw [1, 3]; the ensemble answers in its own shape, [3] (as Triton 2.51)
    assert result.get_response()["outputs"][0]["shape"] == [3]
    np.testing.assert_array_equal(result.as_numpy("Y"), x)


def test_diamond_runs_independent_steps_in_parallel(http) -> None:
    x = np.array([[5.0]], dtype=np.float32)
    result = http.infer("diamond", [fp32_input(httpclient, x)])
    np.testing.assert_array_equal(result.as_numpy("A"), x + 1)
    np.testing.assert_array_equal(result.as_numpy("B"), x + 1)
    a, b = info(result, "INFO_A"), info(result, "INFO_B")
    # each step sleeps 0.4 s; run one after the other, their intervals could not overlap
    assert a["start"] < b["end"] and b["start"] < a["end"], (a, b)


def test_only_requested_outputs_are_computed(server, http) -> None:
    before_a = server.metric("nv_inference_request_success", "slow_a")
    before_b = server.metric("nv_inference_request_success", "slow_b")
    x = np.array([[1.0]], dtype=np.float32)
    result = http.infer("diamond", [fp32_input(httpclient, x)],
                        outputs=[httpclient.InferRequestedOutput("A")])
    assert [o["name"] for o in result.get_response()["outputs"]] == ["A"]
    assert server.metric("nv_inference_request_success", "slow_a") == before_a + 1
    # the step that writes only unrequested outputs is pruned, as Triton does
    assert server.metric("nv_inference_request_success", "slow_b") == before_b


def test_ensemble_output_classifies_with_its_steps_labels(http) -> None:
    output = httpclient.InferRequestedOutput("Y", class_count=1)
    values = np.array([[0.5, 3.0, 1.0, 2.0]], dtype=np.float32)
    result = http.infer("labeled", [fp32_input(httpclient, values)], outputs=[output])
    assert result.as_numpy("Y")[0][0] == b"3.000000:1:class1"


def test_step_error_fails_the_request_with_its_message(server, http, grpc) -> None:
    x = np.ones((1, 2), dtype=np.float32)
    with pytest.raises(InferenceServerException) as http_error:
        http.infer("failing_chain", [fp32_input(httpclient, x)])
    assert http_error.value.status() == "500"
    assert http_error.value.message() == "in ensemble 'failing_chain', step went wrong"
    with pytest.raises(InferenceServerException) as grpc_error:
        grpc.infer("failing_chain", [fp32_input(grpcclient, x)])
    assert grpc_error.value.message() == "in ensemble 'failing_chain', step went wrong"
    # the server keeps serving
    np.testing.assert_array_equal(
        http.infer("chain", [fp32_input(httpclient, x)]).as_numpy("Y"), x + 1)


def test_bad_request_is_checked_against_the_ensemble_config(http) -> None:
    x = np.ones((1, 2), dtype=np.int32)
    tensor = httpclient.InferInput("X", [1, 2], "INT32")
    tensor.set_data_from_numpy(x)
    with pytest.raises(InferenceServerException) as error:
        http.infer("chain", [tensor])
    assert error.value.message() == (
        "[request id: <id_unknown>] inference input 'X' data-type is 'INT32', but model "
        "'chain' expects 'FP32'")


def test_decoupled_step_streams_through_grpc(grpc) -> None:
    got: queue.Queue = queue.Queue()
    grpc.start_stream(callback=lambda result, error: got.put((result, error)))
    try:
        x = np.array([4, 5, 6], dtype=np.int32)
        tensor = grpcclient.InferInput("X", [3], "INT32")
        tensor.set_data_from_numpy(x)
        grpc.async_stream_infer("streaming", [tensor], request_id="s1",
                                enable_empty_final_response=True)
        ys, idxs = [], []
        while True:
            result, error = got.get(timeout=20)
            assert error is None, error
            response = result.get_response()
            assert response.id == "s1"
            if response.outputs:
                ys.append(int(result.as_numpy("Y")[0]))
                idxs.append(int(result.as_numpy("IDX")[0]))
            if response.parameters["triton_final_response"].bool_param:
                break
        assert ys == [4, 5, 6]
        assert idxs == [0, 1, 2]
    finally:
        grpc.stop_stream()


def test_decoupled_step_without_responses_sends_only_the_final_flag(grpc) -> None:
    got: queue.Queue = queue.Queue()
    grpc.start_stream(callback=lambda result, error: got.put((result, error)))
    try:
        tensor = grpcclient.InferInput("X", [0], "INT32")
        tensor.set_data_from_numpy(np.zeros(0, dtype=np.int32))
        grpc.async_stream_infer("streaming", [tensor], enable_empty_final_response=True)
        result, error = got.get(timeout=20)
        assert error is None, error
        response = result.get_response()
        assert not response.outputs
        assert response.parameters["triton_final_response"].bool_param
    finally:
        grpc.stop_stream()


def test_decoupled_ensemble_config_and_unary_refusal(http, grpc) -> None:
    assert http.get_model_config("streaming")["model_transaction_policy"] == {"decoupled": True}
    assert http.get_model_config("chain")["model_transaction_policy"] == {"decoupled": False}
    tensor = httpclient.InferInput("X", [1], "INT32")
    tensor.set_data_from_numpy(np.array([1], dtype=np.int32))
    with pytest.raises(InferenceServerException) as error:
        http.infer("streaming", [tensor])
    assert error.value.message() == (
        "HTTP end point doesn't support models with decoupled transaction policy")
    tensor = grpcclient.InferInput("X", [1], "INT32")
    tensor.set_data_from_numpy(np.array([1], dtype=np.int32))
    with pytest.raises(InferenceServerException) as error:
        grpc.infer("streaming", [tensor])
    assert error.value.message() == (
        "ModelInfer RPC doesn't support models with decoupled transaction policy")


def test_ensemble_config_and_metadata_as_triton(http) -> None:
    config = http.get_model_config("chain")
    assert config["platform"] == "ensemble" and config["backend"] == ""
    assert config["instance_group"] == [] and "optimization" not in config
    second = config["ensemble_scheduling"]["step"][1]
    assert (second["model_name"], second["model_version"]) == ("add_one", -1)
    assert second["input_map"] == {"IN": "t"}
    assert second["output_map"] == {"OUT": "Y", "INFO": "INFO"}
    metadata = http.get_model_metadata("chain")
    assert metadata["platform"] == "ensemble"
    assert metadata["inputs"] == [{"name": "X", "datatype": "FP32", "shape": [-1, -1]}]


# Refused before loading because a composing model is missing or failed: like Triton 2.51, the
# ensemble gets no state (it is not in the model table); the reason is logged.
REFUSED_BY_DEPENDENCIES = {"bad_missing", "bad_dependency"}
# Refused by the configuration's validation (Triton's ValidateModelConfig, in its Poll): the
# ensemble is not added at all; the log says why.
REFUSED_AT_POLL = {"bad_cycle", "bad_twice", "bad_unused", "bad_unwritten", "bad_unconnected"}


@pytest.mark.parametrize("name", sorted(set(INVALID) - REFUSED_BY_DEPENDENCIES - REFUSED_AT_POLL))
def test_invalid_ensemble_is_unavailable_with_tritons_reason(server, http, name) -> None:
    assert not http.is_model_ready(name)
    assert f"| {name} " in server.log()
    assert f"UNAVAILABLE: {INVALID[name][-1]} " in server.log(), server.log()


@pytest.mark.parametrize("name", sorted(REFUSED_AT_POLL))
def test_ensemble_whose_configuration_is_invalid_is_left_out(server, http, name) -> None:
    assert not http.is_model_ready(name)
    assert f"| {name} " not in server.log()
    assert f"Poll failed for model directory '{name}': {INVALID[name][-1]}" \
        in server.log_messages()


@pytest.mark.parametrize("name", sorted(REFUSED_BY_DEPENDENCIES))
def test_ensemble_refused_by_its_dependencies_has_no_state(server, http, name) -> None:
    assert not http.is_model_ready(name)
    assert f"| {name} " not in server.log()
    assert f"load failed for model '{name}': {INVALID[name][-1]}" in server.log(), server.log()


def test_ensembles_that_use_each_other_are_refused(server, http) -> None:
    for name, other in (("loop_a", "loop_b"), ("loop_b", "loop_a")):
        assert not http.is_model_ready(name)
        assert (f"circular dependency between ensembles: {name} -> ... -> {other} -> {name}"
                in server.log())


def test_statistics_for_ensemble_and_composing_models(server, http) -> None:
    def counts(model: str) -> tuple[float, ...]:
        return tuple(server.metric(name, model) for name in (
            "nv_inference_request_success", "nv_inference_request_failure",
            "nv_inference_count", "nv_inference_exec_count"))

    before = {m: counts(m) for m in ("chain", "id_fp32", "add_one", "failing_chain")}
    http.infer("chain", [fp32_input(httpclient, np.ones((1, 2), dtype=np.float32))])
    http.infer("chain", [fp32_input(httpclient, np.ones((3, 2), dtype=np.float32))])
    with pytest.raises(InferenceServerException):
        http.infer("failing_chain", [fp32_input(httpclient, np.ones((1, 2), dtype=np.float32))])
    for model, executions in (("add_one", 2), ("id_fp32", 3)):  # recorded after answering
        server.wait_metric("nv_inference_exec_count", model, before[model][3] + executions)
    after = {m: counts(m) for m in before}

    def delta(model: str) -> tuple[float, ...]:
        return tuple(a - b for a, b in zip(after[model], before[model], strict=True))

    # success, failure, inferences (batch 1 + batch 3), executions: one per request
    assert delta("chain") == (2, 0, 4, 2)
    assert delta("add_one") == (2, 0, 4, 2)
    # id_fp32 also ran the first step of the failing ensemble
    assert delta("id_fp32") == (3, 0, 5, 3)
    # a failed ensemble request counts once (Triton 2.51 counts it twice), as OTHER whatever
    # failed in its steps, as Triton's ensemble scheduler reports it; the step counts BACKEND
    assert delta("failing_chain") == (0, 1, 0, 0)
    with urllib.request.urlopen(server.metrics_url, timeout=10) as response:
        text = response.read().decode()
    failures = {line.split("reason=")[1].split('"')[1]: float(line.rsplit(" ", 1)[1])
                for line in text.splitlines()
                if line.startswith('nv_inference_request_failure{model="failing_chain"')}
    assert failures["OTHER"] >= 1 and failures["BACKEND"] == 0


def test_ensemble_compute_time_is_its_steps_time(server, http) -> None:
    before = server.metric("nv_inference_compute_infer_duration_us", "diamond")
    http.infer("diamond", [fp32_input(httpclient, np.ones((1, 1), dtype=np.float32))])
    spent = server.metric("nv_inference_compute_infer_duration_us", "diamond") - before
    # both steps sleep 0.4 s; the ensemble's compute time sums its steps', as Triton's does
    assert spent >= 800_000
