"""The model a request or response belongs to, as they see it: its name and version.

At run time it is the `Model` handle (`model.py`) the request was made from; typing it by what
requests and responses use of it keeps the imports one way (the model imports the request and
the response, never the reverse).
"""

from __future__ import annotations

from typing import Protocol


class ModelRef(Protocol):
    """A model handle's identity (`Model` provides it)."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> int: ...
