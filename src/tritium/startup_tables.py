"""The tables tritonserver logs at start-up: backends, models, server options.

Counterpart: Triton's server.cc (backend and model tables) and tritonserver.cc (the options
table). A Triton user reads these to see what started with which settings; Tritium prints the
same tables, with the same rows where Tritium has the setting.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from .server import EXTENSIONS, SHARED_MEMORY_EXTENSIONS, InferenceServer

# A table's record is written as it is, not quoted (as Triton prints its tables).
RAW = {"raw": True}


def table(rows: Sequence[Sequence[str]]) -> str:
    """A `+---+` bordered table; the first row is the heading."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    lines = [rule]
    for index, row in enumerate(rows):
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
        if index == 0:
            lines.append(rule)
    lines.append(rule)
    return "\n".join(lines)


def backend_table(server: InferenceServer) -> str:
    """Backend | Path | Config, as Triton's: the config as {"cmdline": {...}} JSON."""
    rows = [("Backend", "Path", "Config")]
    for name, origin, config in server.backends.loaded_backends():
        rows.append((name, origin, json.dumps({"cmdline": config}, separators=(",", ":"))))
    return table(rows)


def model_table(server: InferenceServer) -> str:
    """The table tritonserver prints after loading: model, version, status or its error."""
    rows = [("Model", "Version", "Status")]
    for name, versions in sorted(server.model_states().items()):
        for version, status in sorted(versions.items()):
            text = status.state.value
            if status.reason and status.state.value == "UNAVAILABLE":
                text = f"UNAVAILABLE: {status.reason}"
            rows.append((name, str(version) if version >= 0 else "-", text))
    return table(rows)


_CONTROL_MODES = {"none": "MODE_NONE", "poll": "MODE_POLL", "explicit": "MODE_EXPLICIT"}


def options_table(server: InferenceServer) -> str:
    """Option | Value: Triton's rows for the settings Tritium has."""
    options = server.options
    extensions = list(EXTENSIONS)
    if options.allow_client_shm:
        at = extensions.index("model_configuration") + 1
        extensions[at:at] = SHARED_MEMORY_EXTENSIONS
    rows = [("Option", "Value"), ("server_id", server.id), ("server_version", server.version),
            ("server_extensions", " ".join(extensions))]
    for index, path in enumerate(options.model_repositories):
        rows.append((f"model_repository_path[{index}]", str(path)))
    rows += [
        ("model_control_mode", _CONTROL_MODES.get(options.model_control_mode,
                                                  options.model_control_mode)),
    ]
    for index, name in enumerate(options.load_models):
        rows.append((f"startup_models_{index}", name))
    rows += [
        ("strict_model_config", str(int(not options.auto_complete))),
        ("model_config_name", options.model_config_name),
        ("rate_limit", options.rate_limit.upper()),
    ]
    for index, (name, count, device) in enumerate(options.rate_limit_resources):
        rows.append((f"rate_limit_resource[{index}]", f"{name}:{count}:{device}"))
    rows.append(("min_supported_compute_capability", f"{server.gpus.min_compute_capability:.1f}"))
    for device_id, fraction in sorted(server.gpus.load_limits.items()):
        rows.append((f"model_load_gpu_limit{{{device_id}}}", f"{fraction:g}"))
    rows += [
        ("strict_readiness", str(int(options.strict_readiness))),
        ("exit_timeout", f"{options.exit_timeout_secs:g}"),
        ("cache_enabled", str(int(server.response_cache is not None))),
    ]
    return table(rows)


def log_tables(server: InferenceServer, log: logging.Logger) -> None:
    """The three tables at INFO, as Triton logs them once its server has started (`tritium
    serve`, the in-process API, a C program's TRITONSERVER_ServerNew)."""
    if log.isEnabledFor(logging.INFO):
        for text in (backend_table(server), model_table(server), options_table(server)):
            log.info("\n%s", text, extra=RAW)


__all__ = ["RAW", "backend_table", "log_tables", "model_table", "options_table", "table"]
