"""The event loop's busy poll (`--busy-poll-us`): after the last request in flight is answered
the loop polls for the next one a while, then sleeps; it never polls while a request is in
flight, and a server at rest costs no CPU."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from support.models import identity_config, write_model
from support.server_process import ServerProcess
from tritium.frontend.busy_poll import BusyPoll


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize("budget", ["100", "0"])
def test_answers_over_both_protocols_then_rests(tmp_path: Path, budget: str) -> None:
    write_model(tmp_path, "id", identity_config("id"))
    with ServerProcess([tmp_path], f"--busy-poll-us={budget}") as server:
        assert server.process is not None
        data = np.arange(4, dtype=np.float32).reshape(1, 4)
        http = httpclient.InferenceServerClient(server.http_url)
        grpc = grpcclient.InferenceServerClient(server.grpc_url)
        for module, client in ((httpclient, http), (grpcclient, grpc)):
            for _ in range(50):  # one at a time: each answer leaves nothing in flight
                tensor = module.InferInput("INPUT0", [1, 4], "FP32")
                tensor.set_data_from_numpy(data)
                result = client.infer("id", [tensor])
                np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)
        time.sleep(0.2)
        before = _cpu_seconds(server.process.pid)
        time.sleep(1.0)
        # At rest: no poll left running (a poll that never stopped would cost the whole second).
        assert _cpu_seconds(server.process.pid) - before < 0.3


def test_a_budget_below_zero_is_refused(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tritium", "serve", f"--model-repository={tmp_path}",
         "--busy-poll-us=-1"], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")})
    assert result.returncode != 0
    assert "--busy-poll-us" in result.stderr


class _Counting(BusyPoll):
    """A busy poll that counts its turns."""

    __slots__ = ("turns",)

    def __init__(self, loop: asyncio.AbstractEventLoop, budget_us: int) -> None:
        super().__init__(loop, budget_us)
        self.turns = 0

    def _poll(self) -> None:
        self.turns += 1
        super()._poll()


def test_polls_only_with_nothing_in_flight_and_only_for_its_budget() -> None:
    loop = asyncio.new_event_loop()
    try:
        poll = _Counting(loop, budget_us=20_000)
        # Answered with another request still in flight: no poll.
        poll.inflight = 2
        poll.answered()
        loop.run_until_complete(asyncio.sleep(0.01))
        assert poll.turns == 0
        # The last one answered: the loop polls turn after turn ...
        poll.answered()
        loop.run_until_complete(asyncio.sleep(0.005))
        assert poll.turns > 2
        # ... until a request is in flight again, which ends the poll at the next turn.
        poll.inflight = 1
        loop.run_until_complete(asyncio.sleep(0.001))
        seen = poll.turns
        loop.run_until_complete(asyncio.sleep(0.03))
        assert poll.turns == seen
        # Answered again, nothing in flight: the poll ends by itself once its budget is spent.
        poll.answered()
        loop.run_until_complete(asyncio.sleep(0.05))
        seen = poll.turns
        loop.run_until_complete(asyncio.sleep(0.03))
        assert poll.turns == seen
    finally:
        loop.close()
