"""The python backend, stub-process side (Triton's triton_python_backend_stub).

`main` (the process's entry point), `pb_stub` (the model's main loop and execute) with
`model_import` (model.py imported as Triton's stub does), `returned_responses` (what execute
returned, checked and packed: Triton's ProcessReturnedResponses), `model_event_loop` (where
async execute runs) and `stub_errors` (errors worded as Triton's stub words them), `runtime`
(what `pb_utils` asks of the server) with `bls_call` (BLS calls and their responses) and
`pb_wire` (pb_utils objects <-> their wire form). Standard library, numpy and `wire/` only: the
stub may run under another interpreter, and never imports the server side.
"""
