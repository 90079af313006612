"""Triton's testing hook TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC, as L0_client_timeout uses it.

Every non-inference gRPC answer waits N seconds, one answer after another, so a client timeout
shorter than that expires; inference is not held back. The assertions only rely on the delay
being at least N (the server can answer later, never sooner).
"""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.grpc_stream_fixtures import REPEAT
from support.models import identity_config, write_model
from support.server_process import ServerProcess

DELAY_S = 3


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("delay")
    write_model(repo, "identity", identity_config("identity"))
    env = {"TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC": str(DELAY_S)}
    with ServerProcess([repo], "--log-verbose=1", env=env) as process:
        yield process


def _deadline_exceeded(call, *args, **kwargs) -> None:
    with pytest.raises(InferenceServerException) as info:
        call(*args, **kwargs)
    assert info.value.status() == "StatusCode.DEADLINE_EXCEEDED", info.value


def test_non_inference_answers_are_delayed_one_after_another(server):
    client = grpcclient.InferenceServerClient(server.grpc_url)
    try:
        _deadline_exceeded(client.is_server_live, client_timeout=1)
        # Given up on, the first answer still holds the writer for its whole delay, so this one
        # waits the rest of it and then its own: longer than its timeout.
        _deadline_exceeded(client.is_server_live, client_timeout=DELAY_S + 1)
        # An error is held back as well.
        _deadline_exceeded(client.get_model_metadata, "no_such_model", client_timeout=1)
        assert client.is_server_live()  # no timeout: answered in its turn
    finally:
        client.close()
    assert f"Delaying the write of the response by {DELAY_S} seconds" in server.log_messages()


def test_inference_is_not_delayed(server):
    client = grpcclient.InferenceServerClient(server.grpc_url)
    data = np.arange(4, dtype=np.float32).reshape(1, 4)
    tensor = grpcclient.InferInput("INPUT0", [1, 4], "FP32")
    tensor.set_data_from_numpy(data)
    try:
        result = client.infer("identity", [tensor], client_timeout=DELAY_S - 1)
    finally:
        client.close()
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)


def test_the_http_frontend_is_not_delayed(server):
    # Only Triton's gRPC server reads the variable.
    client = httpclient.InferenceServerClient(server.http_url, network_timeout=DELAY_S - 1)
    try:
        assert client.is_server_live()
    finally:
        client.close()



def test_stream_responses_are_each_delayed(tmp_path):
    """TRITONSERVER_DELAY_GRPC_RESPONSE=<ms>: each response written to a stream waits that long
    first (L0_decoupled sets it so responses queue up behind a slow write); all still arrive,
    in order."""
    write_model(tmp_path, "repeat_int32", REPEAT.format(name="repeat_int32",
                                                        optional="optional: true"))
    env = {"TRITONSERVER_DELAY_GRPC_RESPONSE": "50"}
    with ServerProcess([tmp_path], env=env) as process:
        client = grpcclient.InferenceServerClient(process.grpc_url)
        received: list = []
        client.start_stream(callback=lambda result, error: received.append((result, error)))
        values = np.array([4, 5, 6], dtype=np.int32)
        tensor = grpcclient.InferInput("IN", [3], "INT32")
        tensor.set_data_from_numpy(values)
        client.async_stream_infer("repeat_int32", [tensor])
        client.stop_stream()
        client.close()
        assert [int(r.as_numpy("OUT")[0]) for r, e in received if e is None] == [4, 5, 6]
        assert process.log_messages().count("Delaying the write of the response by 50 ms...") \
            == len(received)
