"""A reload that changes nothing but a serving model's instance groups updates its instances in
place, as Triton's does: the instances asked for again keep serving (not initialized again),
new ones are added, left-over ones finalized, and requests go on throughout. Any other change
(configuration, model files) loads the version anew; an update that fails leaves it serving
as it was.

The Python model writes one line per initialize and finalize into a file, so each test reads
exactly which instances came and went."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from support.models import write_model
from support.server_process import ServerProcess

MODEL = '''
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils

# Beside the model's folder: a file in it would count as a changed model.
EVENTS = os.path.join(os.path.dirname(__file__), "..", "..", "events.txt")
RELEASE = os.path.join(os.path.dirname(__file__), "..", "..", "release")


def note(event):
    with open(EVENTS, "a") as f:
        f.write(event + "\\n")


class TritonPythonModel:
    def initialize(self, args):
        self.name = args["model_instance_name"]
        note("init " + self.name)

    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            if data.size and data.flat[0] < 0:  # held until the test creates RELEASE
                while not os.path.exists(RELEASE):
                    time.sleep(0.01)
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUTPUT0", data)], parameters={"instance": self.name}))
        return responses

    def finalize(self):
        note("fini " + self.name)
'''


def config(groups: str, extra: str = "") -> str:
    return f"""
        name: "counted"
        backend: "python"
        max_batch_size: 0
        input {{ name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] }}
        output {{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }}
        instance_group [ {groups} ]
        {extra}
    """


def cpu(count: int, extra: str = "") -> str:
    return f"{{ count: {count} kind: KIND_CPU {extra} }}"


class Model:
    """The `counted` model's folder and the events its instances wrote."""

    def __init__(self, repo: Path) -> None:
        self.dir = write_model(repo, "counted", config(cpu(2)),
                               files={"1/model.py": MODEL})
        self.events_file = repo / "events.txt"
        self.release_file = repo / "release"
        self.seen = 0

    def configure(self, groups: str, extra: str = "") -> None:
        (self.dir / "config.pbtxt").write_text(config(groups, extra))

    def new_events(self) -> list[str]:
        """The events since the last call, in order."""
        lines = self.events_file.read_text().splitlines() if self.events_file.exists() else []
        new, self.seen = lines[self.seen:], len(lines)
        return new

    def wait_events(self, count: int, timeout: float = 60) -> list[str]:
        """The next `count` events, waiting for them (an instance finalized in the
        background)."""
        deadline = time.monotonic() + timeout
        lines: list[str] = []
        while time.monotonic() < deadline:
            lines = self.events_file.read_text().splitlines()
            if len(lines) >= self.seen + count:
                break
            time.sleep(0.05)
        new, self.seen = lines[self.seen:], len(lines)
        return new


@pytest.fixture()
def model(tmp_path: Path) -> Model:
    return Model(tmp_path)


def serve(tmp_path: Path, *args: str) -> ServerProcess:
    return ServerProcess([tmp_path], "--model-control-mode=explicit", "--load-model=counted",
                         *args)


def infer(client: grpcclient.InferenceServerClient, value: float, **kwargs) -> float:
    tensor = grpcclient.InferInput("INPUT0", [1], "FP32")
    tensor.set_data_from_numpy(np.array([value], np.float32))
    result = client.infer("counted", [tensor], **kwargs).as_numpy("OUTPUT0")
    assert result is not None
    return float(result[0])


def instance_count(client: grpcclient.InferenceServerClient) -> int:
    reported = client.get_model_config("counted", as_json=True)["config"]
    return sum(int(group["count"]) for group in reported["instance_group"])


def test_instances_are_added_and_removed_while_the_others_serve(
        tmp_path: Path, model: Model, grpc_client_of) -> None:
    with serve(tmp_path) as server:
        client = grpc_client_of(server)
        assert sorted(model.new_events()) == ["init counted_0_0", "init counted_0_1"]
        stop = threading.Event()
        answers: list[float] = []
        errors: list[str] = []

        def keep_asking() -> None:
            own = grpcclient.InferenceServerClient(server.grpc_url)
            n = 0
            while not stop.is_set():
                n += 1
                try:
                    answers.append(infer(own, n) - n)
                except InferenceServerException as exc:
                    errors.append(str(exc))
            own.close()

        with ThreadPoolExecutor(2) as pool:
            for _ in range(2):
                pool.submit(keep_asking)
            try:
                model.configure(cpu(3))
                client.load_model("counted")
                assert model.new_events() == ["init counted_0_2"]
                assert instance_count(client) == 3
                model.configure(cpu(1))
                client.load_model("counted")
                assert len(model.new_events()) == 2  # two of the three finalized, at once
                assert instance_count(client) == 1
                model.configure(cpu(1))  # the same groups, written again: nothing changes
                client.load_model("counted")
                assert model.new_events() == []
            finally:
                stop.set()
        assert errors == []
        assert answers and set(answers) == {0.0}
        assert infer(client, 5) == 5
        client.unload_model("counted")
        assert len(model.wait_events(1)) == 1
        assert model.new_events() == []


def test_a_load_request_config_updates_the_instances(
        tmp_path: Path, model: Model, grpc_client_of) -> None:
    with serve(tmp_path) as server:
        client = grpc_client_of(server)
        model.new_events()
        reported = client.get_model_config("counted", as_json=True)["config"]
        reported["instance_group"][0]["count"] = 4
        client.load_model("counted", config=json.dumps(reported))
        assert sorted(model.new_events()) == ["init counted_0_2", "init counted_0_3"]
        assert instance_count(client) == 4


def test_an_update_does_not_wait_for_a_busy_instance(
        tmp_path: Path, model: Model, grpc_client_of) -> None:
    with serve(tmp_path) as server, ThreadPoolExecutor(1) as pool:
        client = grpc_client_of(server)
        model.new_events()
        held = pool.submit(infer, grpc_client_of(server), -1.0)  # runs until `release` exists
        model.configure(cpu(3))
        client.load_model("counted")
        assert model.new_events() == ["init counted_0_2"]
        assert not held.done()
        assert infer(client, 2) == 2  # the free instances serve meanwhile
        model.release_file.touch()
        assert held.result(timeout=60) == -1


def test_a_change_beyond_the_instance_groups_loads_the_model_anew(
        tmp_path: Path, model: Model, grpc_client_of) -> None:
    with serve(tmp_path) as server:
        client = grpc_client_of(server)
        model.new_events()
        model.configure(cpu(2), 'parameters { key: "p" value: { string_value: "1" } }')
        client.load_model("counted")
        events = model.wait_events(4)
        assert sorted(events) == ["fini counted_0_0", "fini counted_0_1",
                                  "init counted_0_0", "init counted_0_1"]
        assert events[:2] in (["init counted_0_0", "init counted_0_1"],
                              ["init counted_0_1", "init counted_0_0"])  # new before old goes


def test_a_changed_model_file_loads_the_model_anew(
        tmp_path: Path, model: Model, grpc_client_of) -> None:
    with serve(tmp_path) as server:
        client = grpc_client_of(server)
        model.new_events()
        model_file = model.dir / "1" / "model.py"
        model_file.write_text(model_file.read_text() + "\n")
        model.configure(cpu(1))
        client.load_model("counted")
        assert sorted(model.wait_events(3)) == [
            "fini counted_0_0", "fini counted_0_1", "init counted_0_0"]


def test_a_failed_update_leaves_the_model_serving_as_it_was(
        tmp_path: Path, model: Model, grpc_client_of) -> None:
    limited = 'rate_limiter { resources [ { name: "R1" count: 2 } ] }'
    model.configure(cpu(1, limited))
    with serve(tmp_path, "--rate-limit=execution_count",
               "--rate-limit-resource=R1:4") as server:
        client = grpc_client_of(server)
        model.new_events()
        model.configure(cpu(2, 'rate_limiter { resources [ { name: "R1" count: 8 } ] }'))
        with pytest.raises(InferenceServerException) as failed:
            client.load_model("counted")
        assert "version 1 is at READY state" in failed.value.message()
        assert 'Resource count for "R1" is limited to 4' in failed.value.message()
        assert model.new_events() == []
        assert client.is_model_ready("counted")
        assert instance_count(client) == 1
        assert infer(client, 3) == 3
        model.configure(cpu(2, limited))
        client.load_model("counted")
        assert model.new_events() == ["init counted_0_1"]


def test_a_removed_instance_finishes_its_sequences_first(
        tmp_path: Path, model: Model, grpc_client_of) -> None:
    sequences = "sequence_batching { max_sequence_idle_microseconds: 60000000 }"
    model.configure(cpu(2), sequences)
    with serve(tmp_path) as server:
        client = grpc_client_of(server)
        model.new_events()
        # The first sequence takes the first instance's slot; the update keeps the last one.
        assert infer(client, 1, sequence_id=7, sequence_start=True) == 1
        model.configure(cpu(1), sequences)
        client.load_model("counted")
        assert model.new_events() == []
        assert infer(client, 2, sequence_id=7) == 2
        assert infer(client, 3, sequence_id=8, sequence_start=True, sequence_end=True) == 3
        assert model.new_events() == []
        assert infer(client, 4, sequence_id=7, sequence_end=True) == 4
        assert model.wait_events(1) == ["fini counted_0_0"]


def test_passive_instances_are_initialized_but_never_scheduled(
        tmp_path: Path, model: Model, grpc_client_of) -> None:
    """Triton creates a passive group's instances but gives the scheduler only the others."""
    model.configure(f'{cpu(1)}, {{ name: "standby" count: 2 kind: KIND_CPU passive: true }}')
    with serve(tmp_path) as server:
        client = grpc_client_of(server)
        assert sorted(model.new_events()) == [
            "init counted_0_0", "init standby_0", "init standby_1"]
        def answered_by(value: float) -> str:
            tensor = grpcclient.InferInput("INPUT0", [1], "FP32")
            tensor.set_data_from_numpy(np.array([value], np.float32))
            result = grpc_client_of(server).infer("counted", [tensor])
            return result.get_response(as_json=True)["parameters"]["instance"]["string_param"]

        with ThreadPoolExecutor(4) as pool:
            assert set(pool.map(answered_by, range(8))) == {"counted_0_0"}
        model.configure(cpu(1))
        client.load_model("counted")  # the passive group goes: finalized at once
        assert sorted(model.new_events()) == ["fini standby_0", "fini standby_1"]
