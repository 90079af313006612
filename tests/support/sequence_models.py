"""The sequence-batching test repository: Python accumulator models in every configuration the
tests need (tests/support/python_models/sequence/), and helpers to drive them with tritonclient."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from support.models import identity_config, write_model

SEQUENCE_MODELS = Path(__file__).parent / "python_models" / "sequence"
ACCUMULATOR = (SEQUENCE_MODELS / "accumulator.py").read_text()

CONTROLS = """
  control_input [
    {{ name: "START" control [ {{ kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] }} ] }},
    {{ name: "END" control [ {{ kind: CONTROL_SEQUENCE_END fp32_false_true: [0, 1] }} ] }},
    {{ name: "READY" control [
      {{ kind: CONTROL_SEQUENCE_READY bool_false_true: [false, true] }} ] }},
    {{ name: "CORRID" control [ {{ kind: CONTROL_SEQUENCE_CORRID data_type: {corrid} }} ] }}
  ]"""

STATE = """
  state [ {{ input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_INT32 dims: [1]
            {initial} }} ]"""


def accumulator_config(name: str, max_batch_size: int, strategy: str = "direct { }", *,
                       count: int = 1, idle_us: int = 5_000_000, key: str = "slot",
                       controls: str = CONTROLS.format(corrid="TYPE_UINT64"),
                       delay_ms: int = 0, dims: str = "[1]") -> str:
    return f"""
name: "{name}"
backend: "python"
max_batch_size: {max_batch_size}
sequence_batching {{
  max_sequence_idle_microseconds: {idle_us}
  {strategy}
  {controls}
}}
input [ {{ name: "INPUT" data_type: TYPE_INT32 dims: {dims} }} ]
output [ {{ name: "OUTPUT" data_type: TYPE_INT32 dims: {dims} }},
         {{ name: "INFO" data_type: TYPE_STRING dims: [1] }} ]
instance_group [ {{ count: {count} kind: KIND_CPU }} ]
parameters {{ key: "key" value: {{ string_value: "{key}" }} }}
parameters {{ key: "delay_ms" value: {{ string_value: "{delay_ms}" }} }}
"""


def add_accumulator(repo: Path, name: str, config: str) -> None:
    write_model(repo, name, config, files={"1/model.py": ACCUMULATOR})


def sequence_repository(repo: Path) -> Path:
    """Every model the sequence tests use, written into `repo`."""
    # Two instances of two slots each: four sequences run at once, more wait in the backlog.
    add_accumulator(repo, "seq_direct", accumulator_config("seq_direct", 2, count=2))
    # One instance of two slots: the slot positions and the backlog are visible.
    add_accumulator(repo, "seq_direct1", accumulator_config("seq_direct1", 2))
    add_accumulator(repo, "seq_direct_delay", accumulator_config(
        "seq_direct_delay", 2, "direct { max_queue_delay_microseconds: 2000000 "
        "minimum_slot_utilization: 1.0 }"))
    add_accumulator(repo, "seq_string", accumulator_config(
        "seq_string", 0, count=2, controls=CONTROLS.format(corrid="TYPE_STRING")))
    add_accumulator(repo, "seq_oldest", accumulator_config(
        "seq_oldest", 4, "oldest { max_candidate_sequences: 4 "
        "max_queue_delay_microseconds: 200000 preferred_batch_size: [ 4 ] }", key="corrid"))
    # INPUT of variable size: requests of different sizes never share a batch.
    add_accumulator(repo, "seq_direct_var", accumulator_config(
        "seq_direct_var", 2, "direct { max_queue_delay_microseconds: 2000000 "
        "minimum_slot_utilization: 1.0 }", dims="[-1]"))
    add_accumulator(repo, "seq_oldest_var", accumulator_config(
        "seq_oldest_var", 4, "oldest { max_candidate_sequences: 4 "
        "max_queue_delay_microseconds: 500000 preferred_batch_size: [ 4 ] }", key="corrid",
        dims="[-1]"))
    add_accumulator(repo, "seq_single", accumulator_config("seq_single", 0))
    # Long enough that a request sent after a stream's cancellation still finds the first
    # request running (1 s was not, on a loaded machine: the slot had already been released).
    add_accumulator(repo, "seq_slow", accumulator_config("seq_slow", 0, delay_ms=3000))
    add_accumulator(repo, "seq_idle", accumulator_config("seq_idle", 0, idle_us=300_000))
    add_accumulator(repo, "seq_state", accumulator_config(
        "seq_state", 2, controls=STATE.format(
            initial='initial_state { data_type: TYPE_INT32 dims: [1] zero_data: true '
                    'name: "zero" }')))
    add_state_file_model(repo)
    write_model(repo, "bls_to_sequence", """
name: "bls_to_sequence"
backend: "python"
input [ { name: "INPUT" data_type: TYPE_INT32 dims: [1] } ]
output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [1] } ]
parameters { key: "target" value: { string_value: "seq_string" } }
""", files={"1/model.py": (SEQUENCE_MODELS / "bls_forward.py").read_text()})
    write_model(repo, "seq_identity", identity_config(
        "seq_identity", "TYPE_INT32", "[ 1 ]", max_batch_size=0,
        extra="sequence_batching { }"))
    return repo


def add_state_file_model(repo: Path) -> Path:
    """Implicit state starting from initial_state/hundred (raw int32 100)."""
    add_accumulator(repo, "seq_state_file", accumulator_config(
        "seq_state_file", 0, controls=STATE.format(
            initial='initial_state { data_type: TYPE_INT32 dims: [1] data_file: "hundred" '
                    'name: "hundred" }')))
    path = repo / "seq_state_file" / "initial_state" / "hundred"
    path.parent.mkdir()
    path.write_bytes(np.array([100], dtype=np.int32).tobytes())
    return path


def value_input(module: Any, value: int, batching: bool) -> Any:
    data = np.array([[value]] if batching else [value], dtype=np.int32)
    tensor = module.InferInput("INPUT", list(data.shape), "INT32")
    tensor.set_data_from_numpy(data)
    return tensor


def infer(client: Any, model: str, value: int, batching: bool = True,
          **kwargs: Any) -> tuple[int, dict[str, Any], Any]:
    """(OUTPUT, INFO, result) of one request; `client` is an http or grpc client."""
    module = grpcclient if isinstance(client, grpcclient.InferenceServerClient) else httpclient
    result = client.infer(model, [value_input(module, value, batching)], **kwargs)
    info = json.loads(result.as_numpy("INFO").reshape(-1)[0])
    return int(result.as_numpy("OUTPUT").reshape(-1)[0]), info, result
