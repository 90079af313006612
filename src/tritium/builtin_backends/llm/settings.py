"""Engine settings from the model version folder's `model.json`, as Triton's vLLM backend reads it.

The vLLM backend passes `model.json` to vLLM's AsyncEngineArgs; the keys this engine implements
keep vLLM's names and meaning: `model` (a folder, relative to the version folder; default the
version folder itself), `tokenizer` (default: the model folder), `max_num_seqs` (sequences
decoding at once; more wait in the queue), `max_model_len` (prompt plus output, default the
model's max_position_embeddings), `max_num_batched_tokens` (tokens per engine step, a token of
each decoding sequence and prompt chunks in what is left: at least max_num_seqs; its default
depends on the device, DEFAULT_STEP_TOKENS),
`enable_chunked_prefill` (false: prompts are prefilled whole, one per step past the budget),
`dtype` (`auto` is float32; on a KIND_GPU instance the weights and the KV cache are in this
type on the GPU) and `seed`. The instance group, not `model.json`, says where an instance runs.
vLLM keys for what this engine does not do (a preallocated paged KV cache, CUDA graphs, several
devices per engine, per-request logging) are accepted and ignored, and the log says what each
one does not do here; any other key is an error, as AsyncEngineArgs(**config) raises for it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tritium.backend import TritonError

log = logging.getLogger("tritium.backend.llm")

FILENAME = "model.json"
# vLLM engine arguments accepted and ignored, with what they do not do on this engine (one KV
# slot per sequence, growing with it; eager PyTorch; one device per instance).
_NO_CUDA_GRAPHS = "the engine runs eagerly, without CUDA graphs"
_ONE_DEVICE = "each instance runs on one device, in the server's process"
_IGNORED = {
    "gpu_memory_utilization": "no memory is reserved up front: the KV cache grows with the "
                              "running sequences, up to max_num_seqs x max_model_len tokens",
    "swap_space": "the KV cache is never swapped to host memory",
    "block_size": "the KV cache has one slot per sequence, not paged blocks",
    "enable_prefix_caching": "requests never share cached prompt tokens",
    "kv_cache_dtype": "the KV cache is in the model's dtype",
    "enforce_eager": _NO_CUDA_GRAPHS,
    "max_seq_len_to_capture": _NO_CUDA_GRAPHS,
    "disable_custom_all_reduce": _ONE_DEVICE,
    "distributed_executor_backend": _ONE_DEVICE,
    "worker_use_ray": _ONE_DEVICE,
    "engine_use_ray": _ONE_DEVICE,
    "device": "the instance group places instances (KIND_GPU: cuda:<device_id>, else the CPU)",
    "trust_remote_code": "only transformers' own model classes are loaded, never code from "
                         "the model folder",
    "enable_lora": "LoRA adapters are not supported",
    "disable_log_requests": "the engine logs no line per request",
    "disable_log_stats": "the engine's statistics are on /metrics, never in the log",
}
_DTYPES = ("auto", "float32", "float", "bfloat16", "float16", "half")


# The default token budget of a step, by the device the engine runs on. On a CPU a step's time
# grows with its tokens: at 192, a step that prefills beside 32 decoding streams takes 2.4x a
# decode-only step (bench/llm_bench.py, issue 32's load, ITL p99/p50; 128: 1.8, 256: 2.9, 384:
# 3.7, 512: 4.5; throughput the same within noise from 192 up, 3 % lower at 128). On a GPU a
# step's time barely grows with its tokens while a smaller budget splits long prompts into
# more steps: vLLM's default for its OpenAI server.
DEFAULT_STEP_TOKENS = {"cpu": 192, "cuda": 2048}


@dataclass
class EngineSettings:
    model: Path
    tokenizer: Path
    max_num_seqs: int = 16
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None  # None: DEFAULT_STEP_TOKENS for the device
    enable_chunked_prefill: bool = True
    dtype: str = "auto"
    seed: int = 0

    def step_tokens(self, device_type: str) -> int:
        """The token budget of one engine step on a device of `device_type` ("cpu", "cuda"):
        max_num_batched_tokens, or the device's default with room for a token of every
        decoding sequence."""
        if self.max_num_batched_tokens is not None:
            return self.max_num_batched_tokens
        return max(DEFAULT_STEP_TOKENS.get(device_type, DEFAULT_STEP_TOKENS["cpu"]),
                   self.max_num_seqs)


def read_settings(version_path: Path) -> EngineSettings:
    """The settings of the model whose version folder is `version_path`."""
    path = version_path / FILENAME
    values: dict[str, Any] = {}
    if path.is_file():
        try:
            values = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise TritonError.invalid_arg(f"failed to read '{path}': {exc}") from None
        if not isinstance(values, dict):
            raise TritonError.invalid_arg(f"'{path}' must hold a JSON object")
    model = _folder(version_path, values.pop("model", None), "model")
    tokenizer = _folder(version_path, values.pop("tokenizer", None), "tokenizer") \
        if values.get("tokenizer") is not None else model
    values.pop("tokenizer", None)
    settings = EngineSettings(model=model, tokenizer=tokenizer)
    parallel = int(values.pop("tensor_parallel_size", 1) or 1)
    if parallel != 1:
        raise TritonError.unsupported(
            f"tensor_parallel_size {parallel}: the llm backend runs each instance on one device"
        )
    ignored = sorted(k for k in values if k in _IGNORED)
    if ignored:
        log.info("%s: ignoring vLLM settings: %s", path,
                 "; ".join(f"{key} ({_IGNORED[key]})" for key in ignored))
    unknown = sorted(k for k in values if k not in _IGNORED and not hasattr(settings, k))
    if unknown:
        raise TritonError.invalid_arg(
            f"unknown engine setting(s) {', '.join(unknown)} in '{path}'"
        )
    for key in ("max_num_seqs", "max_num_batched_tokens", "max_model_len", "seed"):
        if key in values and values[key] is not None:
            minimum = 0 if key == "seed" else 1
            setattr(settings, key, _integer(path, key, values[key], minimum=minimum))
    if (settings.max_num_batched_tokens is not None
            and settings.max_num_batched_tokens < settings.max_num_seqs):
        raise TritonError.invalid_arg(
            f"max_num_batched_tokens ({settings.max_num_batched_tokens}) must be greater than "
            f"or equal to max_num_seqs ({settings.max_num_seqs}) in '{path}': every step "
            "holds a token of each running sequence"
        )
    if "enable_chunked_prefill" in values:
        settings.enable_chunked_prefill = str(values["enable_chunked_prefill"]).lower() == "true"
    if "dtype" in values:
        settings.dtype = str(values["dtype"])
        if settings.dtype not in _DTYPES:
            raise TritonError.invalid_arg(
                f"dtype '{settings.dtype}' in '{path}' is not one of {', '.join(_DTYPES)}"
            )
    return settings


def _folder(version_path: Path, value: Any, key: str) -> Path:
    if value is None:
        return version_path
    folder = (version_path / str(value)).resolve()
    if not folder.is_dir():
        raise TritonError.invalid_arg(
            f"'{key}' in {version_path / FILENAME} must be a folder of the model's files "
            f"(config.json, *.safetensors, tokenizer files), relative to the version folder; "
            f"'{value}' is not (the llm backend never downloads models)"
        )
    return folder


def _integer(path: Path, key: str, value: Any, minimum: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = minimum - 1
    if number < minimum or isinstance(value, bool):
        raise TritonError.invalid_arg(
            f"'{key}' in '{path}' must be an integer of at least {minimum}, got {value!r}"
        )
    return number
