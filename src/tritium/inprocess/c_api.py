"""The server behind Triton's C API: TRITONSERVER_ServerNew and the calls on the server it made.

A C or C++ program linked with Tritium's libtritonserver.so makes a server as it makes
Triton's: `TRITONSERVER_ServerOptionsNew`, the setters, `TRITONSERVER_ServerNew`, then requests
with `TRITONSERVER_ServerInferAsync` and a response allocator, and `TRITONSERVER_ServerDelete`.
The library starts Python in that program when it runs none (csrc/python_embedding.cc),
imports this module and calls `install`. From then on the calls on the server object
(stop, delete, exit timeout, repositories, polling, liveness, statistics, metrics) come to
`_answer` through the host table, and are answered by an in-process `Server`, the one
`tritonserver.Server` is in Python; requests, queries and model control reach its core the way
a compiled backend's BLS requests do (tritium.backend.native.server_calls).

One server per process, as the library's host table is one: a second ServerNew before the
first is deleted fails ALREADY_EXISTS. Options arrive as one JSON object named as `Options`
names them (csrc/server_options.cc writes it), with Triton's C API defaults: POLL control mode
(applied when the program calls TRITONSERVER_ServerPollModelRepository), strict model
configuration, logging of info, warnings and errors on.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from ..backend.native import host, server_calls
from ..backend.native.host import (
    SOP_DELETE,
    SOP_EXIT_TIMEOUT,
    SOP_LIVE,
    SOP_METRICS,
    SOP_NEW,
    SOP_POLL,
    SOP_REGISTER,
    SOP_STATISTICS,
    SOP_STOP,
    SOP_UNREGISTER,
)
from ..errors import TritonError
from .enums import LogFormat, ModelControlMode, RateLimitMode
from .errors import AlreadyExistsError, InvalidArgumentError, api_error
from .server import Options, RateLimiterResource, Server


class _ServerObject:
    """The process's one server made through the C API, stopped at most once."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.stopped = False
        self.lock = threading.Lock()

    def stop(self) -> None:
        with self.lock:
            if self.stopped:
                return
            self.stopped = True
            server_calls.attach(None)
            self.server.stop()


_current: _ServerObject | None = None
_lock = threading.Lock()


def install(library_path: str) -> None:
    """Open the library the program loaded and have it call here (from the library's
    bootstrap, once per process)."""
    host.library(library_path)
    host.set_server_objects(_answer)


# The options' members that are not Options' values as they come.
_CONVERTED = {"model_control_mode", "rate_limiter_mode", "rate_limiter_resources", "log_file",
              "log_format", "model_load_gpu_limit"}


def options_from_json(text: str) -> Options:
    """`Options` from the library's JSON (INVALID_ARG for a cache configuration that is not
    a JSON object, as Triton checks it)."""
    given: dict[str, Any] = json.loads(text)
    caches: dict[str, dict[str, Any]] = {}
    for name, config in given.pop("cache_config").items():
        try:
            caches[name] = json.loads(config)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentError(
                f"failed to parse the configuration of cache '{name}' as JSON: {exc}") from None
        if not isinstance(caches[name], dict):
            raise InvalidArgumentError(f"the configuration of cache '{name}' must be a JSON "
                                       "object")
    return Options(
        **{key: value for key, value in given.items() if key not in _CONVERTED},
        model_control_mode=ModelControlMode(given["model_control_mode"]),
        rate_limiter_mode=RateLimitMode(given["rate_limiter_mode"]),
        rate_limiter_resources=[RateLimiterResource(name, count, device)
                                for name, count, device in given["rate_limiter_resources"]],
        cache_config=caches,
        log_file=given["log_file"] or None,
        log_format=LogFormat(given["log_format"]),
        model_load_gpu_limit={int(device): fraction
                              for device, fraction in given["model_load_gpu_limit"].items()},
    )


def _new(argument: str) -> None:
    global _current
    with _lock:
        if _current is not None:
            raise AlreadyExistsError(
                "Tritium runs one server per process: delete the server made before "
                "(TRITONSERVER_ServerDelete) before making another")
        server = Server(options_from_json(argument)).start()
        _current = _ServerObject(server)
        server_calls.attach(server._started())


def _object() -> _ServerObject:
    current = _current
    if current is None:
        raise InvalidArgumentError("the server was deleted (TRITONSERVER_ServerDelete)")
    return current


def _started(current: _ServerObject) -> Server:
    if current.stopped:
        raise InvalidArgumentError("the server is stopped (TRITONSERVER_ServerStop)")
    return current.server


def _delete() -> None:
    global _current
    current = _object()
    current.stop()
    with _lock:
        if _current is current:
            _current = None


def _answer(op: int, name: str, version: int, argument: str | None) -> int | str:
    """One call on the server object; TritonError (a C API error) when it fails."""
    try:
        return _dispatch(op, name, version, argument)
    except TritonError as exc:
        raise api_error(exc) from None


def _dispatch(op: int, name: str, version: int, argument: str | None) -> int | str:
    if op == SOP_NEW:
        _new(argument or "{}")
        return 0
    if op == SOP_DELETE:
        _delete()
        return 0
    current = _object()
    if op == SOP_STOP:
        current.stop()
        return 0
    if op == SOP_LIVE:
        return int(not current.stopped and current.server.live())
    server = _started(current)
    if op == SOP_EXIT_TIMEOUT:
        server.options.exit_timeout = version
        server._started().options.exit_timeout_secs = float(version)
        return 0
    if op == SOP_REGISTER:
        pairs = [(directory, model) for directory, model in json.loads(argument or "[]")]
        server.register_model_repository(name, pairs)
        return 0
    if op == SOP_UNREGISTER:
        server.unregister_model_repository(name)
        return 0
    if op == SOP_POLL:
        server.poll_model_repository()
        return 0
    if op == SOP_STATISTICS:
        statistics = server.model(name, version if version > 0 else -1).statistics()
        return json.dumps(statistics, separators=(",", ":"))  # compact, as Triton writes it
    if op == SOP_METRICS:
        return server.metrics()
    raise InvalidArgumentError(f"unknown server object call {op}")
