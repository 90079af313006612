"""PyTriton's `RemoteTriton`: bind functions of this process into a server running elsewhere.

PyTriton loads a proxy model into the remote tritonserver (its model control API) that talks
to the function's process through sockets in a shared workspace. Tritium's equivalent needs no
shared file system: this process serves its bound functions on a gRPC port of its own (every
endpoint restricted by a random token, so only the forwarders can call it), and loads into the
remote server, over its model control API, one forwarding model per binding (`1/model.py`:
forwarder_model.py, run by the remote's python backend; `1/forward.json`: this port and the
token, kept out of the model's configuration). The remote answers clients as if the model
were its own (batching, statistics, both protocols); `stop()` unloads the models there.

`listen_address` is where the remote server reaches this process (default: the local address
of the route to the remote host; 127.0.0.1 when the remote is on this host).
"""

from __future__ import annotations

import json
import logging
import socket
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from .exceptions import PyTritonInvalidOperationError
from .model_config import ModelConfig, Tensor
from .server_config import VALID_TRITON_ENDPOINTS, TritonConfig, TritonSecurityConfig
from .triton import Triton, check_model_name

log = logging.getLogger("tritium.pytriton")

_FORWARDER = Path(__file__).with_name("forwarder_model.py")


class RemoteTriton:
    def __init__(self, url: str, workspace: str | Path | None = None,
                 access_token: str | None = None, *, listen_address: str | None = None) -> None:
        parsed = urllib.parse.urlparse(url if "://" in url else f"http://{url}")
        if parsed.scheme not in ("http", "grpc"):
            raise ValueError(f"Invalid scheme {parsed.scheme}. Only grpc and http are supported.")
        port = parsed.port or (8001 if parsed.scheme == "grpc" else 8000)
        self._host = parsed.hostname or "localhost"
        self._target = f"{self._host}:{port}"
        self._module: Any = grpcclient if parsed.scheme == "grpc" else httpclient
        self._headers: dict[str, str] = {}
        if access_token is not None:
            prefix = "triton-grpc-protocol-" if parsed.scheme == "grpc" else ""
            self._headers[f"{prefix}triton-access-token"] = access_token
        self._guard = TritonSecurityConfig(restricted_endpoints=sorted(VALID_TRITON_ENDPOINTS))
        self._local = Triton(
            config=TritonConfig(allow_http=False, allow_metrics=False, grpc_port=0,
                                grpc_address=listen_address or _route_to(self._host)),
            workspace=workspace, security_config=self._guard)
        self._names: list[str] = []
        self._loaded: list[str] = []

    def bind(self, model_name: str, infer_func: Callable | Sequence[Callable],
             inputs: Sequence[Tensor], outputs: Sequence[Tensor], model_version: int = 1,
             config: ModelConfig | None = None, strict: bool = False,
             trace_config: list[str] | None = None) -> None:
        """Bind as `Triton.bind` does; the model is loaded into the remote server on
        `connect()` (at once when connected already)."""
        check_model_name(model_name)
        self._local.bind(model_name, infer_func, inputs, outputs, model_version, config,
                         strict, trace_config)
        self._names.append(model_name)
        if self.is_connected():
            self._load(model_name)

    def connect(self) -> None:
        """Serve the bound functions here and load their forwarders into the remote server."""
        if self.is_connected():
            return
        self._local.run()
        self._loaded = []
        try:
            for name in self._names:
                self._load(name)
        except BaseException:
            self.stop()
            raise

    def _load(self, name: str) -> None:
        binding = self._local._bindings[name]
        config = {key: value for key, value in binding.generated.items() if key != "parameters"}
        config["backend"] = "python"
        forward = {"url": self._local._addresses.grpc, "model": name,
                   "token": self._guard.access_token}
        version = str(binding.version)
        with self._client() as client:
            try:
                client.load_model(name, headers=self._headers, config=json.dumps(config), files={
                    f"file:{version}/model.py": _FORWARDER.read_bytes(),
                    f"file:{version}/forward.json": json.dumps(forward).encode()})
            except InferenceServerException as exc:
                raise PyTritonInvalidOperationError(
                    f"could not load model {name} into the server at {self._target}: "
                    f"{exc.message()}") from None
        self._loaded.append(name)

    def _client(self) -> Any:
        return self._module.InferenceServerClient(self._target)

    def serve(self, monitoring_period_s: float = 60.0) -> None:
        """Connect, then serve until `stop()` or SIGINT/SIGTERM."""
        self.connect()
        self._local._wait()
        self.stop()

    def stop(self) -> bool:
        """Unload the forwarders from the remote server and stop serving; True if connected."""
        loaded, self._loaded = self._loaded, []
        if loaded:
            with self._client() as client:
                for name in loaded:
                    try:
                        client.unload_model(name, headers=self._headers)
                    except (InferenceServerException, OSError) as exc:
                        log.warning("could not unload model %s from %s: %s", name,
                                    self._target, exc)
        self._names = []
        return self._local.stop()

    def is_alive(self) -> bool:
        return self._local.is_alive()

    def is_connected(self) -> bool:
        return self._local.is_connected()

    def __enter__(self) -> RemoteTriton:
        self.connect()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _route_to(host: str) -> str:
    """The local address packets to `host` leave from (a UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((socket.gethostbyname(host), 9))
            return str(probe.getsockname()[0])
        except OSError:
            return "127.0.0.1"
