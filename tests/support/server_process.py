"""Start `tritium serve` as a real process on free loopback ports, for tests and the benchmark."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from support import ROOT, http_clients
from support.log_records import messages

# Below Linux's ephemeral range (32768-60999, where bind(0) and outgoing connections draw)
# and above Ray's worker ports (10002-19999); each pytest-xdist worker draws from its own
# slice, so two workers never hand out the same port between choosing it and the server
# binding it (the CI failure this replaced: a test's HTTP port answered with another
# worker's gRPC server).
_PORTS = range(20000, 32768)
_next_port: int | None = None


def _worker_slice() -> range:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    count = max(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")), index + 1)
    size = len(_PORTS) // count
    start = _PORTS.start + index * size
    return range(start, start + size)


def _is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count: int) -> list[int]:
    """`count` loopback ports nothing listens on, from this worker's own slice, never the
    same twice in one process (a stopped server's port may linger in TIME_WAIT)."""
    global _next_port
    ports = _worker_slice()
    if _next_port is None:  # a fresh start per process: a rerun does not meet the last one's
        _next_port = ports.start + (os.getpid() * 7919) % len(ports)
    chosen: list[int] = []
    for _ in range(len(ports)):
        port = _next_port
        _next_port = port + 1 if port + 1 < ports.stop else ports.start
        if _is_free(port):
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    raise RuntimeError(f"no {count} free loopback ports in {ports}")


# A server stopped by `stop()` first has its tests' HTTP connections closed (http_clients).
http_clients.track()

# The servers' log files: one folder per test process, removed when it exits (a full run
# starts hundreds of servers).
_LOG_DIR = tempfile.TemporaryDirectory(prefix="tritium-server-logs-")


class ServerProcess:
    """One `python -m tritium serve` process; `start()` returns once HTTP answers
    /v2/health/live."""

    def __init__(self, repositories: Sequence[Path | str], *args: str, env: dict | None = None,
                 prefix: Sequence[str] = (), python: str = sys.executable,
                 cwd: Path | None = None):
        self.repositories = [str(r) for r in repositories]
        self.args = list(args)
        self.env = env
        self.cwd = cwd  # the server's working directory (None: the test's)
        # Run the server under another command, e.g. ("taskset", "-c", "0") in the benchmark,
        # and with another interpreter (one with vLLM, which pins its own torch).
        self.prefix = list(prefix)
        self.python = python
        self.http_port, self.grpc_port, self.metrics_port = free_ports(3)
        self.process: subprocess.Popen | None = None
        # Open for the process's whole life; the file stays for `output` after it ends, until
        # this test process exits.
        self._log = tempfile.NamedTemporaryFile(  # noqa: SIM115
            prefix="tritium-", suffix=".log", delete=False, dir=_LOG_DIR.name
        )

    @property
    def http_url(self) -> str:
        return f"127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    def command(self) -> list[str]:
        cmd = [*self.prefix, self.python, "-m", "tritium", "serve"]
        for repo in self.repositories:
            cmd.append(f"--model-repository={repo}")
        cmd += [
            f"--http-port={self.http_port}",
            f"--grpc-port={self.grpc_port}",
            f"--metrics-port={self.metrics_port}",
            "--http-address=127.0.0.1",
            "--grpc-address=127.0.0.1",
            *self.args,
        ]
        return cmd

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
        env.update(self.env or {})
        return env

    def start(self, timeout: float = 180.0, wait_ready: bool = True) -> ServerProcess:
        # Generous: a server that dies is seen at once (wait_live polls the process), and
        # under `make test`'s parallel workers on two cores a healthy start can pass 60 s.
        env = self.environment()
        self.process = subprocess.Popen(
            self.command(), stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=self.cwd
        )
        if wait_ready:
            try:
                self.wait_live(timeout)
            except BaseException:  # a server that never came up must not outlive the test
                self.stop(signal.SIGKILL)
                raise
        return self

    def wait_live(self, timeout: float = 60.0, endpoint: str = "live") -> None:
        deadline = time.monotonic() + timeout
        url = f"http://{self.http_url}/v2/health/{endpoint}"
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(url, timeout=1) as response:
                    if response.status == 200:
                        return
            except (OSError, http.client.HTTPException):
                # not up yet, or not ours (then the process's exit shows next round)
                pass
            time.sleep(0.05)
        raise TimeoutError(f"server did not become live in {timeout}s:\n{self.log()}")

    def wait_exit(self, timeout: float = 30.0) -> int:
        assert self.process is not None
        return self.process.wait(timeout)

    def log(self) -> str:
        return Path(self._log.name).read_text(errors="replace")

    def log_messages(self) -> list[str]:
        """The messages of the server's log records, decoded from Triton's quoted form."""
        return messages(self.log())

    def wait_log(self, text: str, timeout: float = 30.0) -> None:
        """Wait until the server has logged `text` (lines a stub sends travel on their own,
        and may come after the answer a client already has)."""
        deadline = time.monotonic() + timeout
        while text not in self.log() and not any(text in m for m in self.log_messages()):
            assert time.monotonic() < deadline, f"not logged within {timeout}s: {text!r}"
            time.sleep(0.05)

    def metric(self, name: str, model: str) -> float:
        """One of the model's Prometheus figures, as a scraper reads it from --metrics-port."""
        with urllib.request.urlopen(self.metrics_url, timeout=10) as response:
            text = response.read().decode()
        # A family with more labels (nv_inference_request_failure's `reason`) sums its series.
        values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                  if line.startswith(name + "{") and f'model="{model}"' in line]
        if not values:
            raise AssertionError(f"no {name} for {model}:\n{text}")
        return sum(values)

    def wait_metric(self, name: str, model: str, value: float, timeout: float = 10.0) -> None:
        """Wait until the figure reaches `value`: an instance records its execute only after
        the backend returned, which can be just after the client got its answer."""
        deadline = time.monotonic() + timeout
        while (current := self.metric(name, model)) < value:
            if time.monotonic() > deadline:
                raise AssertionError(f"{name} of {model} is {current}, never {value}")
            time.sleep(0.01)

    def wait_pending(self, model: str, count: int, timeout: float = 30.0) -> None:
        """Wait until the server holds `count` accepted, unanswered requests for `model`: the
        synchronisation point for tests that act while requests are in flight (no sleeps)."""
        deadline = time.monotonic() + timeout
        while (pending := self.metric("nv_inference_pending_request_count", model)) != count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{model}: {pending} requests pending, never {count}")
            time.sleep(0.01)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        # As Triton does, the server serves the HTTP connections still open before it exits.
        http_clients.hang_up(self.http_port)
        self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def openai_server(repository: Path, *args: str) -> ServerProcess:
    """A (not yet started) server of `repository` with its OpenAI port on, at `openai_port`."""
    (port,) = free_ports(1)
    process = ServerProcess([repository], f"--openai-port={port}", *args)
    process.openai_port = port  # type: ignore[attr-defined]
    return process
