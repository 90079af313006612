"""A C++ program embeds Tritium through Triton's C API (TRITONSERVER_ServerNew), as Triton's own
`simple.cc` example embeds Triton.

The program (tests/support/c_api/server_program.cc) is compiled while the tests run against
Tritium's API header and linked with its libtritonserver.so; it runs with an environment that
names no Python, so the library has to start the Python it was built with. It serves a Python
backend model, a "Python-based backend" model (Triton's classic `simple`) and a compiled
backend's model, and prints one line per step, which the tests read.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from support.native_fixtures import compile_backends, compile_program, write_model

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "support" / "c_api" / "server_program.cc"
INT32_IO = (
    'input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },'
    ' { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]\n'
    'output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },'
    ' { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]\n'
)


# Answers every request with an error response.
FAILING_MODEL = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse(error=pb_utils.TritonError("this model always fails"))
                for _ in requests]
"""


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("c_api_server")
    backends = compile_backends(base / "backends", {"identity": "identity",
                                                    "placement": "placement"})
    shutil.copytree(ROOT / "examples" / "backends" / "addsub", backends / "addsub")
    repo = base / "models"
    for name in ("simple", "add_sub"):
        shutil.copytree(ROOT / "examples" / "model_repository" / name, repo / name)
    write_model(repo, "native_identity", 'backend: "identity"\nmax_batch_size: 8\n' + INT32_IO)
    write_model(repo, "strings", 'backend: "identity"\nmax_batch_size: 8\n'
                'input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ 1 ] } ]\n'
                'output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 1 ] } ]\n')
    write_model(repo, "placement", 'backend: "placement"\nmax_batch_size: 8\n'
                + INT32_IO.replace("16", "4"))
    _add_sub_named(repo, "failing", lambda model: FAILING_MODEL)
    _add_sub_named(repo, "slow", lambda model: model.replace(
        "    def execute(self, requests):",
        "    def execute(self, requests):\n        __import__('time').sleep(1.0)", 1))
    program = compile_program(PROGRAM, base / "server_program")
    return program, repo, backends


def _add_sub_named(repo: Path, name: str, edit: Callable[[str], str]) -> None:
    """The example add_sub model as `name`, its model.py changed by `edit`."""
    shutil.copytree(ROOT / "examples" / "model_repository" / "add_sub", repo / name)
    config, model = repo / name / "config.pbtxt", repo / name / "1" / "model.py"
    config.write_text(config.read_text().replace('"add_sub"', f'"{name}"'))
    model.write_text(edit(model.read_text()))


def _environment() -> dict[str, str]:
    """No virtual environment, no PYTHONPATH: only what finds the library's cache."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    for name in ("TRITIUM_NATIVE_CACHE", "XDG_CACHE_HOME"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def _run(program: Path, *args: str | Path) -> tuple[dict[str, str], subprocess.CompletedProcess]:
    result = subprocess.run([str(program), *map(str, args)], capture_output=True, text=True,
                            timeout=120, env=_environment(), check=False)
    steps = {}
    for line in result.stdout.splitlines():
        step, _, rest = line.partition(" ")
        steps[step] = rest
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    assert "done" in steps or "exiting" in steps, result.stdout
    return steps, result


def test_a_program_makes_a_server_infers_and_deletes_it(setup):
    program, repo, backends = setup
    steps, _ = _run(program, "simple", repo, backends)
    assert json.loads(steps["metadata"])["name"] == "embedded"
    assert json.loads(steps["model_metadata"])["inputs"][0] == {
        "name": "INPUT0", "datatype": "INT32", "shape": [-1, 16]}
    assert json.loads(steps["model_config"])["max_batch_size"] == 8
    assert {(m["name"], m["state"]) for m in json.loads(steps["index"])} == {
        ("add_sub", "READY"), ("failing", "READY"), ("native_identity", "READY"),
        ("placement", "READY"), ("simple", "READY"), ("slow", "READY"), ("strings", "READY")}
    # sum(0..15) + 16 and sum(0..15) - 16; the identity gives its inputs back.
    assert steps["infer_simple"] == "id=c-api-1 OUTPUT0=136/INT32/dims2 OUTPUT1=104/INT32/dims2"
    assert steps["infer_native"] == "id=c-api-1 OUTPUT0=120/INT32/dims2 OUTPUT1=16/INT32/dims2"
    assert steps["infer_python"] == "id=c-api-1 OUTPUT0=10/FP32/dims1 OUTPUT1=2/FP32/dims1"
    stats = json.loads(steps["statistics"])["model_stats"]
    # (The execution is counted once the backend returns, which may be after the program read
    # its response: its count is not asserted.)
    assert [(s["name"], s["version"], s["inference_count"],
             s["inference_stats"]["success"]["count"]) for s in stats] == [("simple", "1", 1, 1)]
    assert steps["metrics"] == 'nv_inference_count{model="simple",version="1"} 1'
    assert steps["live_after_stop"] == "false"
    assert steps["deleted"] == "true"
    # The second server, in EXPLICIT mode, loads nothing until told.
    assert steps["second_simple_ready"] == "false"
    assert steps["second_simple_loaded"] == "true"
    assert steps["second_infer"] == steps["infer_simple"]


def test_bad_calls_get_tritons_errors_and_the_server_keeps_serving(setup):
    program, repo, backends = setup
    steps, _ = _run(program, "errors", repo, backends)
    assert steps["bad_control_mode"] == "Invalid argument unknown control mode '7'"
    assert steps["bad_device_limit"] == (
        "Invalid argument expects limit fraction to be in range [0.0, 1.0], got 1.500000")
    assert steps["second_server"].startswith(
        "Already exists Tritium runs one server per process: delete the server made before")
    assert steps["unknown_model"] == (
        "Not found Request for unknown model: 'no_such_model' is not found")
    # As in Triton, the request is refused when it is made (TRITONSERVER_InferenceRequestNew).
    assert steps["request_for_unknown_version"] == (
        "Not found Request for unknown model: 'simple' version 7 is not found")
    assert steps["wrong_shape"].startswith(
        "Invalid argument [request id: c-api-1] unexpected shape for input 'INPUT1' for model "
        "'simple'. Expected [-1,16], got [1,3].")
    assert steps["byte_size_mismatch"] == (
        "Invalid argument [request id: c-api-1] input byte size mismatch for input 'INPUT0' "
        "for model 'simple'. Expected 64, got 68")
    # The response's error is a new one the caller may delete before the response.
    assert steps["model_error"] == "Internal this model always fails"
    # A BYTES element's 4-byte length must be in one buffer (its content need not be).
    assert steps["split_length"] == (
        "Invalid argument [request id: <id_unknown>] incomplete string length indicator for "
        "inference input 'INPUT0' for model 'strings', expecting 4 bytes but only 2 bytes "
        "available. Please make sure the string length indicator is in one buffer.")
    assert steps["split_content"] == "OK OUTPUT0=24"
    # A family is on the metrics only while it has a metric (prometheus-cpp's rule in Triton).
    assert steps["histogram_family"] == "hidden shown hidden"
    assert steps["histogram_without_args"] == (
        "Invalid argument Bucket boundaries not found in Metric args.")
    assert steps["histogram_args_unset"] == (
        "Invalid argument Metric args not set to histogram kind.")
    assert steps["gauge_with_args"] == (
        "Invalid argument Unexpected args found in gauge Metric constructor.")
    assert steps["ready_index"] == (  # compact JSON, as Triton's
        '[{"name":"add_sub","version":"1","state":"READY"},'
        '{"name":"failing","version":"1","state":"READY"},'
        '{"name":"native_identity","version":"1","state":"READY"},'
        '{"name":"placement","version":"1","state":"READY"},'
        '{"name":"simple","version":"1","state":"READY"},'
        '{"name":"slow","version":"1","state":"READY"},'
        '{"name":"strings","version":"1","state":"READY"}]')
    assert steps["unknown_statistics"] == (
        "Invalid argument requested model 'no_such_model' is not available")
    assert steps["poll"] == "OK"  # POLL, the C API's default mode: applied when asked
    assert steps["load_in_poll_mode"] == (
        "Unavailable explicit model load / unload is not allowed if polling is enabled")
    assert steps["bad_metric_format"] == "Invalid argument unknown metrics format '3'"
    assert steps["still_serving"] == (
        "id=c-api-1 OUTPUT0=136/INT32/dims2 OUTPUT1=104/INT32/dims2")
    assert steps["live_after_delete"] == (
        "Invalid argument the server was deleted (TRITONSERVER_ServerDelete)")


def test_a_request_cancelled_while_queued_is_answered_cancelled(setup):
    program, repo, backends = setup
    steps, _ = _run(program, "cancel", repo, backends)
    assert steps["cancel_unsent"] == (
        "Internal It is not possible to cancel an inference request before calling "
        "TRITONSERVER_InferAsync.")
    assert steps["running"] == "OK"
    assert steps["queued"] == (
        "Cancelled the request was cancelled before it was executed")


def test_a_backend_asks_the_request_allocator_where_outputs_go(setup):
    """TRITONBACKEND_RequestOutputBufferProperties reaches the allocator's query function,
    and the memory the backend then asks for is what the allocator is offered (the buffer
    itself is host memory)."""
    program, repo, backends = setup
    steps, _ = _run(program, "placement", repo, backends)
    unavailable = "Unavailable: [request id: c-api-2] Output properties are not available"
    assert steps["no_query_function"] == f"OUTPUT0={unavailable} OUTPUT1={unavailable}"
    assert steps["allocations_without_query"] == "OUTPUT0:16:CPU/0 OUTPUT1:16:CPU/0"
    # Offered what the backend prefers (pinned memory of device 1) and the byte size.
    assert steps["queries"] == "OUTPUT0:16:CPU_PINNED/1 OUTPUT1:16:CPU_PINNED/1"
    assert steps["answered"] == "OUTPUT0=GPU/0 OUTPUT1=CPU_PINNED/3"
    assert steps["allocations"] == "OUTPUT0:16:GPU/0 OUTPUT1:16:CPU_PINNED/3"


def test_a_request_cast_to_a_backend_request_works_as_in_triton_core_tests(setup):
    """Triton's core tests cast a TRITONSERVER_InferenceRequest to a TRITONBACKEND_Request (one
    object inside Triton), and a response likewise."""
    program, repo, backends = setup
    steps, _ = _run(program, "cast", repo, backends)
    assert steps["cancelled_before"] == "false"
    assert steps["backend_request_id"] == "''"
    assert steps["input_count"].startswith(
        "Unsupported TRITONBACKEND_RequestInputCount: the request is a "
        "TRITONSERVER_InferenceRequest; Tritium answers only TRITONBACKEND_RequestId,")
    assert steps["response_new"].startswith(
        "Unsupported responses to a TRITONSERVER_InferenceRequest come from the model that runs "
        "it")
    # The server keeps the request until its final response, then releases it once.
    assert steps["releases_after_backend_release"] == "0"
    assert steps["releases_after_response"] == "1"
    assert steps["response"] == "OK"
    assert steps["cancelled_after"] == "true"
    assert steps["outputs"] == "OUTPUT0/FP32/4/dims1 OUTPUT1/FP32/4/dims1"
    assert steps["unknown_output"] == "Not found Output name 'NOPE' not found."


def test_a_missing_repository_fails_server_new(setup, tmp_path):
    program, _, _ = setup
    missing = tmp_path / "nowhere"
    steps, _ = _run(program, "missing", missing)
    assert steps["server_new"] == (
        f"Internal failed to stat file {missing}: model repository path does not exist")


def test_a_program_that_exits_with_its_server_running_leaves_no_stub(setup):
    program, repo, backends = setup
    steps, _ = _run(program, "exit", repo, backends)
    assert steps["infer_python"] == "id=c-api-1 OUTPUT0=10/FP32/dims1 OUTPUT1=2/FP32/dims1"
    stubs = [int(pid) for pid in steps["children"].split()]
    assert stubs, "the python model's stub should be a child of the program"
    deadline = time.monotonic() + 20
    while any(map(_running, stubs)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in stubs if _running(pid)]


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting for its new parent to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


# The start of a Python program calling the C API (as Triton's own Python binding does): the
# library finds the interpreter already running and takes its GIL instead of starting one.
CALLER_PROLOGUE = """
import ctypes, os, sys
lib = ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW | ctypes.RTLD_GLOBAL)
P = ctypes.c_void_p
for name, args in [("TRITONSERVER_ServerOptionsNew", [ctypes.POINTER(P)]),
                   ("TRITONSERVER_ServerOptionsSetModelRepositoryPath", [P, ctypes.c_char_p]),
                   ("TRITONSERVER_ServerOptionsSetBackendDirectory", [P, ctypes.c_char_p]),
                   ("TRITONSERVER_ServerOptionsSetModelNamespacing", [P, ctypes.c_bool]),
                   ("TRITONSERVER_ServerOptionsSetLogInfo", [P, ctypes.c_bool]),
                   ("TRITONSERVER_ServerOptionsSetLogError", [P, ctypes.c_bool]),
                   ("TRITONSERVER_ServerNew", [ctypes.POINTER(P), P]),
                   ("TRITONSERVER_ServerModelIsReady",
                    [P, ctypes.c_char_p, ctypes.c_int64, ctypes.POINTER(ctypes.c_bool)]),
                   ("TRITONSERVER_ServerModelConfig",
                    [P, ctypes.c_char_p, ctypes.c_int64, ctypes.c_uint32, ctypes.POINTER(P)]),
                   ("TRITONSERVER_ErrorCodeString", [P]), ("TRITONSERVER_ErrorMessage", [P]),
                   ("TRITONSERVER_ServerDelete", [P])]:
    getattr(lib, name).argtypes = args
    getattr(lib, name).restype = P
for name in ("TRITONSERVER_ErrorCodeString", "TRITONSERVER_ErrorMessage"):
    getattr(lib, name).restype = ctypes.c_char_p
options, server, ready, message = P(), P(), ctypes.c_bool(), P()
assert lib.TRITONSERVER_ServerOptionsNew(ctypes.byref(options)) is None
assert lib.TRITONSERVER_ServerOptionsSetLogInfo(options, False) is None
"""

PYTHON_CALLER = CALLER_PROLOGUE + """
assert lib.TRITONSERVER_ServerOptionsSetModelRepositoryPath(options, sys.argv[2].encode()) is None
assert lib.TRITONSERVER_ServerOptionsSetBackendDirectory(options, sys.argv[3].encode()) is None
assert lib.TRITONSERVER_ServerNew(ctypes.byref(server), options) is None
assert lib.TRITONSERVER_ServerModelIsReady(server, b"add_sub", -1, ctypes.byref(ready)) is None
print("add_sub ready", ready.value)
assert lib.TRITONSERVER_ServerDelete(server) is None
print("deleted")
"""


def _caller_lines(stdout: str) -> list[str]:
    """The caller's own lines: the model's finalize prints "Cleaning up..." from each of its
    stubs, which share the caller's stdout, so two stubs' words and newlines can interleave."""
    return [line for line in stdout.replace("Cleaning up...", "").splitlines() if line]


def test_a_python_program_makes_a_server_through_the_c_api(setup):
    _, repo, backends = setup
    from tritium.backend.native import build

    result = subprocess.run(
        [sys.executable, "-c", PYTHON_CALLER, str(build.library_path()), str(repo),
         str(backends)], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert _caller_lines(result.stdout) == ["add_sub ready True", "deleted"]


# Two repositories holding the same model name: with namespacing both load and the name alone
# is ambiguous (Triton's INVALID_ARG); without it the server refuses to start.
NAMESPACING_CALLER = CALLER_PROLOGUE + """
for path in sys.argv[2:4]:
    assert lib.TRITONSERVER_ServerOptionsSetModelRepositoryPath(options, path.encode()) is None
assert lib.TRITONSERVER_ServerOptionsSetModelNamespacing(options, sys.argv[4] == "on") is None
assert lib.TRITONSERVER_ServerOptionsSetLogError(options, False) is None
error = lib.TRITONSERVER_ServerNew(ctypes.byref(server), options)
if error is not None:
    print("new", lib.TRITONSERVER_ErrorCodeString(error).decode())
    sys.exit(0)
error = lib.TRITONSERVER_ServerModelConfig(server, b"add_sub", -1, 1, ctypes.byref(message))
assert error is not None
print("config", lib.TRITONSERVER_ErrorCodeString(error).decode(),
      lib.TRITONSERVER_ErrorMessage(error).decode())
assert lib.TRITONSERVER_ServerDelete(server) is None
"""


@pytest.mark.parametrize("namespacing,answer", [
    ("on", "config Invalid argument There are 2 identifiers of model 'add_sub' in global map, "
           "model namespace must be provided to resolve ambiguity."),
    ("off", "new Internal"),
])
def test_model_namespacing_through_the_c_api(setup, tmp_path, namespacing, answer):
    _, repo, _ = setup
    from tritium.backend.native import build

    twins = [tmp_path / "first", tmp_path / "second"]
    for twin in twins:
        shutil.copytree(repo / "add_sub", twin / "add_sub")
    result = subprocess.run(
        [sys.executable, "-c", NAMESPACING_CALLER, str(build.library_path()),
         *map(str, twins), namespacing], capture_output=True, text=True, timeout=180,
        check=False)
    assert result.returncode == 0, result.stderr
    assert _caller_lines(result.stdout) == [answer]
