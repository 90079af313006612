"""A model's load is logged as Triton logs it: "loading: <model>:<version>" for each version,
"failed to load '<model>' version <version>: <Code>: <reason>" (Triton's Status::AsString) for
each that fails, then once for the model "successfully loaded '<model>'" or "failed to load
'<model>'"."""

from __future__ import annotations

import signal
from concurrent.futures import ThreadPoolExecutor

import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from support import ROOT
from support.models import write_model
from support.server_process import ServerProcess

EXAMPLES = ROOT / "examples" / "model_repository"


def test_loading_each_version_then_the_result_for_the_model():
    # `simple` needs the example backend, not given here: it fails to load.
    with ServerProcess([EXAMPLES], "--model-control-mode=explicit",
                       "--load-model=identity_fp32", "--load-model=simple",
                       "--exit-on-error=false", "--strict-readiness=false") as server:
        lines = server.log().splitlines()
        messages = server.log_messages()

    def index(text: str) -> int:
        return next(i for i, line in enumerate(lines) if text in line)

    assert index("loading: identity_fp32:1") < index("successfully loaded 'identity_fp32'")
    assert index("loading: simple:1") < index(
        "failed to load 'simple' version 1: Invalid argument: unable to find backend library "
        "for backend 'addsub', try specifying runtime") \
        < index("failed to load 'simple'\"")
    assert messages.count("successfully loaded 'identity_fp32'") == 1
    assert messages.count("failed to load 'simple'") == 1
    assert not [m for m in messages if m.startswith("successfully loaded 'identity_fp32' ")]


def test_a_verbose_server_traces_each_load_and_unload_as_triton():
    """Triton's verbose (level 2) life-cycle trace: AsyncLoad() when a load starts,
    OnLoadFinal() once its versions are done, AsyncUnload() when an unload starts (L0_lifecycle
    reads their order)."""
    with ServerProcess([EXAMPLES], "--model-control-mode=explicit", "--log-verbose=2") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        client.load_model("identity_fp32")
        client.unload_model("identity_fp32")
        messages = server.log_messages()
    trace = [m for m in messages if m.endswith("'identity_fp32'") and "()" in m
             or m == "OnLoadFinal() 'identity_fp32' for all version(s)"]
    assert trace == ["AsyncLoad() 'identity_fp32'",
                     "OnLoadFinal() 'identity_fp32' for all version(s)",
                     "AsyncUnload() 'identity_fp32'"], trace


SLOW_MODEL = """
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        time.sleep(3)

    def execute(self, requests):
        return [pb_utils.InferenceResponse([]) for _ in requests]
"""

SLOW_CONFIG = """
name: "slow"
backend: "python"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
"""


def test_a_server_stopped_while_a_model_loads_lets_the_load_finish_then_unloads_it(tmp_path):
    """Triton's exit waits for a load in progress (L0_lifecycle test_shutdown_while_loading
    reads OnLoadFinal() before AsyncUnload()); the model is then unloaded, not left behind."""
    write_model(tmp_path, "slow", SLOW_CONFIG, files={"1/model.py": SLOW_MODEL})
    with ServerProcess([tmp_path], "--model-control-mode=explicit", "--log-verbose=2") as server:
        # Over gRPC: the HTTP port would hold the exit until the load is answered and its
        # connection closed, so that the exit would never meet the load in progress.
        client = grpcclient.InferenceServerClient(server.grpc_url)
        with ThreadPoolExecutor(1) as pool:
            loading = pool.submit(client.load_model, "slow")
            server.wait_log("loading: slow:1")
            assert server.process is not None
            server.process.send_signal(signal.SIGTERM)
            assert server.wait_exit(60) == 0
            loading.exception(timeout=60)  # answered, or its connection closed: either way
    messages = server.log_messages()
    trace = [m for m in messages if m in ("OnLoadFinal() 'slow' for all version(s)",
                                          "AsyncUnload() 'slow'")]
    assert trace == ["OnLoadFinal() 'slow' for all version(s)", "AsyncUnload() 'slow'"], trace
    assert "successfully unloaded 'slow' version 1" in messages
