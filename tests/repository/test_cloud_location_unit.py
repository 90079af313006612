"""Cloud repository paths parse as Triton's filesystem implementations parse them."""

from __future__ import annotations

import pytest

from tritium.errors import TritonError
from tritium.repository.cloud.location import is_cloud_path, parse_location


@pytest.mark.parametrize(("url", "endpoint", "bucket", "prefix"), [
    ("s3://localhost:4572/demo-bucket1.0", "http://localhost:4572", "demo-bucket1.0", ""),
    ("s3://127.0.0.1:9000//bucket.x//a/b/", "http://127.0.0.1:9000", "bucket.x", "a/b"),
    ("s3://https://minio.local:443/models/repo", "https://minio.local:443", "models", "repo"),
    ("s3://my-bucket/path/to/repo", "", "my-bucket", "path/to/repo"),
    ("s3://my-bucket", "", "my-bucket", ""),
])
def test_s3_paths(url: str, endpoint: str, bucket: str, prefix: str) -> None:
    location = parse_location(url)
    assert (location.endpoint, location.bucket, location.prefix) == (endpoint, bucket, prefix)


def test_gcs_path() -> None:
    location = parse_location("gs://bucket/models/repo/")
    assert (location.scheme, location.bucket, location.prefix) == ("gs", "bucket", "models/repo")


@pytest.mark.parametrize(("url", "message"), [
    ("s3:///", "Invalid bucket name: '/'"),
    ("gs:///models", "No bucket name found in path: gs:///models"),
    ("as://account/container/models", "as:// file-system not supported"),
])
def test_refused_paths(url: str, message: str) -> None:
    with pytest.raises(TritonError, match=message):
        parse_location(url)


def test_local_paths_are_not_cloud_paths() -> None:
    assert not is_cloud_path("/models") and not is_cloud_path("models/s3://x")
    assert is_cloud_path("s3://b") and is_cloud_path("gs://b") and is_cloud_path("as://a/c")
