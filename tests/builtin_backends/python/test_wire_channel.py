"""The server-stub channel (wire/messages.py): frames both ways, fds alongside, EOF when the
peer goes, and no wake-up of a blocked receive when the peer reads what this end sent."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from tritium.builtin_backends.python.wire import messages


def _peer(theirs: tuple[socket.socket, socket.socket]) -> messages.Connection:
    return messages.Connection(*theirs)


def test_frames_and_fds_go_both_ways() -> None:
    ours, theirs = messages.channel()
    peer = _peer(theirs)
    read_end, write_end = os.pipe()
    try:
        ours.send((messages.EXECUTE, [[("x", 1)]], None), [write_end])
        assert peer.recv() == (messages.EXECUTE, [[("x", 1)]], None)
        passed = peer.fds.popleft()
        os.write(passed, b"hi")
        os.close(passed)
        assert os.read(read_end, 2) == b"hi"
        peer.send((messages.DONE, ["outcome"]))
        assert ours.recv() == (messages.DONE, ["outcome"])
    finally:
        os.close(read_end)
        os.close(write_end)
        ours.close()
        peer.close()


def test_the_peer_closing_ends_the_receive() -> None:
    ours, theirs = messages.channel()
    peer = _peer(theirs)
    peer.close()
    with pytest.raises(EOFError):
        ours.recv()
    ours.close()


def _voluntary_switches(tid: int) -> int:
    status = Path(f"/proc/self/task/{tid}/status").read_text()
    return int(status.split("voluntary_ctxt_switches:")[1].split()[0])


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_peer_reading_a_command_does_not_wake_the_thread_waiting_for_the_answer() -> None:
    # As the instance thread does: send a command, then block for the answer. The stub
    # reading the command must not wake that thread (on one socket pair for both directions
    # it did, once per message: a context switch for nothing).
    ours, theirs = messages.channel()
    peer = _peer(theirs)
    answered: list[tuple] = []
    tid: list[int] = []

    def wait_for_answer() -> None:
        tid.append(threading.get_native_id())
        answered.append(ours.recv())

    ours.send((messages.EXECUTE, [], None))
    waiter = threading.Thread(target=wait_for_answer)
    waiter.start()
    try:
        while not tid:
            time.sleep(0.01)
        time.sleep(0.2)  # blocked in recv by now
        before = _voluntary_switches(tid[0])
        for _ in range(20):
            assert peer.recv()[0] == messages.EXECUTE
            time.sleep(0.01)
            ours.send((messages.EXECUTE, [], None))
        assert peer.recv()[0] == messages.EXECUTE
        time.sleep(0.05)
        woken = _voluntary_switches(tid[0]) - before
        peer.send((messages.DONE, []))
        waiter.join(5)
        assert answered == [(messages.DONE, [])]
        assert woken == 0
    finally:
        ours.close()
        peer.close()
