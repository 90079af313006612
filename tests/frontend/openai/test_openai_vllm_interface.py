"""The OpenAI frontend serves any model with the text-generation interface of Triton's vLLM
backend, not only the llm backend's: here a Python-based backend named `vllm` (a stand-in with
that backend's config and tensors, its `auto_complete_config` included, and a toy engine that
answers the prompt's words backwards) is served through the official `openai` client."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import openai
import pytest
import tritonclient.http as httpclient

from support.llm_models import train_tokenizer
from support.models import identity_config, write_model
from support.server_process import ServerProcess, free_ports, openai_server

# Triton's vLLM backend's tensors (its auto_complete_config) over a toy engine: the prompt's
# words backwards, `max_tokens` of them, one per response when streaming.
_VLLM_LIKE = '''
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        for name, datatype, optional in (("text_input", "TYPE_STRING", False),
                                         ("stream", "TYPE_BOOL", True),
                                         ("sampling_parameters", "TYPE_STRING", True),
                                         ("exclude_input_in_output", "TYPE_BOOL", True)):
            config.add_input({"name": name, "data_type": datatype, "dims": [1],
                              "optional": optional})
        config.add_output({"name": "text_output", "data_type": "TYPE_STRING", "dims": [-1]})
        config.set_model_transaction_policy(dict(decoupled=True))
        config.set_max_batch_size(0)
        return config

    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            prompt = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy()[0]
            stream = pb_utils.get_input_tensor_by_name(request, "stream")
            stream = stream is not None and bool(stream.as_numpy()[0])
            sampling = pb_utils.get_input_tensor_by_name(request, "sampling_parameters")
            sampling = json.loads(sampling.as_numpy()[0]) if sampling is not None else {}
            words = prompt.decode().split()[::-1][:sampling.get("max_tokens", 16)]
            pieces = [" " + w for w in words] if stream else [" " + " ".join(words)]
            for piece in pieces:
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor(
                    "text_output", np.array([piece.encode()], np.object_))]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
'''


def _repository(root) -> tuple[str, str]:
    """The backend directory and the repository: `backwards` on the `vllm` stand-in."""
    (root / "backends" / "vllm").mkdir(parents=True)
    (root / "backends" / "vllm" / "model.py").write_text(_VLLM_LIKE)
    repo = root / "repo"
    (repo / "backwards" / "1").mkdir(parents=True)
    (repo / "backwards" / "config.pbtxt").write_text(
        'backend: "vllm"\ninstance_group [ { count: 1 kind: KIND_MODEL } ]\n')
    write_model(repo, "identity", identity_config("identity", "TYPE_INT32", max_batch_size=0))
    return str(root / "backends"), str(repo)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    backends, repo = _repository(tmp_path_factory.mktemp("vllm_like"))
    with openai_server(repo, f"--backend-directory={backends}") as process:
        yield process


def test_the_vllm_backend_model_is_offered(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list().data] == ["backwards"]


def test_a_completion_plain_and_streamed(client: openai.OpenAI) -> None:
    answer = client.completions.create(model="backwards", prompt="one two three four",
                                       max_tokens=3)
    assert answer.choices[0].text == " four three two"
    chunks = client.completions.create(model="backwards", prompt="one two three four",
                                       max_tokens=3, stream=True)
    assert [c.choices[0].text for c in chunks if c.choices and c.choices[0].text] == [
        " four", " three", " two"]


def test_several_prompts_are_a_request_each(client: openai.OpenAI) -> None:
    answer = client.completions.create(model="backwards", prompt=["one two", "three four five"],
                                       max_tokens=2, n=2)
    assert [(c.index, c.text) for c in answer.choices] == [
        (0, " two one"), (1, " two one"), (2, " five four"), (3, " five four")]
    with pytest.raises(openai.BadRequestError, match="takes no token-id prompts .it has no "
                                                     "'prompt_token_ids' input"):
        client.completions.create(model="backwards", prompt=[[5, 6], [7]])


def test_what_the_model_cannot_do_is_a_clear_400(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="no --openai-tokenizer"):
        client.chat.completions.create(model="backwards",
                                       messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.BadRequestError, match="does not return logprobs"):
        client.completions.create(model="backwards", prompt="a b", logprobs=1)
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="identity", prompt="a b")
    with pytest.raises(openai.BadRequestError, match="takes no prompt options"):
        client.completions.create(model="backwards", prompt="a b",
                                  extra_body={"add_special_tokens": False})


def test_tokenize_needs_a_model_with_a_tokenizer(server, client: openai.OpenAI) -> None:
    status, body = _post(server.openai_port, "/tokenize", {"model": "backwards", "prompt": "a"})
    assert status == 400
    assert "the model `backwards` has no tokenizer to ask (it has no 'tokenize' input" in \
        json.loads(body)["error"]["message"]
    card = client.models.retrieve("backwards")
    assert (card.root, card.max_model_len) == ("backwards", None)


def test_its_config_is_the_vllm_backends(server) -> None:
    config = httpclient.InferenceServerClient(server.http_url).get_model_config("backwards")
    assert config["backend"] == "vllm"
    assert config["model_transaction_policy"]["decoupled"] is True
    assert [i["name"] for i in config["input"]] == [
        "text_input", "stream", "sampling_parameters", "exclude_input_in_output"]



def test_chat_is_rendered_with_the_openai_tokenizers_template(tmp_path) -> None:
    """As Triton's OpenAI frontend with --tokenizer: the model gets the rendered prompt (and
    answers its words backwards)."""
    backends, repo = _repository(tmp_path)
    train_tokenizer(tmp_path / "tokenizer")  # its template: <|role|>content<|end|>...
    (port,) = free_ports(1)
    with ServerProcess([repo], f"--openai-port={port}", f"--backend-directory={backends}",
                       f"--openai-tokenizer={tmp_path / 'tokenizer'}") as process:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="-")
        answer = client.chat.completions.create(
            model="backwards", messages=[{"role": "system", "content": "be brief"},
                                         {"role": "user", "content": "one two"}])
        # "<|system|>be brief<|end|><|user|>one two<|end|><|assistant|>", words backwards
        assert answer.choices[0].message.content == \
            " two<|end|><|assistant|> brief<|end|><|user|>one <|system|>be"
        process.stop()


def test_a_folder_without_a_tokenizer_stops_the_server_with_one_line(tmp_path) -> None:
    backends, repo = _repository(tmp_path)
    (port,) = free_ports(1)
    process = ServerProcess([repo], f"--openai-port={port}", f"--backend-directory={backends}",
                            f"--openai-tokenizer={tmp_path}")
    with pytest.raises(RuntimeError, match="server exited with 1"):
        process.start()
    assert f"error: --openai-tokenizer {tmp_path}: no tokenizer_config.json there" in \
        process.log()


def _get(port: int, path: str, method: str = "GET") -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _post(port: int, path: str, document: dict) -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST",
                                     data=json.dumps(document).encode())
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _success_line(metrics: str) -> str:
    (line,) = [line for line in metrics.splitlines()
               if line.startswith('nv_inference_request_success{model="backwards"')]
    return line


def test_the_openai_port_serves_metrics_and_health(server, client: openai.OpenAI) -> None:
    """What `vllm bench serve` and orchestrators ask the OpenAI port for: the metrics port's
    text at /metrics, Triton's OpenAI /health/ready and vLLM's /health."""
    client.completions.create(model="backwards", prompt="one two", max_tokens=1)
    status, text = _get(server.openai_port, "/metrics")
    assert status == 200
    assert _success_line(text) == _success_line(
        urllib.request.urlopen(server.metrics_url, timeout=30).read().decode())
    assert _success_line(text).split()[-1] != "0"
    assert _get(server.openai_port, "/health/ready") == (200, "")
    assert _get(server.openai_port, "/health") == (200, "")
    status, text = _get(server.openai_port, "/health", method="POST")
    assert status == 405, text


def test_without_metrics_or_readiness_the_utilities_say_so(tmp_path) -> None:
    backends, repo = _repository(tmp_path)
    (Path(repo) / "broken" / "1").mkdir(parents=True)
    (Path(repo) / "broken" / "config.pbtxt").write_text('backend: "no_such_backend"\n')
    (port,) = free_ports(1)
    with ServerProcess([repo], f"--openai-port={port}", f"--backend-directory={backends}",
                       "--allow-metrics=false", "--exit-on-error=false") as process:
        status, text = _get(port, "/metrics")
        assert status == 404
        assert "metrics are off on this server (--allow-metrics=false)" in \
            json.loads(text)["error"]["message"]
        status, text = _get(port, "/health/ready")
        assert status == 400
        assert "not ready for inference requests" in json.loads(text)["error"]["message"]
        assert _get(port, "/health") == (200, "")
        # The server keeps serving what did load.
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="-")
        assert client.completions.create(model="backwards", prompt="a b",
                                         max_tokens=1).choices[0].text == " b"
        process.stop()
