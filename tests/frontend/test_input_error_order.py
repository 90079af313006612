"""Which input a data error names when several inputs are bad: Triton's core checks them in its
hash map's order, the reverse of the request's for two inputs, so it names the second
(L0_input_validation's test_input_string_shape_validation pins it)."""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.models import write_model
from support.server_process import ServerProcess

CONFIG = '''
name: "two_strings"
backend: "python"
max_batch_size: 8
input { name: "INPUT0" data_type: TYPE_STRING dims: [ 16 ] }
input { name: "INPUT1" data_type: TYPE_STRING dims: [ 16 ] }
output { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 16 ] }
'''
MODEL = '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])
            for r in requests]
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("input_order_repo")
    write_model(repo, "two_strings", CONFIG, files={"1/model.py": MODEL})
    with ServerProcess([repo]) as process:
        yield process


def _infer(module, url: str, elements: int) -> str:
    data = np.array([[str(i).encode() for i in range(elements)]], dtype=np.object_)
    inputs = []
    for name in ("INPUT0", "INPUT1"):
        tensor = module.InferInput(name, data.shape, "BYTES")
        tensor.set_data_from_numpy(data)
        tensor.set_shape((1, 16))  # the shape says 16, the data holds `elements`
        inputs.append(tensor)
    with pytest.raises(InferenceServerException) as info:
        module.InferenceServerClient(url).infer("two_strings", inputs)
    return info.value.message()


@pytest.mark.parametrize("module, url", [(grpcclient, "grpc_url"), (httpclient, "http_url")])
def test_the_second_of_two_bad_inputs_is_named(server, module, url) -> None:
    message = _infer(module, getattr(server, url), 14)
    assert ("expected 16 string elements for inference input 'INPUT1' for model "
            "'two_strings', got 14") in message
    message = _infer(module, getattr(server, url), 18)
    assert ("unexpected number of string elements 17 for inference input 'INPUT1' for model "
            "'two_strings', expecting 16") in message
