"""Response statistics of a decoupled Python model: each response its sender sends counts under
its index in the request's stream (`response_stats` of the statistics extension), over HTTP,
gRPC and the in-process API. A flags-only final counts as an empty response, an error response
as a failed one.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

import tritonserver
from support.models import write_model
from support.python_backend_fixtures import grpc_input, one_model_server, stream
from support.server_process import ServerProcess

CONFIG = """
    backend: "python"
    max_batch_size: 0
    model_transaction_policy { decoupled: true }
    input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
    output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
"""

# IN = n >= 0: n responses OUT = i, then a flags-only final; n < 0: one error response, final.
MODEL = """
    import numpy as np
    import triton_python_backend_utils as pb_utils


    class TritonPythonModel:
        def execute(self, requests):
            for request in requests:
                sender = request.get_response_sender()
                count = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
                if count < 0:
                    error = pb_utils.TritonError("a negative count")
                    sender.send(pb_utils.InferenceResponse(error=error),
                                flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                    continue
                for i in range(count):
                    out = pb_utils.Tensor("OUT", np.array([i], np.int32))
                    sender.send(pb_utils.InferenceResponse([out]))
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            return None
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from one_model_server(tmp_path_factory, "streamer", CONFIG, MODEL)


def _count(duration: dict) -> int:
    return int(duration.get("count", 0))


def _check(response_stats: dict, streams: int, count: int, failures: int) -> None:
    """`streams` requests of `count` responses each, and `failures` failed requests."""
    assert sorted(response_stats, key=int) == [str(i) for i in range(count + 1)]
    for index in range(count):
        stats = response_stats[str(index)]
        assert _count(stats["success"]) == streams
        assert _count(stats["compute_output"]) == streams
        assert _count(stats["compute_infer"]) == streams + (failures if index == 0 else 0)
        assert _count(stats.get("fail", {})) == (failures if index == 0 else 0)
        assert _count(stats.get("empty_response", {})) == 0
        assert int(stats["success"]["ns"]) > 0
    final = response_stats[str(count)]
    assert _count(final["empty_response"]) == streams
    assert _count(final.get("success", {})) == 0


def test_each_response_counts_under_its_index(server: ServerProcess) -> None:
    client = grpcclient.InferenceServerClient(server.grpc_url)
    sends = [("streamer", f"r{i}", [grpc_input("IN", np.array([3], np.int32), "INT32")])
             for i in range(2)]
    got = stream(client, sends)
    assert [len(got[f"r{i}"]) for i in range(2)] == [4, 4]  # 3 responses and the empty final
    http = httpclient.InferenceServerClient(server.http_url)
    _check(http.get_inference_statistics("streamer")["model_stats"][0]["response_stats"], 2, 3, 0)
    grpc_stats = client.get_inference_statistics("streamer", as_json=True)["model_stats"][0]
    _check(grpc_stats["response_stats"], 2, 3, 0)


def test_in_process_statistics_and_a_failed_response(tmp_path) -> None:
    write_model(tmp_path, "streamer", CONFIG, files={"1/model.py": MODEL})
    server = tritonserver.Server(model_repository=str(tmp_path), exit_timeout=5
                                 ).start(wait_until_ready=True)
    try:
        model = server.model("streamer")
        outs = [int(np.from_dlpack(r.outputs["OUT"])[0])
                for r in model.infer(inputs={"IN": np.array([2], np.int32)}) if r.outputs]
        assert outs == [0, 1]
        with pytest.raises(tritonserver.TritonError, match="a negative count"):
            list(model.infer(inputs={"IN": np.array([-1], np.int32)}))
        stats = model.statistics()["model_stats"][0]["response_stats"]
        _check(stats, 1, 2, 1)
    finally:
        server.stop()
