"""Raw HTTP requests to a test server, for what tritonclient cannot send or hides.

Tests that assert Triton's exact status codes, headers and bodies (malformed JSON, unknown
routes, binary-extension framing, server-sent events) talk to the server through these rather
than through tritonclient, which raises on errors and parses replies itself.
"""

from __future__ import annotations

import http.client
import json
from typing import Any


class Reply:
    """One HTTP answer: status, headers with lower-case names, and the whole body."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def text(self) -> str:
        return self.body.decode()

    def status_and_text(self) -> tuple[int, str]:
        return self.status, self.text

    def json(self) -> Any:
        """The JSON part of the body: all of it, or its header under the binary extension."""
        length = self.headers.get("inference-header-content-length")
        return json.loads(self.body[: int(length)] if length is not None else self.body)

    def binary(self) -> bytes:
        return self.body[int(self.headers["inference-header-content-length"]) :]

    @property
    def error(self) -> str:
        return self.json()["error"]

    def events(self) -> list[Any]:
        """The server-sent events' data, parsed; the body must be nothing but events."""
        assert self.body.endswith(b"\n\n"), self.body
        chunks = self.body[:-2].split(b"\n\n")
        assert all(chunk.startswith(b"data: ") for chunk in chunks), self.body
        return [json.loads(chunk[len(b"data: "):]) for chunk in chunks]


def call(server, method: str, path: str, body: bytes | None = b"",
         headers: dict[str, str] | None = None, *, timeout: float = 60) -> Reply:
    """Send one request on a fresh connection; any status comes back as a Reply."""
    host, port = server.http_url.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        data = response.read()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, data)
    finally:
        conn.close()


def post(server, path: str, document: Any = None, *, binary: bytes = b"",
         raw: bytes | None = None, headers: dict[str, str] | None = None,
         method: str = "POST", timeout: float = 60) -> Reply:
    """Send `document` as JSON (or `raw` bytes, or no body at all when both are None).

    With `binary`, the JSON is the header of a binary-extension body and its length goes into
    Inference-Header-Content-Length.
    """
    headers = dict(headers or {})
    if raw is not None:
        return call(server, method, path, raw, headers, timeout=timeout)
    if document is None and not binary:
        return call(server, method, path, None, headers, timeout=timeout)
    header = json.dumps(document).encode()
    if binary:
        headers.setdefault("Inference-Header-Content-Length", str(len(header)))
    return call(server, method, path, header + binary, headers, timeout=timeout)
