"""Google Cloud Storage through google-cloud-storage.

As Triton's client: the service account key file the credential names (the credential file's
"gs" entry, or GOOGLE_APPLICATION_CREDENTIALS), else the application default credentials; a
client that cannot be made is Triton's "Unable to create GCS client" error. The library's
STORAGE_EMULATOR_HOST points it at an emulator (tests, local development).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from google.api_core.exceptions import GoogleAPIError
from google.auth.exceptions import GoogleAuthError
from google.cloud import storage

from ...errors import TritonError
from .credentials import find_credential
from .location import CloudLocation
from .store import StoredObject


class GcsStore:
    def __init__(self, location: CloudLocation, client: Any) -> None:
        self.location = location
        self._bucket = client.bucket(location.bucket)
        self._client = client
        self._prefix = f"{location.prefix}/" if location.prefix else ""

    def list_objects(self) -> list[StoredObject]:
        try:
            blobs = list(self._client.list_blobs(self.location.bucket, prefix=self._prefix))
        except (GoogleAPIError, GoogleAuthError) as exc:
            raise TritonError.internal(
                f"Could not list contents of directory at {self.location.url}: {exc}") from None
        found = []
        for blob in blobs:
            key = blob.name[len(self._prefix):]
            if key:
                tag = f"{blob.generation}:{blob.etag}:{blob.size}"
                found.append(StoredObject(key, blob.size or 0, tag))
        return found

    def download(self, key: str, destination: Path) -> None:
        try:
            self._bucket.blob(self._prefix + key).download_to_filename(str(destination))
        except (GoogleAPIError, GoogleAuthError) as exc:
            raise TritonError.internal(
                f"Failed to get object at {self.location.url}/{key}: {exc}") from None


def open_store(location: CloudLocation) -> GcsStore:
    key_file = find_credential("gs", location.url)["path"]
    try:
        client = (storage.Client.from_service_account_json(key_file) if key_file
                  else storage.Client())
    except (GoogleAuthError, OSError, ValueError):
        raise TritonError.internal(
            "Unable to create GCS client. Check account credentials.") from None
    return GcsStore(location, client)


__all__ = ["GcsStore", "open_store"]
