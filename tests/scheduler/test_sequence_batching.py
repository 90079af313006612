"""The sequence batcher, end to end: a real server, Python accumulator models, tritonclient.

The models (tests/support/sequence_models.py, tests/support/python_models/sequence/accumulator.py)
sum INPUT over a sequence, per batch position (direct) or per correlation id (oldest), and report
in INFO what they saw: correlation id, flags, control inputs, batch size and instance. The expected
values and messages are those the reference Triton 2.51 gave for the same models and requests.
"""

from __future__ import annotations

import asyncio
import json
import queue
import random
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpcaio
import tritonclient.http as httpclient
import tritonclient.http.aio as httpaio
from tritonclient.utils import InferenceServerException

from support.models import identity_config, write_model
from support.sequence_models import STATE, infer, sequence_repository, value_input
from support.server_process import ServerProcess


@pytest.fixture(scope="module")
def seq_server(tmp_path_factory: pytest.TempPathFactory):
    with ServerProcess([sequence_repository(tmp_path_factory.mktemp("sequence_repo"))]) as process:
        yield process


# -- helpers ------------------------------------------------------------------------------------


def error_of(call: Any) -> InferenceServerException:
    with pytest.raises(InferenceServerException) as caught:
        call()
    return caught.value


@pytest.fixture
def http(seq_server):
    with httpclient.InferenceServerClient(seq_server.http_url, concurrency=4) as client:
        yield client


@pytest.fixture
def grpc(seq_server):
    with grpcclient.InferenceServerClient(seq_server.grpc_url) as client:
        yield client


# -- routing --------------------------------------------------------------------------------------


def test_sequences_never_mix_under_concurrent_http_and_grpc_clients(seq_server):
    """Eight sequences on four slots, interleaved from http and grpc threads: each sees its own
    running sum, its own correlation id and always the same instance."""
    failures: list[str] = []

    def run(sequence_id: int) -> None:
        use_grpc = sequence_id % 2 == 0
        client = (grpcclient.InferenceServerClient(seq_server.grpc_url) if use_grpc
                  else httpclient.InferenceServerClient(seq_server.http_url))
        rng = random.Random(sequence_id)
        values = [rng.randint(1, 100) for _ in range(6)]
        expected, instances = 0, set()
        try:
            for step, value in enumerate(values):
                expected += value
                total, info, _ = infer(
                    client, "seq_direct", value, sequence_id=sequence_id,
                    sequence_start=step == 0, sequence_end=step == len(values) - 1)
                instances.add(info["instance"])
                if total != expected or info["corrid"] != sequence_id:
                    failures.append(f"{sequence_id} step {step}: {total} != {expected}, {info}")
                time.sleep(rng.random() * 0.02)
            if len(instances) != 1:
                failures.append(f"sequence {sequence_id} moved between {instances}")
        except InferenceServerException as exc:
            failures.append(f"{sequence_id}: {exc}")
        finally:
            client.close()

    threads = [threading.Thread(target=run, args=(1000 + i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures, failures


def test_aio_clients_interleave_sequences(seq_server):
    """Asyncio clients (http.aio and grpc.aio) step four sequences in lockstep."""

    async def step(client: Any, module: Any, sequence_id: int, index: int) -> int:
        result = await client.infer("seq_direct", [value_input(module, sequence_id, True)],
                                    sequence_id=sequence_id, sequence_start=index == 0,
                                    sequence_end=index == 2)
        return int(result.as_numpy("OUTPUT").reshape(-1)[0])

    async def main() -> list[list[int]]:
        http_aio = httpaio.InferenceServerClient(seq_server.http_url)
        grpc_aio = grpcaio.InferenceServerClient(seq_server.grpc_url)
        clients = [(http_aio, httpclient), (grpc_aio, grpcclient)]
        try:
            totals = []
            for index in range(3):
                totals.append(await asyncio.gather(*(
                    step(*clients[n % 2], 2000 + n, index) for n in range(4))))
            return totals
        finally:
            await http_aio.close()
            await grpc_aio.close()

    totals = asyncio.run(main())
    assert totals == [[(2000 + n) * k for n in range(4)] for k in (1, 2, 3)]


def test_control_inputs_carry_start_end_ready_and_corrid(http):
    seen = [infer(http, "seq_direct1", v, sequence_id=77, sequence_start=s, sequence_end=e)[1]
            for v, s, e in ((1, True, False), (2, False, False), (3, False, True))]
    assert [i["flags"] for i in seen] == [1, 0, 2]
    assert [i["controls"] for i in seen] == [
        {"START": 1, "END": 0.0, "READY": True, "CORRID": 77},
        {"START": 0, "END": 0.0, "READY": True, "CORRID": 77},
        {"START": 0, "END": 1.0, "READY": True, "CORRID": 77},
    ]
    _, info, _ = infer(http, "seq_direct1", 5, sequence_id=78, sequence_start=True,
                       sequence_end=True)
    assert info["flags"] == 3
    assert info["controls"] == {"START": 1, "END": 1.0, "READY": True, "CORRID": 78}


def test_direct_keeps_slot_positions_and_backlogs_extra_sequences(http, seq_server):
    """Two slots on one instance: the second sequence runs at batch position 1 (a null request
    fills position 0), a third waits in the backlog until the first ends, then takes slot 0."""
    total, info, _ = infer(http, "seq_direct1", 1, sequence_id=101, sequence_start=True)
    assert (total, info["position"], info["batch"]) == (1, 0, 1)
    total, info, _ = infer(http, "seq_direct1", 10, sequence_id=102, sequence_start=True)
    assert (total, info["position"], info["batch"]) == (10, 1, 2)

    backlogged: dict[str, Any] = {}

    def third() -> None:
        with httpclient.InferenceServerClient(seq_server.http_url) as client:
            backlogged["result"] = infer(client, "seq_direct1", 100, sequence_id=103,
                                         sequence_start=True)

    thread = threading.Thread(target=third)
    thread.start()
    thread.join(0.5)
    assert "result" not in backlogged, "the third sequence must wait for a free slot"
    assert infer(http, "seq_direct1", 2, sequence_id=101)[0] == 3
    assert infer(http, "seq_direct1", 3, sequence_id=101, sequence_end=True)[0] == 6
    thread.join(10)
    total, info, _ = backlogged["result"]
    assert (total, info["position"], info["corrid"]) == (100, 0, 103)
    assert infer(http, "seq_direct1", 20, sequence_id=102, sequence_end=True)[0] == 30
    assert infer(http, "seq_direct1", 200, sequence_id=103, sequence_end=True)[0] == 300


def test_direct_queue_delay_waits_for_slot_utilization(seq_server):
    """minimum_slot_utilization 1.0 with a 2 s delay: the first request waits for the second
    sequence's, and both run as one batch at their slot positions."""
    seen: dict[int, tuple[int, dict[str, Any]]] = {}

    def run(sequence_id: int) -> None:
        with httpclient.InferenceServerClient(seq_server.http_url) as client:
            total, info, _ = infer(client, "seq_direct_delay", sequence_id,
                                   sequence_id=sequence_id, sequence_start=True,
                                   sequence_end=True)
            seen[sequence_id] = (total, info)

    started = time.monotonic()
    threads = [threading.Thread(target=run, args=(s,)) for s in (31, 32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert time.monotonic() - started < 1.9, "a full batch must not wait for the delay"
    assert {s: (total, info["batch"]) for s, (total, info) in seen.items()} == {
        31: (31, 2), 32: (32, 2)}
    assert sorted(info["position"] for _, info in seen.values()) == [0, 1]


def test_start_on_an_active_sequence_starts_it_over(http):
    assert infer(http, "seq_direct1", 3, sequence_id=5, sequence_start=True)[0] == 3
    assert infer(http, "seq_direct1", 4, sequence_id=5)[0] == 7
    # Triton warns and goes on in the same slot: the old sequence just ended early.
    assert infer(http, "seq_direct1", 10, sequence_id=5, sequence_start=True)[0] == 10
    assert infer(http, "seq_direct1", 4, sequence_id=5, sequence_end=True)[0] == 14


def test_string_sequence_ids_over_http_and_grpc(http, grpc):
    total, info, _ = infer(http, "seq_string", 2, False, sequence_id="abc", sequence_start=True)
    assert (total, info["corrid"], info["controls"]["CORRID"]) == (2, "abc", "abc")
    # "abc" and a numeric id are different sequences, even on the same model.
    infer(http, "seq_string", 7, False, sequence_id=42, sequence_start=True, sequence_end=True)
    total, info, _ = infer(grpc, "seq_string", 3, False, sequence_id="abc", sequence_end=True)
    assert (total, info["corrid"], info["flags"]) == (5, "abc", 2)
    _, info, _ = infer(grpc, "seq_string", 1, False, sequence_id=42, sequence_start=True,
                       sequence_end=True)
    assert info["controls"]["CORRID"] == "42"


def test_grpc_int64_sequence_id_is_read_as_uint64(grpc):
    _, info, _ = infer(grpc, "seq_direct1", 2, sequence_id=-3, sequence_start=True,
                       sequence_end=True)
    assert info["corrid"] == info["controls"]["CORRID"] == 2**64 - 3


# -- errors ---------------------------------------------------------------------------------------


def test_request_without_sequence_id_is_refused(http, grpc):
    message = ("inference request to model 'seq_direct1' must specify a non-zero or non-empty "
               "correlation ID")
    exc = error_of(lambda: infer(http, "seq_direct1", 1))
    assert (exc.status(), exc.message()) == ("400", message)
    exc = error_of(lambda: infer(grpc, "seq_direct1", 1))
    assert (exc.status(), exc.message()) == ("StatusCode.INVALID_ARGUMENT", message)
    exc = error_of(lambda: infer(http, "seq_string", 1, False, sequence_id=""))
    assert exc.message() == message.replace("seq_direct1", "seq_string")


def test_sequence_never_started_is_refused(http, grpc):
    exc = error_of(lambda: infer(http, "seq_direct1", 1, sequence_id=4242))
    assert (exc.status(), exc.message()) == ("400", (
        "inference request for sequence 4242 to model 'seq_direct1' must specify the START "
        "flag on the first request of the sequence"))
    exc = error_of(lambda: infer(grpc, "seq_string", 1, False, sequence_id="nope"))
    assert (exc.status(), exc.message()) == ("StatusCode.INVALID_ARGUMENT", (
        "inference request for sequence nope to model 'seq_string' must specify the START "
        "flag on the first request of the sequence"))
    # After END the id is unknown again.
    infer(http, "seq_direct1", 1, sequence_id=4243, sequence_start=True, sequence_end=True)
    exc = error_of(lambda: infer(http, "seq_direct1", 1, sequence_id=4243))
    assert "must specify the START flag" in exc.message()


def test_batch_of_two_is_refused(http):
    data = np.array([[1], [2]], dtype=np.int32)
    tensor = httpclient.InferInput("INPUT", [2, 1], "INT32")
    tensor.set_data_from_numpy(data)
    exc = error_of(lambda: http.infer("seq_direct1", [tensor], sequence_id=8,
                                      sequence_start=True))
    assert (exc.status(), exc.message()) == ("400", (
        "inference request to model 'seq_direct1' must specify batch-size 1 due to "
        "requirements of sequence batcher"))
    # Refused requests leave no trace: the model still serves and unloads cleanly.
    assert infer(http, "seq_direct1", 4, sequence_id=8, sequence_start=True,
                 sequence_end=True)[0] == 4


# -- idle release, oldest, implicit state -------------------------------------------------------


def test_idle_sequence_releases_its_slot(http, seq_server):
    """seq_idle has one slot and max_sequence_idle_microseconds 300000: an abandoned sequence
    gives its slot to a backlogged one, and is unknown afterwards."""
    assert infer(http, "seq_idle", 5, False, sequence_id=7, sequence_start=True)[0] == 5
    started = time.monotonic()
    # Backlogged behind sequence 7 until the reaper releases it.
    total, info, _ = infer(http, "seq_idle", 9, False, sequence_id=8, sequence_start=True,
                           sequence_end=True)
    assert (total, info["corrid"]) == (9, 8)
    assert time.monotonic() - started >= 0.2
    exc = error_of(lambda: infer(http, "seq_idle", 5, False, sequence_id=7))
    assert exc.message() == (
        "inference request for sequence 7 to model 'seq_idle' must specify the START flag on "
        "the first request of the sequence")


def test_backlogged_sequence_expires_after_its_request_timeout(http):
    """seq_single has one slot: a sequence waiting for it with a request timeout of 300 ms is
    rejected with UNAVAILABLE, and forgotten."""
    assert infer(http, "seq_single", 1, False, sequence_id=1, sequence_start=True)[0] == 1
    exc = error_of(lambda: infer(http, "seq_single", 2, False, sequence_id=2,
                                 sequence_start=True, timeout=300_000))
    assert (exc.status(), exc.message()) == (
        "503", "timeout of the corresponding sequence has been expired")
    exc = error_of(lambda: infer(http, "seq_single", 2, False, sequence_id=2))
    assert "must specify the START flag" in exc.message()
    assert infer(http, "seq_single", 1, False, sequence_id=1, sequence_end=True)[0] == 2
    assert infer(http, "seq_single", 5, False, sequence_id=3, sequence_start=True,
                 sequence_end=True, timeout=300_000)[0] == 5


def test_cancelled_request_ends_its_sequence(grpc, seq_server):
    """A request cancelled while it waits (its stream went away) ends its sequence, as in
    Triton: the sequence's later requests are refused, the slot serves the next sequence."""
    received: list[Any] = []
    grpc.start_stream(callback=lambda result, error: received.append((result, error)))
    for step in range(3):
        grpc.async_stream_infer("seq_slow", [value_input(grpcclient, 1, False)],
                                sequence_id=61, sequence_start=step == 0)
    seq_server.wait_pending("seq_slow", 3)  # the first runs (3 s), the others wait in the slot
    with grpcclient.InferenceServerClient(seq_server.grpc_url) as other:
        # Another client's request of the sequence, queued behind the ones about to be
        # cancelled (sent before the cancellation: sent after it, it could find the sequence
        # already gone on a loaded machine): it goes down with its sequence.
        answers: queue.Queue = queue.Queue()
        other.async_infer("seq_slow", [value_input(grpcclient, 1, False)],
                          callback=lambda result, error: answers.put(error), sequence_id=61)
        seq_server.wait_pending("seq_slow", 4)
        grpc.stop_stream(cancel_requests=True)
        exc = answers.get(timeout=60)
        assert exc is not None
        assert (exc.status(), exc.message()) == (
            "StatusCode.CANCELLED", "a request of the sequence was cancelled")
        # The slot is free again once the running request finished and the cancelled ones
        # were dropped: a new sequence gets it.
        assert infer(other, "seq_slow", 7, False, sequence_id=62, sequence_start=True,
                     sequence_end=True)[0] == 7
        exc = error_of(lambda: infer(other, "seq_slow", 1, False, sequence_id=61))
    assert "must specify the START flag" in exc.message()


def test_oldest_batches_requests_of_different_sequences(seq_server):
    results: dict[int, list[tuple[int, int]]] = {}

    def run(sequence_id: int) -> None:
        with httpclient.InferenceServerClient(seq_server.http_url) as client:
            steps = []
            for step in range(4):
                total, info, _ = infer(client, "seq_oldest", sequence_id, sequence_id=sequence_id,
                                       sequence_start=step == 0, sequence_end=step == 3)
                steps.append((total, info["batch"]))
            results[sequence_id] = steps

    threads = [threading.Thread(target=run, args=(s,)) for s in (1, 2, 3, 4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    for sequence_id, steps in results.items():
        assert [t for t, _ in steps] == [sequence_id * k for k in (1, 2, 3, 4)]
    assert len(results) == 4
    assert max(batch for steps in results.values() for _, batch in steps) > 1


def test_implicit_state_is_kept_per_sequence(http, grpc):
    assert infer(http, "seq_state", 1, sequence_id=1, sequence_start=True)[0] == 1
    assert infer(grpc, "seq_state", 100, sequence_id=2, sequence_start=True)[0] == 100
    total, _, result = infer(http, "seq_state", 2, sequence_id=1)
    assert total == 3
    # The state output is the server's, not a model output the client may ask for.
    assert result.as_numpy("STATE_OUT") is None
    outputs = [httpclient.InferRequestedOutput(n) for n in ("OUTPUT", "INFO", "STATE_OUT")]
    exc = error_of(lambda: infer(http, "seq_state", 200, sequence_id=2, outputs=outputs))
    assert exc.message() == "unexpected inference output 'STATE_OUT' for model 'seq_state'"
    assert infer(http, "seq_state", 200, sequence_id=2, outputs=outputs[:2])[0] == 300
    assert infer(http, "seq_state", 3, sequence_id=1, sequence_end=True)[0] == 6
    assert infer(grpc, "seq_state", 1, sequence_id=2, sequence_end=True)[0] == 301
    # A new sequence starts from the initial state again.
    assert infer(http, "seq_state", 4, sequence_id=1, sequence_start=True,
                 sequence_end=True)[0] == 4


def test_implicit_state_starts_from_data_file(http):
    assert infer(http, "seq_state_file", 1, False, sequence_id=3, sequence_start=True)[0] == 101
    assert infer(http, "seq_state_file", 1, False, sequence_id=3, sequence_end=True)[0] == 102


# -- streaming, identity backend, metadata ------------------------------------------------------


def test_grpc_stream_carries_sequences(grpc):
    received: list[Any] = []
    done = threading.Condition()

    def callback(result: Any, error: Any) -> None:
        with done:
            received.append(error if error is not None else result)
            done.notify_all()

    grpc.start_stream(callback=callback)
    try:
        for step in range(3):
            for sequence_id in ("stream-a", "stream-b"):
                value = 1 if sequence_id == "stream-a" else 10
                grpc.async_stream_infer(
                    "seq_string", [value_input(grpcclient, value, False)],
                    request_id=f"{sequence_id}-{step}", sequence_id=sequence_id,
                    sequence_start=step == 0, sequence_end=step == 2)
        with done:
            assert done.wait_for(lambda: len(received) >= 6, 30), received
    finally:
        grpc.stop_stream()
    by_id = {}
    for result in received:
        assert not isinstance(result, InferenceServerException), result
        by_id[result.get_response().id] = int(result.as_numpy("OUTPUT")[0])
    assert by_id == {"stream-a-0": 1, "stream-a-1": 2, "stream-a-2": 3,
                     "stream-b-0": 10, "stream-b-1": 20, "stream-b-2": 30}


def test_bls_requests_carry_sequence_id_and_flags(http):
    """A Python model calling a sequence model with pb_utils.InferenceRequest(correlation_id=,
    flags=) drives the sequence like a client would, errors included."""
    for step, expected in enumerate((4, 8, 12)):
        result = http.infer("bls_to_sequence", [value_input(httpclient, 4, False)],
                            sequence_id="bls-1", sequence_start=step == 0,
                            sequence_end=step == 2)
        assert result.as_numpy("OUTPUT").tolist() == [expected]
    exc = error_of(lambda: http.infer("bls_to_sequence", [value_input(httpclient, 4, False)],
                                      sequence_id="bls-1"))
    assert "inference request for sequence bls-1 to model 'seq_string' must specify the " \
        "START flag" in exc.message()


def test_identity_backend_serves_a_sequence(http):
    data = np.array([6], dtype=np.int32)
    tensor = httpclient.InferInput("INPUT0", [1], "INT32")
    tensor.set_data_from_numpy(data)
    result = http.infer("seq_identity", [tensor], sequence_id=9, sequence_start=True)
    assert result.as_numpy("OUTPUT0").tolist() == [6]
    result = http.infer("seq_identity", [tensor], sequence_id=9, sequence_end=True)
    assert result.as_numpy("OUTPUT0").tolist() == [6]


def test_server_metadata_lists_the_sequence_extension(http):
    assert "sequence" in http.get_server_metadata()["extensions"]


def test_bad_initial_state_fails_the_model_load_with_tritons_message(tmp_path: Path):
    def state_model(name: str, initial: str, files: dict[str, str] | None = None) -> None:
        write_model(tmp_path, name, identity_config(
            name, "TYPE_INT32", "[ 1 ]", max_batch_size=0, extra="sequence_batching { "
            + STATE.format(initial=f"initial_state {{ {initial} name: \"s\" }}") + " }"),
            files=files)

    state_model("short_file", 'data_type: TYPE_INT32 dims: [1] data_file: "short"',
                {"initial_state/short": "ab"})
    state_model("no_state_data", "data_type: TYPE_INT32 dims: [1]")
    state_model("bad_dims", "data_type: TYPE_INT32 dims: [2] zero_data: true")
    state_model("bad_type", "data_type: TYPE_FP32 dims: [1] zero_data: true")
    state_model("no_file", 'data_type: TYPE_INT32 dims: [1] data_file: "missing"')
    state_model("good", 'data_type: TYPE_INT32 dims: [1] zero_data: true')
    with ServerProcess([tmp_path], "--exit-on-error=false", "--strict-readiness=false") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_model_ready("good")
        for name in ("short_file", "no_state_data", "bad_dims", "bad_type", "no_file"):
            assert not client.is_model_ready(name)
        log = server.log()
    assert ("initial_state setting expects 4 bytes, but the data provided from shortonly has "
            "2 bytes.") in log
    assert "initial_state setting expects state'STATE_IN' to have state_data set" in log
    assert ("'initial_state' dim for input name 'STATE_IN' doesn't match 'state' dim "
            "description. 2 != 1") in log
    assert ("The data type used for 'initial_state' field of state 'STATE_IN' does not match "
            "the state data type.") in log
    assert (f"failed to open text file for read {tmp_path}/no_file/initial_state/missing: "
            "No such file or directory") in log


def _sequences_of_sizes(seq_server, model: str, sizes: list[int]) -> list[dict[str, Any]]:
    """One single-request sequence per size, sent at once: INPUT of shape [1, size]. The
    INFO of each answer."""
    infos: dict[int, dict[str, Any]] = {}

    def run(index: int, size: int) -> None:
        with httpclient.InferenceServerClient(seq_server.http_url) as client:
            tensor = httpclient.InferInput("INPUT", [1, size], "INT32")
            tensor.set_data_from_numpy(np.ones((1, size), np.int32))
            result = client.infer(model, [tensor], sequence_id=700 + index,
                                  sequence_start=True, sequence_end=True)
            infos[index] = json.loads(result.as_numpy("INFO").reshape(-1)[0])

    threads = [threading.Thread(target=run, args=item) for item in enumerate(sizes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(infos) == len(sizes)
    return [infos[index] for index in range(len(sizes))]


@pytest.mark.parametrize("model, sizes", [("seq_direct_var", [2, 3]),
                                          ("seq_oldest_var", [1, 2, 1, 2])])
def test_requests_of_different_shapes_never_share_a_batch(seq_server, model, sizes):
    """As Triton's sequence batcher (enforce_equal_shape_tensors): an input of variable size
    that does not allow ragged batches must have one shape across a batch; under `direct` the
    slot of a request of another shape gets a null request (the request waits), under
    `oldest` the batch ends before it."""
    for info, size in zip(_sequences_of_sizes(seq_server, model, sizes), sizes, strict=True):
        assert {tuple(shape) for shape in info["shapes"]} == {(1, size)}, info
