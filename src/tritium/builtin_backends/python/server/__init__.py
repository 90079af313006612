"""The python backend, server-process side (Triton's python_be.cc and friends).

`backend` (the entry points), `model_state` (PythonModelState: a model's model.py and
auto-complete) with `execution_env` (the Python its stubs run under), `instance_state` (an
instance's stub, restarted when it dies), `stub_launcher` (one stub process),
`process_requests` (the execute path), `async_channel` (what a stub sends on its own) with
`request_executor` (BLS requests) and `custom_metrics` (pb_utils metric families).
"""
