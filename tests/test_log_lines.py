"""Log records are Triton's lines: `<head> <file>:<line>] "<message>"`, the message a JSON string
(so a model or client cannot forge a line with a newline), tables as they are, and with
TRITON_SERVER_ESCAPE_LOG_MESSAGES=0 messages unquoted. A Python model's own log lines carry its
file and line, as Triton's Python backend writes them."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.models import write_model
from support.server_process import ServerProcess

FORGED = 'I0205 18:34:18.707423 1 file.cc:123] "THIS ENTRY WAS INJECTED"'

MODEL = f'''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        pb_utils.Logger.log_warn("tab\\there\\n" + {FORGED!r})
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUTPUT0", np.zeros(1, np.float32))]) for _ in requests]
'''

CONFIG = """
name: "chatty"
backend: "python"
max_batch_size: 0
input { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] }
output { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1 ] }
"""

RECORD = re.compile(r"^[IWE]\d{4} \d\d:\d\d:\d\d\.\d{6} \d+ (?P<file>[\w.]+):(?P<line>\d+)\] "
                    r"(?P<message>.*)$")


def run_chatty(tmp_path: Path, env: dict[str, str]) -> list[str]:
    """Start a server with the model, infer once, stop it: the log file's lines."""
    write_model(tmp_path / "repo", "chatty", CONFIG, files={"1/model.py": MODEL})
    log_file = tmp_path / "server.log"
    with ServerProcess([tmp_path / "repo"], f"--log-file={log_file}",
                       env={**os.environ, **env}) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        tensor = httpclient.InferInput("INPUT0", [1], "FP32")
        tensor.set_data_from_numpy(np.zeros(1, np.float32))
        client.infer("chatty", [tensor])
    return log_file.read_text().splitlines()


def test_messages_are_json_strings_and_name_their_source(tmp_path: Path) -> None:
    lines = run_chatty(tmp_path, {})
    records = [m for line in lines if (m := RECORD.match(line))]
    # Every line is a record, or a row of a table that follows a record with no message.
    assert all(RECORD.match(line) or line[:1] in "+|" for line in lines), lines
    for record in records:
        message = record["message"]
        if message:
            assert isinstance(json.loads(message), str), message
    warned = [r for r in records if "INJECTED" in r["message"]]
    assert len(warned) == 1
    assert warned[0]["file"] == "model.py" and warned[0]["line"] == "8"
    assert json.loads(warned[0]["message"]) == "tab\there\n" + FORGED
    assert FORGED not in lines  # the forged record stays inside the model's own line
    loaded = [r for r in records if "successfully loaded 'chatty'" in r["message"]]
    assert loaded and loaded[0]["file"].endswith(".py")
    assert any(line.startswith("| Model ") for line in lines)  # the tables, unquoted


def test_escaping_can_be_turned_off_as_in_triton(tmp_path: Path) -> None:
    lines = run_chatty(tmp_path, {"TRITON_SERVER_ESCAPE_LOG_MESSAGES": "0"})
    assert any(line.endswith("] successfully loaded 'chatty'") for line in lines)
    assert FORGED in lines  # unescaped, what the model wrote is a line of its own


def test_a_refused_request_is_logged_as_tritons_and_cannot_forge_a_line(tmp_path: Path) -> None:
    """A verbose server logs "Infer failed" for a request refused before it runs (HTTP and
    gRPC), the client's input name inside the quoted message (Triton's L0_logging injects
    records through it)."""
    write_model(tmp_path / "repo", "chatty", CONFIG, files={"1/model.py": MODEL})
    name = f"\n{FORGED}\n"
    with ServerProcess([tmp_path / "repo"], "--log-verbose=1") as server:
        for module, request_id in ((httpclient, ""), (grpcclient, "r7")):
            client = module.InferenceServerClient(
                server.http_url if module is httpclient else server.grpc_url)
            tensor = module.InferInput(name, [1], "FP32")
            tensor.set_data_from_numpy(np.zeros(1, np.float32))
            with pytest.raises(InferenceServerException):
                client.infer("chatty", [tensor], request_id=request_id)
            client.close()
        expected = {f"[request id: {shown}] Infer failed: unexpected inference input "
                    f"'{name}' for model 'chatty'" for shown in ("<id_unknown>", "r7")}
        deadline = time.monotonic() + 30
        while not expected <= set(server.log_messages()):
            assert time.monotonic() < deadline, server.log()
            time.sleep(0.05)
        assert FORGED not in server.log().splitlines()
