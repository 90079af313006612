"""The gRPC frontend: Triton's GRPCInferenceService, as Triton's src/grpc.

`http2` is the HTTP/2 transport (frames, streams, flow control), `http2_limits` what a client
may ask of it; `options` is the endpoint's configuration (TLS, keepalive, limits); `server` runs
grpcio method handlers over it, each RPC a `call` (`immediate`: ModelInfer's, without a task;
`call_requests`: a streaming call's messages; `compression`: messages inflated and deflated;
`status_message`: its status's grpc-message);
`service` holds the RPC bodies (`GrpcFrontend` is the endpoint `tritium serve` starts);
`infer_request` reads ModelInfer requests (`infer_parameters`: their parameters' checks;
`request_template`: messages decoded again from a kept template) and `infer_response` writes
the answers (`protowire`: the varints and fields both handle by hand); `stream` is
ModelStreamInfer; `repository` and `shared_memory` answer the repository and shared-memory RPCs.
"""

from .service import GrpcFrontend

__all__ = ["GrpcFrontend"]
