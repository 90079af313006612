"""The python backend: Triton Python-backend models (`model.py` with `TritonPythonModel`).

Each model instance runs in its own process, a *stub*, as Triton does: the model's imports,
crashes and GIL stay out of the server. The wire between them: control messages on two unix
sockets per instance (`messages.py`), tensors in shared memory (`shm_ring.py`,
`shm_tensors.py`).

Server side: `backend.py` (the entry points), `model_state.py` (a model's model.py and
auto-complete) with `pb_env.py` (its interpreter), `instance_state.py` (an instance's stub,
restarted when it dies), `stub_launcher.py` (one stub process), `process_requests.py` (the
execute path), `async_channel.py` (what a stub sends on its own) with `request_executor.py`
(BLS) and `custom_metrics.py`.

Stub side: `stub_main.py` (the process's entry point), `pb_stub.py` (the model's main loop and
execute), `stub_runtime.py` (pb_utils' runtime: what the model asks of the server) with
`bls_call.py` and `pb_wire.py`.

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
