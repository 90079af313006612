"""``InferenceResponseSender``: how a model answers a server-made request, once (or, for a
decoupled model, any number of times until the final flag), enforcing Triton's rules."""

from __future__ import annotations

import threading

from .constants import TRITONSERVER_RESPONSE_COMPLETE_FINAL
from .errors import TritonModelException
from .response import InferenceResponse
from .runtime import _require_runtime


class InferenceResponseSender:
    """Sends the responses of one server-made request (``request.get_response_sender()``)."""

    def __init__(
        self, handle: object, decoupled: bool | None, requested_output_names: set[str]
    ) -> None:
        self._handle = handle
        self._decoupled = decoupled
        self._requested_output_names = requested_output_names
        self._lock = threading.Lock()
        self._closed = False
        self._sent = 0

    def send(self, response: InferenceResponse | None = None, flags: int = 0) -> None:
        """Send ``response`` and/or ``flags`` (TRITONSERVER_RESPONSE_COMPLETE_FINAL ends)."""
        if response is not None and not isinstance(response, InferenceResponse):
            raise TypeError(
                f"send(): response must be an InferenceResponse, got {type(response).__name__}"
            )
        if flags != TRITONSERVER_RESPONSE_COMPLETE_FINAL and flags != 0:
            raise TritonModelException("Unable to send response. Unsupported flag provided.")
        if flags == 0 and response is None:
            raise TritonModelException(
                "Inference Response object must be provided when the response flags is set "
                "to zero."
            )
        runtime = _require_runtime()
        self._update_state(response, flags)
        if response is not None:
            response._prune_output_tensors(self._requested_output_names)
        runtime.send_response(self._handle, response, flags)

    def is_cancelled(self) -> bool:
        if self._handle is None:
            return False
        return _require_runtime().is_cancelled(self._handle)

    def _update_state(self, response: InferenceResponse | None, flags: int) -> None:
        """Count a response and close on FINAL, refusing what Triton refuses."""
        if self._decoupled is None:
            raise TritonModelException(
                "Unable to send response. Response sender has no reference to the decoupled "
                "state of the model."
            )
        with self._lock:
            if not self._decoupled:
                if response is not None and self._sent > 0:
                    raise TritonModelException(
                        "Unable to send response. Non-decoupled model cannot send more than "
                        "one response."
                    )
                if (
                    response is None
                    and flags == TRITONSERVER_RESPONSE_COMPLETE_FINAL
                    and self._sent == 0
                ):
                    raise TritonModelException(
                        "Unable to send response. Non-decoupled model cannot send complete "
                        "final before sending a response."
                    )
            if self._closed:
                raise TritonModelException(
                    "Unable to send response. Response sender has been closed."
                )
            if flags == TRITONSERVER_RESPONSE_COMPLETE_FINAL:
                self._closed = True
            self._sent += 1

    def _is_closed(self) -> bool:
        with self._lock:
            return self._closed

    def _close(self) -> None:
        with self._lock:
            self._closed = True
