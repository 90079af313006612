"""What the attack tests share: a well-behaved tritonclient (grpc or http) calling infer in a
loop beside an attack, and the server's resident memory sampled around it."""

from __future__ import annotations

import threading
import time
from types import ModuleType

import numpy as np
import tritonclient.grpc as grpcclient

from support.h2_frames import rss_bytes
from support.server_process import ServerProcess

MiB = 1024 * 1024


class GoodClient:
    """A tritonclient calling ModelInfer in a loop on its own thread: every answer checked,
    the slowest call kept."""

    def __init__(self, url: str, module: ModuleType = grpcclient) -> None:
        self.url = url
        self.module = module
        self.calls = 0
        self.failures: list[str] = []
        self.worst = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        data = np.arange(16, dtype=np.float32).reshape(1, 16)
        module = self.module
        timeout = ({"client_timeout": 30} if module is grpcclient else {})
        with module.InferenceServerClient(self.url, **self._options()) as client:
            while not self._stop.is_set():
                tensor = module.InferInput("INPUT0", [1, 16], "FP32")
                tensor.set_data_from_numpy(data)
                start = time.monotonic()
                try:
                    result = client.infer("identity_fp32", [tensor], **timeout)
                    if not np.array_equal(result.as_numpy("OUTPUT0"), data):
                        self.failures.append("wrong answer")
                except Exception as exc:  # noqa: BLE001 - every failure is reported
                    self.failures.append(repr(exc))
                self.worst = max(self.worst, time.monotonic() - start)
                self.calls += 1

    def _options(self) -> dict:
        if self.module is grpcclient:
            return {}
        return {"connection_timeout": 30.0, "network_timeout": 30.0}

    def __enter__(self) -> GoodClient:
        self._thread.start()
        deadline = time.monotonic() + 30
        while self.calls < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        calls = self.calls
        deadline = time.monotonic() + 30
        while self.calls < calls + 3 and time.monotonic() < deadline and not self.failures:
            time.sleep(0.01)  # and it still gets answers after the attack
        self._stop.set()
        self._thread.join(30)


class Measured:
    """The attack's context: the good client beside it and the server's memory around it."""

    def __init__(self, server: ServerProcess, name: str, max_growth: int,
                 module: ModuleType = grpcclient) -> None:
        self.server, self.name, self.max_growth = server, name, max_growth
        self.module = module

    def __enter__(self) -> Measured:
        self.before = rss_bytes(self.server.process.pid)
        self.peak = self.before
        url = self.server.grpc_url if self.module is grpcclient else self.server.http_url
        self.good = GoodClient(url, self.module).__enter__()
        return self

    def sample(self) -> None:
        self.peak = max(self.peak, rss_bytes(self.server.process.pid))

    def __exit__(self, *exc: object) -> None:
        self.sample()
        self.good.__exit__(*exc)
        if exc[0] is not None:
            return
        growth = self.peak - self.before
        print(f"\n{self.name}: RSS {self.before / MiB:.0f} MiB, peak +{growth / MiB:.1f} MiB; "
              f"good client {self.good.calls} calls, slowest {self.good.worst * 1000:.0f} ms, "
              f"{len(self.good.failures)} failed")
        assert self.good.failures == []
        assert growth < self.max_growth, f"{self.name}: memory grew by {growth / MiB:.0f} MiB"
