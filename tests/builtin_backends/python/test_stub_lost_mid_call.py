"""A stub lost while the instance's execute thread is handing it requests: every request of that
call is answered with Triton's 'not healthy' error, even one put in the stub's request table
after another thread's death handling had already taken and failed the table (the race a Ray
actor's shutdown can hit: the actor's execute then returned with the request open, and the user
got "returned from execute without sending a response").

In-process: the race is set up exactly (the stub already marked dead by another thread, its
socket closed) rather than hoped for with real processes; the crash tests in
test_python_backend_crashes.py drive the real thing.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tritium.backend import InferenceRequest, InferenceResponse, Tensor
from tritium.builtin_backends.python.server import stub_launcher
from tritium.builtin_backends.python.server.process_requests import process_requests
from tritium.request import ResponseSender


class _ClosedSocket:
    """The exec socket of a stub that has gone away."""

    fds: list[int] = []

    def send(self, message: object, fds: object = None) -> None:
        raise BrokenPipeError("the stub has gone")

    def recv(self) -> object:
        raise EOFError


class _Writer:
    def pack(self, tensors: list) -> tuple[list, None, list[int]]:
        return [None] * len(tensors), None, []


def _request(answers: list[InferenceResponse | None]) -> InferenceRequest:
    request = InferenceRequest(
        "m", inputs={"IN": Tensor("IN", "FP32", (1,), np.zeros(1, np.float32))})
    request.response_sender = ResponseSender(lambda response, flags: answers.append(response))
    return request


@pytest.fixture
def dead_stub(monkeypatch: pytest.MonkeyPatch) -> stub_launcher.StubProcess:
    monkeypatch.setattr(stub_launcher, "AsyncChannel", lambda stub: SimpleNamespace())
    model_state = SimpleNamespace(backend=None, model=SimpleNamespace(server=None))
    stub = stub_launcher.StubProcess(model_state, "m_0", None)  # type: ignore[arg-type]
    stub.exec_conn = _ClosedSocket()  # type: ignore[assignment]
    stub.writer = _Writer()  # type: ignore[assignment]
    stub.dead = True  # another thread's on_death has already taken (and failed) the table
    return stub


def test_requests_handed_to_a_stub_already_lost_are_answered(dead_stub) -> None:
    answers: list[InferenceResponse | None] = []
    batch = [_request(answers), _request(answers)]
    single = [_request(answers)]
    process_requests(dead_stub, [batch, single])
    assert len(answers) == 3
    for response in answers:
        assert response is not None and response.error is not None
        assert response.error.message == "Stub process 'm_0' is not healthy."
    assert all(r.response_sender is not None and r.response_sender.is_completed
               for r in batch + single)


def test_requests_already_answered_are_not_answered_again(dead_stub) -> None:
    answers: list[InferenceResponse | None] = []
    request = _request(answers)
    request.respond(InferenceResponse())
    process_requests(dead_stub, [[request]])
    assert len(answers) == 1 and answers[0] is not None and answers[0].error is None
