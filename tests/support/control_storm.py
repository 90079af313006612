"""A storm of concurrent model load/unload requests over HTTP and gRPC, with a good client
inferring beside it: what the model-control tests and the measurement share.

The HTTP requests go out on raw sockets (one connection each, all sent before any answer is
read), the gRPC ones as concurrent calls of tritonclient's asyncio client, so a few hundred
requests are truly in flight together from one test process.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import tritonclient.grpc.aio as grpc_aio
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.server_process import ServerProcess


@dataclass
class StormResult:
    """Every answer's status (HTTP status, or "grpc:OK" / "grpc:<code>"), and how long the
    whole storm took to be answered."""

    statuses: list[str] = field(default_factory=list)
    seconds: float = 0.0


async def _http_call(host: str, port: int, model: str, action: str) -> str:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        body = b"{}"
        writer.write(b"POST /v2/repository/models/%s/%s HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
                     % (model.encode(), action.encode(), len(body), body))
        await writer.drain()
        answer = await reader.read()  # the server closes after its answer
        return answer.split(b" ", 2)[1].decode() if answer else "closed"
    finally:
        writer.close()


async def _grpc_call(client: grpc_aio.InferenceServerClient, model: str, action: str) -> str:
    try:
        if action == "load":
            await client.load_model(model, client_timeout=600)
        else:
            await client.unload_model(model, client_timeout=600)
        return "grpc:OK"
    except InferenceServerException as exc:
        return f"grpc:{exc.status()}"


async def _storm(server: ServerProcess, model: str, count: int, seed: int) -> StormResult:
    rng = random.Random(seed)
    host, port = server.http_url.split(":")
    client = grpc_aio.InferenceServerClient(server.grpc_url)
    try:
        calls = []
        for _ in range(count):
            action = rng.choice(["load", "unload"])
            if rng.random() < 0.5:
                calls.append(_http_call(host, int(port), model, action))
            else:
                calls.append(_grpc_call(client, model, action))
        start = time.monotonic()
        statuses = await asyncio.gather(*calls)
        return StormResult(list(statuses), time.monotonic() - start)
    finally:
        await client.close()


def storm(server: ServerProcess, model: str, count: int, seed: int = 0) -> StormResult:
    """`count` load/unload requests of `model`, half over HTTP and half over gRPC, all sent at
    once; returns when every one is answered."""
    return asyncio.run(_storm(server, model, count, seed))


class GoodClient:
    """A tritonclient (HTTP) inferring in a loop on each of `models` in turn, on its own thread:
    what each call answered (`errors` keyed by model) and the slowest call."""

    def __init__(self, server: ServerProcess, models: list[str], timeout: float) -> None:
        self.url = server.http_url
        self.models = models
        self.timeout = timeout
        self.calls = 0
        self.ok: dict[str, int] = {m: 0 for m in models}
        self.errors: dict[str, list[str]] = {m: [] for m in models}
        self.worst = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        data = np.arange(4, dtype=np.float32).reshape(1, 4)
        with httpclient.InferenceServerClient(self.url, connection_timeout=self.timeout,
                                              network_timeout=self.timeout) as client:
            while not self._stop.is_set():
                for model in self.models:
                    tensor = httpclient.InferInput("INPUT0", [1, 4], "FP32")
                    tensor.set_data_from_numpy(data)
                    start = time.monotonic()
                    try:
                        result = client.infer(model, [tensor])
                        assert np.array_equal(result.as_numpy("OUTPUT0"), data)
                        self.ok[model] += 1
                    except InferenceServerException as exc:
                        self.errors[model].append(str(exc))
                    except Exception as exc:  # noqa: BLE001 - a timeout or a broken answer
                        self.errors[model].append(repr(exc))
                    self.worst = max(self.worst, time.monotonic() - start)
                    self.calls += 1

    def __enter__(self) -> GoodClient:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(self.timeout + 30)


def describe(result: StormResult, good: GoodClient) -> str:
    counts: dict[str, int] = {}
    for status in result.statuses:
        counts[status] = counts.get(status, 0) + 1
    return json.dumps({"storm_s": round(result.seconds, 2), "answers": counts,
                       "good_calls": good.calls, "good_ok": good.ok,
                       "good_worst_s": round(good.worst, 3),
                       "good_errors": {m: e[:3] for m, e in good.errors.items()}})
