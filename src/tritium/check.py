"""`tritium check DIR...`: load every model as the server would, print its completed config.

Loading for real (backend auto-complete included) is the only way to show the configuration the
server would serve; nothing is served, and everything is unloaded before exit. A model that fails
prints the file it came from and the reason (a syntax error carries the line).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from pathlib import Path
from typing import TextIO

from google.protobuf import text_format

from .errors import TritonError
from .repository import ModelReadyState
from .server import InferenceServer, ServerOptions


def run_check(
    repositories: list[Path], backend_directories: list[Path], *, as_json: bool, auto_complete: bool
) -> int:
    """Check the repositories; the report goes to stdout, anything the models print (their
    stubs inherit the process's stdout) to stderr, and each problem is reported once (the
    server's own log lines about it are left out)."""
    sys.stdout.flush()
    report = os.fdopen(os.dup(1), "w")
    saved = os.dup(1)
    os.dup2(2, 1)
    logging.disable(logging.CRITICAL)
    try:
        return _check(repositories, backend_directories, as_json=as_json,
                      auto_complete=auto_complete, report=report)
    finally:
        sys.stdout.flush()
        logging.disable(logging.NOTSET)
        os.dup2(saved, 1)
        os.close(saved)
        report.close()


def _check(repositories: list[Path], backend_directories: list[Path], *, as_json: bool,
           auto_complete: bool, report: TextIO) -> int:
    local: list[str | Path] = [*repositories]
    options = ServerOptions(
        model_repositories=local,
        backend_directories=backend_directories,
        exit_on_error=False,
        auto_complete=auto_complete,
        strict_readiness=False,
    )
    server = InferenceServer(options)
    try:
        server.start()
    except TritonError as exc:
        print(f"error: {exc}", file=report)
        return 2
    failed = 0
    try:
        states = server.model_states()
        for name, reason in sorted(_unreadable(server, set(states)).items()):
            failed += 1
            config_path = _config_path(server, name)
            print(f"{name}: INVALID ({_source_of(reason, config_path)}): {reason}", file=report)
        for name, versions in sorted(states.items()):
            ready = [s for s in versions.values() if s.state is ModelReadyState.READY]
            broken = [s for s in versions.values() if s.state is not ModelReadyState.READY]
            for status in broken:
                failed += 1
                source = _source_of(status.reason, _config_path(server, name))
                version = f" version {status.version}" if status.version >= 0 else ""
                print(f"{name}{version}: INVALID ({source}): {status.reason}", file=report)
            if ready:
                newest = max(ready, key=lambda s: s.version)
                config = server.model_config(name, str(newest.version))
                print(f"{name}: OK", file=report)
                if as_json:
                    print(json.dumps(server.model_config_json(name, str(newest.version)), indent=2),
                          file=report)
                else:
                    print(text_format.MessageToString(config), end="", file=report)
    finally:
        server.shutdown()
    return 1 if failed else 0


def _unreadable(server: InferenceServer, known: set[str]) -> dict[str, str]:
    """The models the server left out because it could not read them (a name in two
    repositories, a configuration that does not parse or validate), with why: as Triton's,
    the server only logs them."""
    scan = server.repository.scan()
    found = dict(scan.errors)
    for name, source in scan.models.items():
        if name in known:
            continue
        try:
            server.repository.model_config(source)
        except TritonError as exc:
            found[name] = exc.message
        except Exception as exc:
            found[name] = f"{type(exc).__name__}: {exc}"
    return found


# A frame of the "At:" traceback Triton's python backend adds to an error: `  <file>(<line>): `.
_FRAME = re.compile(r"^\s+(\S.*?)\((\d+)\): ", re.MULTILINE)


def _source_of(reason: str, config_path: Path) -> str:
    """The file a problem comes from: the model's own file (and line) for an exception the
    model raised, else the configuration."""
    model_dir = config_path.parent.resolve()
    for match in _FRAME.finditer(reason):
        path = Path(match.group(1))
        if path.resolve().is_relative_to(model_dir):
            return f"{path}:{match.group(2)}"
    return str(config_path)


def _config_path(server: InferenceServer, name: str) -> Path:
    for repository in server.repository.repositories:
        if (repository / name).is_dir():
            return repository / name / "config.pbtxt"
    return Path(name)
