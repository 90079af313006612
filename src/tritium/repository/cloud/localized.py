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
from pathlib import Path, PurePosixPath

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
        self._lock = threading.Lock()
        self.root = Path(tempfile.mkdtemp(prefix="tritium-cloud-"))
        self._remove = weakref.finalize(self, shutil.rmtree, self.root, True)

    def refresh(self) -> None:
        """Make the local copy match the bucket; TritonError if the service cannot be reached,
        refuses the credentials, or fails a listing or a download (the copy keeps what it
        had)."""
        with self._lock:
            if self._store is None:
                self._store = open_store(self.location)
            objects = [o for o in self._store.list_objects() if _safe(o.key)]
            self._download_changed(self._store, objects)
            self._remove_gone(objects)

    def close(self) -> None:
        """Remove the local copy."""
        self._remove()

    def _download_changed(self, store: ObjectStore, objects: list[StoredObject]) -> None:
        for stored in objects:
            target = self.root / stored.key
            if stored.key.endswith("/"):  # a folder marker
                target.mkdir(parents=True, exist_ok=True)
                continue
            if self._tags.get(stored.key) == stored.tag and target.is_file():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            # Into place in one step: a model loading meanwhile reads the old file or the new.
            handle, partial = tempfile.mkstemp(dir=target.parent, prefix=".download-")
            os.close(handle)
            try:
                store.download(stored.key, Path(partial))
                os.replace(partial, target)
            except BaseException:
                Path(partial).unlink(missing_ok=True)
                raise
            self._tags[stored.key] = stored.tag
            log.debug("localized %s/%s", self.url, stored.key)

    def _remove_gone(self, objects: list[StoredObject]) -> None:
        """Remove files and folders no object is (or lies under) any longer."""
        keep_files = {o.key for o in objects if not o.key.endswith("/")}
        keep_dirs = {str(parent) for o in objects
                     for parent in PurePosixPath(o.key.rstrip("/") + "/x").parents}
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


def _safe(key: str) -> bool:
    """Whether `key` stays inside the local copy (no `..`, no absolute path)."""
    parts = PurePosixPath(key).parts
    if not parts or key.startswith("/") or ".." in parts:
        if key:
            log.warning("ignoring object '%s': its name leaves the model repository", key)
        return False
    return True


__all__ = ["CloudRepository"]
