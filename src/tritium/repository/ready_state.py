"""The ready states of model versions (Triton's ModelReadyState) and a version's status.

A leaf of the core: the life cycle sets the states, the repository manager, the server and
`tritium check` read them, and none of them needs the others to do so.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..model import LoadedModel
from .model_timestamp import LoadStamp


class ModelReadyState(enum.Enum):
    UNKNOWN = "UNKNOWN"
    READY = "READY"
    UNAVAILABLE = "UNAVAILABLE"
    LOADING = "LOADING"
    UNLOADING = "UNLOADING"


@dataclass
class VersionStatus:
    version: int
    state: ModelReadyState
    reason: str = ""
    model: LoadedModel | None = None
    # What a READY version was loaded (or last updated) from.
    stamp: LoadStamp | None = None
