"""A soak (slow: `make test-all`): mixed HTTP, gRPC and streaming clients for ten minutes while
a model is reloaded over and over and a stub process is killed every minute.

Every request gets exactly one outcome: its right answer, or (only for requests inside a killed
stub) "Stub process ... is not healthy"; a request that never gets one is lost, a stream
request with more responses than it asked for was answered twice. After warm-up the server's
resident memory may not grow by 5 % or more, nor its file descriptors or its shared-memory
mappings grow at all. SOAK_SECONDS sets the length (600 by default; kills come every tenth).
"""

from __future__ import annotations

import os
import queue
import random
import shutil
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.h2_frames import rss_bytes
from support.models import identity_config, write_model
from support.python_backend_fixtures import REPO, stub_pids
from support.server_process import ServerProcess

pytestmark = pytest.mark.slow

SECONDS = float(os.environ.get("SOAK_SECONDS", "600"))


def _shm_fds(pids: list[int]) -> int:
    """File descriptors of these processes open on shared memory (/dev/shm or memfd)."""
    count = 0
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                count += target.startswith("/dev/shm") or target.startswith("/memfd:")
        except OSError:
            continue
    return count


class Outcomes:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.answered = 0
        self.killed = 0  # failed inside a killed stub
        self.problems: list[str] = []

    def ok(self) -> None:
        with self.lock:
            self.answered += 1

    def error(self, message: str) -> None:
        with self.lock:
            if "is not healthy" in message:
                self.killed += 1
            else:
                self.problems.append(message)


def _add_sub(module, client, rng, outcomes: Outcomes, timeout: dict) -> None:
    a, b = rng.random(4, dtype=np.float32), rng.random(4, dtype=np.float32)
    inputs = [module.InferInput("INPUT0", [4], "FP32"), module.InferInput("INPUT1", [4], "FP32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    try:
        result = client.infer("add_sub", inputs, **timeout)
    except InferenceServerException as exc:
        outcomes.error(exc.message())
        return
    if np.array_equal(result.as_numpy("OUTPUT0"), a + b) and \
            np.array_equal(result.as_numpy("OUTPUT1"), a - b):
        outcomes.ok()
    else:
        outcomes.error("add_sub: wrong answer")


@pytest.mark.timeout(SECONDS + 300)
def test_soak_with_reloads_and_killed_stubs(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for name in ("add_sub", "ticker"):
        shutil.copytree(REPO / name, repo / name)
    write_model(repo, "identity_fp32", identity_config("identity_fp32"))
    outcomes = Outcomes()
    stop = threading.Event()
    server = ServerProcess([repo], "--model-control-mode=explicit", "--load-model=add_sub",
                           "--load-model=ticker", "--load-model=identity_fp32").start()

    def unary(index: int) -> None:
        rng = np.random.default_rng(index)
        http = index % 2 == 0
        module = httpclient if http else grpcclient
        client = module.InferenceServerClient(server.http_url if http else server.grpc_url,
                                              **({"network_timeout": 60} if http else {}))
        timeout = {} if http else {"client_timeout": 60}  # a lost call shows as an error
        try:
            while not stop.is_set():
                _add_sub(module, client, rng, outcomes, timeout)
        finally:
            client.close()

    def streaming() -> None:
        client = grpcclient.InferenceServerClient(server.grpc_url)
        events: queue.Queue = queue.Queue()
        client.start_stream(callback=lambda result, error: events.put((result, error)))
        try:
            number = 0
            while not stop.is_set():
                number += 1
                tensor = grpcclient.InferInput("TICKS", [1], "INT32")
                tensor.set_data_from_numpy(np.array([3], np.int32))
                client.async_stream_infer("ticker", [tensor], request_id=str(number),
                                          enable_empty_final_response=True)
                responses = 0
                while True:
                    try:
                        result, error = events.get(timeout=60)
                    except queue.Empty:
                        outcomes.error(f"stream request {number} lost")
                        return
                    if error is not None:
                        outcomes.error(error.message())
                        break
                    response = result.get_response()
                    if response.id != str(number):
                        outcomes.error(f"a response for {response.id} while waiting {number}")
                        return
                    if response.parameters["triton_final_response"].bool_param:
                        if responses == 3:
                            outcomes.ok()
                        else:
                            outcomes.error(f"stream request {number}: {responses} responses")
                        break
                    responses += 1
                if error is not None:  # the stream ended with the stub: a new stream
                    client.stop_stream()
                    events = queue.Queue()
                    client.start_stream(
                        callback=lambda result, error, q=events: q.put((result, error)))
        finally:
            client.stop_stream()
            client.close()

    def identity_during_reloads() -> None:
        client = grpcclient.InferenceServerClient(server.grpc_url)
        data = np.arange(8, dtype=np.float32).reshape(1, 8)
        try:
            while not stop.is_set():
                tensor = grpcclient.InferInput("INPUT0", [1, 8], "FP32")
                tensor.set_data_from_numpy(data)
                try:
                    result = client.infer("identity_fp32", [tensor], client_timeout=60)
                    if np.array_equal(result.as_numpy("OUTPUT0"), data):
                        outcomes.ok()
                    else:
                        outcomes.error("identity: wrong answer")
                except InferenceServerException as exc:
                    outcomes.error(f"identity during reload: {exc.message()}")
        finally:
            client.close()

    def reloader() -> None:
        client = httpclient.InferenceServerClient(server.http_url, network_timeout=120)
        while not stop.wait(max(1.0, SECONDS / 60)):
            client.load_model("identity_fp32")
        client.close()

    def guarded(body, *args) -> threading.Thread:
        """A client thread whose unexpected exception (e.g. an HTTP call timing out) is a
        problem rather than a client silently gone."""
        def run() -> None:
            try:
                body(*args)
            except Exception as exc:  # every failure is reported
                with outcomes.lock:
                    outcomes.problems.append(f"{body.__name__}: {exc!r}")
        return threading.Thread(target=run)

    threads = [guarded(unary, i) for i in range(4)]
    threads += [guarded(streaming), guarded(identity_during_reloads), guarded(reloader)]
    pid = server.process.pid
    rng = random.Random(5)
    try:
        for thread in threads:
            thread.start()
        start = time.monotonic()
        warm_up = max(10.0, SECONDS / 10)
        time.sleep(warm_up)
        warm_rss, warm_fds = rss_bytes(pid), len(os.listdir(f"/proc/{pid}/fd"))
        warm_shm = _shm_fds([pid, *stub_pids(pid)])
        kills = 0
        next_kill = start + SECONDS / 10
        while time.monotonic() - start < SECONDS:
            time.sleep(0.5)
            if time.monotonic() >= next_kill:
                next_kill += SECONDS / 10
                stubs = stub_pids(pid)
                if stubs:
                    os.kill(rng.choice(stubs), signal.SIGKILL)
                    kills += 1
        stop.set()
        for thread in threads:
            thread.join(120)
        stuck = sum(thread.is_alive() for thread in threads)  # a call never answered
        time.sleep(2)  # the last restart settles
        end_rss, end_fds = rss_bytes(pid), len(os.listdir(f"/proc/{pid}/fd"))
        end_shm = _shm_fds([pid, *stub_pids(pid)])
    finally:
        stop.set()
        server.stop()
    print(f"\nsoak {SECONDS:.0f} s: {outcomes.answered} answered, {outcomes.killed} failed in "
          f"{kills} killed stubs; RSS {warm_rss / 2**20:.1f} -> {end_rss / 2**20:.1f} MiB; "
          f"fds {warm_fds} -> {end_fds}; shm fds {warm_shm} -> {end_shm}")
    assert stuck == 0, f"{stuck} clients still waiting for an answer"
    assert outcomes.problems == [], outcomes.problems[:5]
    assert outcomes.killed <= kills * 6  # at most the clients' requests inside each stub
    assert outcomes.answered > 0
    assert end_rss < warm_rss * 1.05
    assert end_fds <= warm_fds
    assert end_shm <= warm_shm
