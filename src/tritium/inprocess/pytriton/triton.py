"""PyTriton's `Triton`: serve Python functions as models, on Tritium, in this process.

    with Triton(config=TritonConfig(http_port=0, grpc_port=0)) as triton:
        triton.bind(model_name="add", infer_func=add, inputs=[Tensor(...)], outputs=[...],
                    config=ModelConfig(max_batch_size=8, batcher=DynamicBatcher(...)))
        triton.serve()

A bound function becomes a model of an in-process `tritonserver.Server` (its configuration
generated, run by the `python_function` backend, batched by Tritium's dynamic batcher, one
instance per function given, each on its own thread), answered over HTTP and gRPC (the ports of
TritonConfig, default 8000/8001/8002 as in PyTriton, whose tritonserver serves metrics on 8002
unless `allow_metrics=False`; 0 picks free ones) and in-process
(`triton.server`). PyTriton starts a tritonserver process and proxies each request to the
function's process; here the function runs in the server's own process, with no proxy.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import signal
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2 as mc

from ...builtin_backends import python_function
from ..enums import ModelControlMode
from ..errors import InvalidArgumentError
from ..frontends import FrontendAddresses
from ..server import Server
from .model_config import ModelConfig, Tensor, generate_config
from .proxy import Request
from .validation import check_results

_MODEL_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclasses.dataclass
class TritonConfig:
    """The server's settings (PyTriton's names; None means PyTriton's default)."""

    id: str | None = None
    model_repository: Path | None = None
    log_verbose: int | None = None
    log_file: Path | None = None
    exit_timeout_secs: int | None = None
    exit_on_error: bool | None = None
    strict_readiness: bool | None = None
    allow_http: bool | None = None
    http_address: str | None = None
    http_port: int | None = None
    allow_grpc: bool | None = None
    grpc_address: str | None = None
    grpc_port: int | None = None
    allow_metrics: bool | None = None
    metrics_address: str | None = None
    metrics_port: int | None = None


@dataclasses.dataclass
class _Binding:
    name: str
    version: int
    callable_id: str
    generated: dict[str, Any]


class Triton:
    def __init__(self, *, config: TritonConfig | None = None,
                 workspace: str | Path | None = None) -> None:
        self._config = config or TritonConfig()
        self._own_workspace = workspace is None
        self._workspace = Path(workspace or tempfile.mkdtemp(prefix="tritium-pytriton-"))
        self._workspace.mkdir(parents=True, exist_ok=True)
        self._bindings: dict[str, _Binding] = {}
        self._server: Server | None = None
        self._addresses = FrontendAddresses()
        self._stopped = threading.Event()

    # -- binding ---------------------------------------------------------------------------------

    def bind(self, model_name: str, infer_func: Callable | Sequence[Callable],
             inputs: Sequence[Tensor], outputs: Sequence[Tensor], model_version: int = 1,
             config: ModelConfig | None = None, strict: bool = False,
             trace_config: list[str] | None = None) -> None:
        """Make `infer_func` (or one function per instance) model `model_name`; loaded at once
        when the server runs, else when it starts."""
        if not _MODEL_NAME.match(model_name):
            raise ValueError("Model name can only contain alphanumeric characters, dots, "
                             "underscores and dashes")
        if model_name in self._bindings:
            raise ValueError(f"Model {model_name} is already bound")
        functions: list[Callable] = (list(infer_func) if isinstance(infer_func, (list, tuple))
                                     else [infer_func])  # type: ignore[list-item]
        config = config or ModelConfig()
        callable_id = f"{model_name}-{uuid.uuid4().hex}"
        python_function.register(callable_id, [_serving(f, model_name, outputs, config, strict)
                                               for f in functions])
        generated = generate_config(model_name, inputs, outputs, config, len(functions),
                                    callable_id)
        binding = _Binding(model_name, model_version, callable_id, generated)
        self._write(binding)
        self._bindings[model_name] = binding
        if self._server is not None:
            self._server.load(model_name)

    def _write(self, binding: _Binding) -> None:
        folder = self._workspace / binding.name
        (folder / str(binding.version)).mkdir(parents=True, exist_ok=True)
        message = json_format.ParseDict(binding.generated, mc.ModelConfig())
        (folder / "config.pbtxt").write_text(text_format.MessageToString(message))

    # -- life ------------------------------------------------------------------------------------

    def run(self) -> None:
        """Start the server (models loaded, frontends listening) and return."""
        if self._server is not None:
            return
        cfg = self._config
        repositories = [str(self._workspace)]
        if cfg.model_repository is not None:
            repositories.append(str(cfg.model_repository))
        options: dict[str, Any] = {"model_control_mode": ModelControlMode.EXPLICIT,
                                   "startup_models": list(self._bindings),
                                   "log_error": True}
        if cfg.id is not None:
            options["server_id"] = cfg.id
        if cfg.log_verbose is not None:
            options["log_verbose"] = cfg.log_verbose
        if cfg.log_file is not None:
            options["log_file"] = str(cfg.log_file)
        if cfg.exit_timeout_secs is not None:
            options["exit_timeout"] = cfg.exit_timeout_secs
        if cfg.exit_on_error is not None:
            options["exit_on_error"] = cfg.exit_on_error
        if cfg.strict_readiness is not None:
            options["strict_readiness"] = cfg.strict_readiness
        server = Server(model_repository=repositories, **options).start()
        try:
            self._addresses = server.start_frontends(
                http_port=_port(cfg.allow_http, cfg.http_port, 8000),
                grpc_port=_port(cfg.allow_grpc, cfg.grpc_port, 8001),
                metrics_port=_port(cfg.allow_metrics, cfg.metrics_port, 8002),
                address=cfg.http_address or cfg.grpc_address or "127.0.0.1",
            )
        except BaseException:
            server.stop()
            raise
        self._server = server
        self._stopped.clear()

    def serve(self, monitoring_period_s: float = 60.0) -> None:
        """Run until `stop()` (from another thread) or SIGINT/SIGTERM (main thread only).

        The script's entry point, so it says on stderr where it listens, when it is ready and
        when it stops (`run()`, for code that embeds the server, stays quiet)."""
        self.run()
        _say(f"serving {', '.join(self._bindings) or 'no model'} at {self._listening()}")
        _say("ready (Ctrl-C stops)")
        received: list[str] = []

        def on_signal(number: int, _: object) -> None:
            received.append(signal.Signals(number).name)
            self._stopped.set()

        if threading.current_thread() is threading.main_thread():
            previous = {sig: signal.signal(sig, on_signal)
                        for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                self._stopped.wait()
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
        else:
            self._stopped.wait()
        _say(f"{received[0]}: stopping" if received else "stopping")
        self.stop()
        _say("stopped")

    def _listening(self) -> str:
        """The endpoints, as a client names them."""
        places = [("HTTP", self.http_url), ("gRPC", self.grpc_url),
                  ("metrics", self.metrics_url)]
        return ", ".join(f"{what} {url}" for what, url in places if url) or "no endpoint"

    def stop(self) -> bool:
        """Stop the server and forget the bound functions; True if it was running."""
        self._stopped.set()
        server, self._server = self._server, None
        if server is not None:
            server.stop()
        for binding in self._bindings.values():
            python_function.unregister(binding.callable_id)
        self._bindings.clear()
        if self._own_workspace:
            shutil.rmtree(self._workspace, ignore_errors=True)
        return server is not None

    def is_alive(self) -> bool:
        return self._server is not None and self._server.live()

    def __enter__(self) -> Triton:
        self.run()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- Tritium's additions -----------------------------------------------------------------

    @property
    def server(self) -> Server:
        """The in-process server (`tritonserver.Server`): `triton.server.model(name).infer(...)`."""
        if self._server is None:
            raise InvalidArgumentError("Triton is not running")
        return self._server

    @property
    def http_url(self) -> str | None:
        return f"http://{self._addresses.http}" if self._addresses.http else None

    @property
    def grpc_url(self) -> str | None:
        return f"grpc://{self._addresses.grpc}" if self._addresses.grpc else None

    @property
    def metrics_url(self) -> str | None:
        return self._addresses.metrics_url

    def __repr__(self) -> str:
        return f"Triton(models={list(self._bindings)}, http={self.http_url}, grpc={self.grpc_url})"


def _say(text: str) -> None:
    print(f"tritium: {text}", file=sys.stderr, flush=True)


def _port(allowed: bool | None, port: int | None, default: int) -> int | None:
    if allowed is False:
        return None
    return default if port is None else port


def _serving(function: Callable, model: str, outputs: Sequence[Tensor], config: ModelConfig,
             strict: bool) -> Callable[[Sequence[Any]], Any]:
    """The backend's callable for one bound function: core requests -> PyTriton Requests, and
    the function's results checked (each yield of a decoupled model's generator too)."""
    batching = config.batching

    def serve(requests: Sequence[Any]) -> Any:
        results = function([Request({name: t.data for name, t in r.inputs.items()},
                                    dict(r.parameters), r.requested_output_names or None)
                            for r in requests])
        if config.decoupled:
            return (check_results(model, partial, len(requests), outputs, batching, strict)
                    for partial in results)
        return check_results(model, results, len(requests), outputs, batching, strict)

    return serve


__all__ = ["Triton", "TritonConfig"]
