"""pb_utils corners Triton's QA pins (argument_validation, custom_metrics, logging): argument
errors raised as pybind11 raises them, metrics of one family with the same labels sharing one
value, histogram buckets checked, and every line initialize() and finalize() log reaching the
server log (initialize()'s before the failure it ends in)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import tritonclient.http as httpclient

from support.models import write_model
from support.server_process import ServerProcess

CONFIG = '''
name: "corners"
backend: "python"
input { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] }
output { name: "REPORT" data_type: TYPE_STRING dims: [ 1 ] }
'''
MODEL = '''
import json

import numpy as np
import triton_python_backend_utils as pb_utils

FINALIZE_LINES = 300


def outcome(call):
    try:
        call()
        return "accepted"
    except Exception as exc:
        return type(exc).__name__


class TritonPythonModel:
    def execute(self, requests):
        inputs = [pb_utils.Tensor("INPUT0", np.asarray([1, 2], dtype=np.int32))]
        request = dict(inputs=inputs, model_name="m", requested_output_names=["o"])
        logger = pb_utils.Logger
        report = {
            "correlation_id_none": outcome(
                lambda: pb_utils.InferenceRequest(correlation_id=None, **request)),
            "correlation_id_5": outcome(
                lambda: pb_utils.InferenceRequest(correlation_id=5, **request)),
            "log_level_none": outcome(lambda: logger.log("x", None)),
            "log_level_int": outcome(lambda: logger.log("x", 1)),
            "log_level_enum": outcome(lambda: logger.log("x", logger.LogLevel.WARNING)),
            "log_info_none": outcome(lambda: logger.log_info(None)),
            "log_warn_none": outcome(lambda: logger.log_warn(None)),
            "log_error_none": outcome(lambda: logger.log_error(None)),
            "log_verbose_none": outcome(lambda: logger.log_verbose(None)),
            "log_unspecified": outcome(lambda: logger.log("Level unspecified")),
        }
        family = pb_utils.MetricFamily(name="corners_dup", description="dup metric",
                                       kind=pb_utils.MetricFamily.COUNTER)
        first = family.Metric(labels={"a": "1"})
        second = family.Metric(labels={"a": "1"})
        first.increment(7.5)
        report["shared_value"] = second.value()
        del first
        second.increment(1)
        report["after_first_deleted"] = second.value()
        histogram = pb_utils.MetricFamily(name="corners_histogram", description="h",
                                          kind=pb_utils.MetricFamily.HISTOGRAM)
        report["buckets_none"] = outcome(lambda: histogram.Metric(labels={}))
        report["buckets_unsorted"] = outcome(
            lambda: histogram.Metric(labels={}, buckets=[2.5, 0.1, 1.0]))
        report["buckets_duplicate"] = outcome(
            lambda: histogram.Metric(labels={}, buckets=[1, 1, 2]))
        report["buckets_empty"] = outcome(lambda: histogram.Metric(labels={}, buckets=[]))
        text = np.array([json.dumps(report).encode()], dtype=np.object_)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("REPORT", text)]) for _ in requests]

    def finalize(self):
        for i in range(FINALIZE_LINES):
            pb_utils.Logger.log_info(f"finalize line {i}")
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("pb_corners_repo")
    write_model(repo, "corners", CONFIG, files={"1/model.py": MODEL})
    with ServerProcess([repo]) as process:
        yield process


def _report(server: ServerProcess) -> dict:
    client = httpclient.InferenceServerClient(server.http_url)
    x = httpclient.InferInput("IN", [1], "FP32")
    x.set_data_from_numpy(np.zeros(1, np.float32))
    return json.loads(client.infer("corners", [x]).as_numpy("REPORT")[0])


def test_argument_errors_are_type_errors_as_in_tritons_stub(server: ServerProcess) -> None:
    report = _report(server)
    assert report["correlation_id_none"] == "TypeError"
    assert report["correlation_id_5"] == "accepted"
    for case in ("log_level_none", "log_level_int", "log_info_none", "log_warn_none",
                 "log_error_none", "log_verbose_none"):
        assert report[case] == "TypeError", case
    assert report["log_level_enum"] == report["log_unspecified"] == "accepted"


def test_metrics_with_the_same_labels_share_one_value(server: ServerProcess) -> None:
    report = _report(server)
    assert report["shared_value"] == 7.5
    assert report["after_first_deleted"] == 8.5


def test_histogram_buckets_must_be_given_and_strictly_increasing(server: ServerProcess) -> None:
    report = _report(server)
    assert report["buckets_none"] == "TritonModelException"
    assert report["buckets_unsorted"] == "TritonModelException"
    assert report["buckets_duplicate"] == "TritonModelException"
    assert report["buckets_empty"] == "accepted"


def test_every_line_finalize_logs_reaches_the_server_log(server: ServerProcess) -> None:
    _report(server)
    assert server.stop(signal.SIGTERM, timeout=60) == 0
    logged = set(server.log_messages())
    missing = [i for i in range(300) if f"finalize line {i}" not in logged]
    assert not missing, f"{len(missing)} lines lost, first {missing[:5]}"


FAILING_MODEL = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        for i in range(300):
            pb_utils.Logger.log_error(f"initialize line {i}")
        raise pb_utils.TritonModelException("broken on purpose")
"""


def test_every_line_a_failing_initialize_logs_comes_before_its_failure(
        tmp_path: Path) -> None:
    write_model(tmp_path, "failing", CONFIG.replace("corners", "failing"),
                files={"1/model.py": FAILING_MODEL})
    with ServerProcess([tmp_path], "--exit-on-error=false") as process:
        lines = process.log_messages()
    failure = next(i for i, line in enumerate(lines) if "broken on purpose" in line)
    logged = {line.rsplit("initialize line ", 1)[1] for line in lines[:failure]
              if "initialize line " in line}
    missing = [i for i in range(300) if str(i) not in logged]
    assert not missing, f"{len(missing)} lines lost or late, first {missing[:5]}"


def test_a_model_without_its_model_py_fails_to_load_with_tritons_message(tmp_path: Path) -> None:
    write_model(tmp_path, "no_model_file", CONFIG.replace("corners", "no_model_file"))
    (tmp_path / "no_model_file" / "1").mkdir(exist_ok=True)
    with ServerProcess([tmp_path], "--exit-on-error=false") as process:
        client = httpclient.InferenceServerClient(process.http_url)
        [entry] = client.get_model_repository_index()
        log = process.log()
    expected = ("Failed to preinitialize Python stub: Python model file not found in "
                f"'{tmp_path / 'no_model_file' / '1' / 'model.py'}'")
    assert entry["state"] == "UNAVAILABLE"
    assert entry["reason"] == expected
    assert expected in log
    assert "failed to load 'no_model_file'" in log


UNTIL_CANCELLED = """
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            count = 0
            while not request.is_cancelled() and count < 1000:
                sender.send(pb_utils.InferenceResponse(
                    [pb_utils.Tensor("OUT", np.array([count], np.int32))]))
                count += 1
                time.sleep(0.01)
            sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(
                "cancelled", pb_utils.TritonError.CANCELLED)),
                flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""

CANCELLER = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            stream = pb_utils.InferenceRequest(
                model_name="until_cancelled", requested_output_names=["OUT"],
                inputs=[pb_utils.Tensor("IN", np.zeros(1, np.float32))]).exec(decoupled=True)
            seen, last_code = 0, None
            for response in stream:
                if response.has_error():
                    last_code = response.error().code()
                    continue
                seen += 1
                if seen == 3:
                    stream.cancel()
            cancelled = int(last_code == pb_utils.TritonError.CANCELLED)
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("REPORT", np.array([seen, cancelled], np.int32))]))
        return responses
"""


def test_cancelling_a_bls_response_stream_cancels_the_request(tmp_path: Path) -> None:
    """ResponseIterator.cancel(): the model answering the BLS request sees
    request.is_cancelled() and stops (Triton's L0_backend_python decoupled_bls_cancel)."""
    io = ('input { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] }\n'
          'output { name: "%s" data_type: TYPE_INT32 dims: [ %s ] }\n')
    write_model(tmp_path, "until_cancelled", 'backend: "python"\n' + io % ("OUT", "1")
                + "model_transaction_policy { decoupled: true }\n",
                files={"1/model.py": UNTIL_CANCELLED})
    write_model(tmp_path, "canceller", 'backend: "python"\n' + io % ("REPORT", "2"),
                files={"1/model.py": CANCELLER})
    with ServerProcess([tmp_path]) as process:
        client = httpclient.InferenceServerClient(process.http_url)
        tensor = httpclient.InferInput("IN", [1], "FP32")
        tensor.set_data_from_numpy(np.zeros(1, np.float32))
        seen, cancelled = client.infer("canceller", [tensor]).as_numpy("REPORT").tolist()
    assert cancelled == 1
    assert 3 <= seen < 100  # stopped soon after the cancel, far from its 1000


IDENTITY_BF16 = """
import torch
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            tensor = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            try:
                tensor.as_numpy()
                refused = "accepted"
            except pb_utils.TritonModelException as exc:
                refused = str(exc)
            doubled = torch.utils.dlpack.from_dlpack(tensor.to_dlpack()) * 2
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor.from_dlpack("OUTPUT0", torch.utils.dlpack.to_dlpack(doubled))],
                parameters={"as_numpy": refused}))
        return responses
"""


def test_bf16_tensors_go_through_dlpack(tmp_path: Path) -> None:
    """As Triton's pb_utils (L0_backend_python test_bf16): as_numpy() refuses BF16, DLPack
    carries it to and from torch, and the server answers BF16."""
    write_model(tmp_path, "identity_bf16", 'backend: "python"\n'
                'input { name: "INPUT0" data_type: TYPE_BF16 dims: [ 3 ] }\n'
                'output { name: "OUTPUT0" data_type: TYPE_BF16 dims: [ 3 ] }\n',
                files={"1/model.py": IDENTITY_BF16})
    with ServerProcess([tmp_path]) as process:
        client = httpclient.InferenceServerClient(process.http_url)
        tensor = httpclient.InferInput("INPUT0", [3], "BF16")
        tensor.set_data_from_numpy(np.array([1.0, -2.5, 3.0], ml_dtypes.bfloat16))
        result = client.infer("identity_bf16", [tensor])
    assert result.get_output("OUTPUT0")["datatype"] == "BF16"
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0").astype(np.float32), [2.0, -5.0, 6.0])
    assert result.get_response()["parameters"]["as_numpy"] == (
        "Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() and "
        "from_dlpack() instead.")


SHARED_ADD_SUB = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        for name in ("INPUT0", "INPUT1"):
            config.add_input({"name": name, "data_type": "TYPE_FP32", "dims": [4]})
        config.add_output({"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]})
        return config

    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", (
            pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()
            + pb_utils.get_input_tensor_by_name(r, "INPUT1").as_numpy()))]) for r in requests]
"""


def test_auto_complete_config_from_a_module_on_a_path_the_model_adds(tmp_path: Path) -> None:
    """Triton's L0_model_namespacing models: `sys.path.append(dir); from shared import *`
    brings the whole model, auto_complete_config included, from elsewhere."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "shared_add_sub.py").write_text(SHARED_ADD_SUB)
    write_model(tmp_path / "repo", "composed", 'backend: "python"\n', files={"1/model.py": (
        f"import sys\nsys.path.append({str(shared)!r})\nfrom shared_add_sub import *\n")})
    with ServerProcess([tmp_path / "repo"]) as process:
        client = httpclient.InferenceServerClient(process.http_url)
        assert [i["name"] for i in client.get_model_config("composed")["input"]] == [
            "INPUT0", "INPUT1"]
        tensors = []
        for name in ("INPUT0", "INPUT1"):
            tensor = httpclient.InferInput(name, [4], "FP32")
            tensor.set_data_from_numpy(np.ones(4, np.float32))
            tensors.append(tensor)
        assert client.infer("composed", tensors).as_numpy("OUTPUT0").tolist() == [2.0] * 4
