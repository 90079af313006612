"""The logging extension (GET/POST /v2/logging, gRPC LogSettings) and the --log-* flags, with
Triton 2.51's settings, messages and status codes (compared side by side with tritonserver)."""

from __future__ import annotations

import logging
import re
import socket
import time
from pathlib import Path

import grpc
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc

from support.models import identity_config, write_model
from support.raw_http import call
from support.server_process import ServerProcess
from tritium.logging_settings import LogSettings

DEFAULTS = {"log_file": "", "log_info": True, "log_warning": True, "log_error": True,
            "log_verbose_level": 0, "log_format": "default"}
ISO8601_LINE = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ [IWE] \d+ "
DEFAULT_LINE = r"[IWE]\d{4} \d\d:\d\d:\d\d\.\d{6} \d+ "


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("log_repo")
    write_model(repo, "identity_fp32", identity_config("identity_fp32"))
    return repo


@pytest.fixture(scope="module")
def log_server(repo: Path, tmp_path_factory: pytest.TempPathFactory):
    log_file = tmp_path_factory.mktemp("logs") / "server.log"
    with ServerProcess([repo], f"--log-file={log_file}", "--log-format=ISO8601") as process:
        process.log_file = log_file
        yield process


def _post(server: ServerProcess, body: bytes) -> tuple[int, dict]:
    reply = call(server, "POST", "/v2/logging", body, timeout=10)
    return reply.status, reply.json()


def _send_garbage(server: ServerProcess) -> None:
    """A request that does not parse: the server logs a warning for it."""
    with socket.create_connection(("127.0.0.1", server.http_port), timeout=5) as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        sock.recv(1024)


def _wait_for_lines(path: Path, count: int) -> list[str]:
    deadline = time.monotonic() + 10
    while True:
        lines = [line for line in path.read_text().splitlines()
                 if "Invalid HTTP request received." in line]
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)


def test_start_up_flags_write_tritons_lines_to_the_file(log_server) -> None:
    text = log_server.log_file.read_text()
    assert re.search(ISO8601_LINE + r'serving\.py:\d+\] "Started HTTPService at 127\.0\.0\.1:',
                     text)
    # The start-up tables are INFO records, in the file as Triton writes them (L0_logging).
    assert "| Backend " in text and "| Model " in text and "| Option " in text
    client = httpclient.InferenceServerClient(log_server.http_url)
    assert client.get_log_settings() == {**DEFAULTS, "log_file": str(log_server.log_file),
                                         "log_format": "ISO8601"}


def test_settings_change_what_is_logged_and_how(log_server) -> None:
    client = httpclient.InferenceServerClient(log_server.http_url)
    seen = len(_wait_for_lines(log_server.log_file, 0))
    _send_garbage(log_server)
    lines = _wait_for_lines(log_server.log_file, seen + 1)
    assert re.match(ISO8601_LINE + r'\w+\.py:\d+\] "Invalid HTTP request received.', lines[-1])

    client.update_log_settings({"log_format": "default"})
    _send_garbage(log_server)
    lines = _wait_for_lines(log_server.log_file, seen + 2)
    assert re.match(DEFAULT_LINE + r'\w+\.py:\d+\] "Invalid HTTP request received.', lines[-1])

    client.update_log_settings({"log_warning": False})
    _send_garbage(log_server)
    client.update_log_settings({"log_warning": True, "log_format": "ISO8601"})
    _send_garbage(log_server)
    lines = _wait_for_lines(log_server.log_file, seen + 3)
    assert len(lines) == seen + 3  # the one sent while warnings were off is not there
    assert re.match(ISO8601_LINE, lines[-1])


def test_a_verbose_server_logs_each_http_request_as_triton(log_server) -> None:
    """Triton's verbose line per HTTP request (method as libevhtp numbers it, path): its
    L0_logging counts the /v2/logging calls in the log."""
    client = httpclient.InferenceServerClient(log_server.http_url)
    client.get_log_settings()
    assert "HTTP request: 0 /v2/logging" not in log_server.log_file.read_text()
    try:
        client.update_log_settings({"log_verbose_level": 1})
        client.get_log_settings()
        deadline = time.monotonic() + 10
        while "HTTP request: 0 /v2/logging" not in log_server.log_file.read_text():
            assert time.monotonic() < deadline, "no verbose request line"
            time.sleep(0.05)
    finally:
        client.update_log_settings({"log_verbose_level": 0})
    assert "HTTP request: 2 /v2/logging" in log_server.log_file.read_text()  # the reset


def test_http_and_grpc_read_and_change_the_same_settings(log_server) -> None:
    http = httpclient.InferenceServerClient(log_server.http_url)
    grpc = grpcclient.InferenceServerClient(log_server.grpc_url)
    try:
        updated = http.update_log_settings({"log_verbose_level": 2, "log_info": False})
        assert updated["log_verbose_level"] == 2 and updated["log_info"] is False
        settings = grpc.get_log_settings(as_json=True)["settings"]
        assert settings["log_verbose_level"] == {"uint32_param": 2}
        assert settings["log_info"] == {"bool_param": False}
        assert settings["log_file"] == {"string_param": str(log_server.log_file)}
        response = grpc.update_log_settings({"log_verbose_level": 0, "log_info": True})
        assert response.settings["log_verbose_level"].uint32_param == 0
        assert http.get_log_settings()["log_info"] is True
    finally:
        http.update_log_settings({"log_verbose_level": 0, "log_info": True})


@pytest.mark.parametrize("body, status, message", [
    (b'{"log_file":"/tmp/x.log"}', 501,
     "log file location can not be updated through network protocol"),
    (b'{"log_file":"", "log_verbose_level":3}', 501,
     "log file location can not be updated through network protocol"),
    (b'{"log_format":"bogus"}', 503, "invalid argument for --log_format, got: bogus"),
    # Triton answers the next four with 500 (its JSON helpers always say INTERNAL).
    (b'{"log_info":"yes"}', 400, "attempt to access JSON non-boolean as boolean"),
    (b'{"log_verbose_level":-1}', 400,
     "attempt to access JSON non-unsigned-integer as unsigned-integer"),
    (b'{"log_verbose_level":"1"}', 400,
     "attempt to access JSON non-unsigned-integer as unsigned-integer"),
    (b'{"log_verbose_level":18446744073709551616}', 400,
     "attempt to access JSON non-unsigned-integer as unsigned-integer"),
    (b"notjson", 400, "failed to parse the request JSON buffer: Invalid value. at 0"),
    (b"", 400, "failed to parse the request JSON buffer: The document is empty. at 0"),
])
def test_http_errors_change_nothing(log_server, body, status, message) -> None:
    client = httpclient.InferenceServerClient(log_server.http_url)
    before = client.get_log_settings()
    assert _post(log_server, body) == (status, {"error": message})
    assert client.get_log_settings() == before
    assert _post(log_server, b"{}")[1]["log_verbose_level"] == 0


@pytest.mark.parametrize("given, kept", [
    (4294967295, 0), (2147483648, 0), (3000000000, 0), (4294967301, 5), (2**64 - 1, 0),
    (2147483647, 2147483647),
])
def test_verbose_levels_are_kept_as_tritons_32_bit_int(log_server, given, kept) -> None:
    """Triton 2.51 keeps the level as a 32-bit int, a negative one as 0: 4294967295 (or any
    level past 2147483647) turns verbose logging off, over HTTP (any unsigned 64-bit number,
    its low 32 bits) and gRPC (uint32) alike (side by side with tritonserver)."""
    try:
        status, settings = _post(log_server, b'{"log_verbose_level":%d}' % given)
        assert (status, settings["log_verbose_level"]) == (200, kept)
        if given < 2**32:
            _post(log_server, b'{"log_verbose_level":1}')
            response = grpcclient.InferenceServerClient(log_server.grpc_url).update_log_settings(
                {"log_verbose_level": given})
            assert response.settings["log_verbose_level"].uint32_param == kept
    finally:
        _post(log_server, b'{"log_verbose_level":0}')


def test_http_ignores_nulls_and_unknown_members(log_server) -> None:
    status, settings = _post(log_server, b'{"log_info":null,"log_file":null,"unknown":1}')
    assert status == 200 and settings["log_info"] is True
    assert _post(log_server, b"[1]")[0] == 200


@pytest.mark.parametrize("settings, code, message", [
    ({"log_file": pb.LogSettingsRequest.SettingValue(string_param="/tmp/y")}, "UNIMPLEMENTED",
     "log file location can not be updated through network protocol"),
    ({"log_file": pb.LogSettingsRequest.SettingValue()}, "UNIMPLEMENTED",
     "log file location can not be updated through network protocol"),
    ({"log_verbose_level": pb.LogSettingsRequest.SettingValue(bool_param=True)},
     "INVALID_ARGUMENT", "expect int32 for 'log_verbose_level'"),
    ({"log_info": pb.LogSettingsRequest.SettingValue(uint32_param=1)}, "INVALID_ARGUMENT",
     "expect boolean for 'log_info'"),
    ({"log_format": pb.LogSettingsRequest.SettingValue(bool_param=True)}, "INVALID_ARGUMENT",
     "expect string for 'log_format'"),
    ({"log_format": pb.LogSettingsRequest.SettingValue(string_param="bogus")},
     "INVALID_ARGUMENT", "invalid argument for log_format, got: bogus"),
])
def test_grpc_errors(log_server, settings, code, message) -> None:
    with grpc.insecure_channel(log_server.grpc_url) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            stub.LogSettings(pb.LogSettingsRequest(settings=settings))
    assert info.value.code().name == code
    assert info.value.details() == message


def test_a_bad_log_format_flag_stops_the_server(repo: Path) -> None:
    process = ServerProcess([repo], "--log-format=fancy")
    with pytest.raises(RuntimeError, match="invalid argument for --log-format, got: fancy"):
        process.start()


def test_levels_filter_python_logging(tmp_path: Path) -> None:
    """Unit test of the wiring: each setting lets its Python level through or not."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    settings = LogSettings(log_file=str(tmp_path / "unit.log"))
    settings.install()
    log = logging.getLogger("tritium.unit")
    try:
        log.debug("hidden verbose")
        settings.update({"log_verbose_level": 1})
        log.debug("shown verbose")
        # Verbose shows Tritium's own detail, not libraries' debug logging.
        logging.getLogger("hpack.hpack").debug("hidden library chatter")
        settings.update({"log_error": False, "log_info": False})
        log.error("hidden error")
        log.info("hidden info")
        log.warning("shown warning")
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
            handler.close()
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])
    lines = (tmp_path / "unit.log").read_text().splitlines()
    assert [line.split("] ", 1)[1] for line in lines] == ['"shown verbose"', '"shown warning"']
    assert re.match(DEFAULT_LINE + r"test_logging_api\.py:\d+\]", lines[0])
    assert lines[1].startswith("W")
