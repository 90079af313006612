"""What the tritium.config tests share: model directories and configs built from text, and the
TritonError a call raises.

The fixtures in tests/support/data are described in test_config_json.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tritonclient.grpc import model_config_pb2 as mc

from tritium.config import normalize_model_config, parse_config_text, read_model_config
from tritium.errors import TritonError

DATA = Path(__file__).parent / "data"
CPU, GPU = mc.ModelInstanceGroup.KIND_CPU, mc.ModelInstanceGroup.KIND_GPU
IO = """
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
"""


def make_model(root: Path, name: str, config: str | None = None, files=("1/model.py",)) -> Path:
    """A model directory: optional config.pbtxt plus files (a trailing "/" makes a folder)."""
    model = root / name
    model.mkdir(parents=True)
    if config is not None:
        (model / "config.pbtxt").write_text(config)
    for rel in files:
        path = model / rel
        if rel.endswith("/"):
            path.mkdir(parents=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")
    return model


def loaded(root: Path, name: str, config: str = "", files=("1/model.py",)) -> mc.ModelConfig:
    """Parse and normalize a model the way the repository poll does."""
    path = make_model(root, name, config, files)
    cfg = read_model_config(path, auto_complete=True)
    normalize_model_config(cfg, path)
    return cfg


def config(text: str) -> mc.ModelConfig:
    return parse_config_text(text, "config.pbtxt")


def error_of(fn, *args, **kwargs) -> TritonError:
    with pytest.raises(TritonError) as info:
        fn(*args, **kwargs)
    return info.value


def valid(text: str) -> mc.ModelConfig:
    """A config as validation sees it: name, backend and version policy present."""
    policy = "version_policy { latest { num_versions: 1 } }"
    return config(f'name: "m" backend: "python" {policy} {text}')
