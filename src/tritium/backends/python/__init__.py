"""The python backend: Triton Python-backend models (`model.py` with `TritonPythonModel`).

Each model instance runs in its own process, a *stub* (`stub_main.py`), as Triton does: the
model's imports, crashes and GIL stay out of the server. The server side (`backend.py`) starts
the stubs, hands them batches and routes what they send back: responses, BLS requests, log
lines and custom metrics. The wire between them is in `_ipc.py`: control frames on two unix
sockets per instance, tensors in shared memory.

This package's `__init__` stays import-light: the stub process imports
`tritium.backends.python.stub_main` under whatever interpreter runs the model (an execution
environment may lack the server's dependencies), so the entry points below load `backend.py`
only when the server looks them up.

Backend settings (`--backend-config=python,<key>=<value>`), as Triton's python backend names
them:

- `shm-default-byte-size`: bytes of each of an instance's two rings (server->stub and
  stub->server); a message whose tensors do not fit goes in a one-off segment instead.
  Default 4 MiB.
- `shm-growth-byte-size`: accepted for compatibility; rings do not grow (see above).
- `stub-timeout-seconds`: how long a starting stub may take to connect (default 30).
- `shm-region-prefix-name`: the name prefix of the shared-memory regions (default
  `tritium_python_backend_shm_region`); they are anonymous, so it only shows in /proc.

Model settings (config `parameters`):

- `EXECUTION_ENV_PATH`: run the model's stubs with another Python: a virtual environment
  directory (its `bin/python` is used), a Python executable, or a `.tar.gz` of an environment
  (a conda-pack archive, or a packed venv), unpacked once into a temporary directory.
  `$$TRITON_MODEL_DIRECTORY` is replaced by the model's directory, as in Triton. The
  environment needs numpy; Tritium itself is found through the stub's path.
"""

from __future__ import annotations

from typing import Any

_ENTRY_POINTS = frozenset(
    {
        "initialize",
        "finalize",
        "get_backend_attribute",
        "model_initialize",
        "model_finalize",
        "model_instance_initialize",
        "model_instance_finalize",
        "model_instance_execute",
        "model_instance_ready",
    }
)


def __getattr__(name: str) -> Any:
    if name in _ENTRY_POINTS:
        from . import backend

        return getattr(backend, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
