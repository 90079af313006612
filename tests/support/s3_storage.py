"""A real S3 HTTP service for tests: moto's server on a loopback port, with a boto3 client to
fill its buckets, as a user's own S3 (or MinIO) would be filled."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from moto import settings
from moto.core.authorization import ActionAuthenticatorMixin
from moto.server import ThreadedMotoServer

from support.server_process import free_ports

# The keys the tests sign with (moto takes any while its authentication is off).
KEYS = {"AWS_ACCESS_KEY_ID": "tritium-test", "AWS_SECRET_ACCESS_KEY": "tritium-secret",
        "AWS_DEFAULT_REGION": "us-east-1"}


@dataclass
class S3Service:
    host_port: str  # "127.0.0.1:PORT", as an s3:// path names its endpoint
    client: Any

    def url(self, bucket: str, prefix: str = "") -> str:
        return f"s3://{self.host_port}/{bucket}" + (f"/{prefix}" if prefix else "")

    def upload(self, bucket: str, prefix: str, folder: Path) -> None:
        """Put every file under `folder` at `prefix/<relative path>` in `bucket` (made if new)."""
        if bucket not in {b["Name"] for b in self.client.list_buckets()["Buckets"]}:
            self.client.create_bucket(Bucket=bucket)
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                key = "/".join(p for p in (prefix, path.relative_to(folder).as_posix()) if p)
                self.client.upload_file(str(path), bucket, key)

    def delete(self, bucket: str, prefix: str) -> None:
        """Remove every object under `prefix/`."""
        listing = self.client.list_objects_v2(Bucket=bucket, Prefix=prefix.rstrip("/") + "/")
        for entry in listing.get("Contents", []):
            self.client.delete_object(Bucket=bucket, Key=entry["Key"])

    @contextmanager
    def refusing_unknown_keys(self) -> Iterator[None]:
        """moto's authentication on: requests signed with keys it never issued are refused
        (403), as AWS and MinIO refuse them."""
        previous = settings.INITIAL_NO_AUTH_ACTION_COUNT
        settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
        ActionAuthenticatorMixin.request_count = 0
        try:
            yield
        finally:
            settings.INITIAL_NO_AUTH_ACTION_COUNT = previous


@contextmanager
def s3_service() -> Iterator[S3Service]:
    port = free_ports(1)[0]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        client = boto3.client(
            "s3", endpoint_url=f"http://127.0.0.1:{port}",
            aws_access_key_id=KEYS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=KEYS["AWS_SECRET_ACCESS_KEY"],
            region_name=KEYS["AWS_DEFAULT_REGION"],
            config=Config(s3={"addressing_style": "path"}))
        yield S3Service(f"127.0.0.1:{port}", client)
    finally:
        server.stop()
