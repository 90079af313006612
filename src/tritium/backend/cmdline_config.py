"""Triton's backend command-line configuration: the settings a backend is initialized with.

`--backend-config` gives `{backend name: {setting: value}}`, the "" entry for every backend.
The server adds its own global settings after the user's (Triton's TRITONSERVER_ServerNew), so
they replace a global setting of the same name while a backend's own setting replaces them.
For each model load the settings are resolved for its backend, global then the backend's own,
in setting order, and the model defaults it lacks are appended (Triton's TritonModel::Create),
which a verbose server logs with Triton's words: L0_backend_config reads those lines.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger("tritium.backend")

# Triton's default --backend-directory, handed to every backend as "backend-directory".
DEFAULT_BACKEND_DIRECTORY = Path("/opt/tritonserver/backends")
# The defaults every model's backend gets when no setting names them.
MODEL_DEFAULTS = {"default-max-batch-size": "4"}

CmdlineConfigMap = dict[str, dict[str, str]]


def with_server_settings(config: CmdlineConfigMap, *, auto_complete: bool,
                         min_compute_capability: float,
                         backend_directory: Path) -> CmdlineConfigMap:
    """`config` with the server's global settings added after the user's global ones."""
    server = {
        # Triton's name reverses the flag's sense: true unless --disable-auto-complete-config.
        "auto-complete-config": "true" if auto_complete else "false",
        # As C++'s std::to_string(double) writes it: 6.000000.
        "min-compute-capability": f"{min_compute_capability:f}",
        "backend-directory": str(backend_directory),
    }
    return {**config, "": {**config.get("", {}), **server}}


def resolve(config: CmdlineConfigMap, backend: str) -> dict[str, str]:
    """The settings of `backend` for one model load: the global ones, then its own over them,
    by setting name; then the model defaults no setting named."""
    merged = {**config.get("", {}), **config.get(backend, {})}
    resolved = dict(sorted(merged.items()))
    for setting, value in MODEL_DEFAULTS.items():
        if setting in resolved:
            log.debug("Found overwritten default setting: %s,%s", setting, resolved[setting])
        else:
            log.debug("Adding default backend config setting: %s,%s", setting, value)
            resolved[setting] = value
    return resolved
