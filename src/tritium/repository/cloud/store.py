"""ObjectStore: what a cloud repository needs of a storage service, and `open_store`, which
picks the client for a location's scheme.

Each client lives in its own module (s3, gcs) and imports its library only when a
repository of its scheme is opened, so a server with local repositories alone never imports
one, and a missing library is one line naming the extra to install.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ...errors import TritonError
from .location import CloudLocation

# Each scheme's client module, the library it imports, and Tritium's extra that installs it.
_CLIENTS = {
    "s3": ("s3", "boto3", "s3"),
    "gs": ("gcs", "google.cloud.storage", "gcs"),
}


@dataclass(frozen=True)
class StoredObject:
    """One object under the repository's prefix. `key` is relative to the prefix, with `/`
    between folders; a key ending in `/` is a folder marker. `tag` changes whenever the
    object's content may have (S3's ETag, GCS's generation)."""

    key: str
    size: int
    tag: str


class ObjectStore(Protocol):
    def list_objects(self) -> list[StoredObject]:
        """Every object under the prefix; TritonError if the service refuses."""

    def download(self, key: str, destination: Path) -> None:
        """Write the object `key` (relative to the prefix) to `destination`."""


def open_store(location: CloudLocation) -> ObjectStore:
    """A client for `location`, checked as Triton checks it (S3: the bucket answers); a
    TritonError in Triton's words when the credentials are refused, or naming the extra to
    install when its library is missing."""
    module_name, library, extra = _CLIENTS[location.scheme]
    try:
        importlib.import_module(library)
    except ImportError:
        raise TritonError.internal(
            f"{location.scheme}:// file-system not supported: install Tritium's '{extra}' extra "
            f"(pip install 'tritium[{extra}]')") from None
    module = importlib.import_module(f"{__package__}.{module_name}")
    store: ObjectStore = module.open_store(location)
    return store


__all__ = ["ObjectStore", "StoredObject", "open_store"]
