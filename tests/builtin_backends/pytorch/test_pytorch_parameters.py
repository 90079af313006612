"""What Triton's libtorch backend logs and does for its model parameters and instance kinds, as
Triton 2.51's QA suites L0_libtorch_optimized_execution and L0_libtorch_instance_group_kind_model
check it: the settings logged by every model version (parameters or not), each model's thread
count, and a KIND_MODEL instance that places its own tensors."""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.http as httpclient

from support import torch_models
from support.models import infer_arrays, write_model
from support.server_process import ServerProcess

ADDSUB_IO = ('max_batch_size: 8\n'
             'input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 16 ] },\n'
             '        { name: "INPUT__1" data_type: TYPE_FP32 dims: [ 16 ] } ]\n'
             'output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 16 ] },\n'
             '         { name: "OUTPUT__1" data_type: TYPE_FP32 dims: [ 16 ] } ]\n')


def pytorch_config(body: str) -> str:
    return f'platform: "pytorch_libtorch"\n{ADDSUB_IO}{body}'


def parameter(key: str, value: str) -> str:
    return f'parameters {{ key: "{key}" value: {{ string_value: "{value}" }} }}\n'


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("torch_parameters_repo")
    models = {
        "versions": ('version_policy: { all { } }\n'
                     + parameter("DISABLE_OPTIMIZED_EXECUTION", "true"), (1, 2, 3)),
        "plain": ("", (1,)),
        "one_thread": (parameter("INTRA_OP_THREAD_COUNT", "1"), (1,)),
        "two_threads": (parameter("INTRA_OP_THREAD_COUNT", "2"), (1,)),
    }
    for name, (body, versions) in models.items():
        write_model(repo, name, pytorch_config(body), versions=versions)
        for version in versions:
            torch_models.save(torch_models.AddSub(), repo / name / str(version) / "model.pt")
    # Triton's QA model configures [ 4 ] and returns [ 16 ]: Triton does not hold a TorchScript
    # model's outputs to the configured dims.
    write_model(repo, "placed", 'platform: "pytorch_libtorch"\nmax_batch_size: 8\n'
                'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] },\n'
                '        { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]\n'
                'output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 4 ] },\n'
                '         { name: "OUTPUT__1" data_type: TYPE_FP32 dims: [ 4 ] },\n'
                '         { name: "OUTPUT__2" data_type: TYPE_INT64 dims: [ 1 ] } ]\n'
                'instance_group [ { kind: KIND_MODEL } ]\n')
    torch_models.save(torch_models.Placed("cpu"), repo / "placed" / "1" / "model.pt")
    with ServerProcess([repo], "--log-verbose=1") as process:
        yield process


def test_each_version_logs_disabled_optimized_execution_and_infers(
        server: ServerProcess) -> None:
    messages = server.log_messages()
    line = "Optimized execution is disabled for model instance 'versions'"
    assert messages.count(line) == 3, [m for m in messages if "versions" in m]
    a = np.arange(16, dtype=np.float32).reshape(1, 16)
    b = np.full((1, 16), -1, dtype=np.float32)
    client = httpclient.InferenceServerClient(server.http_url)
    for version in ("", "1", "2"):
        inputs = [httpclient.InferInput(name, [1, 16], "FP32") for name in ("INPUT__0", "INPUT__1")]
        inputs[0].set_data_from_numpy(a)
        inputs[1].set_data_from_numpy(b)
        result = client.infer("versions", inputs, model_version=version)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT__0"), a + b)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT__1"), a - b)


def test_a_model_without_parameters_logs_its_settings(server: ServerProcess) -> None:
    messages = server.log_messages()
    for line in ("Optimized execution is enabled for model instance 'plain'",
                 "Cache Cleaning is disabled for model instance 'plain'",
                 "Inference Mode is enabled for model instance 'plain'",
                 "cuDNN is enabled for model instance 'plain'"):
        assert messages.count(line) == 1, (line, [m for m in messages if "'plain'" in m])


def test_every_model_sets_its_intra_op_thread_count(server: ServerProcess) -> None:
    messages = server.log_messages()
    for count, model in ((1, "one_thread"), (2, "two_threads")):
        line = f"Intra op thread count is set to {count} for model instance '{model}'"
        assert line in messages


def test_a_kind_model_instance_places_itself(server: ServerProcess) -> None:
    assert ("TRITONBACKEND_ModelInstanceInitialize: placed_0_0 (MODEL device 0)"
            in server.log_messages())
    a = np.arange(16, dtype=np.float32).reshape(1, 16)
    b = np.arange(32, 48, dtype=np.float32).reshape(1, 16)
    result = infer_arrays(httpclient, server.http_url, "placed", {"INPUT0": a, "INPUT1": b})
    np.testing.assert_array_equal(result.as_numpy("OUTPUT__0"), a + b)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT__1"), a - b)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT__2"), [[-1]])
    server.wait_log("Placed - inputs on cpu")
