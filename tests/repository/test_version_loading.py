"""Which versions of a model a load picks, and what one failing version does to the others,
seen as a client and the log see them (Triton's L0_lifecycle: test_parse_ignore_*_version,
test_parse_error_modelfail, test_load_new_model_version)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.models import identity_config, write_model
from support.python_backend_fixtures import wait_for
from support.server_process import ServerProcess

# A backend that refuses a version whose folder holds a file named `refuse`: one version of a
# model can fail while the others load.
PICKY_BACKEND = """
from tritium.backend import ModelInstanceState, ModelState, TritonError

def model_initialize(model):
    if (model.version_path / "refuse").exists():
        raise TritonError.internal(f"version {model.version} refused")
    ModelState.create(model)

class Echo(ModelInstanceState):
    def execute(self, inputs):
        return {"OUTPUT0": inputs["INPUT0"]}

def model_instance_initialize(instance):
    Echo.create(instance)

def model_instance_execute(instance, requests):
    instance.state.process_requests(requests)
"""

ALL_VERSIONS = "version_policy: { all: {} }"


def infer(client: httpclient.InferenceServerClient, model: str, version: str = "") -> list:
    tensor = httpclient.InferInput("INPUT0", [1, 1], "FP32")
    tensor.set_data_from_numpy(np.array([[7]], np.float32))
    return client.infer(model, [tensor], model_version=version).as_numpy("OUTPUT0").tolist()


def index(client: httpclient.InferenceServerClient, name: str) -> list[dict]:
    return [e for e in client.get_model_repository_index() if e["name"] == name]


def picky_server(tmp_path: Path, *flags: str) -> ServerProcess:
    backends = tmp_path / "backends"
    (backends / "picky").mkdir(parents=True)
    (backends / "picky" / "backend.py").write_text(PICKY_BACKEND)
    return ServerProcess([tmp_path / "repo"], f"--backend-directory={backends}", *flags)


def picky_config(name: str) -> str:
    return identity_config(name, extra=ALL_VERSIONS).replace('"identity"', '"picky"')


def test_a_specific_version_without_its_folder_is_logged_and_the_others_load(tmp_path):
    write_model(tmp_path, "m", identity_config(
        "m", extra="version_policy: { specific: { versions: [1, 3] } }"), versions=(1, 2))
    with ServerProcess([tmp_path]) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_server_ready()
        assert client.is_model_ready("m", "1")
        assert index(client, "m") == [{"name": "m", "version": "1", "state": "READY"}]
        assert infer(client, "m") == [[7.0]]
        assert "version 3 is specified for model 'm', but the version directory is not " \
            "present" in server.log_messages()


def test_a_specific_policy_with_no_version_present_fails_the_model(tmp_path):
    write_model(tmp_path, "m", identity_config(
        "m", extra="version_policy: { specific: { versions: [3] } }"), versions=(1,))
    with ServerProcess([tmp_path], "--exit-on-error=false") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert not client.is_model_ready("m")
        assert not client.is_server_ready()
        assert "load failed for model 'm': at least one version must be available under the " \
            "version policy of model 'm'" in server.log_messages()


def test_folders_that_are_no_version_are_ignored_with_a_warning(tmp_path):
    write_model(tmp_path, "m", identity_config("m", extra=ALL_VERSIONS),
                versions=(1,), files={"003/x": "", "abc/x": "", "warmup/x": ""})
    with ServerProcess([tmp_path]) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert index(client, "m") == [{"name": "m", "version": "1", "state": "READY"}]
        messages = server.log_messages()
        assert "ignore version directory '003' which contains leading zeros in its directory " \
            "name" in messages
        assert "ignore version directory 'abc' which fails to convert to integral number" \
            in messages
        assert not [m for m in messages if "'warmup'" in m]


def test_one_failing_version_takes_the_versions_loaded_with_it_down(tmp_path):
    write_model(tmp_path / "repo", "m", picky_config("m"), versions=(1, 2),
                files={"2/refuse": ""})
    with picky_server(tmp_path, "--exit-on-error=false", "--strict-readiness=false") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert not client.is_model_ready("m", "1")
        wait_for(lambda: index(client, "m")[0] == {
            "name": "m", "version": "1", "state": "UNAVAILABLE", "reason": "unloaded"})
        assert index(client, "m")[1] == {"name": "m", "version": "2", "state": "UNAVAILABLE",
                                         "reason": "version 2 refused"}
        with pytest.raises(InferenceServerException) as info:
            infer(client, "m")
        assert info.value.message() == "Request for unknown model: 'm' has no available versions"
        messages = server.log_messages()
        assert "failed to load 'm' version 2: Internal: version 2 refused" in messages
        assert messages.count("failed to load 'm'") == 1
        assert not [m for m in messages if m.startswith("successfully loaded 'm'")]


def test_a_failed_reload_leaves_what_served_before_serving(tmp_path):
    model = write_model(tmp_path / "repo", "m", picky_config("m"), versions=(1,))
    with picky_server(tmp_path, "--model-control-mode=explicit", "--load-model=m") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_model_ready("m", "1")
        # A new version that fails, and a changed configuration that reloads version 1 too.
        (model / "2").mkdir()
        (model / "2" / "refuse").touch()
        (model / "config.pbtxt").write_text(picky_config("m").replace(
            "max_batch_size: 8", "max_batch_size: 4"))
        with pytest.raises(InferenceServerException) as info:
            client.load_model("m")
        assert info.value.message() == (
            "load failed for model 'm': version 2 is at UNAVAILABLE state: version 2 refused;\n")
        assert client.is_model_ready("m", "1")
        assert infer(client, "m", "1") == [[7.0]]
        assert client.get_model_config("m")["max_batch_size"] == 8
        assert index(client, "m") == [
            {"name": "m", "version": "1", "state": "READY"},
            {"name": "m", "version": "2", "state": "UNAVAILABLE", "reason": "version 2 refused"}]


def test_a_load_of_several_versions_is_logged_once_for_the_model(tmp_path):
    write_model(tmp_path / "repo", "m", picky_config("m"), versions=(1, 2))
    with picky_server(tmp_path) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_model_ready("m", "1") and client.is_model_ready("m", "2")
        messages = server.log_messages()
        assert "loading: m:1" in messages and "loading: m:2" in messages
        assert [m for m in messages if m.startswith("successfully loaded 'm'")] == [
            "successfully loaded 'm'"]


def test_a_version_policy_naming_a_version_twice_loads_it_once(tmp_path):
    write_model(tmp_path, "m", identity_config(
        "m", extra="version_policy: { specific: { versions: [1, 1] } }"), versions=(1,))
    with ServerProcess([tmp_path]) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert index(client, "m") == [{"name": "m", "version": "1", "state": "READY"}]
        assert client.get_model_config("m")["version_policy"] == {
            "specific": {"versions": [1, 1]}}


def test_a_failed_load_leaves_a_version_it_updated_in_place_serving(tmp_path):
    # Only version 1's instance groups change: it is updated in place (it is the serving
    # version), so abandoning the load must not unload it.
    groups = 'instance_group [ { count: %d kind: KIND_CPU } ]'
    model = write_model(tmp_path / "repo", "m", picky_config("m") + groups % 1, versions=(1,))
    with picky_server(tmp_path, "--model-control-mode=explicit", "--load-model=m") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_model_ready("m", "1")
        (model / "2").mkdir()
        (model / "2" / "refuse").touch()
        (model / "config.pbtxt").write_text(picky_config("m") + groups % 2)
        with pytest.raises(InferenceServerException):
            client.load_model("m")
        # A version the load released would show UNLOADING by now (before the answer).
        assert client.is_model_ready("m", "1")
        assert client.get_model_config("m")["instance_group"][0]["count"] == 2
        assert infer(client, "m", "1") == [[7.0]]
