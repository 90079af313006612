"""Output labels: the `label_filename` of an output config, read when the model loads.

Classification answers "value:index:label" with them, as Triton's LabelProvider does: one label
per line of the file (in the model directory), an empty line or an index past the end meaning
no label. A missing file fails the load with Triton's words. A label path that leaves the model
directory is refused: a configuration can come over the network (a load request's `config`), and
labels are sent back to clients.
"""

from __future__ import annotations

from pathlib import Path

from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError


def read_labels(config: mc.ModelConfig, model_dir: Path) -> dict[str, list[str]]:
    """Output name -> its labels, for every output that names a label file."""
    labels: dict[str, list[str]] = {}
    root = model_dir.resolve()
    for output in config.output:
        if not output.label_filename:
            continue
        path = model_dir / output.label_filename
        if "\0" in output.label_filename or not path.resolve().is_relative_to(root):
            raise TritonError.invalid_arg(
                f"label file '{output.label_filename}' of output '{output.name}' is outside the "
                "model directory"
            )
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise TritonError.internal(
                f"failed to open text file for read {path}: {exc.strerror}"
            ) from None
        labels[output.name] = text.splitlines()
    return labels
