"""The trace extension: /v2[/models/M]/trace/setting and gRPC TraceSetting accept and report
settings as Triton 2.51 does (compared side by side with tritonserver), and --trace-config."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc
from tritonclient.utils import InferenceServerException

from support.models import identity_config, write_model
from support.raw_http import call
from support.server_process import ServerProcess

DEFAULTS = {"trace_level": ["OFF"], "trace_rate": "1000", "trace_count": "-1",
            "log_frequency": "0", "trace_file": "", "trace_mode": "triton"}
MODEL = "identity_fp32"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("trace_repo")
    write_model(repo, MODEL, identity_config(MODEL))
    write_model(repo, "other", identity_config("other"))
    return repo


@pytest.fixture(scope="module")
def shared_server(repo: Path):
    with ServerProcess([repo]) as process:
        yield process


@pytest.fixture
def trace_server(shared_server: ServerProcess):
    """The shared server, every setting cleared back to the start-up one after the test."""
    yield shared_server
    clear = b'{"trace_level":null,"trace_rate":null,"trace_count":null,"log_frequency":null}'
    for path in ("/v2/trace/setting", f"/v2/models/{MODEL}/trace/setting",
                 "/v2/models/other/trace/setting"):
        assert _call(shared_server, path, clear)[0] == 200


def _call(server: ServerProcess, path: str, body: bytes | None = None,
          method: str | None = None) -> tuple[int, dict]:
    reply = call(server, method or ("POST" if body is not None else "GET"), path, body, timeout=10)
    return reply.status, reply.json()


def test_defaults_and_inheritance(trace_server) -> None:
    http = httpclient.InferenceServerClient(trace_server.http_url)
    assert http.get_trace_settings() == DEFAULTS
    assert http.get_trace_settings(model_name=MODEL) == DEFAULTS
    # A model setting overrides one field and follows the global setting for the others.
    assert http.update_trace_settings(MODEL, {"trace_count": "7"})["trace_count"] == "7"
    assert http.update_trace_settings(settings={"trace_rate": "9", "trace_count": "3"}) == {
        **DEFAULTS, "trace_rate": "9", "trace_count": "3"}
    assert http.get_trace_settings(model_name=MODEL) == {
        **DEFAULTS, "trace_rate": "9", "trace_count": "7"}
    assert http.get_trace_settings(model_name="other")["trace_count"] == "3"
    # Clearing (null) makes the field follow again: the model's, then the global one's.
    assert http.update_trace_settings(MODEL, {"trace_count": None})["trace_count"] == "3"
    assert http.update_trace_settings(settings={"trace_rate": None, "trace_count": None}) \
        == DEFAULTS
    assert http.get_trace_settings(model_name=MODEL) == DEFAULTS


def test_grpc_reads_and_changes_the_same_settings(trace_server) -> None:
    grpc_client = grpcclient.InferenceServerClient(trace_server.grpc_url)
    http = httpclient.InferenceServerClient(trace_server.http_url)
    response = grpc_client.update_trace_settings(MODEL, {"log_frequency": "5"})
    assert list(response.settings["log_frequency"].value) == ["5"]
    assert http.get_trace_settings(model_name=MODEL)["log_frequency"] == "5"
    settings = grpc_client.get_trace_settings(as_json=True)["settings"]
    assert settings["trace_level"] == {"value": ["OFF"]}
    assert settings["log_frequency"] == {"value": ["0"]}
    # No value clears.
    grpc_client.update_trace_settings(MODEL, {"log_frequency": None})
    assert http.get_trace_settings(model_name=MODEL)["log_frequency"] == "0"


@pytest.mark.parametrize("path, body, status, message", [
    ("/v2/models/nope/trace/setting", None, 400, "Request for unknown model : nope"),
    ("/v2/models/nope/trace/setting", b"{}", 400, "Request for unknown model : nope"),
    ("/v2/trace/setting", b'{"trace_file":"/tmp/x"}', 501,
     "trace file location can not be updated through network protocol"),
    (f"/v2/models/{MODEL}/trace/setting", b'{"trace_file":"/tmp/x"}', 501,
     "trace file location can not be updated through network protocol"),
    ("/v2/trace/setting", b'{"trace_level":["TIMESTAMPS"]}', 400,
     "Attempting to set invalid trace setting :trace file name is not given"),
    ("/v2/trace/setting", b'{"trace_level":["OFF","TIMESTAMPS"]}', 400,
     "Expect only one trace level 'OFF' is specified"),
    ("/v2/trace/setting", b'{"trace_rate":"abc"}', 400, "Unable to parse 'trace_rate', got: abc"),
    ("/v2/trace/setting", b'{"trace_rate":"99999999999"}', 400,
     "Unable to parse 'trace_rate', value is out of range [ 0, 4294967295 ], got: 99999999999"),
    ("/v2/trace/setting", b'{"trace_count":"-3"}', 400,
     "Unable to parse 'trace_count'. Expecting value >= -1, got:-3"),
    ("/v2/trace/setting", b'{"trace_count":"99999999999"}', 400,
     "Unable to parse 'trace_count', value is out of range [ -1, 2147483647 ], got: "
     "99999999999"),
    # Triton reads numbers with stoi: past 32 bits, whatever the range says.
    ("/v2/trace/setting", b'{"trace_rate":"2147483648"}', 400,
     "Unable to parse 'trace_rate', value is out of range [ 0, 4294967295 ], got: 2147483648"),
    ("/v2/trace/setting", b'{"trace_rate":"4294967295"}', 400,
     "Unable to parse 'trace_rate', value is out of range [ 0, 4294967295 ], got: 4294967295"),
    ("/v2/trace/setting", b'{"trace_rate":"-2147483649"}', 400,
     "Unable to parse 'trace_rate', value is out of range [ 0, 4294967295 ], got: -2147483649"),
    ("/v2/trace/setting", b'{"log_frequency":"2147483648"}', 400,
     "Unable to parse 'log_frequency', value is out of range [ 0, 4294967295 ], got: "
     "2147483648"),
    ("/v2/trace/setting", b'{"trace_count":"-2147483649"}', 400,
     "Unable to parse 'trace_count', value is out of range [ -1, 2147483647 ], got: "
     "-2147483649"),
    # Triton answers these with 500 (its JSON helpers always say INTERNAL).
    ("/v2/trace/setting", b'{"trace_rate":5}', 400, "attempt to access JSON non-string as string"),
    ("/v2/trace/setting", b'{"trace_level":"TIMESTAMPS"}', 400,
     "attempt to access JSON non-array as array"),
    ("/v2/trace/setting", b"x", 400,
     "failed to parse the request JSON buffer: Invalid value. at 0"),
    ("/v2/trace/setting", b"", 400,
     "failed to parse the request JSON buffer: The document is empty. at 0"),
])
def test_http_errors_change_nothing(trace_server, path, body, status, message) -> None:
    assert _call(trace_server, path, body) == (status, {"error": message})
    assert _call(trace_server, "/v2/trace/setting")[1] == DEFAULTS


def test_what_triton_reads_leniently(trace_server) -> None:
    # C++ stoul/stoi readings: a leading number is taken, a negative rate wraps around.
    assert _call(trace_server, "/v2/trace/setting", b'{"trace_rate":"5x"}')[1]["trace_rate"] == "5"
    assert _call(trace_server, "/v2/trace/setting", b'{"trace_rate":"-3"}')[1]["trace_rate"] \
        == "4294967293"
    # So a rate of -1 is 4294967295, as in Triton 2.51 (which accepts it the same way).
    assert _call(trace_server, "/v2/trace/setting", b'{"trace_rate":"-1"}')[1]["trace_rate"] \
        == "4294967295"
    assert _call(trace_server, "/v2/trace/setting",
                 b'{"log_frequency":"-2147483648"}')[1]["log_frequency"] == "2147483648"
    # Unknown levels are ignored (tracing stays off); trace_mode and unknown members too.
    status, body = _call(trace_server, "/v2/trace/setting",
                         b'{"trace_level":["BOGUS"],"trace_mode":"opentelemetry","x":1}')
    assert status == 200 and body["trace_level"] == ["OFF"] and body["trace_mode"] == "triton"
    assert _call(trace_server, "/v2/trace/setting", method="PUT") == (
        405, {"error": "Method Not Allowed"})
    assert _call(trace_server, f"/v2/models/{MODEL}/versions/1/trace/setting")[0] == 404


@pytest.mark.parametrize("model, settings, code, message", [
    ("", {"trace_rate": ["7", "8"]}, "INVALID_ARGUMENT", "expect only 1 value for 'trace_rate'"),
    ("", {"trace_rate": ["x"]}, "INVALID_ARGUMENT", "Unable to parse 'trace_rate', got: x"),
    ("", {"trace_count": ["-5"]}, "INVALID_ARGUMENT",
     "Unable to parse 'trace_count'. Expecting value >= -1, got: -5"),
    ("", {"trace_rate": ["2147483648"]}, "INVALID_ARGUMENT",
     "Unable to parse 'trace_rate', value is out of range [ 0, 4294967295 ], got: 2147483648"),
    ("", {"trace_count": ["-2147483649"]}, "INVALID_ARGUMENT",
     "Unable to parse 'trace_count', value is out of range [ -1, 2147483647 ], got: "
     "-2147483649"),
    ("", {"trace_file": ["/tmp/t"]}, "UNIMPLEMENTED",
     "trace file location can not be updated through network protocol"),
    ("", {"trace_level": ["TIMESTAMPS"]}, "INVALID_ARGUMENT",
     "Attempting to set invalid trace setting :trace file name is not given"),
    ("nope", {}, "INVALID_ARGUMENT", "Request for unknown model : nope"),
])
def test_grpc_errors(trace_server, model, settings, code, message) -> None:
    request = pb.TraceSettingRequest(model_name=model)
    for key, values in settings.items():
        request.settings[key].value.extend(values)
    with (grpc.insecure_channel(trace_server.grpc_url) as channel,
          pytest.raises(grpc.RpcError) as info):
        service_pb2_grpc.GRPCInferenceServiceStub(channel).TraceSetting(request)
    assert (info.value.code().name, info.value.details()) == (code, message)


def test_trace_config_flags_set_the_start_up_setting(repo: Path, tmp_path: Path) -> None:
    trace_file = tmp_path / "trace.json"
    with ServerProcess([repo], "--trace-config", f"triton,file={trace_file}",
                       "--trace-config", "rate=50", "--trace-config", "level=TIMESTAMPS",
                       "--trace-config", "level=TENSORS", "--trace-count=20") as server:
        http = httpclient.InferenceServerClient(server.http_url)
        expected = {"trace_level": ["TIMESTAMPS", "TENSORS"], "trace_rate": "50",
                    "trace_count": "20", "log_frequency": "0", "trace_file": str(trace_file),
                    "trace_mode": "triton"}
        assert http.get_trace_settings() == expected
        assert http.get_trace_settings(model_name=MODEL) == expected
        # With a file, tracing may be switched on and off at run time.
        assert http.update_trace_settings(MODEL, {"trace_level": ["OFF"]})["trace_level"] \
            == ["OFF"]
        assert http.update_trace_settings(MODEL, {"trace_level": ["TIMESTAMPS"]})[
            "trace_level"] == ["TIMESTAMPS"]
        with pytest.raises(InferenceServerException, match="sample rate must be non-zero"):
            http.update_trace_settings(settings={"trace_rate": "0"})


def test_a_bad_trace_config_stops_the_server(repo: Path) -> None:
    with pytest.raises(RuntimeError, match='Bad option: "--trace-config"'):
        ServerProcess([repo], "--trace-config", "level=LOUD").start()
