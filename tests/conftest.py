from __future__ import annotations

import sys
from pathlib import Path

import pytest
import tritonclient.http as httpclient

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
# The helper modules' asserts explain their failures like the tests' own.
pytest.register_assert_rewrite("raw_http", "http_infer_requests", "grpc_stream_fixtures")

from models import standard_repository  # noqa: E402
from server_process import ServerProcess  # noqa: E402


@pytest.fixture(scope="session")
def standard_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return standard_repository(tmp_path_factory.mktemp("repo"))


@pytest.fixture(scope="session")
def server(standard_repo: Path):
    """A server shared by the protocol tests (they must leave it as they found it)."""
    with ServerProcess([standard_repo]) as process:
        yield process


@pytest.fixture(scope="module")
def http_client(server) -> httpclient.InferenceServerClient:
    """The real tritonclient over HTTP to the shared server, one per test module."""
    c = httpclient.InferenceServerClient(server.http_url)
    yield c
    c.close()
