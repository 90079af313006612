"""PyTriton's TritonConfig and TritonSecurityConfig, read as `tritium serve` reads its flags.

PyTriton turns a TritonConfig into tritonserver's command line (`--http-port=8000 ...`, one
flag per field set, a list field repeated) and starts tritonserver with it. Here the same
command line is parsed by `tritium serve`'s own parser, so every field means exactly what the
flag means to Tritium: checked the same way (a bad value fails `Triton()` with the flag's
message), acted on the same way (SageMaker and Vertex AI endpoints too), and the flags Tritium
accepts without acting on (thread counts, memory pools) warned about the same way.

TritonSecurityConfig is PyTriton 0.7's token-based restriction: unless told otherwise, a
random token guards the shared-memory, model-repository, statistics, trace and logging
endpoints (`--http-restricted-api` / `--grpc-restricted-protocol` with header
`triton-access-token`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import pathlib
import re
import secrets
import typing
from typing import Any

from ...serve_flags import add_serve_arguments, check_serve_args
from ...tritonserver_flags import check_tritonserver_flags, warn_ignored_flags
from .exceptions import PyTritonValidationError

# The header a restricted endpoint requires (gRPC: with Triton's "triton-grpc-protocol-" prefix).
TRITON_ACCESS_HEADER = "triton-access-token"
VALID_TRITON_ENDPOINTS = frozenset({
    "health", "metadata", "inference", "shared-memory", "model-config", "model-repository",
    "statistics", "trace", "logging"})
DEFAULT_PROTECTED_ENDPOINTS = ["shared-memory", "model-repository", "statistics", "trace",
                               "logging"]
_ENV_PREFIX = "PYTRITON_TRITON_CONFIG_"


@dataclasses.dataclass(kw_only=True)
class TritonConfig:
    """The server's settings, PyTriton 0.7's fields (tritonserver's flags); None: the
    flag's default."""

    model_repository: pathlib.Path | None = None
    id: str | None = None
    log_verbose: int | None = None
    log_file: pathlib.Path | None = None
    exit_timeout_secs: int | None = None
    exit_on_error: bool | None = None
    strict_readiness: bool | None = None
    allow_http: bool | None = None
    http_address: str | None = None
    http_port: int | None = None
    http_header_forward_pattern: str | None = None
    http_thread_count: int | None = None
    http_restricted_api: str | None = None
    allow_grpc: bool | None = None
    grpc_address: str | None = None
    grpc_port: int | None = None
    grpc_header_forward_pattern: str | None = None
    grpc_infer_allocation_pool_size: int | None = None
    grpc_use_ssl: bool | None = None
    grpc_use_ssl_mutual: bool | None = None
    grpc_server_cert: pathlib.Path | None = None
    grpc_server_key: pathlib.Path | None = None
    grpc_root_cert: pathlib.Path | None = None
    grpc_infer_response_compression_level: str | None = None
    grpc_keepalive_time: int | None = None
    grpc_keepalive_timeout: int | None = None
    grpc_keepalive_permit_without_calls: bool | None = None
    grpc_http2_max_pings_without_data: int | None = None
    grpc_http2_min_recv_ping_interval_without_data: int | None = None
    grpc_http2_max_ping_strikes: int | None = None
    grpc_restricted_protocol: str | None = None
    allow_metrics: bool | None = None
    allow_gpu_metrics: bool | None = None
    allow_cpu_metrics: bool | None = None
    metrics_interval_ms: int | None = None
    metrics_port: int | None = None
    metrics_address: str | None = None
    allow_sagemaker: bool | None = None
    sagemaker_port: int | None = None
    sagemaker_safe_port_range: str | None = None
    sagemaker_thread_count: int | None = None
    allow_vertex_ai: bool | None = None
    vertex_ai_port: int | None = None
    vertex_ai_thread_count: int | None = None
    vertex_ai_default_model: str | None = None
    metrics_config: list[str] | None = None
    trace_config: list[str] | None = None
    cache_config: list[str] | None = None
    cache_directory: str | None = None
    buffer_manager_thread_count: int | None = None

    def __post_init__(self) -> None:
        if self.allow_http not in (True, None) and self.allow_grpc not in (True, None):
            raise PyTritonValidationError("The `http` or `grpc` endpoint has to be allowed.")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, config: dict[str, Any]) -> TritonConfig:
        """Values converted to the fields' types ("8001" -> 8001, "a,b" -> a list); unknown
        names are ignored."""
        hints = typing.get_type_hints(cls)
        return cls(**{name: _cast(hints[name], value) for name, value in config.items()
                      if name in hints and value is not None})

    @classmethod
    def from_env(cls) -> TritonConfig:
        """From PYTRITON_TRITON_CONFIG_<FIELD> variables (a list: <FIELD>_0, <FIELD>_1 ...)."""
        found: dict[str, Any] = {}
        items: dict[str, dict[int, str]] = {}
        for name, value in os.environ.items():
            if not name.startswith(_ENV_PREFIX):
                continue
            key = name[len(_ENV_PREFIX):].lower()
            indexed = re.fullmatch(r"(.+?)_(\d+)", key)
            if indexed:
                items.setdefault(indexed[1], {})[int(indexed[2])] = value
            else:
                found[key] = value
        for key, values in items.items():
            found[key] = [values[i] for i in sorted(values)]
        return cls.from_dict(found)


def _cast(hint: Any, value: Any) -> Any:
    kind = next(t for t in typing.get_args(hint) if t is not type(None))
    if typing.get_origin(kind) is list:
        return value.split(",") if isinstance(value, str) else list(value)
    if kind is bool and isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return kind(value)


@dataclasses.dataclass
class TritonSecurityConfig:
    """Token-based access restriction. `restricted_endpoints` None: PyTriton's default
    groups; []: nothing restricted. `access_token` None: a random one (when restricting)."""

    access_token: str | None = None
    restricted_endpoints: list[str] | None = None

    def __post_init__(self) -> None:
        if self.restricted_endpoints is None:
            self.restricted_endpoints = list(DEFAULT_PROTECTED_ENDPOINTS)
        invalid = set(self.restricted_endpoints) - VALID_TRITON_ENDPOINTS
        if invalid:
            raise PyTritonValidationError(
                f"Invalid endpoint names: {', '.join(sorted(invalid))}. Valid endpoints are: "
                f"{', '.join(sorted(VALID_TRITON_ENDPOINTS))}")
        if self.access_token is None and self.restricted_endpoints:
            self.access_token = secrets.token_urlsafe(32)


def merged(config: TritonConfig | None) -> TritonConfig:
    """PyTriton's precedence: the fields given, then PYTRITON_TRITON_CONFIG_*, then defaults."""
    given = {k: v for k, v in (config.to_dict() if config else {}).items() if v is not None}
    from_env = {k: v for k, v in TritonConfig.from_env().to_dict().items() if v is not None}
    return TritonConfig(**{**from_env, **given})


def command_line(config: TritonConfig, security: TritonSecurityConfig) -> list[str]:
    """tritonserver's flags for the config, as PyTriton writes them (the model repository
    aside: the binding's workspace comes first)."""
    argv = []
    for name, value in config.to_dict().items():
        if value is None or name == "model_repository":
            continue
        flag = "--" + name.replace("_", "-")
        for item in value if isinstance(value, list) else [value]:
            text = str(item).lower() if isinstance(item, bool) else str(item)
            argv.append(f"{flag}={text}")
    if security.access_token and security.restricted_endpoints:
        restriction = (f"{','.join(security.restricted_endpoints)}:"
                       f"{TRITON_ACCESS_HEADER}={security.access_token}")
        argv += [f"--http-restricted-api={restriction}",
                 f"--grpc-restricted-protocol={restriction}"]
    return argv


def parse(argv: list[str], repositories: list[str]) -> argparse.Namespace:
    """`tritium serve`'s reading of the flags; PyTritonValidationError with the parser's
    message for a value it refuses."""
    words = [*(f"--model-repository={r}" for r in repositories), *argv]
    parser = argparse.ArgumentParser(prog="tritium serve", allow_abbrev=False)
    add_serve_arguments(parser)
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            args = parser.parse_args(words)
        check_tritonserver_flags(args)
        check_serve_args(args)
    except SystemExit:
        raise PyTritonValidationError(
            f"Invalid TritonConfig: {errors.getvalue().strip().splitlines()[-1]}") from None
    except ValueError as exc:
        raise PyTritonValidationError(f"Invalid TritonConfig: {exc}") from None
    warn_ignored_flags(args, words)
    return args
