"""Triton's redis response cache (`--cache-config redis,host=H --cache-config redis,port=P`).

Servers run as processes against fakeredis serving RESP on a real port; the `counter` model
(test_response_cache.py) answers CALLS = how many requests it has executed, so a response from
the cache shows the CALLS of the execution that computed it.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import redis
import tritonclient.http as httpclient
from fakeredis import TcpFakeServer

from support.models import write_model
from support.redis_stub import locked_redis, stalled_redis
from support.server_process import ServerProcess
from test_response_cache import COUNTER, calls, counter_config

PASSWORD = "redis123!"
AUTH = f"--cache-config=redis,password={PASSWORD}"


class FakeRedis:
    """fakeredis on a free local port, requiring PASSWORD."""

    def __init__(self) -> None:
        self.server = TcpFakeServer(("127.0.0.1", 0))
        self.server.fake_server.config[b"requirepass"] = PASSWORD.encode()
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, password=PASSWORD, protocol=2)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def redis_flags(port: int | str, *more: str) -> list[str]:
    return ["--cache-config=redis,host=127.0.0.1", f"--cache-config=redis,port={port}",
            *more]


@pytest.fixture
def fake_redis() -> Iterator[FakeRedis]:
    fake = FakeRedis()
    yield fake
    fake.stop()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    write_model(tmp_path, "counter", counter_config("counter", True),
                files={"1/model.py": COUNTER})
    return tmp_path


def statistics(server: ServerProcess) -> dict:
    client = httpclient.InferenceServerClient(server.http_url)
    return client.get_inference_statistics("counter")["model_stats"][0]


def test_second_identical_request_is_answered_from_redis(repo, fake_redis):
    with ServerProcess([repo], *redis_flags(fake_redis.port, AUTH)) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        data = np.arange(4, dtype=np.float32).reshape(1, 4)
        assert calls(client, "counter", data) == 1
        assert calls(client, "counter", data) == 1  # not executed again
        stats = statistics(server)["inference_stats"]
        assert stats["cache_hit"]["count"] == 1 and stats["cache_miss"]["count"] == 1
        assert stats["compute_infer"]["count"] == 1
        assert server.metric("nv_cache_num_hits_per_model", "counter") == 1
    keys = fake_redis.client().keys("tritium:*")
    assert len(keys) == 1 and fake_redis.client().strlen(keys[0]) > 16


def test_servers_sharing_one_redis_share_its_responses(tmp_path, fake_redis):
    flags = redis_flags(fake_redis.port, AUTH)
    data = np.full((1, 3), 7, np.float32)
    repos = []
    for name in ("a", "b"):
        repos.append(tmp_path / name)
        write_model(repos[-1], "counter", counter_config("counter", True),
                    files={"1/model.py": COUNTER})
    with ServerProcess([repos[0]], *flags) as first, ServerProcess([repos[1]], *flags) as second:
        assert calls(httpclient.InferenceServerClient(first.http_url), "counter", data) == 1
        other = httpclient.InferenceServerClient(second.http_url)
        # The first server's CALLS: the second server's counter never ran.
        assert calls(other, "counter", data) == 1
        assert statistics(second)["execution_count"] == 0
        assert statistics(second)["inference_stats"]["cache_hit"]["count"] == 1


def test_credentials_from_the_environment(repo, fake_redis):
    env = {"TRITONCACHE_REDIS_USERNAME": "default", "TRITONCACHE_REDIS_PASSWORD": PASSWORD}
    with ServerProcess([repo], *redis_flags(fake_redis.port), env=env) as server:
        data = np.ones((1, 2), np.float32)
        client = httpclient.InferenceServerClient(server.http_url)
        assert calls(client, "counter", data) == calls(client, "counter", data) == 1


def test_requests_are_computed_when_redis_goes_away(repo, fake_redis):
    with ServerProcess([repo], *redis_flags(fake_redis.port, AUTH)) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        data = np.zeros((1, 2), np.float32)
        assert calls(client, "counter", data) == calls(client, "counter", data) == 1
        fake_redis.stop()
        # Misses now: computed and answered, the cache's failure only in the log.
        assert calls(client, "counter", data) == 2
        assert calls(client, "counter", data) == 3
        assert statistics(server)["inference_stats"]["success"]["count"] == 4
        server.wait_log("Failed to retrieve key: tritium:")
        server.wait_log("into response cache: Failed to insert key: tritium:")
        assert server.log().count("Failed to retrieve key") == 1  # once per outage


def test_a_redis_that_stops_answering_holds_no_request(repo):
    """Triton's default socket_timeout waits forever; lookups run on the server's event loop
    here, so a stalled redis is given up on (a miss) and the server keeps serving."""
    with stalled_redis() as port, ServerProcess([repo], *redis_flags(port)) as server:
        client = httpclient.InferenceServerClient(server.http_url, network_timeout=120)
        data = np.full((1, 2), 3, np.float32)
        for expected in (1, 2, 3):
            assert calls(client, "counter", data) == expected  # each a miss, computed
        server.wait_log("Failed to retrieve key: tritium:")
        assert client.is_server_live()


def refused_start(repo: Path, *flags: str, env: dict | None = None) -> str:
    process = ServerProcess([repo], *flags, env=env)
    run = subprocess.run(process.command(), env=process.environment(), capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 1
    return run.stderr


MISSING_ADDRESS = (
    "error: creating server: Invalid argument - Failed to initialize RedisCache, didn't specify "
    "address. Must at a minimum specify 'host' and 'port' in the configuration - e.g. "
    "tritonserver --cache-config redis,host=redis --cache-config redis,port=6379 "
    "--model-repository=/models ...\n")


@pytest.mark.parametrize("flags", [
    ["--cache-config=redis,host=127.0.0.1"],
    ["--cache-config=redis,port=6379"],
])
def test_host_and_port_are_required(repo, flags):
    assert refused_start(repo, *flags) == MISSING_ADDRESS


def test_unreachable_redis_stops_the_start(repo):
    # L0_response_cache's port=nonexistent: read as Triton reads it (0), refused.
    assert refused_start(repo, *redis_flags("nonexistent")) == (
        "error: creating server: Internal - Failed to initialize RedisCache: Failed to connect "
        "to Redis: Connection refused\n")


def test_unresolvable_host_stops_the_start(repo):
    stderr = refused_start(repo, "--cache-config=redis,host=nonexistent.invalid",
                           "--cache-config=redis,port=6379")
    assert stderr.startswith("error: creating server: Internal - Failed to initialize "
                             "RedisCache: Failed to connect to Redis: ")
    assert ("Name or service not known" in stderr
            or "Temporary failure in name resolution" in stderr), stderr


@pytest.mark.parametrize("password, reply", [
    ("wrong", "WRONGPASS invalid username-password pair or user is disabled."),
    (None, "NOAUTH Authentication required."),
])
def test_redis_refusing_the_credentials_stops_the_start(repo, password, reply):
    with locked_redis() as port:
        flags = redis_flags(port, *([f"--cache-config=redis,password={password}"]
                                    if password else []))
        assert refused_start(repo, *flags) == (
            f"error: creating server: Internal - Failed to initialize RedisCache: {reply}\n")

