"""Python-backend corners models from Triton's own repositories rely on: sys.argv as Triton's
stub gives it (unittest.main in execute), relative imports of the version folder's modules,
`c_python_backend_utils`, and a missing package failing the load with its import error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient

from models import write_model
from server_process import ServerProcess

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
