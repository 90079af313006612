"""The python backend: Triton Python-backend models (`model.py` with `TritonPythonModel`).

Each model instance runs in its own process, a *stub*, as Triton does: the model's imports,
crashes and GIL stay out of the server. The folders follow the two processes:

- `server/`: the server process's side (the backend's entry points, model and instance state,
  the stub launcher, request processing, the async channel, BLS, custom metrics, execution
  environments);
- `stub/`: the stub process (its entry point, the model's main loop, the runtime behind
  `pb_utils`, BLS calls);
- `wire/`: what both sides share (control messages on two unix sockets per instance, rings and
  tensors in shared memory). `stub/` and `wire/` never import `server/`.

This package's `__init__` stays import-light: the stub process imports
`tritium.builtin_backends.python.stub.main` under whatever interpreter runs the model (an
execution environment may lack the server's dependencies), so the entry points below load
`server/backend.py` only when the server looks them up.

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
        "model_instance_execute_each",
        "model_instance_ready",
    }
)


def __getattr__(name: str) -> Any:
    if name in _ENTRY_POINTS:
        from .server import backend

        return getattr(backend, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
