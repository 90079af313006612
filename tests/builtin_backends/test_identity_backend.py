"""The built-in identity backend's corners that Triton's QA relies on: an output whose
optional input was not given (L0_optional_input's ensembles of identity models), and the
`creation_delay_sec` parameter that slows its load (L0_lifecycle)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.models import identity_config, write_model
from support.server_process import ServerProcess

CONFIG = """
name: "{name}"
backend: "identity"
max_batch_size: {batch}
input [
  {{ name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] }},
  {{ name: "INPUT1" data_type: TYPE_INT32 dims: [ 2, -1 ] optional: true }},
  {{ name: "INPUT2" data_type: TYPE_STRING dims: [ 1 ] optional: true }}
]
output [
  {{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }},
  {{ name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 2, -1 ] }},
  {{ name: "OUTPUT2" data_type: TYPE_STRING dims: [ 1 ] }}
]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo: Path = tmp_path_factory.mktemp("identity")
    write_model(repo, "batched", CONFIG.format(name="batched", batch=8))
    write_model(repo, "unbatched", CONFIG.format(name="unbatched", batch=0))
    with ServerProcess([repo]) as process:
        yield process


@pytest.mark.parametrize("model, lead", [("batched", (3,)), ("unbatched", ())])
def test_an_output_of_a_missing_optional_input_is_zeros(server, model, lead) -> None:
    """As Triton's identity backend: zeros of the input's type and shape, variable dims as
    1, with the request's batch dimension."""
    client = httpclient.InferenceServerClient(server.http_url)
    tensor = httpclient.InferInput("INPUT0", [*lead, 4], "FP32")
    tensor.set_data_from_numpy(np.ones((*lead, 4), np.float32))
    result = client.infer(model, [tensor])
    assert result.as_numpy("OUTPUT0").tolist() == np.ones((*lead, 4)).tolist()
    assert result.as_numpy("OUTPUT1").tolist() == np.zeros((*lead, 2, 1), np.int32).tolist()
    assert result.get_output("OUTPUT1")["datatype"] == "INT32"
    assert result.as_numpy("OUTPUT2").tolist() == np.full((*lead, 1), b"", object).tolist()
    # Only the outputs asked for.
    only = client.infer(model, [tensor], outputs=[httpclient.InferRequestedOutput("OUTPUT0")])
    assert only.as_numpy("OUTPUT1") is None


def test_creation_delay_sec_holds_the_load_as_tritons_identity(tmp_path: Path) -> None:
    # Triton's L0_lifecycle times concurrent loads of identity models with this parameter.
    delay = 'parameters { key: "creation_delay_sec" value: { string_value: "%s" } }'
    write_model(tmp_path, "slow", identity_config("slow", extra=delay % "1"))
    write_model(tmp_path, "junk", identity_config("junk", extra=delay % "soon"))
    with ServerProcess([tmp_path], "--model-control-mode=explicit") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        started = time.monotonic()
        client.load_model("slow")
        assert time.monotonic() - started >= 1.0  # it slept its second
        assert client.is_model_ready("slow")
        assert "Creation delay is set to: 1" in server.log_messages()
        with pytest.raises(InferenceServerException) as info:
            client.load_model("junk")
        assert "identity model 'junk': parameter creation_delay_sec must be a whole number " \
            "of seconds, got 'soon'" in info.value.message()
