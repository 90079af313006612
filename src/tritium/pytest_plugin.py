"""The pytest plugin: test a Triton model repository in a plain pytest run.

Installed with Tritium (entry point `pytest11: tritium`), it adds one option and one fixture and
does nothing unless a test asks for them (the server is imported only then, so the plugin costs
other projects' test runs nothing):

    def test_add_sub(tritium_server):
        server = tritium_server("models", models=["add_sub"])
        out = server.infer("add_sub", INPUT0=np.ones(4, np.float32), INPUT1=np.ones(4, np.float32))
        assert out["OUTPUT0"].tolist() == [2, 2, 2, 2]

`tritium_server(repository=None, models=None, frontends=False, **options)` starts an in-process
server (`tritonserver.Server`; `options` are its Options) on `repository`, or on
`--tritium-repository` when none is given; `models` loads just those (explicit control mode).
A model that fails to load fails the test with the model's error and the log lines it left,
not with a timeout. At teardown the server stops and the test fails if Python-backend stub
processes are left running, or shared-memory entries Tritium made are left in /dev/shm.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import numpy as np

    from .inprocess import Server

SHM_DIRECTORY = Path("/dev/shm")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--tritium-repository", action="append", default=[],
                     help="model repository the tritium_server fixture serves by default "
                          "(repeatable)")


class TritiumTestServer:
    """A started in-process server for one test, with helpers that answer in numpy."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.http_url: str | None = None
        self.grpc_url: str | None = None
        self.http_client: Any = None
        self.grpc_client: Any = None

    def infer(self, model: str, version: int = -1, **inputs: Any) -> dict[str, np.ndarray]:
        """One request; the outputs of its (last) response as numpy arrays."""
        responses = self.stream(model, version, **inputs)
        return responses[-1] if responses else {}

    def stream(self, model: str, version: int = -1,
               **inputs: Any) -> list[dict[str, np.ndarray]]:
        """One request; the outputs of every response that has some (decoupled models). A
        numpy input without the batch dimension of a model that batches gets a batch of one,
        as with `tritium infer` (`tritium.batch_dimension`)."""
        found = []
        handle = self.server.model(model, version)
        for response in handle.infer(inputs=_shaped(inputs, handle.config())):
            if response.outputs:
                found.append({name: _as_numpy(t) for name, t in response.outputs.items()})
        return found

    def _start_frontends(self) -> None:
        import tritonclient.grpc as grpcclient
        import tritonclient.http as httpclient

        addresses = self.server.start_frontends(http_port=0, grpc_port=0)
        self.http_url, self.grpc_url = addresses.http, addresses.grpc
        self.http_client = httpclient.InferenceServerClient(self.http_url)
        self.grpc_client = grpcclient.InferenceServerClient(self.grpc_url)

    def _close(self) -> None:
        for client in (self.http_client, self.grpc_client):
            if client is not None:
                client.close()
        self.server.stop()


def _shaped(inputs: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """numpy values shaped by the rule `tritium infer` follows (`batch_dimension`): a model that
    batches gets a batch of one for a value without one. Other values pass as they are."""
    import numpy as np

    from .batch_dimension import shape_for_input

    max_batch_size = int(config.get("max_batch_size", 0))
    dims = {entry["name"]: [int(d) for d in entry.get("dims", [])]
            for entry in config.get("input", [])}
    return {name: (shape_for_input(np.asarray(value), dims[name], max_batch_size)
                   if isinstance(value, (np.ndarray, np.generic)) and name in dims else value)
            for name, value in inputs.items()}


def _as_numpy(tensor: Any) -> np.ndarray:
    import numpy as np

    if tensor.data_type.name == "BYTES":
        return tensor.to_bytes_array()
    return np.from_dlpack(tensor).copy()


class _Records(logging.Handler):
    """Tritium's log records while a server starts (what a load failure is explained with)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname[0]} {record.name}: {record.getMessage()}")


def _log(lines: Sequence[str]) -> str:
    return "log:\n" + "\n".join(f"  {line}" for line in lines) if lines else ""


def _children() -> set[int]:
    """This process's child processes (Linux /proc; empty elsewhere)."""
    found: set[int] = set()
    tasks = Path(f"/proc/{os.getpid()}/task")
    if not tasks.is_dir():
        return found
    for task in tasks.iterdir():
        try:
            found.update(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _tritium_shm() -> set[str]:
    """/dev/shm entries Tritium or this process made (named after it or its pid)."""
    if not SHM_DIRECTORY.is_dir():
        return set()
    marks = ("tritium", f"_{os.getpid()}_")
    return {p.name for p in SHM_DIRECTORY.iterdir() if any(m in p.name for m in marks)}


@pytest.fixture
def tritium_server(request: pytest.FixtureRequest) -> Iterator[Callable[..., TritiumTestServer]]:
    """A factory of started in-process servers, stopped and checked for leaks at teardown."""
    started: list[TritiumTestServer] = []
    children_before = _children()
    shm_before = _tritium_shm()

    def start(repository: Any = None, models: Sequence[str] | None = None,
              frontends: bool = False, **options: Any) -> TritiumTestServer:
        repositories = [repository] if repository is not None else list(
            request.config.getoption("--tritium-repository"))
        from .inprocess import ModelControlMode, Server, TritonError

        if not repositories:
            pytest.fail("tritium_server: give a repository or --tritium-repository",
                        pytrace=False)
        if models is not None:
            options.setdefault("model_control_mode", ModelControlMode.EXPLICIT)
            options.setdefault("startup_models", list(models))
        # Keep a server whose models failed, to tell which failed and why.
        options.setdefault("exit_on_error", False)
        server = Server(model_repository=[str(r) for r in repositories], **options)
        records = _Records()
        logger = logging.getLogger("tritium")
        logger.addHandler(records)
        try:
            server.start(wait_until_ready=False)
        except TritonError as exc:
            pytest.fail(f"tritium_server: the server did not start: {type(exc).__name__}: "
                        f"{exc}\n{_log(records.lines)}", pytrace=False)
        finally:
            logger.removeHandler(records)
        handle = TritiumTestServer(server)
        started.append(handle)
        failed = [m for m in server.models().values() if m.state == "UNAVAILABLE"]
        if failed:
            pytest.fail("\n".join(
                [f"tritium_server: model '{m.name}' version {m.version} failed to load: "
                 f"{m.reason}" for m in failed] + [_log(records.lines)]), pytrace=False)
        if frontends:
            handle._start_frontends()
        return handle

    yield start

    for handle in started:
        handle._close()
    leaked = [pid for pid in _children() - children_before if _alive(pid)]
    shm_leaked = sorted(_tritium_shm() - shm_before)
    problems = []
    if leaked:
        problems.append(f"child processes still running after the server stopped: {leaked} "
                        "(Python-backend stubs, or processes the test started)")
    if shm_leaked:
        problems.append(f"shared memory left in {SHM_DIRECTORY}: {shm_leaked}")
    if problems:
        pytest.fail("tritium_server: " + "; ".join(problems), pytrace=False)
