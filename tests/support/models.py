"""Build small model repositories for tests (configs written as text, as users write them)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from tritonclient.utils import np_to_triton_dtype


def write_model(repo: Path, name: str, config: str | None, versions: tuple[int, ...] = (1,),
                files: dict[str, str] | None = None) -> Path:
    """Create `repo/name/config.pbtxt` (unless config is None) and version folders."""
    model = repo / name
    model.mkdir(parents=True, exist_ok=True)
    if config is not None:
        (model / "config.pbtxt").write_text(textwrap.dedent(config))
    for version in versions:
        (model / str(version)).mkdir(exist_ok=True)
    for relative, text in (files or {}).items():
        path = model / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return model


def identity_config(name: str, datatype: str = "TYPE_FP32", dims: str = "[ -1 ]",
                    max_batch_size: int = 8, inputs: int = 1, extra: str = "") -> str:
    ios = []
    for i in range(inputs):
        ios.append(f'input {{ name: "INPUT{i}" data_type: {datatype} dims: {dims} }}')
        ios.append(f'output {{ name: "OUTPUT{i}" data_type: {datatype} dims: {dims} }}')
    body = "\n".join(ios)
    return (f'name: "{name}"\nbackend: "identity"\nmax_batch_size: {max_batch_size}\n'
            f"{body}\n{extra}\n")


def standard_repository(repo: Path) -> Path:
    """The repository most protocol tests share: identity models of several kinds."""
    write_model(repo, "identity_fp32", identity_config("identity_fp32"))
    write_model(repo, "identity_int32",
                identity_config("identity_int32", "TYPE_INT32", "[ 16 ]", inputs=2))
    write_model(repo, "identity_bytes", identity_config("identity_bytes", "TYPE_STRING"))
    write_model(repo, "identity_nobatch",
                identity_config("identity_nobatch", dims="[ 2, 3 ]", max_batch_size=0))
    write_model(repo, "identity_versions", identity_config(
        "identity_versions", extra="version_policy: { all: {} }"), versions=(1, 2, 3))
    write_model(repo, "identity_slow", identity_config(
        "identity_slow",
        extra='parameters { key: "execute_delay_ms" value: { string_value: "1500" } }'))
    return repo


def infer_arrays(module: ModuleType, url: str, model: str, arrays: dict[str, np.ndarray],
                 outputs: list[str] | None = None) -> Any:
    """One inference with tritonclient's http or grpc `module`, inputs named as in `arrays`
    (datatypes from the numpy dtypes), asking for `outputs` (default: all)."""
    client = module.InferenceServerClient(url)
    inputs = []
    for name, array in arrays.items():
        inputs.append(module.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype)))
        inputs[-1].set_data_from_numpy(array)
    requested = [module.InferRequestedOutput(n) for n in outputs] if outputs else None
    return client.infer(model, inputs, outputs=requested)
