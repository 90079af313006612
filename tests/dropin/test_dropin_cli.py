"""tritonserver's command line as launch scripts use it: every Triton 2.51 flag is accepted,
abbreviations are not, --help explains each flag, --version, Triton's refusals, a port in use."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from support import ROOT, SUPPORT
from support.models import identity_config, write_model
from support.server_process import ServerProcess

FLAGS_FILE = SUPPORT / "data" / "tritonserver_2.51_flags.txt"
# Set by ServerProcess itself, or needing a setting of their own (tested below).
_SET_BY_TEST = {"--help", "--model-repository", "--model-store", "--http-port", "--grpc-port",
                "--metrics-port", "--http-address", "--grpc-address", "--load-model",
                "--log-file", "--backend-directory"}
# Refused together with --cache-config, as by tritonserver (test_response_cache.py).
_NOT_WITH_THE_REST = {"--response-cache-byte-size"}


def triton_flags() -> list[tuple[str, str]]:
    """(flag, example value) for each tritonserver flag."""
    rows = []
    for line in FLAGS_FILE.read_text().splitlines():
        if line.startswith("--"):
            flag, value = line.split()
            rows.append((flag, value))
    return rows


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {**(os.environ if env is None else env), "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "tritium", *args], capture_output=True,
                          check=False, text=True, timeout=60, env=env)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("cli_repo")
    write_model(repo, "id", identity_config("id"))
    return repo


def test_the_flag_list_is_tritonservers_87() -> None:
    assert len(triton_flags()) == 87


def test_a_server_starts_with_every_tritonserver_flag(repo: Path, tmp_path: Path) -> None:
    log_file = tmp_path / "server.log"
    store = write_model(tmp_path / "store", "id2", identity_config("id2")).parent
    backends = tmp_path / "backends"
    backends.mkdir()
    args = [f"--log-file={log_file}", f"--backend-directory={backends}"]
    for flag, value in triton_flags():
        if flag in _SET_BY_TEST or flag in _NOT_WITH_THE_REST:
            continue
        args.append(flag if value == "-" else f"{flag}={value}")
    with ServerProcess([repo], *args, f"--model-store={store}") as server:
        with urllib.request.urlopen(f"http://{server.http_url}/v2/health/ready") as answer:
            assert answer.status == 200
        text = log_file.read_text()
    for flag in ("--pinned-memory-pool-byte-size", "--cuda-memory-pool-byte-size",
                 "--host-policy"):
        assert f"{flag} has no effect: Tritium has no memory pools of its own" in text, text
    assert ("--sagemaker-thread-count has no effect: SageMaker requests are handled on the "
            "server's event loop") in text


def test_help_gives_every_flag_its_meaning() -> None:
    result = run_cli("serve", "--help")
    assert result.returncode == 0
    help_text = result.stdout
    for flag, _ in triton_flags():
        assert flag in help_text, flag
    from tritium.cli import build_parser

    serve = build_parser()._subparsers._group_actions[0].choices["serve"]  # type: ignore
    missing = [a.option_strings for a in serve._actions if a.option_strings and not a.help]
    assert missing == []
    assert "(default: 8000)" in help_text and "(default: 2000)" in help_text


def test_version() -> None:
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.startswith("tritium 0.1.0") and "2.51" in result.stdout


def test_abbreviations_are_refused(repo: Path) -> None:
    result = run_cli("serve", f"--model-repository={repo}", "--model-repo=/tmp",
                     "--http-po=1")
    assert result.returncode == 2
    assert "unrecognized arguments: --model-repo=/tmp --http-po=1" in result.stderr


def test_load_model_needs_explicit_control(repo: Path) -> None:
    result = run_cli("serve", f"--model-repository={repo}", "--load-model=id")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "Error: Use of '--load-model' requires setting '--model-control-mode=explicit' as well.")


def test_an_empty_model_config_name_is_refused(repo: Path) -> None:
    result = run_cli("serve", f"--model-repository={repo}", "--model-config-name=")
    assert result.returncode == 1
    assert result.stderr.strip() == "Error: empty argument for --model-config-name"


_FORMAT = "--backend-config option format is '<backend name>,<setting>=<value>'. Got "


@pytest.mark.parametrize(("setting", "message"), [
    (",default-max-batch-size=3",
     "No backend specified. --backend-config option format is <backend name>,<setting>=<value> "
     "or <setting>=<value>. Got ,default-max-batch-size=3"),
    ("default-max-batch-size=", _FORMAT + "default-max-batch-size="),
    ("default-max-batch-size", _FORMAT + "default-max-batch-size"),
    ("tensorflow,default-max-batch-size=", _FORMAT + "tensorflow,default-max-batch-size="),
    ("tensorflow,default-max-batch-size", _FORMAT + "tensorflow,default-max-batch-size"),
    ("onnxruntime,=3", _FORMAT + "onnxruntime,=3"),
])
def test_backend_config_refusals_are_tritons(repo: Path, setting: str, message: str) -> None:
    """L0_backend_config's bad settings: the server does not start, and says what Triton says."""
    result = run_cli("serve", f"--model-repository={repo}", f"--backend-config={setting}")
    assert result.returncode == 1
    assert result.stderr.strip() == f'Bad option: "--backend-config".\n{message}'


@pytest.mark.parametrize(("setting", "parsed"), [
    ("default-max-batch-size=6", ("", "default-max-batch-size", "6")),
    ("onnxruntime,default-max-batch-size=0", ("onnxruntime", "default-max-batch-size", "0")),
    # Split as tritonserver splits it: the first comma, then the first '=' after it.
    ("python,shm-region-prefix-name=a=b", ("python", "shm-region-prefix-name", "a=b")),
    ("a=b,c=d", ("a=b", "c", "d")),
])
def test_backend_config_is_split_as_tritonserver_splits_it(setting: str,
                                                          parsed: tuple[str, str, str]) -> None:
    from tritium.cli import build_parser
    from tritium.serve_flags import check_serve_args

    args = build_parser().parse_args(
        ["serve", "--model-repository=/tmp", f"--backend-config={setting}"])
    check_serve_args(args)
    assert args.backend_config == [parsed]


def test_mode_values_are_case_insensitive_as_tritons() -> None:
    """Triton lower-cases these values (L0_model_namespacing passes POLL and EXPLICIT)."""
    from tritium.cli import build_parser

    args = build_parser().parse_args([
        "serve", "--model-repository=/tmp", "--model-control-mode=POLL", "--rate-limit=OFF",
        "--grpc-infer-response-compression-level=High"])
    assert (args.model_control_mode, args.rate_limit,
            args.grpc_infer_response_compression_level) == ("poll", "off", "high")


def test_strict_model_config_is_deprecated_and_never_overrides_disable(tmp_path: Path) -> None:
    """tritonserver warns about --strict-model-config, and --disable-auto-complete-config wins
    over --strict-model-config=false: a model without a configuration file does not load."""
    write_model(tmp_path, "id", identity_config("id"))
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "1").mkdir()
    result = run_cli("serve", f"--model-repository={tmp_path}", "--http-port=0",
                     "--grpc-port=0", "--metrics-port=0", "--disable-auto-complete-config",
                     "--strict-model-config=false")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert ("Warning: '--strict-model-config' has been deprecated! Please use "
            "'--disable-auto-complete-config' instead.") in lines
    assert ("Warning: Overriding deprecated '--strict-model-config' from False to True in "
            "favor of '--disable-auto-complete-config'!") in lines
    assert "failed to open text file for read" in result.stderr


def test_trace_level_and_verbosity_spellings_are_tritonservers(capsys) -> None:
    """tritonserver reads --log-verbose as true/false or a number, and the trace levels MIN,
    MAX, ON and TRUE as TIMESTAMPS (L0_sagemaker, L0_cmdline_trace pass them)."""
    from tritium.cli import build_parser
    from tritium.serve_flags import check_serve_args

    args = build_parser().parse_args([
        "serve", "--model-repository=/tmp", "--log-verbose=true", "--trace-level=MIN",
        "--trace-level=tensors", "--trace-file=/tmp/t.json"])
    check_serve_args(args)
    assert args.log_verbose == 1
    assert args.trace_default.trace_level == ("TIMESTAMPS", "TENSORS")
    # The deprecated --trace-* flags still work, with tritonserver's warning for each use.
    warnings = capsys.readouterr().err.splitlines()
    assert warnings.count(
        "Warning: '--trace-level' has been deprecated and will be removed in future releases. "
        "Please use '--trace-config level=<OFF|TIMESTAMPS|TENSORS> instead.") == 2
    assert len(warnings) == 3


def test_trace_numbers_and_verbosity_are_read_as_tritonserver_reads_them() -> None:
    """tritonserver reads --trace-config's numbers with stoi (a leading number, 32 bits): a
    negative rate or log frequency wraps around (rate=-1 is 4294967295), a negative count is
    kept; a negative --log-verbose is 0 (side by side with tritonserver 2.51)."""
    from tritium.cli import build_parser
    from tritium.serve_flags import check_serve_args

    args = build_parser().parse_args([
        "serve", "--model-repository=/tmp", "--trace-config=rate=-1", "--trace-config=count=-5",
        "--trace-config=triton,log-frequency=-2147483648", "--log-verbose=-1"])
    check_serve_args(args)
    setting = args.trace_default
    assert (setting.trace_rate, setting.trace_count, setting.log_frequency) == (
        4294967295, -5, 2147483648)
    assert args.log_verbose == 0 and args.log_settings.log_verbose_level == 0
    args = build_parser().parse_args(["serve", "--model-repository=/tmp", "--trace-rate=5x"])
    check_serve_args(args)
    assert args.trace_default.trace_rate == 5


@pytest.mark.parametrize("flag, message", [
    ("--trace-config=rate=2147483648",
     'Bad option: "--trace-config rate".\nProvided option value is out of bound. Got 2147483648'),
    ("--trace-config=count=-2147483649",
     'Bad option: "--trace-config count".\n'
     "Provided option value is out of bound. Got -2147483649"),
    ("--trace-config=triton,log-frequency=4294967295",
     'Bad option: "--trace-config triton,log-frequency".\n'
     "Provided option value is out of bound. Got 4294967295"),
    ("--log-verbose=4294967295",
     'Bad option: "--log-verbose".\nProvided option value is out of bound. Got 4294967295'),
])
def test_numbers_past_32_bits_are_refused_in_tritonservers_words(repo: Path, flag: str,
                                                                  message: str) -> None:
    result = run_cli("serve", f"--model-repository={repo}", flag)
    assert result.returncode == 1
    assert result.stderr.strip() == message


@pytest.mark.parametrize(("flags", "env", "message"), [
    (["--trace-config=opentelemetry,bsp_max_queue_size=-1"], {},
     'Bad option: "--trace-config opentelemetry,bsp_max_queue_size".\n'
     "Invalid option value. Got -1"),
    ([], {"OTEL_BSP_SCHEDULE_DELAY": "soon"},
     'Bad option: "OTEL_BSP_SCHEDULE_DELAY".\nInvalid option value. Got soon'),
])
def test_opentelemetry_batch_settings_are_checked(repo: Path, flags: list[str],
                                                 env: dict[str, str], message: str) -> None:
    result = run_cli("serve", f"--model-repository={repo}", "--trace-config=mode=opentelemetry",
                     *flags, env={**os.environ, **env})
    assert result.returncode == 1
    assert result.stderr.strip() == message


@pytest.mark.parametrize("service", ["HTTP", "GRPC", "Metrics"])
def test_a_port_in_use_is_named_before_anything_starts(repo: Path, service: str) -> None:
    server = ServerProcess([repo])
    port = {"HTTP": server.http_port, "GRPC": server.grpc_port,
            "Metrics": server.metrics_port}[service]
    holder = socket.socket()
    holder.bind(("127.0.0.1", port))
    holder.listen()
    try:
        server.args.append("--metrics-address=127.0.0.1")
        server.start(wait_ready=False)
        assert server.wait_exit(60) == 1
    finally:
        holder.close()
    log = server.log()
    assert (f"error: failed to start {service} service: Unavailable - Socket "
            f"'127.0.0.1:{port}' already in use") in log
    assert "Started" not in log and "successfully loaded" not in log


def test_make_serve_passes_extra_flags() -> None:
    result = subprocess.run(["make", "-n", "-o", ".venv/.installed", "serve",
                             "ARGS=--http-port 9000 --log-verbose 1"], cwd=ROOT,
                            capture_output=True, check=False, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "--backend-directory examples/backends --http-port 9000 --log-verbose 1" \
        in result.stdout


FLAKY_MODEL = '''
from pathlib import Path


class TritonPythonModel:
    def initialize(self, args):
        marker = Path(args["model_repository"]) / "tried"
        if not marker.exists():  # the first load fails, a second try succeeds
            marker.write_text("once")
            raise RuntimeError("first load fails")

    def execute(self, requests):
        return []
'''
FLAKY_CONFIG = '''
name: "flaky"
backend: "python"
max_batch_size: 0
input { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] }
output { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] }
'''


def test_model_config_name_and_load_retry_count(tmp_path: Path) -> None:
    write_model(tmp_path, "id", identity_config("id"),
                files={"configs/small.pbtxt": identity_config("id", max_batch_size=2)})
    write_model(tmp_path, "flaky", FLAKY_CONFIG, files={"1/model.py": FLAKY_MODEL})
    with ServerProcess([tmp_path], "--model-config-name=small",
                       "--model-load-retry-count=1") as server:
        with urllib.request.urlopen(f"http://{server.http_url}/v2/models/id/config") as answer:
            assert json.loads(answer.read())["max_batch_size"] == 2
        with urllib.request.urlopen(f"http://{server.http_url}/v2/models/flaky/ready") as answer:
            assert answer.status == 200
        log = server.log()
    assert "first load fails" in log and "retrying to load model 'flaky' version 1" in log


def test_metrics_follow_an_http_address_that_names_no_host_to_any(repo: Path) -> None:
    """L0_socket starts `--http-address -47 --allow-http 0`: the metrics service, whose address
    defaults to the HTTP one, still starts (tritonserver binds what inet_addr makes of it)."""
    # The last --http-address wins over the one ServerProcess gives.
    server = ServerProcess([repo], "--allow-http=0", "--http-address=-47")
    server.start(wait_ready=False)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(server.metrics_url, timeout=5) as response:
                    status = response.status
                break
            except OSError:
                assert server.process is not None and server.process.poll() is None, server.log()
                assert time.monotonic() < deadline, server.log()
                time.sleep(0.2)
    finally:
        server.stop()
    assert status == 200
    assert "names no host: the metrics service listens on 0.0.0.0" in server.log()
