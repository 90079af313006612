"""A call's request headers: checked and read once per distinct header block.

gRPC core checks a call's metadata before the call starts: the header list within the
advertised size (RESOURCE_EXHAUSTED otherwise), every name a legal HTTP/2 name and every `-bin`
value base64 (INTERNAL otherwise, for that call alone). What is left is the method's path, the
metadata the body sees (`invocation_metadata()`, without the transport's own headers, `-bin`
values decoded) and the transport's settings: `grpc-timeout`, `grpc-encoding`,
`grpc-accept-encoding`.

A client sends the same header block with each call of a kind, and the HTTP/2 layer's HPACK
cache answers a repeated block with the same list (http2_headers.py): `KnownHeaders` keeps what
such a list was read to, so that the checks and the reading run once per block, not per call
(identity_fp32 gRPC c=32 under phase timers: 3.5 us of the event loop's ~30 per call before,
1.1 us after).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, NamedTuple

import grpc

# Headers that are the transport's, not the call's metadata (grpc.aio leaves them out too).
_TRANSPORT_HEADERS = frozenset((
    "content-type", "te", "grpc-timeout", "grpc-encoding", "grpc-accept-encoding",
))
# Characters an HTTP/2 header name may hold (RFC 9113 8.2.1: lowercase tokens).
_HEADER_NAME = re.compile(r":?[!#$%&'*+\-.^_`|~0-9a-z]+")
# Names already found legal: every call repeats the same few. Bounded.
_LEGAL_NAMES: set[str] = set()
_LEGAL_NAMES_LIMIT = 1024
# Header lists remembered (a client's few kinds of call, times its connections). Bounded.
_KNOWN_LIMIT = 256


class CallError(Exception):
    """A request that cannot become a call: it is answered with this status alone."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code
        self.details = details


class CallHeaders(NamedTuple):
    """What a call's request headers say."""

    path: str
    metadata: tuple[tuple[str, Any], ...]
    timeout: str | None  # grpc-timeout as sent
    encoding: str  # grpc-encoding of the request messages
    accept_encoding: str | None


def check_headers(headers: list[tuple[str, str]], max_list_size: int) -> None:
    """Refuse, for this call alone, what grpc core (so Triton) refuses before looking at the
    method: a `:method` other than POST, no `te: trailers`, metadata larger than advertised or
    an illegal name."""
    size = 0
    method = te = None
    for name, value in headers:
        size += len(name) + len(value) + 32
        if name == ":method":
            method = value
        elif name == "te":
            te = value
        if name not in _LEGAL_NAMES:
            if not _HEADER_NAME.fullmatch(name):  # (`$` would let a final newline by)
                raise CallError(grpc.StatusCode.INTERNAL, f"Illegal header key: {name!r}")
            if len(_LEGAL_NAMES) < _LEGAL_NAMES_LIMIT:
                _LEGAL_NAMES.add(name)
    if size > max_list_size:
        raise CallError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                        f"received metadata size exceeds limit ({size} vs. {max_list_size})")
    if method != "POST":
        raise CallError(grpc.StatusCode.UNKNOWN, "Bad method header")
    if te != "trailers":
        raise CallError(grpc.StatusCode.UNKNOWN, "Missing :te header")


def path_of(headers: list[tuple[str, str]]) -> str:
    """The `:path` pseudo-header ("" without one)."""
    for name, value in headers:  # a loop: next() over a generator costs three times as much
        if name == ":path":
            return value
    return ""


def read_headers(headers: list[tuple[str, str]], path: str) -> CallHeaders:
    """The metadata and transport settings of checked headers; CallError for a `-bin` value
    that is not base64."""
    metadata: list[tuple[str, Any]] = []
    timeout = None
    encoding = "identity"
    accept_encoding = None
    for name, value in headers:
        if name[0] == ":" or name in _TRANSPORT_HEADERS:
            if name == "grpc-timeout":
                timeout = value
            elif name == "grpc-encoding":
                encoding = value
            elif name == "grpc-accept-encoding":
                accept_encoding = value
            continue
        metadata.append((name, _binary(name, value) if name.endswith("-bin") else value))
    return CallHeaders(path, tuple(metadata), timeout, encoding, accept_encoding)


class KnownHeaders:
    """CallHeaders by header list, for the lists the HPACK cache hands out again.

    Keyed by the list's id, with the list itself kept alongside: while remembered it stays
    alive, so its id cannot name another list. Only headers that passed every check are
    remembered; a list nobody hands out again just ages out (the whole set is dropped when full).
    """

    def __init__(self) -> None:
        self._known: dict[int, tuple[list[tuple[str, str]], CallHeaders]] = {}

    def get(self, headers: list[tuple[str, str]]) -> CallHeaders | None:
        entry = self._known.get(id(headers))
        if entry is not None and entry[0] is headers:
            return entry[1]
        return None

    def add(self, headers: list[tuple[str, str]], read: CallHeaders) -> None:
        known = self._known
        if len(known) >= _KNOWN_LIMIT:
            known.clear()
        known[id(headers)] = (headers, read)


def _binary(name: str, value: str) -> bytes:
    """A `-bin` metadata value: base64, padded or not (gRPC's wire form)."""
    try:
        return base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise CallError(grpc.StatusCode.INTERNAL,
                        f"Error parsing '{name}' metadata: invalid base64 value") from None
