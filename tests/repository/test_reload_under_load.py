"""Reloading a model while clients keep sending requests loses none of them: every request
sent gets its correct answer, from the old version (in flight during the swap) or the new."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.models import identity_config, write_model
from support.server_process import ServerProcess


def delay(ms: int) -> str:
    return f'parameters {{ key: "execute_delay_ms" value: {{ string_value: "{ms}" }} }}'


@pytest.fixture()
def server(tmp_path: Path):
    write_model(tmp_path, "busy", identity_config("busy", extra=delay(5)))
    with ServerProcess([tmp_path], "--model-control-mode=explicit", "--load-model=busy") as p:
        yield p


class Counter:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent = 0
        self.answered = 0
        self.errors: list[str] = []

    def add(self, sent: int = 0, answered: int = 0, error: str | None = None) -> None:
        with self.lock:
            self.sent += sent
            self.answered += answered
            if error is not None:
                self.errors.append(error)


def client_loop(client_module: ModuleType, url: str, stop: threading.Event, counter: Counter,
                seed: int) -> None:
    """Infer on `busy` until `stop`, with tritonclient's http or grpc module."""
    client = client_module.InferenceServerClient(url)
    n = 0
    while not stop.is_set():
        data = np.array([[seed, n]], np.float32)
        tensor = client_module.InferInput("INPUT0", [1, 2], "FP32")
        tensor.set_data_from_numpy(data)
        counter.add(sent=1)
        try:
            out = client.infer("busy", [tensor]).as_numpy("OUTPUT0")
        except InferenceServerException as exc:
            counter.add(error=str(exc))
        else:
            if np.array_equal(out, data):
                counter.add(answered=1)
            else:
                counter.add(error=f"wrong answer {out} for {data}")
        n += 1


def test_no_request_is_lost_while_reloading(server: ServerProcess) -> None:
    control = httpclient.InferenceServerClient(server.http_url)
    config = control.get_model_config("busy")
    stop = threading.Event()
    counter = Counter()
    clients = [
        threading.Thread(target=client_loop, args=(httpclient, server.http_url, stop, counter, 1)),
        threading.Thread(target=client_loop, args=(httpclient, server.http_url, stop, counter, 2)),
        threading.Thread(target=client_loop, args=(grpcclient, server.grpc_url, stop, counter, 3)),
        threading.Thread(target=client_loop, args=(grpcclient, server.grpc_url, stop, counter, 4)),
    ]
    for thread in clients:
        thread.start()
    try:
        time.sleep(0.3)
        for batch in (4, 8, 2, 8):
            config["max_batch_size"] = batch
            control.load_model("busy", config=json.dumps(config))
            assert control.get_model_config("busy")["max_batch_size"] == batch
            time.sleep(0.2)
        # A failing reload in the middle of the traffic: the old version keeps answering.
        broken = dict(config, backend="no_such_backend")
        with pytest.raises(InferenceServerException):
            control.load_model("busy", config=json.dumps(broken))
        control.load_model("busy")  # from the repository again
        time.sleep(0.3)
    finally:
        stop.set()
        for thread in clients:
            thread.join(30)
    assert counter.errors == []
    assert counter.sent == counter.answered
    assert counter.answered > 20  # the clients really ran during the reloads


def test_request_in_flight_completes_on_the_version_being_replaced(server: ServerProcess) -> None:
    control = httpclient.InferenceServerClient(server.http_url)
    config = control.get_model_config("busy")
    config["parameters"] = {"execute_delay_ms": {"string_value": "1500"}}
    control.load_model("busy", config=json.dumps(config))
    result: dict = {}

    def slow_request() -> None:
        client = httpclient.InferenceServerClient(server.http_url, network_timeout=30)
        tensor = httpclient.InferInput("INPUT0", [1, 1], "FP32")
        tensor.set_data_from_numpy(np.array([[7]], np.float32))
        try:
            result["out"] = client.infer("busy", [tensor]).as_numpy("OUTPUT0").tolist()
        except InferenceServerException as exc:
            result["error"] = str(exc)

    thread = threading.Thread(target=slow_request)
    thread.start()
    server.wait_pending("busy", 1)  # the slow version holds the request
    config["parameters"] = {"execute_delay_ms": {"string_value": "0"}}
    control.load_model("busy", config=json.dumps(config))
    # The new version serves at once, while the old one still finishes its request.
    assert control.get_model_config("busy")["parameters"]["execute_delay_ms"] == {
        "string_value": "0"}
    thread.join(30)
    assert result == {"out": [[7.0]]}
