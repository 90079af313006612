"""Engine settings from the model version folder's `model.json`, as Triton's vLLM backend reads it.

The vLLM backend passes `model.json` to vLLM's AsyncEngineArgs; the keys this engine implements
keep vLLM's names and meaning: `model` (a folder, relative to the version folder; default the
version folder itself), `tokenizer` (default: the model folder), `max_num_seqs` (sequences
decoding at once; more wait in the queue), `max_model_len` (prompt plus output, default the
model's max_position_embeddings), `max_num_batched_tokens` (prompt tokens prefilled per engine
step: longer prompts are prefilled in chunks between decode steps), `enable_chunked_prefill`,
`dtype` and `seed`. vLLM keys about GPUs and logging have no meaning on this CPU engine and are
accepted and ignored; any other key is an error, as AsyncEngineArgs(**config) raises for it.
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
# vLLM engine arguments that do not apply on a CPU engine without a paged GPU cache.
_IGNORED = {
    "gpu_memory_utilization", "enforce_eager", "disable_log_requests", "disable_log_stats",
    "block_size", "swap_space", "kv_cache_dtype", "disable_custom_all_reduce",
    "distributed_executor_backend", "enable_prefix_caching", "max_seq_len_to_capture",
    "trust_remote_code", "enable_lora", "worker_use_ray", "engine_use_ray", "device",
}
_DTYPES = ("auto", "float32", "float", "bfloat16", "float16", "half")


@dataclass
class EngineSettings:
    model: Path
    tokenizer: Path
    max_num_seqs: int = 16
    max_model_len: int | None = None
    max_num_batched_tokens: int = 512
    enable_chunked_prefill: bool = True
    dtype: str = "auto"
    seed: int = 0


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
            f"tensor_parallel_size {parallel}: the llm backend runs a model on one CPU instance"
        )
    ignored = sorted(k for k in values if k in _IGNORED)
    if ignored:
        log.info("%s: ignoring vLLM GPU/logging settings %s", path, ", ".join(ignored))
    unknown = sorted(k for k in values if k not in _IGNORED and not hasattr(settings, k))
    if unknown:
        raise TritonError.invalid_arg(
            f"unknown engine setting(s) {', '.join(unknown)} in '{path}'"
        )
    for key in ("max_num_seqs", "max_num_batched_tokens", "max_model_len", "seed"):
        if key in values and values[key] is not None:
            minimum = 0 if key == "seed" else 1
            setattr(settings, key, _integer(path, key, values[key], minimum=minimum))
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
