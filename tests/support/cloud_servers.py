"""Servers with a cloud endpoint on a port of their own, and raw HTTP to that port.

The cloud endpoints (Vertex AI, SageMaker) listen on 0.0.0.0 at a port tritonserver's flags (or
AIP_HTTP_PORT) name; the tests give each server a free one and talk to it as Vertex AI or
SageMaker would, over plain HTTP.
"""

from __future__ import annotations

import http.client
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.models import identity_config, write_model
from support.raw_http import Reply, call
from support.server_process import ServerProcess, free_ports

INT32_MODEL = "identity_int32"


@dataclass
class Endpoint:
    """Where a cloud endpoint listens, in the shape support.raw_http calls take."""

    port: int

    @property
    def http_url(self) -> str:
        return f"127.0.0.1:{self.port}"


def cloud_port() -> int:
    return free_ports(1)[0]


def int32_repository(repo: Path, *names: str) -> Path:
    """Identity models taking INPUT0 and INPUT1 (INT32 [16], batching up to 8)."""
    for name in names or (INT32_MODEL,):
        write_model(repo, name, identity_config(name, "TYPE_INT32", "[ 16 ]", inputs=2))
    return repo


def int32_request(values: list[int] | None = None) -> dict[str, Any]:
    data = values or list(range(16))
    return {"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": data},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": data},
    ]}


def send(endpoint: Endpoint, method: str, path: str, document: Any = None, *,
         body: bytes | None = None, headers: dict[str, str] | None = None) -> Reply:
    """One request: `document` as JSON, or `body` as it is."""
    if body is None and document is not None:
        body = json.dumps(document).encode()
    return call(endpoint, method, path, body, headers)


def wait_answering(endpoint: Endpoint, path: str, server: ServerProcess,
                   timeout: float = 120.0) -> None:
    """Wait until `path` answers 200 (the endpoint starts once the models are loaded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.process is not None
        if server.process.poll() is not None:
            raise RuntimeError(f"server exited with {server.process.returncode}:\n{server.log()}")
        try:
            if call(endpoint, "GET", path, None, timeout=2).status == 200:
                return
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{path} never answered 200:\n{server.log()}")


__all__ = ["INT32_MODEL", "Endpoint", "cloud_port", "int32_repository", "int32_request",
           "send", "wait_answering"]
