"""How an HTTP endpoint frames the KServe infer body: where the JSON header's length comes
from, whether bodies may be compressed, how a binary answer is labelled, and what status a
failed inference answers with.

The HTTP/REST frontend speaks KServe's own framing (`KSERVE`): the
`Inference-Header-Content-Length` header, gzip/deflate both ways, `application/octet-stream`.
Triton's cloud endpoints (Vertex AI, SageMaker) take the same bodies framed their own way: the
header length rides in the Content-Type (`<binary type>;json-header-size=<N>`), and bodies are
never compressed. Their endpoints hand the HTTP app their own `InferDialect`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...errors import TritonError
from .request import parse_header_length

_OCTET = b"application/octet-stream"
_JSON = b"application/json"


def _kserve_binary(header_length: int) -> tuple[bytes, bytes]:
    return _OCTET, b"inference-header-content-length: %d\r\n" % header_length


@dataclass(frozen=True, slots=True)
class InferDialect:
    """One endpoint's framing of infer bodies (see the module docstring)."""

    # The request header read for the JSON header's length (lowercase).
    length_header: bytes = b"inference-header-content-length"
    # That header's value (None: absent) and the body's length -> the JSON header's length.
    header_length: Callable[[str | None, int], int] = parse_header_length
    # Content-Encoding / Accept-Encoding honoured.
    compression: bool = True
    # A response with binary outputs: (content type, extra header lines) for its header length.
    binary: Callable[[int], tuple[bytes, bytes]] = _kserve_binary
    # The content type of a response without binary outputs.
    json: bytes = _JSON
    # The HTTP status of an inference that failed once submitted (None: the error's own).
    failure_status: Callable[[TritonError], int] | None = None


KSERVE = InferDialect()


def content_type_dialect(binary_type: str, *, labels_response: bool,
                         failure_status: Callable[[TritonError], int] | None = None
                         ) -> InferDialect:
    """A cloud endpoint's dialect: the JSON header's length in a Content-Type that starts with
    `binary_type` + `;json-header-size=` (a Content-Type that merely contains it is refused, as
    Triton refuses it); no compression; binary responses labelled the same way when
    `labels_response` (SageMaker), else as KServe labels them (Vertex AI)."""
    prefix = binary_type + ";json-header-size="

    def header_length(content_type: str | None, content_length: int) -> int:
        at = -1 if content_type is None else content_type.find(prefix)
        if content_type is None or at < 0:
            return content_length
        if at != 0:
            raise TritonError.invalid_arg(
                f"expect MIME type for binary data starts with '{prefix}', got: {content_type}")
        return parse_header_length(content_type[len(prefix):], content_length)

    def binary(length: int) -> tuple[bytes, bytes]:
        return prefix.encode() + b"%d" % length, b""

    return InferDialect(b"content-type", header_length, False,
                        binary if labels_response else _kserve_binary, _JSON, failure_status)


__all__ = ["KSERVE", "InferDialect", "content_type_dialect"]
