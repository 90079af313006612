"""What the HTTP and gRPC frontends share: Triton's protocol extensions, read and answered once.

`statistics_api`, `logging_api` and `trace_api` (the statistics, logging and trace extensions,
both encodings), `restricted_api` (--http-restricted-api / --grpc-restricted-protocol),
`shared_memory` (tensors in client shared-memory regions), `classification`, `limits` (bounds
on one request) and `json_codec` (JSON read and written as Triton's rapidjson does).
"""
