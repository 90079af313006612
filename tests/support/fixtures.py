"""The fixtures every test may ask for (tests/conftest.py imports them): the standard repository
and one server process on it, shared by the protocol tests, and an HTTP client to it; gRPC
clients for a test's own servers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from support.models import standard_repository
from support.server_process import ServerProcess


@pytest.fixture(scope="session")
def standard_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return standard_repository(tmp_path_factory.mktemp("repo"))


@pytest.fixture(scope="session")
def server(standard_repo: Path) -> Iterator[ServerProcess]:
    """A server shared by the protocol tests (they must leave it as they found it)."""
    with ServerProcess([standard_repo]) as process:
        yield process


@pytest.fixture(scope="module")
def http_client(server: ServerProcess) -> Iterator[httpclient.InferenceServerClient]:
    """The real tritonclient over HTTP to the shared server, one per test module."""
    c = httpclient.InferenceServerClient(server.http_url)
    yield c
    c.close()


@pytest.fixture()
def grpc_client_of() -> Iterator[Callable[[ServerProcess], grpcclient.InferenceServerClient]]:
    """A factory of gRPC clients of a server the test starts itself, all closed at the end."""
    clients: list[grpcclient.InferenceServerClient] = []

    def make(server: ServerProcess) -> grpcclient.InferenceServerClient:
        clients.append(grpcclient.InferenceServerClient(server.grpc_url))
        return clients[-1]

    yield make
    for client in clients:
        client.close()
