"""The `--backend-config=python,...` settings (Triton's BackendState in python_be.h): a leaf of
the package, read by the model states and the stubs, imported by no module it serves."""

from __future__ import annotations

from tritium.backend import Backend, TritonError

from .custom_metrics import FamilyRegistry

_DEFAULT_RING_BYTES = 4 * 1024 * 1024
_MIN_RING_BYTES = 64 * 1024
_DEFAULT_STUB_TIMEOUT_S = 30.0


class BackendState:
    """The `--backend-config=python,...` settings, and what the backend's models share."""

    def __init__(self, backend: Backend) -> None:
        config = backend.config
        self.ring_bytes = max(
            _int_setting(config, "shm-default-byte-size", _DEFAULT_RING_BYTES), _MIN_RING_BYTES
        )
        self.stub_timeout_s = float(
            _int_setting(config, "stub-timeout-seconds", int(_DEFAULT_STUB_TIMEOUT_S))
        )
        self.region_prefix = config.get(
            "shm-region-prefix-name", "tritium_python_backend_shm_region"
        )
        # A Python-based backend: DIR/<name>/model.py serves every model naming the backend.
        directory = backend.directory
        self.backend_model = (
            directory / "model.py"
            if directory is not None and (directory / "model.py").is_file()
            else None
        )
        self.metric_families = FamilyRegistry()


def _int_setting(config: dict[str, str], key: str, default: int) -> int:
    value = config.get(key)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise TritonError.invalid_arg(
            f"backend config '{key}' must be an integer, got '{value}'"
        ) from None
