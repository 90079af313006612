"""Decoupled gRPC streams whose client goes away, or stops reading, while the model sends.

- a client that cancels its stream: the request is cancelled (the model sees
  `is_cancelled()`), the server's memory stays flat and SIGTERM exits promptly;
- a model that ignores the cancellation and keeps sending: what it sends is dropped, not
  queued for nobody (before: +884 MB in 20 s, and SIGTERM waited on it);
- a client that keeps its connection but never reads: its stream is cancelled once its output
  backs up, and other clients are served meanwhile.
"""

from __future__ import annotations

import shutil
import signal
import struct
import threading
import time

import hpack
import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2 as pb

from support.grpc_stream_fixtures import GEN_STREAM
from support.h2_frames import (
    DATA,
    END_HEADERS,
    HEADERS,
    SETTINGS_INITIAL_WINDOW_SIZE,
    WINDOW_UPDATE,
    RawClient,
    frame,
    grpc_message,
    request_headers,
    rss_bytes,
)
from support.server_process import ServerProcess

MiB = 1024 * 1024


def _terminate(server: ServerProcess) -> tuple[int, float]:
    """SIGTERM the server: its exit code and the seconds it took to exit."""
    assert server.process is not None
    start = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    code = server.wait_exit(60)
    return code, time.monotonic() - start


def test_an_abandoned_stream_cancels_its_request_and_keeps_nothing(tmp_path) -> None:
    shutil.copytree(GEN_STREAM, tmp_path / "gen_stream",
                    ignore=shutil.ignore_patterns("__pycache__"))
    with ServerProcess([tmp_path]) as server:
        assert server.process is not None
        pid = server.process.pid
        before = rss_bytes(pid)
        got = threading.Event()
        client = grpcclient.InferenceServerClient(server.grpc_url)
        client.start_stream(callback=lambda result, error: got.set())
        inputs = []
        for name, value, datatype in (("text_input", np.array([b"x"], np.object_), "BYTES"),
                                      ("count", np.array([2**30], np.int32), "INT32")):
            tensor = grpcclient.InferInput(name, [1], datatype)
            tensor.set_data_from_numpy(value)
            inputs.append(tensor)
        client.async_stream_infer("gen_stream", inputs, request_id="abandoned")
        assert got.wait(60)
        client.stop_stream(cancel_requests=True)  # the client goes away mid-stream
        client.close()
        deadline = time.monotonic() + 60
        cancelled = tmp_path / "gen_stream" / "cancelled.txt"
        while not (cancelled.exists() and "abandoned" in cancelled.read_text()):
            assert time.monotonic() < deadline, "the model never saw the request cancelled"
            time.sleep(0.05)
        grown = rss_bytes(pid) - before
        code, took = _terminate(server)
    print(f"RSS grew {grown / MiB:.0f} MiB; exited {code} {took:.1f} s after SIGTERM")
    assert grown < 200 * MiB, f"the server grew {grown / MiB:.0f} MiB"
    assert code == 0
    assert took < 10, f"exited {took:.1f} s after SIGTERM"


_FLOOD = '''
import os
import threading
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Decoupled: sends 64 KiB responses in a loop for ever. It notes (in the file
    `cancelled` beside its config) when its request is cancelled, but goes on sending."""

    def initialize(self, args):
        self.marker = os.path.join(args["model_repository"], "cancelled")

    def execute(self, requests):
        for request in requests:
            threading.Thread(target=self.flood, args=(request,), daemon=True).start()
        return None

    def flood(self, request):
        sender = request.get_response_sender()
        block = np.zeros(65536, np.uint8)
        noted = False
        while True:
            if not noted and request.is_cancelled():
                open(self.marker, "w").close()
                noted = True
            try:
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", block)]))
            except Exception:
                return
'''

_FLOOD_CONFIG = '''
backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_UINT8 dims: [ 65536 ] } ]
'''


def _write_flood(repository) -> None:
    (repository / "flood" / "1").mkdir(parents=True)
    (repository / "flood" / "1" / "model.py").write_text(_FLOOD)
    (repository / "flood" / "config.pbtxt").write_text(_FLOOD_CONFIG)


def _wait_flood_cancelled(repository) -> None:
    """Until the flood model has seen its request cancelled (it goes on sending)."""
    deadline = time.monotonic() + 60
    while not (repository / "flood" / "cancelled").exists():
        assert time.monotonic() < deadline, "the flood's request was never cancelled"
        time.sleep(0.05)


def test_what_a_model_sends_after_its_stream_is_gone_is_dropped(tmp_path) -> None:
    """The model ignores the cancellation and keeps sending 64 KiB responses: the server's
    memory stays flat (nothing is queued for the gone client) and SIGTERM still exits within
    --exit-timeout-secs and a margin."""
    _write_flood(tmp_path)
    with ServerProcess([tmp_path], "--exit-timeout-secs=3") as server:
        assert server.process is not None
        pid = server.process.pid
        got = threading.Event()
        client = grpcclient.InferenceServerClient(server.grpc_url)
        client.start_stream(callback=lambda result, error: got.set())
        tensor = grpcclient.InferInput("IN", [1], "INT32")
        tensor.set_data_from_numpy(np.array([1], np.int32))
        client.async_stream_infer("flood", [tensor])
        assert got.wait(60)
        client.stop_stream(cancel_requests=True)
        client.close()
        _wait_flood_cancelled(tmp_path)
        time.sleep(1)  # the model goes on sending; let the server settle on it
        settled = rss_bytes(pid)
        time.sleep(5)  # at the model's pace this was ~200 MB of responses
        grown = rss_bytes(pid) - settled
        code, took = _terminate(server)
    print(f"RSS grew {grown / MiB:.0f} MiB in 5 s; exited {code} {took:.1f} s after SIGTERM")
    assert grown < 100 * MiB, f"the server grew {grown / MiB:.0f} MiB for a gone client"
    assert took < 15, f"exited {took:.1f} s after SIGTERM (--exit-timeout-secs=3)"


def test_a_stream_nobody_reads_is_cancelled_not_buffered(tmp_path) -> None:
    """A client opens a stream to the flooding model, opens its flow-control windows wide and
    then never reads: the server holds a bounded amount for it (the stream is cancelled once
    its output backs up), and other clients are served meanwhile."""
    _write_flood(tmp_path)
    shutil.copytree(GEN_STREAM, tmp_path / "gen_stream",
                    ignore=shutil.ignore_patterns("__pycache__"))
    with ServerProcess([tmp_path]) as server:
        assert server.process is not None
        pid = server.process.pid
        wide = struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, 2**31 - 1)
        reader = RawClient(server.grpc_url, wide)
        reader.send(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 2**31 - 1 - 65535)))
        message = pb.ModelInferRequest(model_name="flood")
        tensor = message.inputs.add(name="IN", datatype="INT32", shape=[1])
        tensor.contents.int_contents.append(1)
        block = hpack.Encoder().encode(
            request_headers("/inference.GRPCInferenceService/ModelStreamInfer"))
        reader.send(frame(HEADERS, END_HEADERS, 1, block)
                    + frame(DATA, 0, 1, grpc_message(message.SerializeToString())))
        _wait_flood_cancelled(tmp_path)  # its output backed up
        time.sleep(1)
        settled = rss_bytes(pid)
        time.sleep(5)  # never reading
        grown = rss_bytes(pid) - settled
        client = grpcclient.InferenceServerClient(server.grpc_url)
        results: list = []
        client.start_stream(callback=lambda result, error: results.append(error))
        text = grpcclient.InferInput("text_input", [1], "BYTES")
        text.set_data_from_numpy(np.array([b"x"], np.object_))
        count = grpcclient.InferInput("count", [1], "INT32")
        count.set_data_from_numpy(np.array([3], np.int32))
        client.async_stream_infer("gen_stream", [text, count])
        deadline = time.monotonic() + 30
        while len(results) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        client.stop_stream()
        reader.close()
    print(f"RSS grew {grown / MiB:.0f} MiB in 5 s for a client that does not read")
    assert results == [None, None, None]
    assert grown < 100 * MiB, f"the server grew {grown / MiB:.0f} MiB for an unread stream"
