"""Model repositories on cloud storage: `s3://` and `gs://` paths (Triton's filesystem
implementations; its `as://` is recognised and refused), localized into temporary directories.

`location` parses the paths, `credentials` finds what to sign with, `store` picks the client
(`s3`, `gcs`, each importing its library only when used) and `localized`
(CloudRepository) keeps the local copy the rest of the server reads.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path

from .localized import CloudRepository
from .location import is_cloud_path


def repository_location(path: str | PathLike[str]) -> str | Path:
    """A `--model-repository` as the server keeps it: a cloud path stays the text it is
    (`Path` would fold its `//`), anything else is a local Path."""
    text = str(path)
    return text if is_cloud_path(text) else Path(text)


__all__ = ["CloudRepository", "is_cloud_path", "repository_location"]
