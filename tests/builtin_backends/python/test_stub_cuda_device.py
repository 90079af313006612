"""Which binding makes a GPU instance's device current in the stub: only one the model imported
(a CUDA context costs device memory a numpy model on a GPU instance must not pay)."""

from __future__ import annotations

import sys
import types

import pytest

from tritium.builtin_backends.python.stub.cuda_device import make_current


@pytest.fixture
def bare(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No torch, cupy or cuda-python imported; importing cuda.bindings would fail loudly."""
    for name in ("torch", "cupy", "cuda.bindings.runtime"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)  # an import would raise
    return monkeypatch


def _runtime(calls: list[int], error: str = "cudaSuccess") -> types.ModuleType:
    runtime = types.ModuleType("cuda.bindings.runtime")
    codes = types.SimpleNamespace(cudaSuccess="cudaSuccess")
    runtime.cudaError_t = codes  # type: ignore[attr-defined]
    runtime.cudaSetDevice = lambda device: (calls.append(device), error)[1:]  # type: ignore[attr-defined]
    return runtime


def test_a_model_that_imported_no_binding_gets_no_cuda_context(bare: pytest.MonkeyPatch) -> None:
    done, why = make_current(1)
    assert not done
    assert why == "the model imported none of torch, cupy, cuda.bindings.runtime"
    assert "cuda.bindings.runtime" not in sys.modules


def test_the_runtime_binding_the_model_imported_sets_the_device(
        bare: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    bare.setitem(sys.modules, "cuda.bindings.runtime", _runtime(calls))
    assert make_current(1) == (True, "cudaSetDevice(1)")
    assert calls == [1]
    bare.setitem(sys.modules, "cuda.bindings.runtime",
                 _runtime(calls, error="cudaErrorInvalidDevice"))
    assert make_current(3) == (False, "cudaSetDevice(3): cudaErrorInvalidDevice")


def test_torch_is_used_first_when_the_model_imported_it(bare: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(set_device=calls.append)  # type: ignore[attr-defined]
    bare.setitem(sys.modules, "torch", torch)
    bare.setitem(sys.modules, "cuda.bindings.runtime", _runtime([]))
    assert make_current(2) == (True, "torch.cuda.set_device(2)")
    assert calls == [2]
