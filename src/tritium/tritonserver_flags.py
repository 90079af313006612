"""The rest of tritonserver 2.51's command line, so existing launch scripts start unchanged.

Counterpart: tritonserver's `command_line_parser.cc`. `cli.py` declares the flags Tritium has
always implemented; this module adds every other flag Triton 2.51 accepts, with Triton's
meanings and defaults, and says what each one does here: applied (`--metrics-interval-ms`,
`--model-load-retry-count`, the header forward patterns, ...), or accepted with a warning
because it has no effect on a server without GPUs or worker threads. It also
gives the flags declared in `cli.py` their help texts, so `--help` explains every flag.
"""

from __future__ import annotations

import argparse
import logging
import math
from collections.abc import Callable
from typing import Any

from .cloud_flags import check_port_collision, port_range, settle_cloud_flags
from .frontend.extensions.header_forward import HeaderPattern
from .latency_summary import parse_quantiles

log = logging.getLogger("tritium")

# Triton's message for --load-model without explicit model control.
LOAD_MODEL_NEEDS_EXPLICIT = (
    "Use of '--load-model' requires setting '--model-control-mode=explicit' as well."
)

# Triton's --grpc-infer-response-compression-level values.
COMPRESSION_LEVELS = ("none", "low", "medium", "high")


def number_type(convert: Callable[[str], float], what: str, *,
                zero: bool) -> Callable[[str], float]:
    """An argparse type: `convert`ed text above 0, or from 0 on with `zero` (nan and junk
    refused too)."""
    bound = "of 0 or more" if zero else "greater than 0"

    def parse(text: str) -> float:
        try:
            value = convert(text)
        except ValueError:
            value = math.nan
        if not (value >= 0 if zero else value > 0):
            raise argparse.ArgumentTypeError(f"expected {what} {bound}, got '{text}'")
        return value

    return parse


_non_negative_int = number_type(int, "a whole number", zero=True)
_interval_ms = number_type(float, "milliseconds", zero=False)


def _header_pattern(text: str) -> HeaderPattern:
    try:
        return HeaderPattern(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected <setting>=<value>, got '{text}'")
    return key, value


def _gpu_limit(text: str) -> tuple[int, float]:
    """--model-load-gpu-limit <device_id>:<fraction>, as Triton reads it."""
    device, sep, fraction = text.partition(":")
    try:
        limit = (int(device), float(fraction))
    except ValueError:
        limit = (-1, -1.0)
    if not sep or limit[0] < 0 or not 0.0 <= limit[1] <= 1.0:
        raise argparse.ArgumentTypeError(
            f"expected <device_id>:<fraction> with a fraction in [0.0, 1.0], got '{text}'")
    return limit


# Memory-pool and transfer tuning of Triton's own CUDA memory manager, which Tritium does not
# have (frameworks allocate device memory themselves): accepted, warned about.
NO_GPU_FLAGS = (
    "--enable-peer-access", "--pinned-memory-pool-byte-size",
    "--cuda-memory-pool-byte-size", "--cuda-virtual-address-size",
    "--buffer-manager-thread-count", "--host-policy",
)
# Flags for parts Tritium does not have: accepted, warned about when given.
NO_EFFECT_FLAGS = {
    "--cache-directory": "the response cache is built in (only the 'local' cache)",
    "--http-thread-count": "HTTP requests are handled on the server's event loop",
    "--grpc-infer-allocation-pool-size": "gRPC request objects are not pooled",
    "--sagemaker-thread-count": "SageMaker requests are handled on the server's event loop",
    "--vertex-ai-thread-count": "Vertex AI requests are handled on the server's event loop",
}


def add_tritonserver_flags(serve: argparse.ArgumentParser, flag: Callable[..., None]) -> None:
    """Declare the tritonserver 2.51 flags `cli.py` does not; `flag(group, name, default=,
    help=)` declares a boolean flag as cli.py declares its own."""
    _flag = flag
    repo = serve.add_argument_group("model repository (more tritonserver flags)")
    repo.add_argument("--model-config-name", default=None,
                      help="the configuration file to read instead of config.pbtxt: "
                           "configs/<name>.pbtxt in the model folder, when it exists "
                           "(default: config.pbtxt)")
    repo.add_argument("--model-load-retry-count", type=_non_negative_int, default=0,
                      help="how many more times a model that fails to load is tried "
                           "(default: %(default)s)")
    _flag(repo, "--model-namespacing", default=False,
          help="give each model repository a namespace of its own, so that models of the "
               "same name in different repositories both load (default: false)")

    http = serve.add_argument_group("HTTP (more tritonserver flags)")
    _flag(http, "--reuse-http-port", default=False,
          help="let several servers listen on the same HTTP port (SO_REUSEPORT; default: false)")
    http.add_argument("--http-header-forward-pattern", type=_header_pattern, default=None,
                      help="request headers whose name matches this RE2 regular expression "
                           "(case-insensitive unless it says (?-i)) become request parameters "
                           "(default: none)")
    http.add_argument("--http-thread-count", type=_non_negative_int, default=None,
                      help="threads handling HTTP requests; accepted (HTTP runs on the event "
                           "loop)")

    grpc = serve.add_argument_group("GRPC (more tritonserver flags)")
    _flag(grpc, "--reuse-grpc-port", default=False,
          help="let several servers listen on the same gRPC port (SO_REUSEPORT; default: false)")
    grpc.add_argument("--grpc-header-forward-pattern", type=_header_pattern, default=None,
                      help="request metadata whose key matches this RE2 regular expression "
                           "(case-insensitive unless it says (?-i)) becomes request parameters "
                           "(default: none)")
    grpc.add_argument("--grpc-infer-allocation-pool-size", type=_non_negative_int, default=None,
                      help="request/response objects kept for reuse; accepted (not pooled here)")
    grpc.add_argument("--grpc-infer-response-compression-level", choices=COMPRESSION_LEVELS,
                      default="none", type=str.lower,
                      help="compress infer responses for clients that accept it: none, low "
                           "(gzip), medium or high (deflate) (default: %(default)s)")

    cloud = serve.add_argument_group("SageMaker and Vertex AI")
    _flag(cloud, "--allow-sagemaker", default=False,
          help="listen for SageMaker requests: /ping, /invocations, /models (default: false)")
    cloud.add_argument("--sagemaker-port", type=int, default=8080,
                       help="the port of the SageMaker endpoint (default: %(default)s)")
    cloud.add_argument("--sagemaker-safe-port-range", type=port_range, default=None,
                       help="<low>-<high>: the ports the other endpoints may listen on")
    cloud.add_argument("--sagemaker-thread-count", type=int, default=None,
                       help="threads handling SageMaker requests; accepted (they run on the "
                            "event loop)")
    _flag(cloud, "--allow-vertex-ai", default=None,
          help="listen for Vertex AI requests on AIP_PREDICT_ROUTE and AIP_HEALTH_ROUTE "
               "(default: true if AIP_MODE=PREDICTION, which also turns HTTP and gRPC off "
               "unless asked for, false otherwise)")
    cloud.add_argument("--vertex-ai-port", type=int, default=None,
                       help="the port of the Vertex AI endpoint (default: AIP_HTTP_PORT if set, "
                            "8080 otherwise)")
    cloud.add_argument("--vertex-ai-thread-count", type=int, default=None,
                       help="threads handling Vertex AI requests; accepted (they run on the "
                            "event loop)")
    cloud.add_argument("--vertex-ai-default-model", default="",
                       help="the model a predict request without a redirect infers (default: "
                            "the repository's only model)")

    metrics = serve.add_argument_group("metrics (more tritonserver flags)")
    _flag(metrics, "--allow-gpu-metrics", default=True,
          help="GPU utilization, memory, power and energy metrics of each GPU, read from NVML "
               "(default: true)")
    _flag(metrics, "--allow-cpu-metrics", default=True,
          help="CPU utilization and memory metrics (default: true)")
    metrics.add_argument("--metrics-interval-ms", type=_interval_ms, default=2000.0,
                         help="how often the CPU and GPU metrics are refreshed, in "
                              "milliseconds (default: 2000)")
    metrics.add_argument("--metrics-config", action="append", default=[], type=_setting,
                         help="<setting>=<value>: counter_latencies=true|false (default true); "
                              "repeatable")

    other = serve.add_argument_group("repository agents and caches (accepted)")
    other.add_argument("--repoagent-directory", default="/opt/tritonserver/repoagents",
                       help="where the repository agents models name are found, as "
                            "<dir>/<name>/libtritonrepoagent_<name>.so (default: "
                            "/opt/tritonserver/repoagents)")
    other.add_argument("--cache-directory", default=None,
                       help="where cache libraries are found; the local cache is built in")
    other.add_argument("--response-cache-byte-size", type=_non_negative_int, default=None,
                       help="DEPRECATED: the same as --cache-config=local,size=<bytes>")

    gpu = serve.add_argument_group("GPUs, memory and devices")
    gpu.add_argument("--pinned-memory-pool-byte-size", type=int, default=None,
                     help="pinned host memory for GPU transfers (Triton's default 256 MB)")
    gpu.add_argument("--cuda-memory-pool-byte-size", action="append", default=[],
                     help="<device>:<bytes> of CUDA memory pool (Triton's default 64 MB)")
    gpu.add_argument("--cuda-virtual-address-size", action="append", default=[],
                     help="<device>:<bytes> of virtual address space for growable state")
    gpu.add_argument("--min-supported-compute-capability", type=float, default=None,
                     help="GPUs below this compute capability are not used (default 6.0)")
    gpu.add_argument("--buffer-manager-thread-count", type=int, default=None,
                     help="threads copying tensors between devices (default 0)")
    gpu.add_argument("--host-policy", action="append", default=[],
                     help="<policy>,<setting>=<value>: numa-node, cpu-cores")
    gpu.add_argument("--model-load-gpu-limit", action="append", default=[],
                     type=_gpu_limit,
                     help="<device>:<fraction>: refuse to load models onto the GPU while more "
                          "than this fraction of its memory is in use")
    _flag(gpu, "--enable-peer-access", default=True,
          help="enable GPU peer access (default: true); no effect without GPUs")


# Help for the flags cli.py declares: their meaning, and the default where it helps.
_HELP = {
    "--model-repository": "a model repository directory; repeatable (--model-store also works)",
    "--backend-directory": "a directory searched for backends; repeatable",
    "--backend-config": "[<backend>,]<setting>=<value> for that backend's initialize (no "
                        "backend: every backend's); repeatable",
    "--cache-config": "<cache>,<setting>=<value>, e.g. local,size=1048576; repeatable",
    "--rate-limit": "off or execution_count (default: off)",
    "--rate-limit-resource": "<name>:<count>[:<device>]: how many of a resource exist; "
                             "repeatable",
    "--http-port": "HTTP port (default: 8000)",
    "--grpc-port": "gRPC port (default: 8001)",
    "--metrics-port": "Prometheus metrics port (default: 8002)",
    "--http-address": "address the HTTP server binds (default: 0.0.0.0)",
    "--grpc-address": "address the gRPC server binds (default: 0.0.0.0)",
    "--metrics-address": "address the metrics server binds (default: the HTTP address)",
    "--allow-http": "listen for HTTP requests (default: true, false when AIP_MODE=PREDICTION)",
    "--allow-grpc": "listen for gRPC requests (default: true, false when AIP_MODE=PREDICTION)",
    "--allow-metrics": "serve Prometheus metrics (default: true)",
    "--model-control-mode": "none (load all at start), poll (follow the repositories) or "
                            "explicit (load what --load-model and load requests name) "
                            "(default: none)",
    "--load-model": "a model to load at start-up with --model-control-mode=explicit ('*' "
                    "alone: all); repeatable",
    "--repository-poll-secs": "with poll: seconds between polls of the repositories; 0: "
                              "only the start-up one (default: 15)",
    "--strict-readiness": "ready only when every model is ready (default: true)",
    "--exit-on-error": "exit if a model fails to load at start-up (default: true)",
    "--disable-auto-complete-config": "do not complete model configurations (default: false)",
    "--model-load-thread-count": "threads loading models (default: 4)",
    "--exit-timeout-secs": "on exit, seconds to wait for in-flight requests (default: 30)",
    "--grpc-use-ssl": "serve gRPC over TLS (default: false)",
    "--grpc-use-ssl-mutual": "serve gRPC over TLS and require client certificates signed by "
                             "--grpc-root-cert (default: false)",
    "--grpc-server-cert": "PEM file of the gRPC server's certificate",
    "--grpc-server-key": "PEM file of the gRPC server's private key",
    "--grpc-root-cert": "PEM file of the root certificate client certificates are checked "
                        "against",
    "--grpc-keepalive-time": "milliseconds between keepalive pings (default: 7200000)",
    "--grpc-keepalive-timeout": "milliseconds to wait for a keepalive ping's acknowledgement "
                                "(default: 20000)",
    "--grpc-keepalive-permit-without-calls": "allow keepalive pings on a connection with no "
                                             "call (default: false)",
    "--grpc-http2-max-pings-without-data": "pings the server sends without data in between; "
                                           "0 is no limit (default: 2)",
    "--grpc-http2-min-recv-ping-interval-without-data": "fewest milliseconds between client "
                                                        "pings without data (default: 300000)",
    "--grpc-http2-max-ping-strikes": "pings too soon before the connection is closed; 0 is no "
                                     "limit (default: 2)",
    "--grpc-max-connection-age": "milliseconds a connection may live (default: unlimited)",
    "--grpc-max-connection-age-grace": "milliseconds an aged connection gets to finish its "
                                       "calls (default: unlimited)",
    "--log-verbose": "verbose logging level; 0 is off (default: 0)",
    "--log-info": "log info lines (default: true)",
    "--log-warning": "log warnings (default: true)",
    "--log-error": "log errors (default: true)",
    "--log-format": '"default" or "ISO8601" (default: default)',
    "--log-file": "log to this file instead of the console (default: the console)",
    "--trace-config": "[<mode>,]<setting>=<value>: level, rate, count, mode, triton,file, "
                      "triton,log-frequency; repeatable",
    "--trace-file": "DEPRECATED: use --trace-config triton,file=<path>",
    "--trace-level": "DEPRECATED: use --trace-config level=<OFF|TIMESTAMPS|TENSORS>",
    "--trace-rate": "DEPRECATED: use --trace-config rate=<rate> (default: 1000)",
    "--trace-count": "DEPRECATED: use --trace-config count=<count> (default: -1)",
    "--trace-log-frequency": "DEPRECATED: use --trace-config triton,log-frequency=<n> "
                             "(default: 0)",
    "--http-restricted-api": "<apis>:<header>=<value>: these API groups need that header; "
                             "repeatable",
    "--grpc-restricted-protocol": "<protocols>:<key>=<value>: these protocol groups need that "
                                  "metadata; repeatable",
    "--id": "the server's name in server metadata (default: triton)",
}


def describe_flags(serve: argparse.ArgumentParser) -> None:
    """Give each flag declared without help its meaning (and default)."""
    for action in serve._actions:
        for name in action.option_strings:
            if name in _HELP and not action.help:
                action.help = _HELP[name]
            elif name == "--strict-model-config":
                action.help = "DEPRECATED: true means --disable-auto-complete-config"


def check_tritonserver_flags(args: argparse.Namespace) -> None:
    """Settle what the environment decides (cloud_flags) and refuse combinations
    tritonserver refuses (ValueError with Triton's message)."""
    settle_cloud_flags(args)
    check_port_collision(args)
    if args.load_model and args.model_control_mode != "explicit":
        raise ValueError(f"Error: {LOAD_MODEL_NEEDS_EXPLICIT}")
    if args.model_config_name == "":
        raise ValueError("Error: empty argument for --model-config-name")
    args.model_config_name = args.model_config_name or ""
    for key, value in args.metrics_config:
        if key not in METRICS_SETTINGS:
            raise ValueError(f'Bad option: "--metrics-config".\nunknown metrics setting '
                             f"'{key}' (known: {', '.join(METRICS_SETTINGS)})")
        METRICS_SETTINGS[key](value)
    if args.response_cache_byte_size is not None:
        if args.cache_config:
            raise ValueError("Error: Incompatible flags --response-cache-byte-size and "
                             "--cache-config both provided. Please provide one or the other.")
        args.cache_config.append(("local", "size", str(args.response_cache_byte_size)))


def _bool_setting(text: str) -> bool:
    """A --metrics-config boolean: true or false, as Triton reads it."""
    if text not in ("true", "false"):
        raise ValueError(f'Bad option: "--metrics-config".\nexpected true or false, got '
                         f"'{text}'")
    return text == "true"


METRICS_SETTINGS: dict[str, Callable[[str], Any]] = {
    "counter_latencies": _bool_setting,
    # Triton's latency summaries: taken as tritonserver takes them (any value; only "true"
    # turns them on; quantiles "<quantile>:<error>,...").
    "summary_latencies": str,
    "summary_quantiles": str,
}


def summary_quantiles(settings: dict[str, Any]) -> tuple[tuple[float, float], ...] | None:
    """The latency summaries' (quantile, error) pairs, or None when they are off."""
    if settings.get("summary_latencies") != "true":
        return None
    return parse_quantiles(settings.get("summary_quantiles", ""))


def metrics_settings(args: argparse.Namespace) -> dict[str, Any]:
    return {key: METRICS_SETTINGS[key](value) for key, value in args.metrics_config}


def given_flags(argv: list[str]) -> set[str]:
    """The long flags present on a command line (`--a=b` and `--a b` alike)."""
    return {word.split("=", 1)[0] for word in argv if word.startswith("--")}


def warn_ignored_flags(args: argparse.Namespace, argv: list[str]) -> None:
    """One warning per accepted flag that changes nothing here."""
    present = given_flags(argv)
    for flag in NO_GPU_FLAGS:
        if flag in present:
            log.warning("%s has no effect: Tritium has no memory pools of its own (the "
                        "frameworks allocate GPU memory)", flag)
    for flag, reason in NO_EFFECT_FLAGS.items():
        if flag in present:
            log.warning("%s has no effect: %s", flag, reason)


__all__ = [
    "COMPRESSION_LEVELS", "LOAD_MODEL_NEEDS_EXPLICIT", "add_tritonserver_flags",
    "check_tritonserver_flags", "describe_flags", "metrics_settings", "number_type",
    "summary_quantiles",
    "warn_ignored_flags",
]
