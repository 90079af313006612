"""The rate limiter (`--rate-limit execution_count`, instance_group `rate_limiter { ... }`).

Through a real server: the Python model `probe` (tests/support/probe_model.py: sleeps for its
input's first value in ms, reports when its execute ended as DONE) in groups that need
resources; whether executes overlapped is read from those end times (500 ms executes: ended
together or one after the other). The priority rule is checked on the RateLimiter itself.
"""

from __future__ import annotations

import threading
import time

import pytest
import tritonclient.http as httpclient
from tritonclient.grpc import model_config_pb2 as mc

from support.models import write_model
from support.probe_model import PROBE, concurrently, probe_config, rows
from support.server_process import ServerProcess
from tritium.scheduler.rate_limiter import RateLimiter


def limited_config(name: str, instances: int, resources: str, priority: int = 1) -> str:
    config = probe_config(name, "", max_batch_size=1, instances=instances)
    return config.replace(
        f"instance_group {{ count: {instances} kind: KIND_CPU }}",
        f"instance_group {{ count: {instances} kind: KIND_CPU rate_limiter {{ "
        f"resources [ {resources} ] priority: {priority} }} }}",
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("rate_limit")
    models = {
        # Two instances that each need both copies of R1 (its default count: the largest need).
        "exclusive": limited_config("exclusive", 2, '{ name: "R1" count: 2 }'),
        # Three instances needing one R2 each; --rate-limit-resource gives R2 two copies.
        "pair": limited_config("pair", 3, '{ name: "R2" count: 1 }'),
        "needy": limited_config("needy", 1, '{ name: "R2" count: 3 }'),
        "free": probe_config("free", "", max_batch_size=1, instances=2),
    }
    for name, config in models.items():
        write_model(repo, name, config.replace("dynamic_batching {  }", ""),
                    files={"1/model.py": PROBE})
    with ServerProcess([repo], "--rate-limit=execution_count", "--rate-limit-resource=R2:2",
                       "--exit-on-error=false") as process:
        yield process


def end_times(server: ServerProcess, model: str, count: int) -> list[float]:
    outcomes = concurrently(server, model, [rows(500) for _ in range(count)])
    return sorted(float(o.result.as_numpy("DONE")[0, 0]) for o in outcomes)


def test_instances_needing_all_of_a_resource_take_turns(server):
    first, second = end_times(server, "exclusive", 2)
    assert second - first >= 0.45


def test_instances_without_resources_are_not_limited(server):
    first, second = end_times(server, "free", 2)
    assert second - first < 0.4


def test_resource_count_from_the_command_line_bounds_concurrency(server):
    first, second, third = end_times(server, "pair", 3)
    assert second - first < 0.4  # two copies of R2: two executes at once
    assert third - first >= 0.45  # the third waited for one of them


def test_instance_needing_more_than_the_command_line_gives_fails_to_load(server):
    assert not httpclient.InferenceServerClient(server.http_url).is_model_ready("needy")
    expected = ("failed to load 'needy' version 1: Invalid argument: Resource count for \"R2\" "
                "is limited to 2 which will prevent scheduling of one or more model instances, "
                "the minimum required count is 3")
    assert any(expected in message for message in server.log_messages())


def test_priority_two_gets_half_the_turns_of_priority_one():
    limiter = RateLimiter([])
    needs = mc.ModelRateLimiter(resources=[mc.ModelRateLimiter.Resource(name="R", count=1)])
    urgent = limiter.register(0, mc.ModelRateLimiter(resources=needs.resources, priority=1))
    patient = limiter.register(0, mc.ModelRateLimiter(resources=needs.resources, priority=2))
    assert urgent is not None and patient is not None
    turns: list[str] = []
    done = threading.Event()

    def compete(name: str, limits) -> None:
        while not done.is_set():
            limiter.acquire(limits)
            turns.append(name)
            if len(turns) >= 30:
                done.set()
            time.sleep(0.005)  # the other one is waiting by now
            limiter.release(limits)

    threads = [threading.Thread(target=compete, args=("urgent", urgent)),
               threading.Thread(target=compete, args=("patient", patient))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    first30 = turns[:30]
    assert 18 <= first30.count("urgent") <= 22
