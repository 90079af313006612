"""What the llm backend's test modules share: the tiny models (built once per session), the
independent reference (transformers' own greedy `generate`), request builders and the generate
extension's client."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from support.llm_models import FAMILIES, build_model

if TYPE_CHECKING:
    from support.server_process import ServerProcess

_BUILD_LOCK = threading.Lock()


@pytest.fixture(scope="session")
def llm_weights(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """{family: folder} of tiny models, made once per session whichever module asks first."""
    base = tmp_path_factory.getbasetemp() / "llm_weights"
    folders = {}
    with _BUILD_LOCK:
        for seed, family in enumerate(FAMILIES):
            folder = base / family
            if not (folder / "model.safetensors").is_file():
                build_model(folder, family, seed=seed)
            folders[family] = folder
    return folders


class Reference:
    """transformers' greedy generate on a model folder: the independent implementation the
    engine is held to, token for token."""

    def __init__(self, folder: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForCausalLM.from_pretrained(folder).eval()
        self.eos = self.tokenizer.eos_token_id

    def greedy_tokens(self, prompt: str, max_tokens: int) -> list[int]:
        """The generated tokens, up to and including EOS if it comes."""
        ids = self.tokenizer(prompt, return_tensors="pt").input_ids
        with self.torch.inference_mode():
            out = self.model.generate(
                ids, attention_mask=self.torch.ones_like(ids), do_sample=False,
                max_new_tokens=max_tokens, pad_token_id=self.tokenizer.pad_token_id,
            )
        tokens = out[0, ids.shape[1]:].tolist()
        if self.eos in tokens:
            tokens = tokens[: tokens.index(self.eos) + 1]
        return tokens

    def text(self, prompt: str, tokens: list[int]) -> str:
        """The text a client sees for `tokens`, detokenized incrementally (a multi-byte
        character is only shown whole) exactly as the engine streams it."""
        from tritium.builtin_backends.llm.detokenizer import IncrementalDetokenizer

        prompt_ids = self.tokenizer(prompt).input_ids
        detokenizer = IncrementalDetokenizer(self.tokenizer, prompt_ids, [], False, True)
        for token in tokens:
            if token != self.eos:
                detokenizer.add(token)
        return detokenizer.text

    def greedy_text(self, prompt: str, max_tokens: int) -> tuple[str, int]:
        tokens = self.greedy_tokens(prompt, max_tokens)
        return self.text(prompt, tokens), len(tokens)


def text_inputs(prompt: str, sampling: dict[str, Any] | None = None, stream: bool = True,
                **switches: bool) -> list[grpcclient.InferInput]:
    """tritonclient gRPC inputs as a Triton vLLM-backend client sends them."""
    inputs = []

    def add(name: str, datatype: str, value: Any) -> None:
        data = np.array([value], dtype=np.object_ if datatype == "BYTES" else np.bool_)
        tensor = grpcclient.InferInput(name, [1], datatype)
        tensor.set_data_from_numpy(data)
        inputs.append(tensor)

    add("text_input", "BYTES", prompt.encode())
    add("stream", "BOOL", stream)
    if sampling is not None:
        add("sampling_parameters", "BYTES", json.dumps(sampling).encode())
    for name, value in switches.items():
        add(name, "BOOL", value)
    return inputs


PROMPTS = [
    "The quick brown",
    "Héllo wörld, ça va?",
    "Once upon a time there was a tiny language model that could count: one two",
    "def add(a, b):",
    "你好",
    "Continuous batching admits new requests between decode steps. Tritium serves models",
    "T",
    "Grüße aus Köln. 🙂",
]


def generate(server: ServerProcess, model: str, document: dict[str, Any],
             stream: bool = False) -> tuple[int, Any]:
    """POST `document` to /v2/models/<model>/generate (or generate_stream): the status and the
    answer (the stream's events)."""
    import urllib.error
    import urllib.request

    kind = "generate_stream" if stream else "generate"
    request = urllib.request.Request(
        f"http://{server.http_url}/v2/models/{model}/{kind}",
        data=json.dumps(document).encode(), method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            body = response.read().decode()
            status = response.status
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read().decode())
    if stream:
        return status, [json.loads(line[len("data: "):]) for line in body.split("\n\n")
                        if line.startswith("data: ")]
    return status, json.loads(body)
