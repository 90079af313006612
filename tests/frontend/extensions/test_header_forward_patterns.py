"""--http/--grpc-header-forward-pattern as Triton reads them (L0_parameters): RE2 expressions,
case-insensitive (Triton prepends "(?i)"), and `(?-i)` turns that off again."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from support.models import write_model
from support.server_process import ServerProcess
from tritium.frontend.extensions.header_forward import HeaderPattern

PARAMS_MODEL = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "PARAMS", np.array([r.parameters().encode()], dtype=np.object_))]) for r in requests]
'''
PARAMS_CONFIG = '''
name: "params"
backend: "python"
input { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] }
output { name: "PARAMS" data_type: TYPE_STRING dims: [ 1 ] }
'''
HEADERS = {"my_header_1": "one", "MY_HEADER_2": "two", "other": "no"}


def _params(module, url: str, headers: dict[str, str]) -> dict:
    client = module.InferenceServerClient(url)
    tensor = module.InferInput("IN", [1], "FP32")
    tensor.set_data_from_numpy(np.zeros(1, dtype=np.float32))
    result = client.infer("params", [tensor], headers=headers)
    return json.loads(result.as_numpy("PARAMS")[0])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("header_forward_repo")
    write_model(repo, "params", PARAMS_CONFIG, files={"1/model.py": PARAMS_MODEL})
    # HTTP: upper-case pattern, matched regardless of case; gRPC: case-sensitive on purpose.
    with ServerProcess([repo], "--http-header-forward-pattern=MY_HEADER.*",
                       "--grpc-header-forward-pattern=(?-i)MY_HEADER.*") as process:
        yield process


def test_http_pattern_matches_header_names_in_any_case(server: ServerProcess) -> None:
    params = _params(httpclient, server.http_url, HEADERS)
    assert {k.lower(): v for k, v in params.items()} == {"my_header_1": "one",
                                                         "my_header_2": "two"}


def test_grpc_pattern_with_case_sensitivity_turned_off_again(server: ServerProcess) -> None:
    # gRPC metadata keys are lower case: "(?-i)MY_HEADER.*" matches none of them.
    assert _params(grpcclient, server.grpc_url, {"my_header_1": "one", "other": "no"}) == {}


def test_an_invalid_pattern_stops_start_up_with_one_line(tmp_path) -> None:
    process = ServerProcess([tmp_path], "--grpc-header-forward-pattern=(unclosed")
    process.start(wait_ready=False)
    assert process.wait_exit() != 0
    assert "invalid header forward pattern '(unclosed': missing )" in process.log()


def test_pattern_is_re2_and_case_insensitive() -> None:
    assert HeaderPattern("^x-fwd-").matches("X-Fwd-Tenant")
    assert not HeaderPattern("(?-i)^x-fwd-").matches("X-Fwd-Tenant")
    assert HeaderPattern("(?-i)^x-fwd-").matches("x-fwd-tenant")
