"""Python-backend corners models from Triton's own repositories rely on: sys.argv as Triton's
stub gives it (unittest.main in execute), relative imports of the version folder's modules,
`c_python_backend_utils`, and a missing package failing the load with its import error."""

from __future__ import annotations

import json
import queue
import threading

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.models import write_model
from support.server_process import ServerProcess

CONFIG = '''
name: "{name}"
backend: "python"
max_batch_size: 0
input {{ name: "IN" data_type: TYPE_FP32 dims: [ 1 ] }}
output {{ name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] }}
'''

# As Triton's own test models do: run the file's unittest cases inside execute.
UNITTEST_MODEL = '''
import sys
import unittest

import numpy as np
import triton_python_backend_utils as pb_utils

from .helpers import twice


class ArgvTest(unittest.TestCase):
    def test_argv_is_the_stubs(self):
        self.assertEqual(sys.argv, [""])

    def test_relative_import(self):
        self.assertEqual(twice(2.0), 4.0)

    def test_c_python_backend_utils(self):
        import c_python_backend_utils as c_utils

        free = c_utils.shared_memory.free_memory()
        self.assertIsInstance(free, int)
        self.assertGreater(free, 0)
        self.assertIs(c_utils.Tensor, pb_utils.Tensor)


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            result = unittest.main("model", exit=False).result
            ok = result.wasSuccessful() and result.testsRun == 3
            value = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            out = twice(value) if ok else np.full_like(value, -1)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]))
        return responses
'''

HELPERS = '''
def twice(value):
    return value * 2
'''

# BLS with the model name and version as numpy scalars, as Triton's BLS examples take them from
# input tensors; and pb_utils constructors given wrong arguments. Answers a JSON report.
CORNERS_MODEL = '''
import json
import queue
import threading

import numpy as np
import triton_python_backend_utils as pb_utils

CASES = {
    "tensor_no_args": lambda: pb_utils.Tensor(),
    "tensor_name_int": lambda: pb_utils.Tensor(1, np.zeros(1)),
    "tensor_data_list": lambda: pb_utils.Tensor("X", [1, 2]),
    "response_tensors_not_list": lambda: pb_utils.InferenceResponse(
        pb_utils.Tensor("X", np.zeros(1))),
    "response_error_str": lambda: pb_utils.InferenceResponse([], error="oops"),
    "request_no_model": lambda: pb_utils.InferenceRequest(inputs=[], requested_output_names=[]),
    "request_version_str": lambda: pb_utils.InferenceRequest(
        model_name="m", model_version="1", inputs=[], requested_output_names=[]),
    "request_name_int": lambda: pb_utils.InferenceRequest(
        model_name=3, inputs=[], requested_output_names=[]),
    "error_msg_int": lambda: pb_utils.TritonError(3),
}


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            report = {"bls": [], "errors": {}}
            names = np.array([b"unittest_model"], dtype=np.object_)
            for name, version in ((names[0], np.array([1], dtype=np.int64)[0]),
                                  (np.bytes_(b"unittest_model"), np.int32(-1)),
                                  (np.str_("unittest_model"), -1)):
                bls = pb_utils.InferenceRequest(
                    model_name=name, model_version=version, inputs=[pb_utils.Tensor("IN", x)],
                    requested_output_names=["OUT"]).exec()
                report["bls"].append(bls.error().message() if bls.has_error() else
                                     pb_utils.get_output_tensor_by_name(bls, "OUT")
                                     .as_numpy().tolist())
            for case, make in CASES.items():
                try:
                    make()
                    report["errors"][case] = "accepted"
                except Exception as exc:
                    report["errors"][case] = f"{type(exc).__name__}: {exc}"
            text = np.array([json.dumps(report).encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("REPORT", text)]))
        return responses
'''

# A non-decoupled model answering through its response sender, one case per input value; the
# outcomes were compared with Triton 2.51 side by side.
SENDER_MODEL = '''
import threading

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


def answer(value):
    return pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([value], np.float32))])


class TritonPythonModel:
    def execute(self, requests):
        case = int(pb_utils.get_input_tensor_by_name(requests[0], "IN").as_numpy()[0])
        if case == 10:  # every request of the batch through its sender, after execute returns
            senders = [r.get_response_sender() for r in requests]
            go = threading.Event()

            def later():
                go.wait()
                for i, s in enumerate(senders):
                    s.send(answer(10 + i), flags=FINAL)

            threading.Thread(target=later).start()
            go.set()
            return None
        if case == 11:  # None in the returned list: the model answers through the sender
            sender = requests[0].get_response_sender()
            threading.Timer(0.2, lambda: sender.send(answer(11), flags=FINAL)).start()
            return [None]
        sender = requests[0].get_response_sender()
        if case == 12:  # a response, then a failure: the response is the answer
            sender.send(answer(12))
            raise RuntimeError("failed after answering")
        if case == 2:  # a second response is refused; the first one stands
            sender.send(answer(2), flags=FINAL)
            try:
                sender.send(answer(22), flags=FINAL)
            except pb_utils.TritonModelException as exc:
                pb_utils.Logger.log_info(f"second send refused: {exc}")
            return None
        if case == 3:  # a response without FINAL, then FINAL alone
            sender.send(answer(3))
            sender.send(flags=FINAL)
            return None
        if case == 6:  # FINAL alone, before any response
            sender.send(flags=FINAL)
        return None
'''

# A batch of several requests, each answered through its sender after execute returned.
SENDER_BATCH_MODEL = '''
import threading

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        pending = [(r.get_response_sender(), pb_utils.get_input_tensor_by_name(r, "IN").as_numpy())
                   for r in requests]
        pb_utils.Logger.log_info(f"sender batch of {len(requests)}")

        def later():
            for sender, x in pending:
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", x * 10)]),
                            flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

        threading.Thread(target=later).start()
        return None
'''

MISSING_PACKAGE_MODEL = '''
import tritium_no_such_package  # not installed anywhere


class TritonPythonModel:
    def execute(self, requests):
        return []
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("corners_repo")
    write_model(repo, "unittest_model", CONFIG.format(name="unittest_model"),
                files={"1/model.py": UNITTEST_MODEL, "1/helpers.py": HELPERS})
    write_model(repo, "corners", CONFIG.format(name="corners").replace(
        'output { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] }',
        'output { name: "REPORT" data_type: TYPE_STRING dims: [ 1 ] }'),
        files={"1/model.py": CORNERS_MODEL})
    write_model(repo, "sender", CONFIG.format(name="sender"), files={"1/model.py": SENDER_MODEL})
    # Two requests always make one batch: the batcher waits for the second.
    write_model(repo, "sender_batch", CONFIG.format(name="sender_batch").replace(
        "max_batch_size: 0", "max_batch_size: 2\ndynamic_batching { preferred_batch_size: [ 2 ] "
        "max_queue_delay_microseconds: 60000000 }"), files={"1/model.py": SENDER_BATCH_MODEL})
    write_model(repo, "missing_package", CONFIG.format(name="missing_package"),
                files={"1/model.py": MISSING_PACKAGE_MODEL})
    with ServerProcess([repo], "--exit-on-error=false") as process:
        yield process


def test_unittest_main_argv_relative_imports_and_c_utils(server: ServerProcess) -> None:
    client = httpclient.InferenceServerClient(server.http_url)
    x = httpclient.InferInput("IN", [1], "FP32")
    x.set_data_from_numpy(np.array([3.0], dtype=np.float32))
    result = client.infer("unittest_model", [x]).as_numpy("OUT")
    assert result.tolist() == [6.0], server.log()


def test_a_missing_package_fails_the_load_with_the_import_error(server: ServerProcess) -> None:
    client = httpclient.InferenceServerClient(server.http_url)
    assert not client.is_model_ready("missing_package")
    index = {m["name"]: m for m in client.get_model_repository_index()}
    reason = index["missing_package"]["reason"]
    assert "ModuleNotFoundError: No module named 'tritium_no_such_package'" in reason
    assert "ModuleNotFoundError: No module named 'tritium_no_such_package'" in server.log()


PYBIND = ("TypeError: __init__(): incompatible constructor arguments. The following argument "
          "types are supported:\n    1. c_python_backend_utils.")


def corners_report(server: ServerProcess) -> dict:
    client = httpclient.InferenceServerClient(server.http_url)
    x = httpclient.InferInput("IN", [1], "FP32")
    x.set_data_from_numpy(np.array([2.0], dtype=np.float32))
    return json.loads(client.infer("corners", [x]).as_numpy("REPORT")[0])


def test_bls_takes_numpy_model_names_and_versions(server: ServerProcess) -> None:
    assert corners_report(server)["bls"] == [[4.0], [4.0], [4.0]]


def test_pb_utils_constructors_refuse_arguments_as_tritons_stub(server: ServerProcess) -> None:
    errors = corners_report(server)["errors"]
    # Triton's (pybind11's) text, up to the arguments (whose reprs carry addresses).
    expected = {
        "tensor_no_args": ("Tensor(arg0: str, arg1: numpy.ndarray)", ""),
        "tensor_name_int": ("Tensor(arg0: str, arg1: numpy.ndarray)", "1, array([0.])"),
        "tensor_data_list": ("Tensor(arg0: str, arg1: numpy.ndarray)", "'X', [1, 2]"),
        "response_error_str": (
            ("InferenceResponse(output_tensors: List[c_python_backend_utils.Tensor] = [], "
             "error: c_python_backend_utils.TritonError = None)"), "[]; kwargs: error='oops'"),
        "error_msg_int": (
            ("TritonError(message: str, code: c_python_backend_utils.TritonError.__ErrorCode = "
             "<__ErrorCode.INTERNAL: 1>)"), "3"),
    }
    for case, (signature, invoked) in expected.items():
        assert errors[case] == f"{PYBIND}{signature}\n\nInvoked with: {invoked}", case
    for case in ("response_tensors_not_list", "request_no_model", "request_version_str",
                 "request_name_int"):
        assert errors[case].startswith(PYBIND), (case, errors[case])
    assert "Invoked with: kwargs: inputs=[], requested_output_names=[]" \
        in errors["request_no_model"]


def sender_case(server: ServerProcess, case: float) -> list[float]:
    client = httpclient.InferenceServerClient(server.http_url)
    x = httpclient.InferInput("IN", [1], "FP32")
    x.set_data_from_numpy(np.array([case], dtype=np.float32))
    return client.infer("sender", [x]).as_numpy("OUT").tolist()


def test_a_non_decoupled_model_answers_through_its_sender_as_in_triton(
        server: ServerProcess) -> None:
    assert sender_case(server, 10) == [10.0]  # after execute returned, from a thread
    assert sender_case(server, 2) == [2.0]
    server.wait_log("second send refused: Unable to send response. Non-decoupled model cannot "
                    "send more than one response.")
    assert sender_case(server, 3) == [3.0]
    with pytest.raises(InferenceServerException) as info:
        sender_case(server, 6)
    assert ("TritonModelException: Unable to send response. Non-decoupled model cannot send "
            "complete final before sending a response.") in info.value.message()
    # Returning None with nothing left to answer the request: it fails at once.
    with pytest.raises(InferenceServerException) as info:
        sender_case(server, 0)
    assert "without sending a response" in info.value.message()


def test_none_in_the_returned_list_leaves_the_request_to_its_sender(
        server: ServerProcess) -> None:
    assert sender_case(server, 11) == [11.0]


def test_a_failure_after_the_first_response_is_not_sent(server: ServerProcess) -> None:
    assert sender_case(server, 12) == [12.0]
    received: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(server.grpc_url)
    client.start_stream(callback=lambda result, error: received.put((result, error)))
    try:
        x = grpcclient.InferInput("IN", [1], "FP32")
        x.set_data_from_numpy(np.array([12.0], dtype=np.float32))
        client.async_stream_infer("sender", [x])
        result, error = received.get(timeout=60)
        assert error is None and result.as_numpy("OUT").tolist() == [12.0]
        # and nothing after it: the next message on the stream answers the next request
        x.set_data_from_numpy(np.array([10.0], dtype=np.float32))
        client.async_stream_infer("sender", [x])
        result, error = received.get(timeout=60)
        assert error is None and result.as_numpy("OUT").tolist() == [10.0]
    finally:
        client.stop_stream()
    server.wait_log("failed after answering")


def test_a_batch_answered_through_its_senders_after_execute(server: ServerProcess) -> None:
    answers: dict[float, object] = {}

    def ask(value: float) -> None:
        # Closed in the thread that made it (gevent's pool cannot be joined from another).
        with httpclient.InferenceServerClient(server.http_url, network_timeout=120) as client:
            x = httpclient.InferInput("IN", [1, 1], "FP32")
            x.set_data_from_numpy(np.array([[value]], dtype=np.float32))
            answers[value] = client.infer("sender_batch", [x]).as_numpy("OUT").tolist()

    threads = [threading.Thread(target=ask, args=(value,)) for value in (1.0, 2.0)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == {1.0: [[10.0]], 2.0: [[20.0]]}
    server.wait_log("sender batch of 2")
