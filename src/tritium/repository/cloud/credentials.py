"""The credential a cloud repository is opened with, found as Triton finds it.

With TRITON_CLOUD_CREDENTIAL_PATH set, the JSON file it names holds one section per scheme
("s3", "gs"; an "as" section is Azure's, which Tritium does not serve), each mapping path
prefixes to a credential; the longest prefix the repository's path starts with wins ("" matches
every path), and a path no prefix matches is refused. S3's credential is an object (key_id,
secret_key, region, session_token, profile), GCS's the path of a service account key file.
Without the variable each scheme reads its usual environment: AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_DEFAULT_REGION and AWS_PROFILE;
GOOGLE_APPLICATION_CREDENTIALS.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from ...errors import TritonError

log = logging.getLogger("tritium.repository")

CREDENTIAL_PATH_VARIABLE = "TRITON_CLOUD_CREDENTIAL_PATH"
# Each scheme's credential fields and the environment variables they come from otherwise.
_ENVIRONMENT = {
    "s3": {"key_id": "AWS_ACCESS_KEY_ID", "secret_key": "AWS_SECRET_ACCESS_KEY",
           "session_token": "AWS_SESSION_TOKEN", "region": "AWS_DEFAULT_REGION",
           "profile": "AWS_PROFILE"},
    "gs": {"path": "GOOGLE_APPLICATION_CREDENTIALS"},
}


def find_credential(scheme: str, url: str,
                    environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The credential fields for `url` (empty strings for those not given); TritonError when
    the credential file cannot be read or has no entry for the path."""
    file_path = environ.get(CREDENTIAL_PATH_VARIABLE)
    if not file_path:
        return {field: environ.get(variable, "")
                for field, variable in _ENVIRONMENT[scheme].items()}
    log.debug("Reading cloud credential from %s", file_path)
    try:
        with open(file_path, encoding="utf-8") as f:
            document = json.load(f)
    except OSError as exc:
        raise TritonError.internal(
            f"failed to read cloud credential file {file_path}: {exc.strerror}") from None
    except ValueError as exc:
        raise TritonError.internal(
            f"failed to parse the cloud credential file {file_path}: {exc}") from None
    section = document.get(scheme, {}) if isinstance(document, dict) else {}
    if not isinstance(section, dict):
        raise TritonError.internal(
            f"failed to parse the cloud credential file {file_path}: its \"{scheme}\" entry "
            "must map path prefixes to credentials")
    for name in sorted(section, key=len, reverse=True):
        if url.startswith(name):
            log.debug("Using credential  %s  for path  %s", name, url)
            return _fields(scheme, section[name])
    raise TritonError.not_found(f"Cannot match credential for path  {url}")


def _fields(scheme: str, entry: Any) -> dict[str, str]:
    """A credential file's entry as the scheme's fields (GCS's entry is a bare path)."""
    if scheme == "gs":
        return {"path": entry if isinstance(entry, str) else ""}
    entry = entry if isinstance(entry, dict) else {}
    return {field: str(entry.get(field, "")) for field in _ENVIRONMENT[scheme]}


__all__ = ["CREDENTIAL_PATH_VARIABLE", "find_credential"]
