"""Read a model's `config.pbtxt` into Triton's own `ModelConfig` message.

Triton parses the file with protobuf's text format and, on failure, says only "failed to read
text proto from <path>" (the line and column go to its log, not to the user). We keep Triton's
opening words but put `<path>:<line>:<column>` and protobuf's reason in the message itself, so
the client that asked for a load sees where the file is wrong.
"""

from __future__ import annotations

import re
from pathlib import Path

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError

CONFIG_FILENAME = "config.pbtxt"

# protobuf's ParseError text starts with "<line>:<column> : "; we re-attach the position to
# the path, compiler style, and keep only the reason.
_POSITION_PREFIX = re.compile(r"^\d+:\d+ : ")


def parse_config_text(text: str, path: str) -> mc.ModelConfig:
    """Parse config.pbtxt text; a syntax error names `path`, the line and the column."""
    config = mc.ModelConfig()
    try:
        text_format.Parse(text, config)
    except text_format.ParseError as exc:
        reason = _POSITION_PREFIX.sub("", str(exc))
        line, column = exc.GetLine(), exc.GetColumn()
        where = f"{path}:{line}:{column}" if line is not None else path
        raise TritonError.invalid_arg(
            f"failed to read text proto from {where}: {reason}"
        ) from None
    return config


def read_model_config(model_path: Path, *, auto_complete: bool,
                      config_name: str = "") -> mc.ModelConfig:
    """Read `model_path/config.pbtxt`, as Triton's ModelRepositoryManager does.

    With auto-complete on, a missing file is an empty config (the server and the backend fill
    it in); without it the model cannot load, with Triton's message. A `config_name`
    (--model-config-name) reads `configs/<config_name>.pbtxt` instead where the model has it.
    """
    config_path = Path(model_path) / CONFIG_FILENAME
    if config_name:
        custom = Path(model_path) / "configs" / f"{config_name}.pbtxt"
        if custom.is_file():
            config_path = custom
    if not config_path.exists():
        if auto_complete:
            return mc.ModelConfig()
        raise TritonError.invalid_arg(
            f"failed to open text file for read {config_path}: No such file or directory"
        )
    try:
        text = config_path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TritonError.invalid_arg(
            f"failed to read text proto from {config_path}: not UTF-8 text ({exc.reason} "
            f"at byte {exc.start})"
        ) from None
    except OSError as exc:
        raise TritonError.invalid_arg(
            f"failed to open text file for read {config_path}: {exc.strerror}"
        ) from None
    return parse_config_text(text, str(config_path))

