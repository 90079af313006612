"""A GCS service for tests: gcp-storage-emulator's HTTP server on a loopback port (the
emulator google-cloud-storage reaches through STORAGE_EMULATOR_HOST), with a client to fill
its buckets."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gcp_storage_emulator.server import create_server
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage

from support.server_process import free_ports


@dataclass
class GcsService:
    endpoint: str  # http://127.0.0.1:PORT: the server's STORAGE_EMULATOR_HOST
    client: Any

    def upload(self, bucket: str, prefix: str, folder: Path) -> None:
        """Put every file under `folder` at `prefix/<relative path>` in `bucket` (made if new)."""
        target = self.client.lookup_bucket(bucket) or self.client.create_bucket(bucket)
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                key = "/".join(p for p in (prefix, path.relative_to(folder).as_posix()) if p)
                target.blob(key).upload_from_filename(str(path))


@contextmanager
def gcs_service() -> Iterator[GcsService]:
    port = free_ports(1)[0]
    server = create_server("127.0.0.1", port, in_memory=True)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        client = storage.Client(project="tritium-test", credentials=AnonymousCredentials(),
                                client_options={"api_endpoint": endpoint})
        yield GcsService(endpoint, client)
    finally:
        server.stop()
