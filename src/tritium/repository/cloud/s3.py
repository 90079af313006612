"""S3 (and S3-compatible services: MinIO, moto, localstack) through boto3.

As Triton's client: explicit keys (the credential file's, or AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY, with AWS_SESSION_TOKEN and AWS_DEFAULT_REGION) win, then a named profile
(AWS_PROFILE), then boto3's default chain; path-style addressing (a bucket named with dots
works on any endpoint); and the bucket must answer HEAD before the repository is used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from ...errors import TritonError
from .credentials import find_credential
from .location import CloudLocation
from .store import StoredObject


class S3Store:
    def __init__(self, location: CloudLocation, client: Any) -> None:
        self.location = location
        self._client = client
        self._prefix = f"{location.prefix}/" if location.prefix else ""

    def check(self) -> None:
        """Triton's CheckClient: the bucket must answer, or the credentials are blamed."""
        try:
            self._client.head_bucket(Bucket=self.location.bucket)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            raise TritonError.internal(
                "Unable to create S3 filesystem client. Check account credentials. "
                f"Exception: '{error.get('Code', '')}' Message: '{error.get('Message', '')}'"
            ) from None
        except BotoCoreError as exc:
            raise TritonError.internal(
                "Unable to create S3 filesystem client. Check account credentials. "
                f"Exception: '{type(exc).__name__}' Message: '{exc}'") from None

    def list_objects(self) -> list[StoredObject]:
        found = []
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.location.bucket, Prefix=self._prefix)
            for page in pages:
                for entry in page.get("Contents", []):
                    key = entry["Key"][len(self._prefix):]
                    if key:
                        found.append(StoredObject(key, entry["Size"], entry.get("ETag", "")))
        except (ClientError, BotoCoreError) as exc:
            raise TritonError.internal(
                f"Could not list contents of directory at {self.location.url}: {exc}") from None
        return found

    def download(self, key: str, destination: Path) -> None:
        try:
            self._client.download_file(self.location.bucket, self._prefix + key,
                                       str(destination))
        except (ClientError, BotoCoreError) as exc:
            raise TritonError.internal(
                f"Failed to get object at {self.location.url}/{key}: {exc}") from None


def open_store(location: CloudLocation) -> S3Store:
    credential = find_credential("s3", location.url)
    try:
        if credential["key_id"] and credential["secret_key"]:
            session = boto3.session.Session(
                aws_access_key_id=credential["key_id"],
                aws_secret_access_key=credential["secret_key"],
                aws_session_token=credential["session_token"] or None,
                region_name=credential["region"] or None)
        elif credential["profile"]:
            session = boto3.session.Session(profile_name=credential["profile"])
        else:
            session = boto3.session.Session()
        client = session.client(
            "s3", endpoint_url=location.endpoint or None,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}))
    except BotoCoreError as exc:  # e.g. a profile that does not exist
        raise TritonError.internal(
            "Unable to create S3 filesystem client. Check account credentials. "
            f"Exception: '{type(exc).__name__}' Message: '{exc}'") from None
    store = S3Store(location, client)
    store.check()
    return store


__all__ = ["S3Store", "open_store"]
