"""Classification with label files (`label_filename`), over HTTP and gRPC, as Triton 2.51 answers.

The expected strings are what the reference Triton sent for the same labels file and input: an
empty line and an index past the end give no label. A missing label file fails the load in
Triton's words; one outside the model directory is refused (a load request can bring its own
configuration, and labels go back to clients).
"""

from __future__ import annotations

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pbg
from tritonclient.utils import InferenceServerException, deserialize_bytes_tensor

from support.models import identity_config, write_model
from support.server_process import ServerProcess

LABELED = 'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] label_filename: "%s" } ]'
# Triton's answer for [1, 5, 3, 4, 2] with classification 5 and labels cat, dog, "", bird.
EXPECTED = [b"5.000000:1:dog", b"4.000000:3:bird", b"3.000000:2", b"2.000000:4", b"1.000000:0:cat"]


def labeled_config(name: str, label_file: str) -> str:
    config = identity_config(name)
    plain = 'output { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }'
    assert plain in config
    return config.replace(plain, LABELED % label_file)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    repo = tmp_path_factory.mktemp("labels")
    write_model(repo, "labeled", labeled_config("labeled", "labels.txt"),
                files={"labels.txt": "cat\ndog\n\nbird\n"})
    write_model(repo, "missing_labels", labeled_config("missing_labels", "missing.txt"))
    (repo.parent / "secret.txt").write_text("do-not-send\n")
    write_model(repo, "escaping_labels", labeled_config("escaping_labels", "../../secret.txt"))
    with ServerProcess([repo], "--exit-on-error=false") as process:
        process.repo = repo
        yield process


DATA = np.array([[1, 5, 3, 4, 2]], dtype=np.float32)


def test_http_classification_names_the_classes(server):
    client = httpclient.InferenceServerClient(server.http_url)
    inp = httpclient.InferInput("INPUT0", list(DATA.shape), "FP32")
    inp.set_data_from_numpy(DATA, binary_data=False)
    for binary in (False, True):
        output = httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary, class_count=5)
        result = client.infer("labeled", [inp], outputs=[output])
        got = [[v if isinstance(v, bytes) else v.encode() for v in row]
               for row in result.as_numpy("OUTPUT0").tolist()]
        assert got == [EXPECTED], binary


def test_grpc_classification_names_the_classes(server):
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        inp = grpcclient.InferInput("INPUT0", list(DATA.shape), "FP32")
        inp.set_data_from_numpy(DATA)
        result = client.infer("labeled", [inp],
                              outputs=[grpcclient.InferRequestedOutput("OUTPUT0", class_count=5)])
    assert result.as_numpy("OUTPUT0").tolist() == [EXPECTED]


def test_grpc_stream_classification_names_the_classes(server):
    with grpc.insecure_channel(server.grpc_url) as channel:
        stub = pbg.GRPCInferenceServiceStub(channel)
        request = pb.ModelInferRequest(model_name="labeled", id="s")
        request.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 5])
        request.raw_input_contents.append(DATA.tobytes())
        request.outputs.add(name="OUTPUT0").parameters["classification"].int64_param = 2
        (answer,) = list(stub.ModelStreamInfer(iter([request]), timeout=30))
    assert answer.error_message == ""
    raw = answer.infer_response.raw_output_contents[0]
    assert deserialize_bytes_tensor(raw).tolist() == EXPECTED[:2]


def test_a_missing_label_file_fails_the_load_in_tritons_words(server):
    client = httpclient.InferenceServerClient(server.http_url)
    assert not client.is_model_ready("missing_labels")
    path = server.repo / "missing_labels" / "missing.txt"
    assert f"failed to open text file for read {path}: No such file or directory" in server.log()


def test_a_label_file_outside_the_model_directory_is_refused(server):
    client = httpclient.InferenceServerClient(server.http_url)
    assert not client.is_model_ready("escaping_labels")
    assert ("label file '../../secret.txt' of output 'OUTPUT0' is outside the model directory"
            in server.log())
    assert "do-not-send" not in server.log()


def test_a_model_whose_labels_failed_does_not_serve(server):
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        inp = grpcclient.InferInput("INPUT0", list(DATA.shape), "FP32")
        inp.set_data_from_numpy(DATA)
        with pytest.raises(InferenceServerException) as info:
            client.infer("missing_labels", [inp])
    assert "missing_labels" in info.value.message()
