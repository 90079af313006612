"""On SIGTERM/SIGINT the HTTP port first serves the connections already open, as Triton's does.

Triton's exit begins with its HTTP service: it takes no new connections, and for up to
--exit-timeout-secs it waits for the open ones (idle keep-alive ones too) to be closed by their
clients, serving them as before and logging "Timeout N: Found K HTTP service connections" each
second. Only then does the server stop taking requests ("Waiting for in-flight requests to
complete.") with what is left of the timeout. Tritium closed an idle keep-alive connection at
once, so a client's next request on it was refused (L0_lifecycle
test_shutdown_with_live_connection).
"""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import numpy as np
import tritonclient.http as httpclient

from support.models import identity_config, write_model
from support.server_process import ServerProcess


def _inputs() -> list[httpclient.InferInput]:
    tensor = httpclient.InferInput("INPUT0", [1, 4], "FP32")
    tensor.set_data_from_numpy(np.arange(4, dtype=np.float32).reshape(1, 4))
    return [tensor]


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_an_open_connection_is_served_until_its_client_closes_it(tmp_path: Path) -> None:
    write_model(tmp_path, "identity_fp32", identity_config("identity_fp32"))
    with ServerProcess([tmp_path], "--exit-timeout-secs=20") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        client.infer("identity_fp32", _inputs())  # the connection stays open (keep-alive)
        assert server.process is not None
        server.process.send_signal(signal.SIGINT)
        server.wait_log("Timeout 20: Found 1 HTTP service connections")

        assert _refused(server.http_port), "a new connection was taken during the exit"
        # The open connection is served as before: the server is still up and ready.
        assert client.is_server_ready()
        result = client.infer("identity_fp32", _inputs())
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"),
                                      np.arange(4, dtype=np.float32).reshape(1, 4))
        assert "Waiting for in-flight requests to complete." not in server.log_messages()

        client.close()
        assert server.wait_exit(30) == 0
    messages = server.log_messages()
    waiting = messages.index("Waiting for in-flight requests to complete.")
    countdown = [i for i, m in enumerate(messages) if m.endswith(" HTTP service connections")]
    assert countdown and countdown[-1] < waiting, messages
    # The rest of the exit goes on with what is left of the timeout: it does not start over.
    assert sum(m.startswith("Timeout 20: ") for m in messages) == 1, messages


def test_a_connection_left_open_does_not_hold_the_exit_past_the_timeout(tmp_path: Path) -> None:
    write_model(tmp_path, "identity_fp32", identity_config("identity_fp32"))
    with ServerProcess([tmp_path], "--exit-timeout-secs=2") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        client.infer("identity_fp32", _inputs())
        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
        assert server.wait_exit(30) == 0
        client.close()
    messages = server.log_messages()
    assert "Timeout 2: Found 1 HTTP service connections" in messages, messages
    assert "Waiting for in-flight requests to complete." in messages, messages
