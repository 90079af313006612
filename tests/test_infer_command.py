"""`tritium infer`, run as a subprocess: in-process from a repository, or against a running
server at --url (HTTP and gRPC)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from support import ROOT
from support.inprocess_models import inprocess_repository
from support.server_process import ServerProcess

EXAMPLES = ROOT / "examples" / "model_repository"


def tritium_infer(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "tritium", "infer", *args], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_prints_numpy_outputs():
    result = tritium_infer("add_sub", "--repository", str(EXAMPLES),
                           "--input", "INPUT0=[1,2,3,4]", "--input", "INPUT1=[1,1,1,1]")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "OUTPUT0: array([2., 3., 4., 5.], dtype=float32)",
        "OUTPUT1: array([0., 1., 2., 3.], dtype=float32)",
    ]


def test_json_output_and_inputs_from_files(tmp_path: Path):
    np.save(tmp_path / "a.npy", np.arange(4, dtype=np.float64))  # converted to the model's FP32
    (tmp_path / "b.json").write_text("[0.5, 0.5, 0.5, 0.5]")
    result = tritium_infer("add_sub", "--repository", str(EXAMPLES), "--json",
                           "-i", f"INPUT0=@{tmp_path / 'a.npy'}",
                           "-i", f"INPUT1=@{tmp_path / 'b.json'}")
    assert result.returncode == 0, result.stderr
    (line,) = result.stdout.splitlines()  # stdout carries only the answer
    answer = json.loads(line)
    assert answer["outputs"][0] == {"name": "OUTPUT0", "datatype": "FP32", "shape": [4],
                                    "data": [0.5, 1.5, 2.5, 3.5]}


def test_text_input_gets_a_batch_of_one():
    result = tritium_infer("identity_bytes", "--repository", str(EXAMPLES), "--json",
                           "-i", "INPUT0=hello")
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)["outputs"][0]
    assert output["shape"] == [1, 1] and output["data"] == ["hello"]


def test_decoupled_model_prints_each_response(tmp_path: Path):
    repo = inprocess_repository(tmp_path / "repo")
    result = tritium_infer("repeat", "--repository", str(repo), "--json",
                           "-i", "IN=[7,8,9]", "-i", "DELAY=[0,0,0]", "-i", "WAIT=[0]")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["outputs"][0]["data"] for line in lines] == [[7], [8], [9]]


@pytest.mark.parametrize("args, message", [
    (["-i", "INPUT0=[1,2,3,4]"], "missing required input(s) ['INPUT1']"),
    (["-i", "NOPE=[1]"], "model 'add_sub' has no input 'NOPE' (inputs: INPUT0, INPUT1)"),
    (["-i", "INPUT0=[1,2", "-i", "INPUT1=[1,1,1,1]"], "--input INPUT0: '[1,2' is not JSON"),
    (["-i", "INPUT0"], "--input must be NAME=VALUE, got 'INPUT0'"),
    (["-i", "INPUT0=@/nonexistent.npy"], "--input INPUT0: cannot read /nonexistent.npy"),
])
def test_bad_inputs_exit_1_with_a_clear_error(args, message):
    result = tritium_infer("add_sub", "--repository", str(EXAMPLES), *args)
    assert result.returncode == 1
    assert message in result.stderr
    assert result.stdout == ""


def test_against_a_running_server_over_http_and_grpc():
    backends = ROOT / "examples" / "backends"
    with ServerProcess([EXAMPLES], f"--backend-directory={backends}") as server:
        for url in (server.http_url, f"grpc://{server.grpc_url}"):
            result = tritium_infer("add_sub", "--url", url, "--json",
                                   "-i", "INPUT0=[1,2,3,4]", "-i", "INPUT1=[4,3,2,1]")
            assert result.returncode == 0, result.stderr
            outputs = {o["name"]: o["data"] for o in json.loads(result.stdout)["outputs"]}
            assert outputs == {"OUTPUT0": [5, 5, 5, 5], "OUTPUT1": [-3, -1, 1, 3]}
        result = tritium_infer("nope", "--url", server.http_url, "-i", "X=[1]")
        assert result.returncode == 1 and "nope" in result.stderr


def test_backend_directory_and_model_version():
    result = tritium_infer("simple", "--repository", str(EXAMPLES), "--backend-directory",
                           str(ROOT / "examples" / "backends"), "--model-version", "1", "--json",
                           "-i", f"INPUT0={list(range(16))}", "-i", f"INPUT1={[1] * 16}")
    assert result.returncode == 0, result.stderr
    outputs = {o["name"]: o for o in json.loads(result.stdout)["outputs"]}
    assert outputs["OUTPUT0"]["shape"] == [1, 16]  # a batch of one was added
    assert outputs["OUTPUT0"]["data"] == list(range(1, 17))


@pytest.mark.parametrize("model, extra, message", [
    ("simple", [], "error: failed to load model 'simple': version 1: unable to find backend "
                   "library for backend 'addsub', try specifying runtime on the model "
                   "configuration. (searched no --backend-directory"),
    ("nosuch", [], f"error: model 'nosuch' is not found in the model repository ({EXAMPLES})"),
])
def test_a_model_that_does_not_load_is_explained(model, extra, message):
    result = tritium_infer(model, "--repository", str(EXAMPLES), "-i", "INPUT0=[1]", *extra)
    assert result.returncode == 1
    assert message in result.stderr
    assert "failed to load all models" not in result.stderr


def test_a_model_whose_configuration_is_invalid_is_explained(tmp_path: Path):
    (tmp_path / "bad" / "1").mkdir(parents=True)
    (tmp_path / "bad" / "config.pbtxt").write_text(
        'name: "bad"\nbackend: "identity"\nmax_batch_size: -3\n')
    result = tritium_infer("bad", "--repository", str(tmp_path), "-i", "INPUT0=[1]")
    assert result.returncode == 1
    assert "error: failed to load model 'bad': " in result.stderr
    assert "'max_batch_size' must be non-negative value for bad" in result.stderr


@pytest.mark.parametrize("url, reason", [
    ("127.0.0.1:{port}", "Connection refused"),
    ("grpc://127.0.0.1:{port}", "Connection refused"),
])
def test_a_refused_url_is_one_line(url, reason):
    from support.server_process import free_ports

    (port,) = free_ports(1)  # nothing listens there
    result = tritium_infer("add_sub", "--url", url.format(port=port), "-i", "INPUT0=[1]")
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ") and reason in line
