"""The shared-memory extension's HTTP endpoints, as Triton's http_server.cc answers them.

    GET  /v2/{systemsharedmemory|cudasharedmemory}[/region/NAME]/status
    POST /v2/{systemsharedmemory|cudasharedmemory}/region/NAME/register
    POST /v2/{systemsharedmemory|cudasharedmemory}[/region/NAME]/unregister

Region names are taken from the path as sent (Triton does not percent-decode them). Success is
200 with an empty JSON body (status: the regions as a JSON array); errors are `{"error": ...}`.
Like the rest of Tritium's HTTP frontend, a malformed register body is the client's fault (400)
where Triton's JSON helpers answer 500.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from ...cuda_ipc import HANDLE_SIZE
from ...errors import TritonError
from ...shared_memory import SharedMemoryManager
from ..extensions.json_codec import NOT_STRING, NOT_UINT, is_uint, load_json, missing

PREFIXES = (b"/v2/systemsharedmemory", b"/v2/cudasharedmemory")


def parse_path(raw_path: bytes) -> tuple[bool, str, str] | None:
    """(is_cuda, region name or "", action) for a shared-memory path; None if it is not one."""
    parts = raw_path.split(b"/")  # ["", "v2", kind, ...]
    if len(parts) < 4:
        return None
    cuda = parts[2] == b"cudasharedmemory"
    rest = parts[3:]
    name = ""
    if len(rest) == 3 and rest[0] == b"region" and rest[1]:
        name = rest[1].decode("utf-8", "replace")
        rest = rest[2:]
    if len(rest) != 1 or rest[0] not in (b"status", b"register", b"unregister"):
        return None
    action = rest[0].decode()
    if action == "register" and not name:
        return None
    return cuda, name, action


def handle(regions: SharedMemoryManager, cuda: bool, name: str, action: str,
           body: bytes) -> Any:
    """Run one call; return the JSON document to answer with (None: an empty body)."""
    if action == "status":
        return regions.cuda_status(name) if cuda else regions.system_status(name)
    if action == "unregister":
        if cuda:
            regions.unregister_cuda(name)
        else:
            regions.unregister_system(name)
        return None
    document = _register_document(body)
    if cuda:
        regions.register_cuda(name, *_cuda_register_arguments(document))
    else:
        key = _required(document, "key", str, NOT_STRING)
        offset = document.get("offset", 0)
        if not is_uint(offset):
            raise TritonError.invalid_arg(NOT_UINT)
        byte_size = _required(document, "byte_size", int, NOT_UINT)
        regions.register_system(name, key, offset, byte_size)
    return None


def _register_document(body: bytes) -> dict[str, Any]:
    if not body.strip():
        raise TritonError.invalid_arg(
            "failed to parse the request JSON buffer: The document is empty. at 0"
        )
    document = load_json(body)
    # Triton reads a document that is not an object as one without members.
    return document if isinstance(document, dict) else {}


def _required(document: dict[str, Any], member: str, kind: type, not_a: str) -> Any:
    if member not in document:
        raise TritonError.invalid_arg(f"Shared memory register request has no '{member}' field")
    value = document[member]
    if kind is int and not is_uint(value) or kind is str and type(value) is not str:
        raise TritonError.invalid_arg(not_a)
    return value


def _cuda_register_arguments(document: dict[str, Any]) -> tuple[bytes, int, int]:
    """(raw handle, device id, byte size) from a CUDA register body, checked as Triton checks
    it before it tries to open the handle."""
    if "raw_handle" not in document:
        raise TritonError.invalid_arg(
            "Shared memory register request has no 'raw_handle' field"
        )
    raw_handle = document["raw_handle"]
    if not isinstance(raw_handle, dict) or "b64" not in raw_handle:
        raise TritonError.invalid_arg(missing("b64"))
    if type(raw_handle["b64"]) is not str:
        raise TritonError.invalid_arg(NOT_STRING)
    for member in ("device_id", "byte_size"):
        if member not in document:
            raise TritonError.invalid_arg(missing(member))
        if not is_uint(document[member]):
            raise TritonError.invalid_arg(NOT_UINT)
    try:
        handle = base64.b64decode(raw_handle["b64"], validate=True)
    except (binascii.Error, ValueError):
        handle = b""
    if len(handle) != HANDLE_SIZE:
        raise TritonError.invalid_arg(
            "'raw_handle' must be a valid base64 encoded cudaIpcMemHandle_t"
        )
    return handle, document["device_id"], document["byte_size"]
