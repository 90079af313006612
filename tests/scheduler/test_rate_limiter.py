"""The rate limiter (`--rate-limit execution_count`, instance_group `rate_limiter { ... }`).

Through a real server: the Python model `probe` (tests/support/probe_model.py: sleeps for its
input's first value in ms, reports when its execute ended as DONE) in groups that need
resources; whether executes overlapped is read from those end times (500 ms executes: ended
together or one after the other). The priority rule is checked on the RateLimiter itself.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest
import tritonclient.http as httpclient
from tritonclient.grpc import model_config_pb2 as mc

from support.models import write_model
from support.probe_model import PROBE, after_blocker, concurrently, infer, probe_config, rows
from support.server_process import ServerProcess
from tritium.scheduler.rate_limiter import RateLimiter


def limited_config(name: str, instances: int, resources: str, priority: int = 1) -> str:
    config = probe_config(name, "", max_batch_size=1, instances=instances)
    return config.replace(
        f"instance_group {{ count: {instances} kind: KIND_CPU }}",
        f"instance_group {{ count: {instances} kind: KIND_CPU rate_limiter {{ "
        f"resources [ {resources} ] priority: {priority} }} }}",
    )


def write_models(repo: Path, models: dict[str, str]) -> None:
    for name, config in models.items():
        write_model(repo, name, config.replace("dynamic_batching {  }", ""),
                    files={"1/model.py": PROBE})


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    """No --rate-limit-resource: every resource has as many copies as its largest need."""
    repo = tmp_path_factory.mktemp("rate_limit")
    write_models(repo, {
        # Two instances that each need both copies of R1 (its default count: the largest need).
        "exclusive": limited_config("exclusive", 2, '{ name: "R1" count: 2 }'),
        "free": probe_config("free", "", max_batch_size=1, instances=2),
        # R3 is global for one model and per device for the other: the second to load fails.
        "global_r3": limited_config("global_r3", 1, '{ name: "R3" global: true count: 1 }'),
        "device_r3": limited_config("device_r3", 1, '{ name: "R3" count: 1 }'),
    })
    # Two instances taking turns (R4 has one copy), batching with preferred size 1: a batch
    # forms at once, but the instance waiting for R4 takes it only once R4 is free.
    batched = limited_config("batched", 2, '{ name: "R4" count: 1 }').replace(
        "max_batch_size: 1", "max_batch_size: 4")
    write_model(repo, "batched", batched.replace(
        "dynamic_batching {  }",
        "dynamic_batching { preferred_batch_size: [ 1, 2, 3, 4 ] "
        "max_queue_delay_microseconds: 30000000 }"), files={"1/model.py": PROBE})
    with ServerProcess([repo], "--rate-limit=execution_count", "--exit-on-error=false") as process:
        yield process


@pytest.fixture(scope="module")
def counted(tmp_path_factory: pytest.TempPathFactory):
    """Resources given on the command line: only those exist."""
    repo = tmp_path_factory.mktemp("rate_limit_counted")
    write_models(repo, {
        # Three instances needing one R2 each; --rate-limit-resource gives R2 two copies.
        "pair": limited_config("pair", 3, '{ name: "R2" count: 1 }'),
        "needy": limited_config("needy", 1, '{ name: "R2" count: 3 }'),
        # R1 exists on device 10 only; these instances are on device 0.
        "elsewhere": limited_config("elsewhere", 1, '{ name: "R1" count: 1 }'),
        # Not named on the command line at all.
        "unnamed": limited_config("unnamed", 1, '{ name: "R5" count: 1 }'),
        # A global resource counts what any device's entry of its name gives.
        "global_g": limited_config("global_g", 1, '{ name: "G" global: true count: 2 }'),
        "global_g_needy": limited_config("global_g_needy", 1,
                                         '{ name: "G" global: true count: 3 }'),
    })
    with ServerProcess([repo], "--rate-limit=execution_count", "--rate-limit-resource=R2:2",
                       "--rate-limit-resource=R1:4:10", "--rate-limit-resource=G:2:7",
                       "--exit-on-error=false") as process:
        yield process


def end_times(server: ServerProcess, model: str, count: int) -> list[float]:
    outcomes = concurrently(server, model, [rows(500) for _ in range(count)])
    return sorted(float(o.result.as_numpy("DONE")[0, 0]) for o in outcomes)


def load_failure(server: ServerProcess, model: str) -> str:
    """Why `model` failed to load (the server's log line), after checking it is not ready."""
    assert not httpclient.InferenceServerClient(server.http_url).is_model_ready(model)
    failed = f"failed to load '{model}' version 1: Invalid argument: "
    reasons = [m.split(failed, 1)[1] for m in server.log_messages() if failed in m]
    assert reasons, f"no load failure logged for {model}"
    return reasons[0]


def test_instances_needing_all_of_a_resource_take_turns(server):
    first, second = end_times(server, "exclusive", 2)
    assert second - first >= 0.45


def test_instances_without_resources_are_not_limited(server):
    first, second = end_times(server, "free", 2)
    assert second - first < 0.4


def test_a_resource_is_never_both_global_and_per_device(server):
    client = httpclient.InferenceServerClient(server.http_url)
    loaded = [m for m in ("global_r3", "device_r3") if client.is_model_ready(m)]
    assert len(loaded) == 1
    (refused,) = {"global_r3", "device_r3"} - set(loaded)
    assert load_failure(server, refused) == (
        'Resource "R3" is present as both global and device-specific resource in the model '
        "configuration.")


def test_a_batch_waiting_for_resources_takes_the_requests_queued_meanwhile(server):
    # The blocker holds R4 on one instance; the other instance's batch waits for R4 and, once
    # it is free, runs all three requests queued by then as one batch.
    blocker, outcomes = after_blocker(server, "batched", [(rows(0), {})] * 3)
    assert blocker.error is None
    assert [o.column("REQUESTS") for o in outcomes] == [[3], [3], [3]]


def test_resource_count_from_the_command_line_bounds_concurrency(counted):
    first, second, third = end_times(counted, "pair", 3)
    assert second - first < 0.4  # two copies of R2: two executes at once
    assert third - first >= 0.45  # the third waited for one of them


def test_instance_needing_more_than_the_command_line_gives_fails_to_load(counted):
    assert load_failure(counted, "needy") == (
        'Resource count for "R2" is limited to 2 which will prevent scheduling of one or more '
        "model instances, the minimum required count is 3")


def test_resources_the_command_line_gives_another_device_are_none_here(counted):
    assert load_failure(counted, "elsewhere") == (
        'Resource count for "R1" is limited to 0 which will prevent scheduling of one or more '
        "model instances, the minimum required count is 1")
    assert "is limited to 0" in load_failure(counted, "unnamed")


def test_a_global_resource_counts_any_devices_entry_of_its_name(counted):
    assert infer(counted, "global_g", rows(0)).error is None
    assert load_failure(counted, "global_g_needy") == (
        'Resource count for "G" is limited to 2 which will prevent scheduling of one or more '
        "model instances, the minimum required count is 3")


@pytest.mark.parametrize("resource", ["R", "R:1:0:2"])  # no count; a fourth part
def test_a_malformed_resource_flag_stops_the_server_with_tritons_words(tmp_path, resource):
    process = ServerProcess([tmp_path], "--rate-limit=execution_count",
                            f"--rate-limit-resource={resource}")
    run = subprocess.run(process.command(), env=process.environment(), capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 2
    assert run.stderr.endswith(
        "error: argument --rate-limit-resource: --rate-limit-resource option format is "
        f"'<resource_name>:<count>:<device>' or '<resource_name>:<count>'. Got {resource}\n")


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
