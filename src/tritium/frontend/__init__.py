"""Frontends: the HTTP/REST, gRPC and metrics endpoints in front of an InferenceServer.

- `http/`: the HTTP/REST frontend (KServe v2 and Triton's extensions, generate) on its own
  HTTP/1.1 server;
- `grpc/`: the gRPC frontend (GRPCInferenceService) on its own HTTP/2 transport;
- `extensions/`: what both frontends share (statistics, logging, trace, restricted APIs,
  shared memory, classification, request limits, Triton's JSON reading, header forwarding);
- `loop_bridge.py`: the one bridge between the core's threads and the event loop (a request's
  final answer as an awaitable, its responses as an async iterator or as callbacks);
- `bulk_work.py`: the one thread that takes work too long for the event loop (large or
  compressed bodies and messages, BYTES tensors of many elements, large JSON answers, large
  answers to compress), one piece at a time;
- `metrics.py` (with `prometheus_text.py` and `cpu_metrics.py`): Prometheus text on
  --metrics-port, served by `http/`'s HTTP/1.1 server.

Frontends import only the core (`server`, `request`, `errors`, `tensor`, `config`).
"""
