"""PyTriton's `Triton`: serve Python functions as models, on Tritium, in this process.

    with Triton(config=TritonConfig(http_port=0, grpc_port=0)) as triton:
        triton.bind(model_name="add", infer_func=add, inputs=[Tensor(...)], outputs=[...],
                    config=ModelConfig(max_batch_size=8, batcher=DynamicBatcher(...)))
        triton.serve()

A bound function becomes a model of an in-process `tritonserver.Server` (its configuration
generated, run by the `python_function` backend, batched by Tritium's dynamic batcher, one
instance per function given, each on its own thread), answered over HTTP and gRPC (the
frontends `tritium serve` starts for the TritonConfig's flags; ports 8000/8001/8002 as in
PyTriton, 0 picks free ones) and in-process (`triton.server`). PyTriton starts a tritonserver
process and proxies each request to the function's process; here the function runs in the
server's own process, with no proxy. Unlike PyTriton (and tritonserver), the frontends listen
on 127.0.0.1 unless TritonConfig names an address.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import shutil
import signal
import sys
import tempfile
import threading
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2 as mc

from ...builtin_backends import python_function
from ..enums import ModelControlMode
from ..errors import InvalidArgumentError
from ..frontends import FrontendAddresses, cli_frontends
from ..server import Options, Server
from .context import TritonContext, serving
from .exceptions import PyTritonValidationError
from .model_config import ModelConfig, Tensor, TritonModelConfig, generate_config, named
from .proxy import Request
from .server_config import (
    TritonConfig,
    TritonSecurityConfig,
    command_line,
    merged,
    parse,
)
from .validation import check_results

log = logging.getLogger("tritium.pytriton")

_MODEL_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclasses.dataclass
class TritonLifecyclePolicy:
    """PyTriton's: whether entering `with Triton()` starts the server (else `run()`/`serve()`
    does); `local_model_store` is accepted (the store is always this process's)."""

    launch_triton_on_startup: bool = True
    local_model_store: bool = False


DefaultTritonLifecyclePolicy = TritonLifecyclePolicy()
# PyTriton's name (sic). A Vertex AI endpoint needs its model at start (the only one, or the
# default one), so with `allow_vertex_ai` the server starts at run()/serve(), after bind().
VertextAILifecyclePolicy = TritonLifecyclePolicy(launch_triton_on_startup=False,
                                                 local_model_store=True)


@dataclasses.dataclass
class _Binding:
    name: str
    version: int
    callable_id: str
    generated: dict[str, Any]


def check_model_name(model_name: str) -> None:
    if not model_name:
        raise PyTritonValidationError("Model name cannot be empty")
    if not _MODEL_NAME.match(model_name):
        raise PyTritonValidationError("Model name can only contain alphanumeric characters, "
                                      "dots, underscores and dashes")


def bound_model(model_name: str, functions: Sequence[Callable], inputs: Sequence[Tensor],
                outputs: Sequence[Tensor], model_version: int, config: ModelConfig,
                strict: bool) -> tuple[str, dict[str, Any]]:
    """Register the functions with the python_function backend; (their key, the model's
    generated configuration)."""
    described = TritonModelConfig(
        model_name, model_version, config.batching, config.max_batch_size, config.batcher,
        config.decoupled, config.response_cache, named(inputs, "INPUT"),
        named(outputs, "OUTPUT"))
    context = TritonContext({function: described for function in functions})
    callable_id = f"{model_name}-{uuid.uuid4().hex}"
    python_function.register(callable_id, [_serving(f, described, context, strict)
                                           for f in functions])
    return callable_id, generate_config(model_name, described.inputs, described.outputs, config,
                                        len(functions), callable_id)


class Triton:
    def __init__(self, *, config: TritonConfig | None = None,
                 workspace: str | Path | None = None,
                 triton_lifecycle_policy: TritonLifecyclePolicy | None = None,
                 security_config: TritonSecurityConfig | None = None) -> None:
        self._config = merged(config)
        self._security = security_config or TritonSecurityConfig()
        self._policy = triton_lifecycle_policy or (
            VertextAILifecyclePolicy if config is not None and config.allow_vertex_ai
            else DefaultTritonLifecyclePolicy)
        self._argv = command_line(self._config, self._security)
        self._workspace = Path(workspace or tempfile.mkdtemp(prefix="tritium-pytriton-"))
        # A workspace of our own goes when stop() runs, and (a bind() after stop() makes it
        # again) when this object is collected or the program exits: a Triton left unstopped,
        # refused below or bound again after stop() leaves nothing in /tmp.
        self._workspace_cleanup = (
            weakref.finalize(self, shutil.rmtree, self._workspace, ignore_errors=True)
            if workspace is None else None)
        self._workspace.mkdir(parents=True, exist_ok=True)
        parse(self._argv, [str(self._workspace)])  # a bad field fails here, as in PyTriton
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
        when the server runs, else when it starts. Unnamed tensors are INPUT_1, OUTPUT_1 ..."""
        check_model_name(model_name)
        if model_name in self._bindings:
            raise PyTritonValidationError(f"Model {model_name} is already bound")
        if trace_config:
            log.warning("bind(trace_config=...) is not applied: trace with the server's "
                        "trace settings (TritonConfig.trace_config)")
        functions: list[Callable] = (list(infer_func) if isinstance(infer_func, (list, tuple))
                                     else [infer_func])  # type: ignore[list-item]
        callable_id, generated = bound_model(model_name, functions, inputs, outputs,
                                             model_version, config or ModelConfig(), strict)
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
        repositories = [str(self._workspace)]
        if self._config.model_repository is not None:
            repositories.append(str(self._config.model_repository))
        # 127.0.0.1 unless the config names an address, given as flags so that the metrics
        # address follows the HTTP one, as tritonserver defaults it.
        local = [f"--{attribute.replace('_', '-')}=127.0.0.1"
                 for attribute in ("http_address", "grpc_address")
                 if getattr(self._config, attribute) is None]
        args = parse([*local, *self._argv], repositories)
        server = Server(Options(
            model_repository=list(repositories), server_id=args.id,
            model_control_mode=ModelControlMode.EXPLICIT, startup_models=list(self._bindings),
            log_error=True, log_verbose=args.log_verbose, log_file=args.log_file or None,
            exit_timeout=int(args.exit_timeout_secs), exit_on_error=args.exit_on_error,
            strict_readiness=args.strict_readiness, metrics=args.allow_metrics,
            gpu_metrics=args.allow_gpu_metrics, cpu_metrics=args.allow_cpu_metrics,
            metrics_interval=int(args.metrics_interval_ms),
            cache_config={name: {k: v for n, k, v in args.cache_config if n == name}
                          for name, _, _ in args.cache_config},
        )).start()
        try:
            self._addresses = server._serve_built(lambda core: cli_frontends(core, args))
        except BaseException:
            server.stop()
            raise
        self._server = server
        self._stopped.clear()

    def connect(self) -> None:
        """PyTriton's: make the bound models available (here: run the server)."""
        self.run()

    def serve(self, monitoring_period_s: float = 60.0) -> None:
        """Run until `stop()` (from another thread) or SIGINT/SIGTERM (main thread only).

        The script's entry point, so it says on stderr where it listens, when it is ready and
        when it stops (`run()`, for code that embeds the server, stays quiet)."""
        self.run()

        def announce() -> None:
            _say(f"serving {', '.join(self._bindings) or 'no model'} at {self._listening()}")
            _say("ready (Ctrl-C stops)")

        received = self._wait(announce)
        _say(f"{received}: stopping" if received else "stopping")
        self.stop()
        _say("stopped")

    def _wait(self, announce: Callable[[], None] = lambda: None) -> str | None:
        """Block until `stop()` or, on the main thread, SIGINT/SIGTERM (its name returned).
        `announce` runs once the signals are caught: a Ctrl-C right after a "ready" line it
        prints stops the server, rather than interrupting the script."""
        received: list[str] = []

        def on_signal(number: int, _: object) -> None:
            received.append(signal.Signals(number).name)
            self._stopped.set()

        if threading.current_thread() is threading.main_thread():
            previous = {sig: signal.signal(sig, on_signal)
                        for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                announce()
                self._stopped.wait()
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
        else:
            announce()
            self._stopped.wait()
        return received[0] if received else None

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
        if self._workspace_cleanup is not None:
            shutil.rmtree(self._workspace, ignore_errors=True)  # the finalizer stays armed
        return server is not None

    def is_alive(self) -> bool:
        return self._server is not None and self._server.live()

    def is_connected(self) -> bool:
        return self._server is not None

    def get_access_token(self) -> str | None:
        """The token restricted endpoints require (header `triton-access-token`)."""
        return self._security.access_token

    def __enter__(self) -> Triton:
        if self._policy.launch_triton_on_startup:
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


def _serving(function: Callable, config: TritonModelConfig, context: TritonContext,
             strict: bool) -> Callable[[Sequence[Any]], Any]:
    """The backend's callable for one bound function: core requests -> PyTriton Requests, the
    function called as serving `config` (what the decorators read), and its results checked
    (each yield of a decoupled model's generator too)."""
    def check(results: Any, count: int) -> Any:
        return check_results(config.model_name, results, count, config.outputs,
                             config.batching, strict)

    # A request's inputs in the order the model declares them, whatever order the client sent
    # them in, as PyTriton builds them: functions that unpack `inputs.values()` rely on it.
    declared = [str(tensor.name) for tensor in config.inputs]  # named() named them all

    def serve(requests: Sequence[Any]) -> Any:
        with serving(context, config):
            results = function([Request({name: r.inputs[name].data for name in declared
                                         if name in r.inputs},
                                        dict(r.parameters), r.requested_output_names or None)
                                for r in requests])
            if config.decoupled:
                return _stream(results, context, config, lambda r: check(r, len(requests)))
            return check(results, len(requests))

    return serve


def _stream(results: Iterable[Any], context: TritonContext, config: TritonModelConfig,
            check: Callable[[Any], Any]) -> Iterator[Any]:
    """A decoupled function's responses, each produced as serving `config` (a generator's
    body runs when iterated, after the call has returned)."""
    iterator = iter(results)
    while True:
        with serving(context, config):
            try:
                partial = next(iterator)
            except StopIteration:
                return
            checked = check(partial)
        yield checked


__all__ = ["DefaultTritonLifecyclePolicy", "Triton", "TritonConfig", "TritonLifecyclePolicy",
           "TritonSecurityConfig", "VertextAILifecyclePolicy"]
