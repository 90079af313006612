"""`tritium check DIR...`: load every model as the server would, print its completed config.

Loading for real (backend auto-complete included) is the only way to show the configuration the
server would serve; nothing is served, and everything is unloaded before exit. A model that fails
prints the file it came from and the reason (a syntax error carries the line).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from google.protobuf import text_format

from .errors import TritonError
from .repository import ModelReadyState
from .server import InferenceServer, ServerOptions


def run_check(
    repositories: list[Path], backend_directories: list[Path], *, as_json: bool, auto_complete: bool
) -> int:
    options = ServerOptions(
        model_repositories=repositories,
        backend_directories=backend_directories,
        exit_on_error=False,
        auto_complete=auto_complete,
        strict_readiness=False,
    )
    server = InferenceServer(options)
    try:
        server.start()
    except TritonError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failed = 0
    try:
        for name, versions in sorted(server.model_states().items()):
            ready = [s for s in versions.values() if s.state is ModelReadyState.READY]
            broken = [s for s in versions.values() if s.state is not ModelReadyState.READY]
            for status in broken:
                failed += 1
                source = _config_path(server, name)
                version = f" version {status.version}" if status.version >= 0 else ""
                print(f"{name}{version}: INVALID ({source}): {status.reason}")
            if ready:
                newest = max(ready, key=lambda s: s.version)
                config = server.model_config(name, str(newest.version))
                print(f"{name}: OK")
                if as_json:
                    print(json.dumps(server.model_config_json(name, str(newest.version)), indent=2))
                else:
                    print(text_format.MessageToString(config), end="")
    finally:
        server.shutdown()
    return 1 if failed else 0


def _config_path(server: InferenceServer, name: str) -> Path:
    for repository in server.options.model_repositories:
        if (repository / name).is_dir():
            return repository / name / "config.pbtxt"
    return Path(name)
