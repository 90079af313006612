"""`tritium serve`'s flags: declared, and settled where argparse alone cannot.

Flags keep tritonserver's names and meanings and accept both `--flag=value` and `--flag value`;
booleans accept true/false/1/0 as tritonserver does. Kept apart from cli.py (the commands) so
that code reading tritonserver flags in-process (PyTriton's TritonConfig) does not import the
commands, which import the in-process API.
"""

from __future__ import annotations

import argparse
import socket
import sys
from typing import Any

from .cloud_flags import storage_uri
from .frontend.busy_poll import DEFAULT_BUDGET_US
from .frontend.extensions.restricted_api import build_restrictions
from .frontend.grpc.options import GrpcOptions
from .frontend.grpc.server import DEFAULT_MAX_MESSAGE_SIZE
from .frontend.http.limits import (
    DEFAULT_HEADER_TIMEOUT_S,
    DEFAULT_KEEPALIVE_TIMEOUT_S,
    DEFAULT_MAX_HEADER_SIZE,
    DEFAULT_MAX_INPUT_SIZE,
    DEFAULT_MAX_URL_SIZE,
)
from .logging_settings import LogSettings, verbose_level
from .scheduler.rate_limiter import parse_resource
from .trace_settings import BadOption, parse_trace_config
from .tritonserver_flags import add_tritonserver_flags, describe_flags, number_type


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got '{text}'")


def _cache_setting(text: str) -> tuple[str, str, str]:
    """--cache-config's `<cache>,<setting>=<value>`."""
    name, _, setting = text.rpartition(",")
    key, sep, value = setting.partition("=")
    if not sep or not key or not name:
        raise argparse.ArgumentTypeError(
            f"--cache-config must be <cache>,<setting>=<value>, got '{text}'")
    return name, key, value


def _backend_setting(text: str) -> tuple[str, str, str]:
    """--backend-config's `<backend>,<setting>=<value>`, or `<setting>=<value>` for every
    backend, split as tritonserver splits it (the first comma, then the first '=' after it)
    and refused with its messages (ValueError): a leading comma, no '=', an empty setting or
    value."""
    comma = text.find(",")
    if comma == 0:
        raise ValueError(
            "No backend specified. --backend-config option format is <backend name>,"
            f"<setting>=<value> or <setting>=<value>. Got {text}")
    name, setting = (text[:comma], text[comma + 1:]) if comma > 0 else ("", text)
    key, sep, value = setting.partition("=")
    if not sep or not key or not value:
        raise ValueError(
            "--backend-config option format is '<backend name>,<setting>=<value>'. "
            f"Got {text}")
    return name, key, value


def _verbose_level(text: str) -> int:
    """--log-verbose: a level, or true/false (1/0) in any case, as tritonserver reads it
    (SageMaker's serve script passes --log-verbose=true); its bound is checked with the other
    settings (`check_serve_args`)."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return int(lowered == "true")
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: '{text}'") from None


_positive_int = number_type(int, "a whole number", zero=False)
_positive_seconds = number_type(float, "a number of seconds", zero=False)
_non_negative_int = number_type(int, "a whole number", zero=True)
# --repository-poll-secs: 0 polls only at start-up, as tritonserver does.
_non_negative_seconds = number_type(float, "a number of seconds", zero=True)


def _rate_limit_resource(text: str) -> tuple[str, int, int]:
    try:
        return parse_resource(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def flag(parser: argparse.ArgumentParser, name: str, **kwargs: Any) -> None:
    """A boolean flag that also works bare (`--allow-http` means true)."""
    parser.add_argument(name, type=_bool, nargs="?", const=True, **kwargs)


_DEPRECATED_TRACE_FLAGS = {
    "--trace-file": "triton,file", "--trace-level": "level", "--trace-rate": "rate",
    "--trace-count": "count", "--trace-log-frequency": "triton,log-frequency",
}


_DEPRECATED_TRACE_HINTS = {
    "--trace-file": "triton,file=<filepath>", "--trace-level": "level=<OFF|TIMESTAMPS|TENSORS>",
    "--trace-rate": "rate=<rate value>", "--trace-count": "count=<count value>",
    "--trace-log-frequency": "triton,log-frequency=<log frequency value>",
}


def _trace_dest(setting: str) -> str:
    return "trace_" + setting.replace(",", "_").replace("-", "_")


def add_serve_arguments(serve: argparse.ArgumentParser) -> None:
    """Declare every `tritium serve` flag on `serve` (the CLI's subcommand, or a parser of
    its own for code that reads tritonserver flags: tritium.inprocess.pytriton)."""
    serve.add_argument("--version", action="version", version=version_text())
    # Not needed when AIP_STORAGE_URI names one (cloud_flags).
    serve.add_argument("--model-repository", "--model-store", action="append", default=[],
                       dest="model_repository", required=not storage_uri(),
                       help="repeatable")
    serve.add_argument("--backend-directory", action="append", default=[])
    serve.add_argument("--backend-config", action="append", default=[])
    serve.add_argument("--cache-config", action="append", default=[], type=_cache_setting)
    # Values of these three are case-insensitive, as Triton lower-cases them.
    serve.add_argument("--rate-limit", choices=["off", "execution_count"], default="off",
                       type=str.lower)
    serve.add_argument("--rate-limit-resource", action="append", default=[],
                       type=_rate_limit_resource, help="<name>:<count>[:<device>], repeatable")
    serve.add_argument("--http-port", type=int, default=8000)
    serve.add_argument("--grpc-port", type=int, default=8001)
    serve.add_argument("--metrics-port", type=int, default=8002)
    serve.add_argument("--http-address", default="0.0.0.0")
    serve.add_argument("--grpc-address", default="0.0.0.0")
    serve.add_argument("--metrics-address", default=None)
    serve.add_argument("--openai-port", type=int, default=None,
                       help="serve the OpenAI-compatible API for text-generation models on "
                       "this port")
    serve.add_argument("--openai-address", default=None, help="default: --http-address")
    serve.add_argument("--openai-tokenizer", default=None, metavar="DIR",
                       help="a Hugging Face tokenizer folder whose chat template renders chat "
                       "messages for models that take none (Triton's vLLM backend's), as the "
                       "--tokenizer of Triton's OpenAI frontend")
    # None: true unless AIP_MODE=PREDICTION (cloud_flags settles them).
    flag(serve, "--allow-http", default=None)
    flag(serve, "--allow-grpc", default=None)
    flag(serve, "--allow-metrics", default=True)
    serve.add_argument("--model-control-mode", choices=["none", "explicit", "poll"], default="none",
                       type=str.lower)
    serve.add_argument("--load-model", action="append", default=[])
    serve.add_argument("--repository-poll-secs", type=_non_negative_seconds, default=15.0)
    flag(serve, "--strict-readiness", default=True)
    flag(serve, "--exit-on-error", default=True)
    flag(serve, "--disable-auto-complete-config", default=False)
    flag(serve, "--strict-model-config", default=None,
          help="deprecated: true means --disable-auto-complete-config")
    serve.add_argument("--model-load-thread-count", type=_positive_int, default=4)
    serve.add_argument("--exit-timeout-secs", type=float, default=30.0)
    serve.add_argument("--log-verbose", type=_verbose_level, default=0)
    flag(serve, "--log-info", default=True)
    flag(serve, "--log-warning", default=True)
    flag(serve, "--log-error", default=True)
    serve.add_argument("--log-format", default="default", help='"default" or "ISO8601"')
    serve.add_argument("--log-file", default="", help="log to this file instead of the console")
    serve.add_argument("--trace-config", action="append", default=[],
                       help="[<mode>,]<setting>=<value>; repeatable")
    # tritonserver's deprecated spellings of --trace-config settings.
    for old, setting in _DEPRECATED_TRACE_FLAGS.items():
        serve.add_argument(old, action="append", default=[], dest=_trace_dest(setting))
    serve.add_argument("--http-restricted-api", action="append", default=[],
                       help="<groups>:<header key>=<value>; repeatable")
    serve.add_argument("--grpc-restricted-protocol", action="append", default=[],
                       help="<groups>:<header key>=<value>; repeatable")
    serve.add_argument("--http-max-input-size", type=_positive_int,
                       default=DEFAULT_MAX_INPUT_SIZE,
                       help="largest HTTP request body, in bytes, also after decompression "
                            "(default 64 MB)")
    serve.add_argument("--http-max-header-size", type=_positive_int,
                       default=DEFAULT_MAX_HEADER_SIZE,
                       help="largest HTTP request line and header section, in bytes; larger is "
                            "answered 431 and the connection closed (default: %(default)s)")
    serve.add_argument("--http-max-url-size", type=_positive_int, default=DEFAULT_MAX_URL_SIZE,
                       help="longest HTTP request URL, in bytes; longer is answered 414 and the "
                            "connection closed (default: %(default)s)")
    serve.add_argument("--http-header-timeout-secs", type=_positive_seconds,
                       default=DEFAULT_HEADER_TIMEOUT_S,
                       help="seconds a client may take to send a request's header section once "
                            "it started; later is answered 408 and closed (default: %(default)s)")
    serve.add_argument("--http-keepalive-timeout-secs", type=_positive_seconds,
                       default=DEFAULT_KEEPALIVE_TIMEOUT_S,
                       help="seconds an idle HTTP keep-alive connection is kept "
                            "(default: %(default)s)")
    # gRPC transport: TLS, keepalive and HTTP/2 limits as tritonserver spells and defaults them
    # (milliseconds), and Tritium's largest request message (frontend/grpc/options.py).
    flag(serve, "--grpc-use-ssl", default=False)
    flag(serve, "--grpc-use-ssl-mutual", default=False)
    serve.add_argument("--grpc-server-cert", default="")
    serve.add_argument("--grpc-server-key", default="")
    serve.add_argument("--grpc-root-cert", default="")
    serve.add_argument("--grpc-keepalive-time", type=_positive_int, default=7_200_000)
    serve.add_argument("--grpc-keepalive-timeout", type=_positive_int, default=20_000)
    flag(serve, "--grpc-keepalive-permit-without-calls", default=False)
    serve.add_argument("--grpc-http2-max-pings-without-data", type=_non_negative_int, default=2)
    serve.add_argument("--grpc-http2-min-recv-ping-interval-without-data",
                       type=_non_negative_int, default=300_000)
    serve.add_argument("--grpc-http2-max-ping-strikes", type=_non_negative_int, default=2)
    serve.add_argument("--grpc-max-connection-age", type=_positive_int, default=None)
    serve.add_argument("--grpc-max-connection-age-grace", type=_non_negative_int, default=None)
    serve.add_argument("--grpc-max-message-size", type=_positive_int,
                       default=DEFAULT_MAX_MESSAGE_SIZE,
                       help="largest gRPC request message, in bytes, also after decompression "
                            "(default 2147483647, Triton's fixed limit; Tritium's own flag)")
    serve.add_argument("--id", default="triton")
    serve.add_argument("--busy-poll-us", type=_non_negative_int, default=DEFAULT_BUDGET_US,
                       help="after answering the last request in flight, keep polling for the "
                            "next one this long before sleeping (default "
                            f"{DEFAULT_BUDGET_US}; 0: off; Tritium's own flag)")
    serve.add_argument("--ray-address", default="",
                       help="auto | ray://HOST:PORT | HOST:PORT: the Ray cluster that models "
                            "whose config has a 'ray' parameter place their instances on")
    flag(serve, "--allow-client-shm", default=False,
          help="let clients register system shared memory regions (off by default)")
    # The rest of tritonserver 2.51's flags, and help for every flag.
    add_tritonserver_flags(serve, flag)
    describe_flags(serve)


def version_text() -> str:
    from .version import TRITON_VERSION, __version__

    return f"tritium {__version__} (serves as Triton Inference Server {TRITON_VERSION})"


def check_serve_args(args: argparse.Namespace) -> None:
    """Settle the flags that need more than argparse: backend, log, trace and restricted-API
    settings.

    Raises ValueError naming the flag, as tritonserver's `Bad option` messages do.
    """
    trace_values = []
    for old, setting in _DEPRECATED_TRACE_FLAGS.items():
        values = getattr(args, _trace_dest(setting))
        for _ in values:  # tritonserver warns once per use, on stderr
            print(f"Warning: '{old}' has been deprecated and will be removed in future "
                  f"releases. Please use '--trace-config {_DEPRECATED_TRACE_HINTS[old]} instead.",
                  file=sys.stderr)
        trace_values += [f"{setting}={value}" for value in values]
    for flag, attribute, action in (
        ("--backend-config", "backend_config",
         lambda: [_backend_setting(text) for text in args.backend_config]),
        ("--log-verbose", "log_verbose", lambda: _log_verbose(args.log_verbose)),
        ("--log-format", "log_settings", lambda: LogSettings(
            args.log_verbose, args.log_info, args.log_warning, args.log_error,
            args.log_format, args.log_file)),
        ("--trace-config", "trace_default",
         lambda: parse_trace_config(trace_values + args.trace_config)),
        ("--http-restricted-api", "http_restrictions",
         lambda: build_restrictions("--http-restricted-api", args.http_restricted_api)),
        ("--grpc-restricted-protocol", "grpc_restrictions",
         lambda: build_restrictions("--grpc-restricted-protocol", args.grpc_restricted_protocol)),
        ("--grpc-use-ssl", "grpc_options", lambda: _grpc_options(args)),
    ):
        try:
            setattr(args, attribute, action())
        except BadOption:
            raise
        except ValueError as exc:
            raise ValueError(f'Bad option: "{flag}".\n{exc}') from None
    args.metrics_address = _metrics_address(args)


def _log_verbose(level: int) -> int:
    """--log-verbose as tritonserver keeps it: a 32-bit int (refused past that, in its words),
    a negative one as 0 (`logging_settings.verbose_level`)."""
    if not -2**31 <= level < 2**31:
        raise ValueError(f"Provided option value is out of bound. Got {level}")
    return verbose_level(level)


def _metrics_address(args: argparse.Namespace) -> str:
    """--metrics-address, else the HTTP address, as tritonserver defaults it; an HTTP address
    that names no host (given for an HTTP endpoint that is off, as L0_socket does) leaves the
    metrics on 0.0.0.0, with a warning, where tritonserver binds whatever inet_addr makes of
    it."""
    if args.metrics_address is not None:
        return str(args.metrics_address)
    address = str(args.http_address)
    try:
        socket.getaddrinfo(address, None)
    except (socket.gaierror, UnicodeError):
        print(f"Warning: the HTTP address '{address}' names no host: the metrics service "
              "listens on 0.0.0.0 (set --metrics-address)", file=sys.stderr)
        return "0.0.0.0"
    return address


def _grpc_options(args: argparse.Namespace) -> GrpcOptions:
    if (args.grpc_use_ssl or args.grpc_use_ssl_mutual) and not (
            args.grpc_server_cert and args.grpc_server_key):
        raise ValueError("--grpc-use-ssl needs --grpc-server-cert and --grpc-server-key")
    if args.grpc_use_ssl_mutual and not args.grpc_root_cert:
        raise ValueError("--grpc-use-ssl-mutual needs --grpc-root-cert")
    return GrpcOptions.from_args(args)
