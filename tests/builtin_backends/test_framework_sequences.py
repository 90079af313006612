"""Stateful ONNX and TorchScript models behind the sequence batcher: the control inputs and the
implicit state reach the model as ordinary inputs, the state output is computed on every request
though no client asks for it, and it never appears in a response. Interleaved sequences over
tritonclient http and grpc keep their running sums apart."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from onnx import TensorProto
from tritonclient.utils import InferenceServerException

from support import onnx_models, torch_models
from support.models import write_model
from support.server_process import ServerProcess

CLIENTS = (("http", httpclient), ("grpc", grpcclient))

# Tensor names per model: the TorchScript model follows libtorch's <name>__<index> convention.
ONNX_NAMES = {n: n for n in ("INPUT", "START", "END", "READY", "CORRID", "STATE_IN",
                             "OUTPUT", "START_OUT", "END_OUT", "READY_OUT", "CORRID_OUT",
                             "STATE_OUT")}
TORCH_NAMES = {
    "INPUT": "INPUT__0", "START": "START__1", "END": "END__2", "READY": "READY__3",
    "CORRID": "CORRID__4", "STATE_IN": "STATE_IN__5", "OUTPUT": "OUTPUT__0",
    "START_OUT": "START_OUT__1", "END_OUT": "END_OUT__2", "READY_OUT": "READY_OUT__3",
    "CORRID_OUT": "CORRID_OUT__4", "STATE_OUT": "STATE_OUT__5",
}
MODELS = {"acc_onnx": ONNX_NAMES, "acc_pt": TORCH_NAMES}
CORRID_TYPE = {"acc_onnx": "TYPE_UINT64", "acc_pt": "TYPE_INT64"}
PLATFORM = {"acc_onnx": "onnxruntime_onnx", "acc_pt": "pytorch_libtorch"}


def names_of(model: str) -> dict[str, str]:
    return TORCH_NAMES if model.startswith("acc_pt") else ONNX_NAMES


def sequence_batching(n: dict[str, str], corrid_type: str, *, start_kind: str = "int32",
                      strategy: str = "direct { }") -> str:
    start = {"int32": "int32_false_true: [0, 1]", "fp32": "fp32_false_true: [0, 1]"}[start_kind]
    return f"""
sequence_batching {{
  max_sequence_idle_microseconds: 5000000
  {strategy}
  control_input [
    {{ name: "{n['START']}" control [ {{ kind: CONTROL_SEQUENCE_START {start} }} ] }},
    {{ name: "{n['END']}" control [ {{ kind: CONTROL_SEQUENCE_END fp32_false_true: [0, 1] }} ] }},
    {{ name: "{n['READY']}"
       control [ {{ kind: CONTROL_SEQUENCE_READY bool_false_true: [false, true] }} ] }},
    {{ name: "{n['CORRID']}"
       control [ {{ kind: CONTROL_SEQUENCE_CORRID data_type: {corrid_type} }} ] }}
  ]
  state [ {{ input_name: "{n['STATE_IN']}" output_name: "{n['STATE_OUT']}"
             data_type: TYPE_INT32 dims: [ 1 ] }} ]
}}
"""


def accumulator_config(model: str, names: dict[str, str] | None = None,
                       corrid_type: str | None = None, **kwargs: Any) -> str:
    n = names or names_of(model)
    corrid_type = corrid_type or CORRID_TYPE[model]
    corrid = corrid_type.removeprefix("TYPE_")
    outputs = ", ".join(
        f'{{ name: "{n[name]}" data_type: TYPE_{datatype} dims: [ 1 ] }}'
        for name, datatype in (("OUTPUT", "INT32"), ("START_OUT", "INT32"),
                               ("END_OUT", "FP32"), ("READY_OUT", "BOOL"),
                               ("CORRID_OUT", corrid))
    )
    # Four slots: the tests keep up to three sequences open at once from one thread.
    return f"""
platform: "{PLATFORM[model]}"
max_batch_size: 4
{sequence_batching(n, corrid_type, **kwargs)}
input [ {{ name: "{n['INPUT']}" data_type: TYPE_INT32 dims: [ 1 ] }} ]
output [ {outputs} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
"""


def add_onnx(repo: Path, name: str, config: str | None, **model: Any) -> None:
    write_model(repo, name, config)
    onnx_models.save(onnx_models.accumulator(**model), repo / name / "1" / "model.onnx")


def add_torch(repo: Path, name: str, config: str) -> None:
    write_model(repo, name, config)
    torch_models.save(torch_models.Accumulator(), repo / name / "1" / "model.pt")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("framework_sequences")
    add_onnx(repo, "acc_onnx", accumulator_config("acc_onnx"))
    add_torch(repo, "acc_pt", accumulator_config("acc_pt"))
    # Only the batcher configured: inputs and outputs come from the graph, without the
    # control and state tensors the scheduler fills.
    add_onnx(repo, "acc_onnx_auto", "max_batch_size: 4\n"
             + sequence_batching(ONNX_NAMES, "TYPE_UINT64"))
    # Each execution waits (up to 2 s) for a request in every one of the four slots, so four
    # concurrent sequences run as batches of four.
    full = "direct { max_queue_delay_microseconds: 2000000 minimum_slot_utilization: 1.0 }"
    add_onnx(repo, "acc_onnx_batched", accumulator_config("acc_onnx", strategy=full))
    add_torch(repo, "acc_pt_batched", accumulator_config("acc_pt", strategy=full))
    add_onnx(repo, "acc_onnx_string_id", accumulator_config("acc_onnx", corrid_type="TYPE_STRING"),
             corrid=TensorProto.STRING)
    with ServerProcess([repo]) as process:
        yield process


def step(client: Any, module: Any, model: str, value: int, sequence_id: int | str, *,
         start: bool = False, end: bool = False, outputs: list[str] | None = None) -> Any:
    names = names_of(model)
    tensor = module.InferInput(names["INPUT"], [1, 1], "INT32")
    tensor.set_data_from_numpy(np.array([[value]], dtype=np.int32))
    requested = [module.InferRequestedOutput(names[o]) for o in outputs] if outputs else None
    return client.infer(model, [tensor], outputs=requested, sequence_id=sequence_id,
                        sequence_start=start, sequence_end=end)


def output_names(result: Any) -> set[str]:
    response = result.get_response()
    if isinstance(response, dict):  # http
        return {o["name"] for o in response["outputs"]}
    return {o.name for o in response.outputs}


def value(result: Any, model: str, name: str) -> Any:
    return result.as_numpy(names_of(model)[name]).reshape(-1)[0]


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("protocol,module", CLIENTS)
def test_interleaved_sequences_keep_their_sums(server: ServerProcess, model: str,
                                               protocol: str, module: Any) -> None:
    client = module.InferenceServerClient(getattr(server, f"{protocol}_url"))
    names = MODELS[model]
    # Three sequences open at once, their requests interleaved; 1000 + i ids per protocol so
    # the parametrized runs never share a sequence.
    base = 1000 if protocol == "http" else 2000
    ids = [base + 1, base + 2, base + 3]
    steps = {ids[0]: [1, 2, 3, 4], ids[1]: [10, 20, 30, 40], ids[2]: [100, 200, 300, 400]}
    sums = dict.fromkeys(ids, 0)
    for position in range(4):
        for sequence_id in ids:
            added = steps[sequence_id][position]
            result = step(client, module, model, added, sequence_id,
                          start=position == 0, end=position == 3)
            sums[sequence_id] += added
            assert value(result, model, "OUTPUT") == sums[sequence_id]
            # The controls the scheduler set, as the model saw them.
            assert value(result, model, "START_OUT") == (1 if position == 0 else 0)
            assert value(result, model, "END_OUT") == (1.0 if position == 3 else 0.0)
            assert value(result, model, "READY_OUT")
            assert value(result, model, "CORRID_OUT") == sequence_id
            # Every configured output, and never the state output.
            assert output_names(result) == {names[n] for n in (
                "OUTPUT", "START_OUT", "END_OUT", "READY_OUT", "CORRID_OUT")}
    assert sums == {ids[0]: 10, ids[1]: 100, ids[2]: 1000}


@pytest.mark.parametrize("model", list(MODELS))
def test_state_advances_when_only_one_output_is_requested(server: ServerProcess,
                                                          model: str) -> None:
    client = grpcclient.InferenceServerClient(server.grpc_url)
    results = [step(client, grpcclient, model, v, 77, start=i == 0, end=i == 2,
                    outputs=["OUTPUT"]) for i, v in enumerate((5, 6, 7))]
    assert [value(r, model, "OUTPUT") for r in results] == [5, 11, 18]
    assert all(output_names(r) == {MODELS[model]["OUTPUT"]} for r in results)
    # A new sequence on the same id starts again from zero: START resets the state.
    again = step(client, grpcclient, model, 1, 77, start=True, end=True)
    assert value(again, model, "OUTPUT") == 1


@pytest.mark.parametrize("model", list(MODELS))
def test_state_output_cannot_be_requested(server: ServerProcess, model: str) -> None:
    client = httpclient.InferenceServerClient(server.http_url)
    state_out = MODELS[model]["STATE_OUT"]
    with pytest.raises(InferenceServerException) as info:
        step(client, httpclient, model, 1, 88, start=True, end=True, outputs=["STATE_OUT"])
    assert f"unexpected inference output '{state_out}' for model '{model}'" in str(info.value)
    # The server keeps serving that model.
    assert value(step(client, httpclient, model, 3, 89, start=True, end=True),
                 model, "OUTPUT") == 3


@pytest.mark.parametrize("model", ["acc_onnx_batched", "acc_pt_batched"])
def test_concurrent_sequences_batched_together_stay_apart(server: ServerProcess,
                                                          model: str) -> None:
    """Four sequences from four threads run as batches: one execution carries several slots'
    states, and each sum is still its own."""
    def run(index: int) -> list[int]:
        client = httpclient.InferenceServerClient(server.http_url)
        sequence_id = 500 + index
        got = []
        for position in range(6):
            result = step(client, httpclient, model, index + 1, sequence_id,
                          start=position == 0, end=position == 5)
            got.append(int(value(result, model, "OUTPUT")))
            assert value(result, model, "CORRID_OUT") == sequence_id
        return got

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, range(4)))
    for index, got in enumerate(results):
        assert got == [(index + 1) * k for k in range(1, 7)]
    stats = httpclient.InferenceServerClient(server.http_url).get_inference_statistics(model)
    counts = stats["model_stats"][0]
    assert counts["inference_count"] == 24
    assert counts["execution_count"] < 24  # requests of different sequences ran together


@pytest.mark.parametrize("protocol,module", CLIENTS)
def test_string_correlation_ids_reach_the_model(server: ServerProcess, protocol: str,
                                                module: Any) -> None:
    """A TYPE_STRING CORRID control: a string sequence id arrives as that text."""
    client = module.InferenceServerClient(getattr(server, f"{protocol}_url"))
    model = "acc_onnx_string_id"
    ids = [f"{protocol}-left", f"{protocol}-right"]
    for position, (left, right) in enumerate(((1, 10), (2, 20), (3, 30))):
        for sequence_id, added in zip(ids, (left, right), strict=True):
            result = step(client, module, model, added, sequence_id,
                          start=position == 0, end=position == 2)
            assert value(result, model, "CORRID_OUT") == sequence_id.encode()
    assert value(result, model, "OUTPUT") == 60


def test_auto_complete_leaves_control_and_state_tensors_to_the_scheduler(
        server: ServerProcess) -> None:
    client = httpclient.InferenceServerClient(server.http_url)
    config = client.get_model_config("acc_onnx_auto")
    assert [i["name"] for i in config["input"]] == ["INPUT"]
    assert [o["name"] for o in config["output"]] == [
        "OUTPUT", "START_OUT", "END_OUT", "READY_OUT", "CORRID_OUT"]
    first = step(client, httpclient, "acc_onnx_auto", 4, 900, start=True)
    second = step(client, httpclient, "acc_onnx_auto", 5, 900, end=True)
    assert value(first, "acc_onnx", "OUTPUT") == 4
    assert value(second, "acc_onnx", "OUTPUT") == 9
    assert "STATE_OUT" not in output_names(second)


def test_configurations_that_contradict_the_model_are_refused(tmp_path: Path) -> None:
    renamed = dict(ONNX_NAMES, START="GO")
    add_onnx(tmp_path, "onnx_missing_control", accumulator_config("acc_onnx", renamed))
    add_onnx(tmp_path, "onnx_control_type", accumulator_config("acc_onnx", start_kind="fp32"))
    add_onnx(tmp_path, "onnx_missing_state",
             accumulator_config("acc_onnx", dict(ONNX_NAMES, STATE_OUT="NEXT")))
    add_torch(tmp_path, "pt_control_name",
              accumulator_config("acc_pt", dict(TORCH_NAMES, START="START")))
    forward_names = dict(TORCH_NAMES, INPUT="value", STATE_IN="state")
    add_torch(tmp_path, "pt_state_naming", accumulator_config("acc_pt", forward_names))
    add_onnx(tmp_path, "good", accumulator_config("acc_onnx"))
    with ServerProcess([tmp_path], "--exit-on-error=false", "--strict-readiness=false") as srv:
        log = srv.log()
        assert ("configuration specified sequence control 'GO', but model does not provide "
                "that input") in log
        assert ("unable to load model 'onnx_control_type', sequence control 'START', the model "
                "expects data-type INT32 but the model configuration specifies data-type "
                "TYPE_FP32") in log
        assert "unexpected inference output 'NEXT', allowed outputs are: " in log
        assert "input 'START' does not follow <name>__<index> naming convention." in log
        assert ("PyTorch model 'pt_state_naming' is using sequence batching with state but not "
                "all inputs and outputs follow the <name>__<index> naming convention.") in log
        client = httpclient.InferenceServerClient(srv.http_url)
        for name in ("onnx_missing_control", "onnx_control_type", "onnx_missing_state",
                     "pt_control_name", "pt_state_naming"):
            assert not client.is_model_ready(name), name
        assert value(step(client, httpclient, "good", 2, 1, start=True, end=True),
                     "acc_onnx", "OUTPUT") == 2
