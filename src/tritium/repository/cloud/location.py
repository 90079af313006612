"""CloudLocation: what a cloud model repository path names, parsed as Triton parses it.

Triton's forms:

- `s3://[http://|https://][host:port/]bucket[/path]`: with host:port the endpoint is
  `http://host:port` (`https://` when the path says so) and the bucket must be written in
  lower-case letters, digits, dots and dashes (e.g. `s3://localhost:4572/demo-bucket1.0`);
  without, AWS's endpoint. Repeated, leading and trailing slashes are dropped.
- `gs://bucket[/path]`.
- `as://account/container[/path]` (Azure Storage) is recognised, and refused: Tritium has no
  Azure client yet (docs/differences.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import TritonError

SCHEMES = ("s3", "gs", "as")

# Triton's S3 endpoint form: the optional protocol, host, port, bucket and object path.
_S3_ENDPOINT = re.compile(
    r"s3://(http://|https://|)([0-9a-zA-Z\-.]+):([0-9]+)/([0-9a-z.\-]+)((/[0-9a-zA-Z.\-_]+)*)")


@dataclass(frozen=True)
class CloudLocation:
    """A repository in a bucket: the objects under `prefix`."""

    url: str  # as the user wrote it (messages, credentials matching)
    scheme: str  # "s3" or "gs"
    bucket: str
    prefix: str  # the path inside it, no leading or trailing slash ("" for the whole bucket)
    endpoint: str = ""  # S3: "http://host:port" when the path names one


def is_cloud_path(text: str) -> bool:
    """Whether a repository path names cloud storage rather than a local directory."""
    return any(text.startswith(f"{scheme}://") for scheme in SCHEMES)


def parse_location(url: str) -> CloudLocation:
    """The location `url` names; TritonError (Triton's words) if it names none."""
    if url.startswith("s3://"):
        return _parse_s3(url)
    if url.startswith("gs://"):
        bucket, _, path = url[len("gs://"):].partition("/")
        if not bucket:
            raise TritonError.internal(f"No bucket name found in path: {url}")
        return CloudLocation(url, "gs", bucket, path.strip("/"))
    if url.startswith("as://"):
        raise TritonError.internal(
            f"as:// file-system not supported: Tritium serves no model repository from Azure "
            f"Storage ({url}); copy it to S3, GCS or a local folder")
    raise TritonError.invalid_arg(f"not a cloud storage path: {url}")


def _clean_s3_path(url: str) -> str:
    """Triton's S3 CleanPath: `s3://`, an optional protocol, then the path with its leading,
    trailing and repeated slashes dropped."""
    path = url[len("s3://"):]
    clean = "s3://"
    for protocol in ("https://", "http://"):
        if path.startswith(protocol):
            path = path[len(protocol):]
            clean += protocol
            break
    trimmed = path.strip("/")
    if not trimmed:
        raise TritonError.invalid_arg(f"Invalid bucket name: '{path}'")
    return clean + re.sub("/+", "/", trimmed)


def _parse_s3(url: str) -> CloudLocation:
    clean = _clean_s3_path(url)
    match = _S3_ENDPOINT.fullmatch(clean)
    if match is not None:
        protocol, host, port, bucket, path = match.group(1, 2, 3, 4, 5)
        scheme = "https" if protocol == "https://" else "http"
        return CloudLocation(url, "s3", bucket, path.strip("/"),
                             endpoint=f"{scheme}://{host}:{port}")
    rest = clean[len("s3://"):]
    for protocol in ("https://", "http://"):
        rest = rest.removeprefix(protocol)
    bucket, _, path = rest.partition("/")
    if not bucket:
        raise TritonError.internal(f"No bucket name found in path: {url}")
    return CloudLocation(url, "s3", bucket, path)


__all__ = ["SCHEMES", "CloudLocation", "is_cloud_path", "parse_location"]
