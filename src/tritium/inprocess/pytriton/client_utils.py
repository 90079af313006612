"""What PyTriton's clients stand on (PyTriton 0.7's `pytriton.client.utils` and `.auth`):
parsing a server URL, making a tritonclient for it, waiting for the server and a model, reading
a model's configuration as a TritonModelConfig, and the access-token headers.

Scripts call these directly too (`create_client_from_url`, `wait_for_model_ready`,
`get_model_config`), so names, defaults and timeout messages are PyTriton's. They work on the
synchronous tritonclient clients of either protocol.
"""

from __future__ import annotations

import dataclasses
import enum
import socket
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import grpc
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from .client_errors import PyTritonClientInvalidUrlError, PyTritonClientTimeoutError
from .model_config import TritonModelConfig, parse_model_config
from .server_config import TRITON_ACCESS_HEADER

_DEFAULT_WAIT_FOR_SERVER_READY_TIMEOUT_S = 60.0
_DEFAULT_WAIT_FOR_MODEL_TIMEOUT_S = 300.0
DEFAULT_INFERENCE_TIMEOUT_S = 60.0
LATEST_MODEL_VERSION = "<latest>"
_DEFAULT_PORTS = {"http": 8000, "grpc": 8001}
# Between two readiness checks; PyTriton checks once a second.
_POLL_S = 0.1

# While the server is not up yet, the two protocols fail a readiness check with these.
_NOT_UP = (InferenceServerException, grpc.RpcError, ConnectionError, socket.gaierror,
           socket.timeout)


@dataclasses.dataclass
class TritonUrl:
    """A server URL as the clients read it: http unless it says grpc://, the protocol's
    default port (8000 / 8001) when it names none."""

    scheme: str
    hostname: str
    port: int

    @classmethod
    def from_url(cls, url: Any) -> TritonUrl:
        if not isinstance(url, str):
            raise PyTritonClientInvalidUrlError(f"Invalid url {url}. Url must be a string.")
        try:
            parsed = urllib.parse.urlparse(url if "://" in url else f"http://{url}")
            scheme = parsed.scheme.lower()
            if scheme not in _DEFAULT_PORTS:
                raise ValueError(f"Invalid scheme {scheme}. Only grpc and http are supported.")
            port = parsed.port or _DEFAULT_PORTS[scheme]
            if not parsed.hostname:
                raise ValueError("no host")
        except ValueError as exc:
            raise PyTritonClientInvalidUrlError(f"Invalid url {url}: {exc}") from exc
        return cls(scheme, parsed.hostname, port)

    @property
    def with_scheme(self) -> str:
        return f"{self.scheme}://{self.hostname}:{self.port}"

    @property
    def without_scheme(self) -> str:
        return f"{self.hostname}:{self.port}"


def client_library(url: TritonUrl) -> Any:
    """tritonclient's module for the URL's protocol."""
    return grpcclient if url.scheme == "grpc" else httpclient


def create_client_from_url(url: str, network_timeout_s: float | None = None) -> Any:
    """A synchronous tritonclient InferenceServerClient for the URL. Over HTTP
    `network_timeout_s` bounds connecting and each request (tritonclient's default, 60 s,
    when None); tritonclient's gRPC client takes its timeouts per call instead."""
    triton_url = TritonUrl.from_url(url)
    library = client_library(triton_url)
    kwargs: dict[str, float] = {}
    if triton_url.scheme == "http" and network_timeout_s is not None:
        kwargs = {"connection_timeout": network_timeout_s, "network_timeout": network_timeout_s}
    return library.InferenceServerClient(triton_url.without_scheme, **kwargs)


def wait_for_server_ready(client: Any, timeout_s: float | None = None,
                          headers: dict[str, str] | None = None) -> None:
    """Return once the server is live and ready; PyTritonClientTimeoutError after timeout_s
    (60 s by default). An unreachable server counts as not ready yet."""
    timeout_s = _DEFAULT_WAIT_FOR_SERVER_READY_TIMEOUT_S if timeout_s is None else timeout_s
    _wait_until(lambda: client.is_server_ready(headers=headers)
                and client.is_server_live(headers=headers),
                time.monotonic() + timeout_s, "Waiting for server to be ready timed out.")


def wait_for_model_ready(client: Any, model_name: str, model_version: str | None = None,
                         timeout_s: float | None = None,
                         headers: dict[str, str] | None = None) -> None:
    """Return once the server and the model (its latest version when none is named) are
    ready; PyTritonClientTimeoutError after timeout_s (300 s by default), the server's wait
    included."""
    timeout_s = _DEFAULT_WAIT_FOR_MODEL_TIMEOUT_S if timeout_s is None else timeout_s
    deadline = time.monotonic() + timeout_s
    wait_for_server_ready(client, timeout_s=timeout_s, headers=headers)
    version = model_version or ""
    _wait_until(lambda: client.is_model_ready(model_name, version, headers=headers), deadline,
                f"Waiting for model {model_name}/{version or LATEST_MODEL_VERSION} to be ready "
                "timed out.")


def _wait_until(check: Callable[[], Any], deadline: float, timeout_message: str) -> None:
    """Check every _POLL_S (an unreachable server answers no) until `check()` is true, or
    raise PyTritonClientTimeoutError(timeout_message) once `deadline` has passed."""
    while True:
        try:
            if check():
                return
        except _NOT_UP:
            pass
        left = deadline - time.monotonic()
        if left <= 0:
            raise PyTritonClientTimeoutError(timeout_message)
        time.sleep(min(_POLL_S, left))


def get_model_config(client: Any, model_name: str, model_version: str | None = None,
                     timeout_s: float | None = None,
                     headers: dict[str, str] | None = None) -> TritonModelConfig:
    """The model's configuration as a TritonModelConfig, once the model is ready (waiting up
    to timeout_s)."""
    wait_for_model_ready(client, model_name, model_version, timeout_s=timeout_s,
                         headers=headers)
    if isinstance(client, grpcclient.InferenceServerClient):
        config = client.get_model_config(model_name, model_version or "", headers=headers,
                                         as_json=True)["config"]
    else:
        config = client.get_model_config(model_name, model_version or "", headers=headers)
    return parse_model_config(config)


class ModelState(enum.Enum):
    """A model version's state in the server's repository index."""

    LOADING = "LOADING"
    UNLOADING = "UNLOADING"
    UNAVAILABLE = "UNAVAILABLE"
    READY = "READY"


def get_model_state(client: Any, model_name: str, model_version: str | None = None,
                    headers: dict[str, str] | None = None) -> ModelState:
    """The state the repository index gives the model's version (its highest version when
    none is named); UNAVAILABLE when the index does not list it."""
    index = client.get_model_repository_index(headers=headers)
    entries = index if isinstance(index, list) else [
        {"name": m.name, "version": m.version, "state": m.state} for m in index.models]
    states = {entry["version"]: ModelState(entry["state"]) if entry.get("state")
              else ModelState.LOADING
              for entry in entries if entry["name"] == model_name and entry.get("version")}
    if model_version is not None:
        return states.get(model_version, ModelState.UNAVAILABLE)
    if not states:
        return ModelState.UNAVAILABLE
    return states[max(states, key=int)]


def create_auth_headers(access_token: str | None, protocol: str) -> dict[str, str]:
    """The header carrying the access token, as each protocol names it (gRPC metadata has
    Triton's `triton-grpc-protocol-` prefix)."""
    if not access_token:
        raise ValueError("access_token cannot be None or empty")
    protocol = protocol.lower()
    if protocol not in _DEFAULT_PORTS:
        raise ValueError(f"Invalid protocol '{protocol}'. Must be 'http' or 'grpc'")
    prefix = "triton-grpc-protocol-" if protocol == "grpc" else ""
    return {f"{prefix}{TRITON_ACCESS_HEADER}": access_token}


def extract_access_token_from_headers(headers: dict[str, str] | None) -> str | None:
    """The access token in headers of either protocol's form, None when there is none."""
    if not headers:
        return None
    http_token = headers.get(TRITON_ACCESS_HEADER)
    grpc_token = headers.get(f"triton-grpc-protocol-{TRITON_ACCESS_HEADER}")
    if http_token is not None and grpc_token is not None and http_token != grpc_token:
        raise ValueError("Conflicting authentication headers found: the HTTP and gRPC access "
                         "token headers hold different tokens.")
    return http_token or grpc_token
