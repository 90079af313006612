"""Loading, unloading and readiness of other models, asked of the server from a model."""

from __future__ import annotations

from .runtime import _require_runtime, _with_prefix


def load_model(
    model_name: str, config: str = "", files: dict[str, bytes] | None = None
) -> None:
    """Load a model; ``config`` overrides its configuration (JSON), ``files`` its directory.

    ``files`` maps "file:<path in the model directory>" to the file content as bytes.
    """
    _with_prefix(
        "Failed to load model: ",
        lambda: _require_runtime().load_model(model_name, config, dict(files or {})),
    )


def unload_model(model_name: str, unload_dependents: bool = False) -> None:
    """Unload a model, and the models that depend on it if ``unload_dependents``."""
    _with_prefix(
        "Failed to unload model: ",
        lambda: _require_runtime().unload_model(model_name, unload_dependents),
    )


def is_model_ready(model_name: str, model_version: str = "") -> bool:
    """Whether a model version is ready ("" lets the server choose the version)."""
    return _with_prefix(
        "Failed to check model readiness: ",
        lambda: _require_runtime().is_model_ready(model_name, model_version),
    )
