"""The runtime: everything in this package that needs the server goes through one object the
stub process installs (`_set_runtime`), so the package itself never does I/O and can be
imported, and unit-tested, anywhere."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Protocol, TypeVar

from .errors import TritonModelException

if TYPE_CHECKING:
    from .response import InferenceResponse

_T = TypeVar("_T")


class _Runtime(Protocol):
    """What this package needs from the server; the stub process provides it.

    Failures the server reports are raised as ``TritonModelException`` carrying the server's
    words; this package adds Triton's prefixes ("Failed to load model: ", ...). BLS calls
    report server-side failures as an ``InferenceResponse`` carrying a ``TritonError`` (as
    Triton does) and raise only for misuse, e.g. "BLS is only supported during the 'execute'
    function."
    """

    def send_response(
        self, request_handle: object, response: InferenceResponse | None, flags: int
    ) -> None:
        """Deliver one response (or only ``flags``) for the server-made request."""

    def is_cancelled(self, request_handle: object) -> bool:
        """Whether the client cancelled the server-made request."""

    def bls_exec(
        self, request: object, decoupled: bool
    ) -> InferenceResponse | Iterator[InferenceResponse]:
        """Run a model-made request (a ``request.InferenceRequest``, typed as ``object`` because
        ``request.py`` imports this module, not the other way round); ``decoupled`` asks for an
        iterator of responses."""

    def bls_async_exec(
        self, request: object, decoupled: bool
    ) -> Awaitable[InferenceResponse | Iterator[InferenceResponse]]:
        """As ``bls_exec``, awaitable in the caller's running event loop."""

    def log(self, level: int, message: str, filename: str, line: int) -> None:
        """Write a model log line (``level`` is a ``Logger.LogLevel``) to the server log."""

    def metric_family_new(self, name: str, description: str, kind: int) -> object:
        """Create a custom metric family; returns its handle."""

    def metric_new(
        self, family_handle: object, labels: dict, buckets: list[float] | None
    ) -> object:
        """Create a metric of a family; returns its handle."""

    def metric_update(self, metric_handle: object, op: str, value: float) -> None:
        """Apply ``op`` ("increment", "set" or "observe") to a metric."""

    def metric_value(self, metric_handle: object) -> float:
        """Current value of a metric."""

    def metric_family_delete(self, handle: object) -> None:
        """Delete a metric family (its metrics were deleted first)."""

    def metric_delete(self, handle: object) -> None:
        """Delete a metric."""

    def load_model(self, name: str, config: str, files: dict[str, bytes]) -> None:
        """Load (or reload) a model, as TRITONSERVER_ServerLoadModelWithParameters."""

    def unload_model(self, name: str, unload_dependents: bool) -> None:
        """Unload a model, and its dependents if asked."""

    def is_model_ready(self, name: str, version: str) -> bool:
        """Readiness of a model version ("" lets the server choose)."""


_runtime: _Runtime | None = None
_model_dir: str | None = None


def _set_runtime(runtime: _Runtime | None, model_dir: str | None = None) -> None:
    """Install the stub's runtime (None uninstalls it) and the model version directory."""
    global _runtime, _model_dir
    _runtime = runtime
    _model_dir = model_dir


def _current_runtime() -> _Runtime | None:
    """The installed runtime, or None outside a stub (the Logger then logs locally)."""
    return _runtime


def _require_runtime() -> _Runtime:
    if _runtime is None:
        raise TritonModelException(
            "triton_python_backend_utils is not connected to a server: this call only works "
            "inside a model instance run by the Tritium python backend"
        )
    return _runtime


def _with_prefix(prefix: str, call: Callable[[], _T]) -> _T:
    """Run ``call()``, re-raising its TritonModelException with Triton's prefix."""
    try:
        return call()
    except TritonModelException as e:
        raise TritonModelException(prefix + str(e)) from e


def get_model_dir() -> str:
    """The model version directory (``<repository>/<model>/<version>``), as Triton's stub."""
    if _model_dir is None:
        raise TritonModelException("The model directory is only known inside a model instance.")
    return _model_dir
