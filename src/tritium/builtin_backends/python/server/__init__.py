"""The python backend, server-process side (Triton's python_be.cc and friends).

Imports run one way, from the assembler down to the leaves: `backend` (the entry points)
imports `auto_complete` (a model's auto_complete_config in a short-lived stub),
`instance_state` (an instance's stub, restarted when it dies) and `model_state`
(PythonModelState: a model's model.py, with `execution_env`, the Python its stubs run under);
`stub_launcher` (one stub process) imports `async_channel` (what a stub sends on its own), which
imports `request_executor` (BLS requests), `process_requests` (the execute path) and
`custom_metrics` (pb_utils metric families). Those see the stub through `stub_link` (a protocol),
and everything reads the backend-wide settings in `backend_state`.
"""
