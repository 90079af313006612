"""Registering model repositories on a running server (Triton's
TRITONSERVER_ServerRegisterModelRepository, `tritonserver.Server.register_model_repository`).

The cases of Triton core's register API test: a repository added after start, name mappings
({directory: model name}) that hide the directory's own name and win over a same-named directory
elsewhere, conflicts, unregistering (loaded models stay loaded), and the refusal outside EXPLICIT
mode. Which directory served a load is told by the version it has (each directory has its own).
"""

from __future__ import annotations

from pathlib import Path

import numpy
import pytest

import tritonserver
from support.models import write_model

CONFIG = """\
backend: "identity"
max_batch_size: 8
input { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] }
output { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }
"""  # no name: the repository's name for the directory is the model's


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("register")
    paths = {name: root / name for name in ("empty_models", "models_0", "models_1")}
    for path in paths.values():
        path.mkdir()
    write_model(paths["models_0"], "model_0", CONFIG, versions=(1,))
    write_model(paths["models_1"], "model_0", CONFIG, versions=(2,))
    write_model(paths["models_1"], "model_1", CONFIG, versions=(3,))
    return paths


@pytest.fixture
def server(repos: dict[str, Path]):
    server = tritonserver.Server(
        model_repository=str(repos["empty_models"]),
        model_control_mode=tritonserver.ModelControlMode.EXPLICIT,
        exit_timeout=5,
    ).start(wait_until_ready=True)
    yield server
    server.stop()


def served_version(server: tritonserver.Server, name: str) -> int:
    """Load `name` and answer one request with it; the version tells its directory."""
    model = server.load(name)
    data = numpy.arange(3, dtype=numpy.float32).reshape(1, 3)
    (response,) = list(model.infer(inputs={"INPUT0": data}))
    numpy.testing.assert_array_equal(numpy.from_dlpack(response.outputs["OUTPUT0"]), data)
    (version,) = [m.version for key, m in server.models().items()
                  if key[0] == name and m.state == "READY"]
    return version


def test_a_registered_repository_serves_its_models(server, repos):
    with pytest.raises(tritonserver.InternalError, match="failed to poll from model repository"):
        server.load("model_0")
    server.register_model_repository(str(repos["models_0"]))
    assert served_version(server, "model_0") == 1


def test_a_mapped_directory_is_known_only_by_its_mapped_names(server, repos):
    server.register_model_repository(str(repos["models_0"]),
                                     {"model_0": "name_0"})
    with pytest.raises(tritonserver.InternalError, match="failed to poll from model repository"):
        server.load("model_0")
    assert served_version(server, "name_0") == 1
    index = server.models()
    assert [key[0] for key in index] == ["name_0"]


def test_a_mapping_wins_over_a_directory_of_the_same_name(server, repos):
    server.register_model_repository(str(repos["models_1"]), {"model_0": "model_1"})
    assert served_version(server, "model_1") == 2  # models_1/model_0, not models_1/model_1


def test_one_directory_may_serve_under_two_names(server, repos):
    """(directory, name) pairs, as TRITONSERVER_ServerRegisterModelRepository takes them."""
    server.register_model_repository(str(repos["models_0"]),
                                     [("model_0", "name_0"), ("model_0", "name_1")])
    assert served_version(server, "name_0") == 1
    assert served_version(server, "name_1") == 1


def test_duplicates_fail_at_load_until_a_repository_goes(server, repos):
    server.register_model_repository(str(repos["models_0"]))
    server.register_model_repository(str(repos["models_1"]))
    with pytest.raises(tritonserver.InternalError) as failed:  # Triton's exact answer
        server.load("model_0")
    assert str(failed.value) == "failed to load 'model_0', failed to poll from model repository"
    assert served_version(server, "model_1") == 3
    server.unregister_model_repository(str(repos["models_1"]))
    assert served_version(server, "model_0") == 1
    assert server.model("model_1").ready()  # loaded models stay loaded


def test_conflicts_and_unknown_repositories_are_refused(server, repos):
    with pytest.raises(tritonserver.AlreadyExistsError,
                       match=f"model repository '{repos['empty_models']}' has already been"):
        server.register_model_repository(str(repos["empty_models"]))
    with pytest.raises(tritonserver.InvalidArgumentError,
                       match="there is a conflicting mapping for 'name_0'"):
        server.register_model_repository(str(repos["models_1"]),
                                         {"model_0": "name_0", "model_1": "name_0"})
    server.register_model_repository(str(repos["models_0"]), {"model_0": "name_0"})
    with pytest.raises(tritonserver.AlreadyExistsError,
                       match="failed to register 'name_0', there is a conflicting mapping"):
        server.register_model_repository(str(repos["models_1"]), {"model_0": "name_0"})
    with pytest.raises(tritonserver.InvalidArgumentError,
                       match="failed to register '.*unknown_repo', repository not found"):
        server.register_model_repository(str(repos["empty_models"].parent / "unknown_repo"))
    server.unregister_model_repository(str(repos["empty_models"]))
    with pytest.raises(tritonserver.InvalidArgumentError,
                       match="failed to unregister '.*empty_models', repository not found"):
        server.unregister_model_repository(str(repos["empty_models"]))
    # A repository registered, unregistered and registered again with another mapping.
    server.unregister_model_repository(str(repos["models_0"]))
    server.register_model_repository(str(repos["models_0"]), {"model_0": "name_1"})
    assert served_version(server, "name_1") == 1


def test_registration_needs_explicit_model_control(repos):
    server = tritonserver.Server(model_repository=str(repos["empty_models"]),
                                 exit_timeout=5).start(wait_until_ready=True)
    try:
        with pytest.raises(tritonserver.UnsupportedError, match="not EXPLICIT"):
            server.register_model_repository(str(repos["models_0"]))
        with pytest.raises(tritonserver.UnsupportedError, match="not EXPLICIT"):
            server.unregister_model_repository(str(repos["empty_models"]))
    finally:
        server.stop()
