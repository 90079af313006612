"""What a model directory looked like (Triton's ModelTimestamp), and whether a reload of a
serving version must load it anew (Triton's ConfigChangeRequiresReload).

POLL compares `fingerprint`s of whole model directories to find changed models. A reload of a
version that is serving loads it anew only if the version's files changed (its version folder,
or a file beside the configuration that is not a version folder) or its configuration changed
in more than `instance_group` and `version_policy`; otherwise Triton updates the serving
version's instances in place, and so does the life cycle.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tritonclient.grpc import model_config_pb2 as mc

# Configuration fields a reload may change without loading the version anew.
_UPDATABLE_FIELDS = ("instance_group", "version_policy")


def fingerprint(path: Path) -> tuple:
    """Every file and folder under a model directory, with its size and modification time (a
    changed config, a new or removed version, a replaced file)."""
    entries = []
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for entry in [*dirs, *sorted(files)]:
            full = os.path.join(root, entry)
            try:
                info = os.stat(full)
            except OSError:
                continue
            entries.append((os.path.relpath(full, path), info.st_size, info.st_mtime_ns))
    return tuple(entries)


def version_fingerprint(path: Path, version: int, config_name: str = "") -> tuple:
    """What a version's model is made of: its version folder, and what lies beside the
    configuration except the configuration (`config.pbtxt`, or the `configs` folder with
    --model-config-name) and the version folders."""
    config_entry = "configs" if config_name else "config.pbtxt"
    try:
        entries = sorted(os.listdir(path))
    except OSError:
        return ()
    stamp: list[tuple] = []
    for entry in entries:
        if entry == config_entry or (entry.isdigit() and entry != str(version)):
            continue
        full = path / entry
        try:
            info = os.stat(full)
        except OSError:
            continue
        stamp.append((entry, info.st_size, info.st_mtime_ns))
        if full.is_dir():
            stamp.append(fingerprint(full))
    return tuple(stamp)


@dataclass(frozen=True)
class LoadStamp:
    """What a serving version was loaded (or last updated) from: the configuration as read
    from the repository (before the backend completed it) and its files' fingerprint."""

    config: mc.ModelConfig
    files: tuple

    def updatable_to(self, config: mc.ModelConfig, files: tuple) -> bool:
        """Whether a reload with `config` and `files` may update the instances in place."""
        return files == self.files and _alike(self.config, config)


def _alike(old: mc.ModelConfig, new: mc.ModelConfig) -> bool:
    """Equal but for the fields a reload may change in place."""
    left, right = mc.ModelConfig(), mc.ModelConfig()
    left.CopyFrom(old)
    right.CopyFrom(new)
    for field in _UPDATABLE_FIELDS:
        left.ClearField(field)
        right.ClearField(field)
    return left == right
