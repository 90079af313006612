"""`preserve_ordering`: responses leave in the order their requests entered the scheduler.

Triton's dynamic batcher delegates each request's responses to a completion queue when the
model preserves ordering; responses of a later request wait until every earlier request has
sent its final response, however the instances happened to finish.
"""

from __future__ import annotations

import threading
from collections import deque

from ..request import InferenceRequest, InferenceResponse, ResponseSender


class _Slot:
    __slots__ = ("sender", "pending")

    def __init__(self, sender: ResponseSender) -> None:
        self.sender = sender
        self.pending: deque[tuple[InferenceResponse | None, int]] = deque()


class ResponseOrder:
    def __init__(self) -> None:
        # Held while sending too: two threads must not pass each other's responses.
        self._lock = threading.Lock()
        self._slots: deque[_Slot] = deque()

    def hold(self, request: InferenceRequest) -> None:
        """Route `request`'s responses through the ordering queue (call in enqueue order)."""
        assert request.response_sender is not None
        slot = _Slot(request.response_sender)

        def deliver(response: InferenceResponse | None, flags: int) -> None:
            with self._lock:
                slot.pending.append((response, flags))
                self._flush()

        with self._lock:
            self._slots.append(slot)
        request.response_sender = ResponseSender(deliver)

    def _flush(self) -> None:
        slots = self._slots
        while slots:
            head = slots[0]
            while head.pending:
                response, flags = head.pending.popleft()
                head.sender.send(response, flags)
            if not head.sender.is_completed:
                return
            slots.popleft()

