"""Triton's testing hook TRITONSERVER_DELAY_SCHEDULER=N: a batcher forms no batch until N
requests are queued, so that Triton's QA tests (L0_batcher, L0_sequence_batcher,
L0_dyna_sequence_batcher, L0_rate_limiter...) get the batches they expect however the requests
arrive. Requests are sent one at a time, well apart: only the hook makes them share a batch.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient

from support.models import write_model
from support.probe_model import PROBE, infer, probe_config, rows
from support.sequence_models import accumulator_config, add_accumulator
from support.server_process import ServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo: Path = tmp_path_factory.mktemp("delay_hook")
    # No queue delay: without the hook, each request runs as soon as it arrives.
    write_model(repo, "probe_now", probe_config("probe_now", ""), files={"1/model.py": PROBE})
    add_accumulator(repo, "seq_pair", accumulator_config("seq_pair", 2))
    with ServerProcess([repo], env={"TRITONSERVER_DELAY_SCHEDULER": "3"}) as process:
        yield process


def _staggered(calls: list) -> list:
    """Run each call in a thread of its own, 0.2 s apart; their results in order."""
    results: list = [None] * len(calls)

    def run(index: int) -> None:
        results[index] = calls[index]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
        time.sleep(0.2)
    for thread in threads:
        thread.join(60)
    return results


def test_the_dynamic_batcher_waits_for_that_many_requests(server):
    outcomes = _staggered([lambda: infer(server, "probe_now", rows(0)) for _ in range(3)])
    assert [o.column("REQUESTS")[0] for o in outcomes] == [3, 3, 3]
    # Only the first batch is held back: then each request runs at once.
    assert infer(server, "probe_now", rows(0)).column("REQUESTS")[0] == 1


def test_the_sequence_batcher_waits_for_that_many_requests(server):
    def step(sequence_id: int, start: bool, end: bool):
        def call():
            with httpclient.InferenceServerClient(server.http_url) as client:
                tensor = httpclient.InferInput("INPUT", [1, 1], "INT32")
                tensor.set_data_from_numpy(np.array([[sequence_id]], np.int32))
                result = client.infer("seq_pair", [tensor], sequence_id=sequence_id,
                                      sequence_start=start, sequence_end=end)
                return json.loads(result.as_numpy("INFO").reshape(-1)[0])
        return call

    # Three requests queued before the first batch: sequence 1 in slot 0 (two requests, in
    # order), sequence 2 in slot 1; the first batch holds both slots.
    first, second, other = _staggered([step(1, True, False), step(1, False, True),
                                       step(2, True, True)])
    assert (first["batch"], first["position"]) == (2, 0)
    assert (other["batch"], other["position"]) == (2, 1)
    assert second["position"] == 0
