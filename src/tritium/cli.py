"""`tritium serve` (tritonserver's flags), `tritium check`, `tritium infer`, `tritium library`.

Flags keep tritonserver's names and meanings and accept both `--flag=value` and `--flag value`;
booleans accept true/false/1/0 as tritonserver does.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from .repository import repository_location
from .serve_flags import add_serve_arguments, check_serve_args, flag, version_text
from .server import ServerOptions
from .tritonserver_flags import (
    check_tritonserver_flags,
    metrics_settings,
    summary_quantiles,
    warn_ignored_flags,
)

log = logging.getLogger("tritium")


def _settings(entries: list[tuple[str, str, str]]) -> dict[str, dict[str, str]]:
    settings: dict[str, dict[str, str]] = {}
    for name, key, value in entries:
        settings.setdefault(name, {})[key] = value
    return settings


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tritium", description=__doc__, allow_abbrev=False)
    parser.add_argument("--version", action="version", version=version_text())
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve model repositories (tritonserver's flags)",
                                allow_abbrev=False)
    add_serve_arguments(serve)

    check = commands.add_parser("check", help="load and complete model configurations",
                                allow_abbrev=False)
    check.add_argument("repositories", nargs="+", type=Path)
    check.add_argument("--json", action="store_true", help="print each completed config as JSON")
    check.add_argument("--backend-directory", action="append", default=[], type=Path)
    flag(check, "--disable-auto-complete-config", default=False)

    library = commands.add_parser(
        "library", allow_abbrev=False,
        help="build Tritium's libtritonserver.so (Triton's C API) once and print its path")
    library.add_argument("--flags", action="store_true",
                         help="print the compiler flags of a C or C++ program that links it "
                              "(TRITONSERVER_ServerNew: the server inside the program)")

    # `tritium infer`: one request from the shell (infer_command.py).
    from .infer_command import add_parser as add_infer_parser

    add_infer_parser(commands)
    return parser


def options_from_args(args: argparse.Namespace) -> ServerOptions:
    # Triton's command_line_parser.cc: --strict-model-config is deprecated (warned on stderr);
    # --disable-auto-complete-config always wins over it.
    if args.strict_model_config is not None:
        print("Warning: '--strict-model-config' has been deprecated! Please use "
              "'--disable-auto-complete-config' instead.", file=sys.stderr)
    if args.disable_auto_complete_config and args.strict_model_config is False:
        print("Warning: Overriding deprecated '--strict-model-config' from False to True in "
              "favor of '--disable-auto-complete-config'!", file=sys.stderr)
    auto_complete = not (args.disable_auto_complete_config or args.strict_model_config)
    return ServerOptions(
        model_repositories=[repository_location(p) for p in args.model_repository],
        backend_directories=[Path(p) for p in args.backend_directory],
        repoagent_directory=Path(args.repoagent_directory),
        backend_config=_settings(args.backend_config),
        cache_config=_settings(args.cache_config),
        rate_limit=args.rate_limit,
        rate_limit_resources=args.rate_limit_resource,
        model_control_mode=args.model_control_mode,
        load_models=args.load_model,
        repository_poll_secs=args.repository_poll_secs,
        strict_readiness=args.strict_readiness,
        exit_on_error=args.exit_on_error,
        auto_complete=auto_complete,
        model_load_thread_count=args.model_load_thread_count,
        exit_timeout_secs=args.exit_timeout_secs,
        server_id=args.id,
        log_settings=args.log_settings,
        trace_default=args.trace_default,
        allow_client_shm=args.allow_client_shm,
        model_config_name=args.model_config_name,
        model_load_retry_count=args.model_load_retry_count,
        ray_address=args.ray_address,
        min_supported_compute_capability=args.min_supported_compute_capability,
        model_load_gpu_limit=dict(args.model_load_gpu_limit),
        summary_quantiles=summary_quantiles(metrics_settings(args)),
        model_namespacing=args.model_namespacing,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "infer":
        from .infer_command import run as run_infer

        return run_infer(args)
    if args.command == "library":
        from .backend.native import build

        return build.main(["--flags"] if args.flags else [])
    if args.command == "check":
        from .check import run_check

        return run_check(args.repositories, args.backend_directory, as_json=args.json,
                         auto_complete=not args.disable_auto_complete_config)
    try:
        check_tritonserver_flags(args)
        check_serve_args(args)
        args.log_settings.install()
    except (ValueError, OSError) as exc:
        print(exc, file=sys.stderr)
        return 1
    warn_ignored_flags(args, list(sys.argv[1:] if argv is None else argv))
    return serve(args)


def serve(args: argparse.Namespace) -> int:
    from .serving import run

    coroutine = run(options_from_args(args), args)
    try:
        import uvloop
    except ImportError:  # uvloop is optional off Linux/macOS
        return asyncio.run(coroutine)
    return uvloop.run(coroutine)


if __name__ == "__main__":
    sys.exit(main())
