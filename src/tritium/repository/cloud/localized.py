"""CloudRepository: a cloud model repository, localized (Triton's LocalizePath) into a local
temporary directory that everything else reads as an ordinary repository.

Model files, a python model's model.py, a compiled backend's library in the model folder,
label files, repository agents' locations: every reader of a local repository sees the
localized copy, so none of them knows the difference. `refresh` brings the copy up to date
with the bucket: it lists the objects under the repository's path, downloads those that are
new or whose tag (ETag, generation) changed, and removes local files whose object is gone.
A re-downloaded file is a new local file, so POLL's model fingerprints see every change. The
copy is removed when the server exits (`close`, and at the latest when the process ends).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import weakref
from collections.abc import Callable
from functools import partial
from pathlib import Path, PurePosixPath

from ...errors import TritonError
from .location import CloudLocation, parse_location
from .store import ObjectStore, StoredObject, open_store

log = logging.getLogger("tritium.repository")


class CloudRepository:
    def __init__(self, url: str) -> None:
        self.location: CloudLocation = parse_location(url)
        self.url = url
        self._store: ObjectStore | None = None
        # relative path -> the tag of the object downloaded there
        self._tags: dict[str, str] = {}
        # Keys already warned about (each poll lists them again).
        self._ignored: set[str] = set()
        self._lock = threading.Lock()
        self.root = Path(tempfile.mkdtemp(prefix="tritium-cloud-",
                                          dir=_mount_directory(self.location.scheme)))
        self._remove = weakref.finalize(self, shutil.rmtree, self.root, True)

    def refresh(self) -> None:
        """Make the local copy match the bucket; TritonError if the service cannot be reached,
        refuses the credentials, or fails a listing or a download (the copy keeps what it
        had)."""
        with self._lock:
            if self._store is None:
                self._store = open_store(self.location)
            objects = _storable(self._store.list_objects(), self._ignored)
            # Gone first: a file whose key became a folder (or back) makes way for it.
            self._remove_gone(objects)
            self._download_changed(self._store, objects)

    def close(self) -> None:
        """Remove the local copy."""
        self._remove()

    def _download_changed(self, store: ObjectStore, objects: list[StoredObject]) -> None:
        for stored in objects:
            target = self.root / stored.key
            if stored.key.endswith("/"):  # a folder marker
                self._store_locally(stored, partial(target.mkdir, parents=True, exist_ok=True))
                continue
            if self._tags.get(stored.key) == stored.tag and target.is_file():
                continue
            if self._store_locally(stored, partial(_download, store, stored.key, target)):
                self._tags[stored.key] = stored.tag
                log.debug("localized %s/%s", self.url, stored.key)

    def _store_locally(self, stored: StoredObject, write: Callable[[], None]) -> bool:
        """Run `write`; an object the local file system cannot hold (a name too long, a file
        where its folder should be, a full disk) is left out with a warning, as the objects
        whose names leave the repository are, instead of failing every scan."""
        try:
            write()
        except OSError as exc:
            _ignore(self._ignored, stored.key, f"it cannot be stored locally ({exc.strerror})")
            return False
        return True

    def _remove_gone(self, objects: list[StoredObject]) -> None:
        """Remove files and folders no object is (or lies under) any longer."""
        keep_files = {o.key for o in objects if not o.key.endswith("/")}
        keep_dirs = {str(parent) for o in objects for parent in PurePosixPath(o.key).parents}
        keep_dirs |= {o.key.rstrip("/") for o in objects if o.key.endswith("/")}
        for key in list(self._tags):
            if key not in keep_files:
                del self._tags[key]
        for path in sorted(self.root.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            relative = path.relative_to(self.root).as_posix()
            if path.is_dir() and not path.is_symlink():
                if relative not in keep_dirs:
                    shutil.rmtree(path, ignore_errors=True)
            elif relative not in keep_files:
                path.unlink(missing_ok=True)


def _download(store: ObjectStore, key: str, target: Path) -> None:
    """Download `key` to `target`, into place in one step: a model loading meanwhile reads the
    old file or the new."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, partial_path = tempfile.mkstemp(dir=target.parent, prefix=".download-")
    os.close(handle)
    try:
        store.download(key, Path(partial_path))
        os.replace(partial_path, target)
    except BaseException:
        Path(partial_path).unlink(missing_ok=True)
        raise


def _storable(objects: list[StoredObject], ignored: set[str]) -> list[StoredObject]:
    """The objects the local copy can hold, each key in its normal form (`a//b` and `a/./b` are
    `a/b`; the first object listed under a name wins)."""
    found: dict[str, StoredObject] = {}
    # An object named in normal form keeps its name whatever aliases are listed before it.
    for stored in sorted(objects, key=lambda o: _normal(o.key) != o.key):
        parts = PurePosixPath(stored.key).parts
        if not parts or stored.key.startswith("/") or ".." in parts:
            _ignore(ignored, stored.key, "its name leaves the model repository")
            continue
        key = _normal(stored.key)
        if key in found:
            _ignore(ignored, stored.key, f"another object is stored as '{key}'")
            continue
        found[key] = StoredObject(key, stored.size, stored.tag)
    return list(found.values())


def _normal(key: str) -> str:
    folder = "/" if key.endswith("/") else ""
    return "/".join(PurePosixPath(key).parts) + folder


def _ignore(ignored: set[str], key: str, why: str) -> None:
    """Warn once about an object left out of the local copy."""
    if key and key not in ignored:
        ignored.add(key)
        log.warning("ignoring object '%s': %s", key, why)



# Where Triton localizes each scheme's repositories, when set (else the system's temporary
# directory, as Triton's default /tmp).
_MOUNT_DIRECTORY_VARIABLES = {"s3": "TRITON_AWS_MOUNT_DIRECTORY",
                              "gs": "TRITON_GCS_MOUNT_DIRECTORY"}


def _mount_directory(scheme: str) -> str | None:
    """The folder the local copy is made in: TRITON_AWS_MOUNT_DIRECTORY (S3) or
    TRITON_GCS_MOUNT_DIRECTORY (GCS), created if missing, as Triton makes its copies there."""
    variable = _MOUNT_DIRECTORY_VARIABLES.get(scheme, "")
    folder = os.environ.get(variable, "") if variable else ""
    if not folder:
        return None
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise TritonError.internal(
            f"cannot use {variable}='{folder}' for the local copy of a cloud repository: "
            f"{exc.strerror}") from None
    return folder


__all__ = ["CloudRepository"]
