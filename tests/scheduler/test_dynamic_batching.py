"""The dynamic batcher, driven through a real server with tritonclient.

Two kinds of model: the identity backend (with `execute_delay_ms`) and the Python model `probe`
(tests/support/probe_model.py: it reports how many requests shared its execute, and sleeps as long
as its input says). Ordering tests order requests by sending one blocker first and the rest while it
runs; what they assert is the order of completion, never a duration.
"""

from __future__ import annotations

import asyncio
import queue
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from support.models import identity_config, write_model
from support.probe_model import (
    PROBE,
    after_blocker,
    concurrently,
    infer,
    probe_config,
    rows,
)
from support.server_process import ServerProcess
from tritium.frontend.loop_bridge import answer
from tritium.request import InferenceRequest, InferenceResponse
from tritium.server import InferenceServer, ServerOptions
from tritium.tensor import Tensor

# A decoupled model: two responses per request, each saying how many requests shared the execute.
TWICE = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            sender = request.get_response_sender()
            for _ in range(2):
                sender.send(pb_utils.InferenceResponse([
                    pb_utils.Tensor("OUTPUT0", data),
                    pb_utils.Tensor("REQUESTS", np.full((data.shape[0], 1), len(requests),
                                                        np.int32)),
                ]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
'''

TWICE_CONFIG = """
    name: "twice"
    backend: "python"
    max_batch_size: 8
    input { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] }
    output { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }
    output { name: "REQUESTS" data_type: TYPE_INT32 dims: [ 1 ] }
    instance_group { count: 1 kind: KIND_CPU }
    model_transaction_policy { decoupled: true }
    dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 1000000
                       preserve_ordering: true }
    """


def slow_identity(name: str, delay_ms: int, batching: str, max_batch_size: int = 8) -> str:
    return identity_config(name, max_batch_size=max_batch_size, extra=f"""
        parameters {{ key: "execute_delay_ms" value: {{ string_value: "{delay_ms}" }} }}
        instance_group {{ count: 1 kind: KIND_CPU }}
        dynamic_batching {{ {batching} }}
        """)


PROBES = {
    "probe_batch": probe_config("probe_batch", "max_queue_delay_microseconds: 200000"),
    "probe_preferred": probe_config(
        "probe_preferred", "preferred_batch_size: [ 2 ] max_queue_delay_microseconds: 5000000"),
    "probe_ragged": probe_config(
        "probe_ragged", "preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 5000000",
        ragged=True),
    "probe_shapes": probe_config(
        "probe_shapes", "preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 1000000"),
    "probe_priority": probe_config(
        "probe_priority", "priority_levels: 2 default_priority_level: 2", max_batch_size=1),
    "probe_reject": probe_config("probe_reject", """
        default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 200000 }""",
        max_batch_size=1),
    "probe_delay": probe_config("probe_delay", """
        default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 60000000
                               allow_timeout_override: true }""",
        max_batch_size=1),
    "probe_override": probe_config("probe_override", """
        default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 200000
                               allow_timeout_override: true }""",
        max_batch_size=1),
    "probe_no_default_timeout": probe_config("probe_no_default_timeout", """
        default_queue_policy { timeout_action: REJECT allow_timeout_override: true }""",
        max_batch_size=1),
    "probe_queue_full": probe_config(
        "probe_queue_full", "default_queue_policy { max_queue_size: 2 }", max_batch_size=1),
    "probe_ordered": probe_config(
        "probe_ordered", "preserve_ordering: true", max_batch_size=1, instances=2),
    "probe_unordered": probe_config("probe_unordered", "", max_batch_size=1, instances=2),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("batching")
    for name, config in PROBES.items():
        write_model(repo, name, config, files={"1/model.py": PROBE})
    write_model(repo, "twice", TWICE_CONFIG, files={"1/model.py": TWICE})
    write_model(repo, "identity_batched", slow_identity(
        "identity_batched", 50, "max_queue_delay_microseconds: 20000"))
    write_model(repo, "identity_delayed", slow_identity(
        "identity_delayed", 0, "preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 300000"))
    with ServerProcess([repo]) as process:
        yield process


# -- batches form ------------------------------------------------------------------------------


def test_concurrent_requests_share_executes_and_each_gets_its_own_rows(server):
    arrays = [np.full((1, 3), i, np.float32) for i in range(32)]
    outcomes = concurrently(server, "identity_batched", arrays)
    for array, outcome in zip(arrays, outcomes, strict=True):
        assert outcome.error is None, outcome.error
        np.testing.assert_array_equal(outcome.result.as_numpy("OUTPUT0"), array)
    executions = server.metric("nv_inference_exec_count", "identity_batched")
    assert server.metric("nv_inference_count", "identity_batched") == 32
    assert executions < 32  # several requests per execute


def test_python_model_receives_several_requests_in_one_execute(server):
    outcomes = concurrently(server, "probe_batch", [rows(50) for _ in range(12)])
    sizes = [o.column("REQUESTS")[0] for o in outcomes]
    assert max(sizes) > 1
    assert all(size <= 8 for size in sizes)  # max_batch_size


def test_batch_size_counts_rows_not_requests(server):
    # Three requests of 3 rows cannot share an execute of max_batch_size 8 all together.
    outcomes = concurrently(server, "probe_batch", [rows(50, 50, 50) for _ in range(3)])
    assert all(o.column("REQUESTS")[0] <= 2 for o in outcomes)


def test_preferred_batch_size_is_sent_without_waiting_for_the_delay(server):
    outcomes = concurrently(server, "probe_preferred", [rows(0) for _ in range(4)])
    assert [o.column("REQUESTS")[0] for o in outcomes] == [2, 2, 2, 2]
    # The queue delay is 5 s; batches of the preferred size left at once.
    queue_us = server.metric("nv_inference_queue_duration_us", "probe_preferred")
    assert queue_us / 4 < 2_000_000


def test_a_lone_request_waits_the_queue_delay_and_no_longer(server):
    outcome = infer(server, "identity_delayed", rows(0))
    assert outcome.error is None
    queue_us = server.metric("nv_inference_queue_duration_us", "identity_delayed")
    # max_queue_delay_microseconds: 300000; the request waited for a fuller batch, then left.
    assert 300_000 <= queue_us < 300_000 + 400_000


def test_requests_of_different_shapes_are_never_batched_together(server):
    # Without the shape check these would fill batches of the preferred size 4 at once.
    arrays = [rows(100, width=3 if i % 2 else 5) for i in range(8)]
    outcomes = concurrently(server, "probe_shapes", arrays)
    assert all(o.column("SHAPES")[0] == 1 for o in outcomes)
    # The same model batches requests of one shape.
    outcomes = concurrently(server, "probe_shapes", [rows(0, width=3) for _ in range(4)])
    assert [o.column("REQUESTS")[0] for o in outcomes] == [4, 4, 4, 4]


def test_ragged_inputs_batch_across_shapes(server):
    arrays = [rows(0, width=w) for w in (2, 3, 4, 5)]
    outcomes = concurrently(server, "probe_ragged", arrays)
    for array, outcome in zip(arrays, outcomes, strict=True):
        assert outcome.column("REQUESTS") == [4]
        assert outcome.column("SHAPES") == [4]
        np.testing.assert_array_equal(outcome.result.as_numpy("OUTPUT0"), array)


def test_both_instances_execute_at_once(server):
    # max_batch_size 1 and two instances: two 600 ms executes overlap instead of queueing.
    outcomes = concurrently(server, "probe_unordered", [rows(600), rows(600)])
    first, second = sorted(o.result.as_numpy("DONE")[0, 0] for o in outcomes)
    assert second - first < 0.4


def test_decoupled_model_batches_and_streams_every_response_in_order(server):
    arrived: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(server.grpc_url)
    client.start_stream(callback=lambda result, error: arrived.put((result, error)))
    try:
        for index in range(4):
            tensor = grpcclient.InferInput("INPUT0", [1, 2], "FP32")
            tensor.set_data_from_numpy(np.full((1, 2), index, np.float32))
            client.async_stream_infer("twice", [tensor], request_id=str(index))
        answers = [arrived.get(timeout=30) for _ in range(8)]
    finally:
        client.stop_stream()
        client.close()
    assert [error for _, error in answers] == [None] * 8
    # One execute of the preferred size 4; every response (not only finals) went through the
    # preserve_ordering queue, which keeps the order the instance sent them in.
    assert [int(r.as_numpy("REQUESTS")[0, 0]) for r, _ in answers] == [4] * 8
    assert [r.get_response().id for r, _ in answers] == ["0", "0", "1", "1", "2", "2", "3", "3"]


# -- order, priorities and queue policies ------------------------------------------------------


def test_higher_priority_requests_run_first(server):
    # Each execute takes 100 ms, so the order of completion is the order of execution.
    low = (rows(100), {"priority": 2})
    high = (rows(100), {"priority": 1})
    default = (rows(100), {})  # default_priority_level 2
    blocker, (l1, d1, l2, h) = after_blocker(server, "probe_priority", [low, default, low, high])
    assert blocker.error is None
    assert h.finished < min(l1.finished, d1.finished, l2.finished)
    assert l1.finished < d1.finished < l2.finished  # FIFO within a level


def test_expired_request_is_rejected_with_reject_policy(server):
    blocker, (late,) = after_blocker(server, "probe_reject", [(rows(0), {})],
                                      until_answered=True)
    assert blocker.error is None
    assert late.error is not None
    assert late.error.status() == "503"
    assert "Request timeout expired" in late.error.message()
    # Rejected at its deadline, not when the instance came free.
    assert late.received < blocker.result.as_numpy("DONE")[0, 0]
    assert infer(server, "probe_reject", rows(0)).error is None  # still serving


def test_expired_request_is_delayed_behind_timely_ones(server):
    # allow_timeout_override: the request's 100 ms replaces the policy's longer 60 s.
    expiring = (rows(100), {"timeout": 100_000})
    patient = (rows(100), {})
    blocker, (first, second) = after_blocker(server, "probe_delay", [expiring, patient],
                                             hold=0.5)  # past the 100 ms timeout
    assert blocker.error is None and first.error is None and second.error is None
    assert second.finished < first.finished


def test_a_request_timeout_longer_than_the_policy_does_not_extend_it(server):
    # Triton honours a request's own timeout only when it is shorter than the default (200 ms).
    patient = (rows(0), {"timeout": 60_000_000})
    blocker, (late,) = after_blocker(server, "probe_override", [patient], until_answered=True)
    assert blocker.error is None
    assert late.error is not None and late.error.status() == "503"
    assert "Request timeout expired" in late.error.message()


def test_a_request_timeout_does_not_apply_without_a_policy_timeout(server):
    # No default timeout: a request's own timeout cannot shorten it, so nothing expires.
    hurried = (rows(0), {"timeout": 100_000})
    blocker, (outcome,) = after_blocker(server, "probe_no_default_timeout", [hurried],
                                        hold=0.5)  # well past the request's 100 ms
    assert blocker.error is None
    assert outcome.error is None, outcome.error


LEVELS = 2**64 - 1


def test_priority_levels_cost_nothing_until_used(tmp_path: Path):
    # Triton's L0_model_queue: the most levels a config can ask for, default level 2**32. A
    # level is made by the request that first reaches it; the server runs under an address
    # space cap, so a batcher that built every level up front fails the load instead of
    # eating the machine's memory.
    config = probe_config("probe_levels", f"""
        priority_levels: {LEVELS} default_priority_level: 4294967296
        priority_queue_policy {{ key: 3 value: {{ max_queue_size: 1 }} }}""", max_batch_size=1)
    write_model(tmp_path, "probe_levels", config, files={"1/model.py": PROBE})
    cap = ("prlimit", f"--as={4 * 2**30}", "--")
    with ServerProcess([tmp_path], prefix=cap) as server:
        for _ in range(2):  # again once the levels made by the first round are empty
            # Each execute takes 100 ms, so the order of completion is the order of execution.
            lowest = (rows(100), {"priority": LEVELS})
            default = (rows(100), {})
            explicit_default = (rows(100), {"priority": 4294967296})
            first = (rows(100), {"priority": 1})
            own_policy = (rows(100), {"priority": 3})
            blocker, (low, d1, d2, high, third, refused) = after_blocker(
                server, "probe_levels",
                [lowest, default, explicit_default, first, own_policy, own_policy])
            assert blocker.error is None
            assert refused.error is not None
            assert refused.error.status() == "503"  # level 3's max_queue_size: 1
            outcomes = [low, d1, d2, high, third]
            assert [o.error for o in outcomes] == [None] * 5
            assert sorted(outcomes, key=lambda o: o.finished) == [high, third, d1, d2, low]


def test_full_queue_refuses_with_unavailable(server):
    _, outcomes = after_blocker(server, "probe_queue_full", [(rows(0), {})] * 4)
    refused = [o.error for o in outcomes if o.error is not None]
    assert len(refused) == 2  # max_queue_size: 2, while the blocker runs
    for error in refused:
        assert error.status() == "503"
        assert error.message() == "[request id: <id_unknown>] Exceeds maximum queue size"
    assert [o.error for o in outcomes[:2]] == [None, None]


@pytest.mark.parametrize("model, held", [("probe_ordered", True), ("probe_unordered", False)])
def test_preserve_ordering_holds_later_responses(server, model, held):
    # Two instances: the fast second request finishes first, but with preserve_ordering its
    # response is held until the slow first one's execute has ended.
    with ThreadPoolExecutor(2) as pool:
        slow = pool.submit(infer, server, model, rows(800))
        # The slow one is ahead in the queue (max_batch_size 1: each instance takes one).
        server.wait_pending(model, 1)
        fast = pool.submit(infer, server, model, rows(0))
        slow_outcome, fast_outcome = slow.result(), fast.result()
    slow_done = slow_outcome.result.as_numpy("DONE")[0, 0]
    assert bool(fast_outcome.received >= slow_done) is held


# -- statistics, read in-process (the statistics endpoint reads the same snapshot) -------------


def test_statistics_record_each_batch_once_with_its_size(tmp_path: Path):
    delay = "max_queue_delay_microseconds: 20000"
    write_model(tmp_path, "stats", slow_identity("stats", 50, delay))
    server = InferenceServer(ServerOptions([tmp_path]))
    server.start()
    try:
        async def scenario() -> list[InferenceResponse]:
            requests = [
                InferenceRequest("stats", inputs={"INPUT0": Tensor.from_numpy(
                    "INPUT0", np.full((1, 2), i, np.float32))})
                for i in range(16)
            ]
            return await asyncio.gather(*(answer(server.infer_async, r) for r in requests))

        responses = asyncio.run(scenario())
        assert all(r.error is None for r in responses)
        statistics = server.lifecycle.get("stats").statistics
    finally:
        server.shutdown()  # an instance records its execution after it has responded
    snapshot = statistics.snapshot()
    assert max(snapshot.batch_stats) > 1
    assert sum(size * b.compute_infer.count for size, b in snapshot.batch_stats.items()) == 16
    assert snapshot.execution_count == sum(b.compute_infer.count
                                           for b in snapshot.batch_stats.values())
    assert snapshot.execution_count < 16
    assert snapshot.inference_count == snapshot.success.count == snapshot.queue.count == 16
    # Each execute slept 50 ms, and each request's compute time is its batch's.
    assert snapshot.compute_infer.ns >= 16 * 50_000_000
