"""The flags and environment of Triton's cloud endpoints, settled as tritonserver settles them.

Vertex AI starts a container with AIP_* variables rather than flags: AIP_MODE=PREDICTION turns
the Vertex AI endpoint on and the HTTP and gRPC endpoints off unless a flag says otherwise,
AIP_HTTP_PORT is the endpoint's port unless --vertex-ai-port names one, and AIP_STORAGE_URI is
the model repository when no --model-repository is given. SageMaker's --sagemaker-safe-port-range
bounds the ports the server's other endpoints may use. Every endpoint's port is checked against
the others' before anything starts, with tritonserver's messages.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

AIP_PREDICTION = "PREDICTION"
DEFAULT_CLOUD_PORT = 8080


def storage_uri(environ: Mapping[str, str] = os.environ) -> str:
    """AIP_STORAGE_URI: the model repository when none is given ("" when unset)."""
    return environ.get("AIP_STORAGE_URI", "")


def port_range(text: str) -> tuple[int, int]:
    """--sagemaker-safe-port-range's `<low>-<high>` (argparse type)."""
    low, sep, high = text.partition("-")
    if not sep:
        raise argparse.ArgumentTypeError(
            "Cannot parse pair option due to incorrect number of inputs.--<pair option> "
            f"argument requires format <first>-<second>. Found: {text}")
    try:
        return int(low), int(high)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected <low>-<high> port numbers, got '{text}'"
                                         ) from None


def settle_cloud_flags(args: argparse.Namespace,
                       environ: Mapping[str, str] = os.environ) -> None:
    """Fill in what the flags left to the environment (see the module docstring); ValueError
    for an AIP_HTTP_PORT that is not a number."""
    prediction = environ.get("AIP_MODE", "") == AIP_PREDICTION
    if args.allow_vertex_ai is None:
        args.allow_vertex_ai = prediction
    if args.allow_http is None:
        args.allow_http = not prediction
    if args.allow_grpc is None:
        args.allow_grpc = not prediction
    if args.vertex_ai_port is None:
        text = environ.get("AIP_HTTP_PORT", str(DEFAULT_CLOUD_PORT))
        try:
            args.vertex_ai_port = int(text)
        except ValueError:
            raise ValueError(f"Error: AIP_HTTP_PORT must be a port number, got '{text}'"
                             ) from None
    if not args.model_repository and storage_uri(environ):
        args.model_repository = [storage_uri(environ)]


def check_port_collision(args: argparse.Namespace) -> None:
    """ValueError in tritonserver's words when two endpoints would listen on one address and
    port, or an endpoint's port is outside --sagemaker-safe-port-range. Port 0 (any free port,
    Tritium's) collides with nothing."""
    # (service, address, port, allowed range of the others' ports or None)
    endpoints: list[tuple[str, str, int, tuple[int, int] | None]] = []
    if args.allow_http:
        endpoints.append(("HTTP", args.http_address, args.http_port, None))
    if args.allow_grpc:
        endpoints.append(("GRPC", args.grpc_address, args.grpc_port, None))
    if args.allow_metrics:
        endpoints.append(("metrics", args.metrics_address or args.http_address,
                          args.metrics_port, None))
    if args.allow_sagemaker:
        endpoints.append(("SageMaker", "0.0.0.0", args.sagemaker_port,
                          args.sagemaker_safe_port_range))
    if args.allow_vertex_ai:
        endpoints.append(("Vertex AI", "0.0.0.0", args.vertex_ai_port, None))
    for index, (service, address, port, allowed) in enumerate(endpoints):
        # A service that bounds the others is compared with all of them; others only with
        # those after them (each pair once).
        others = endpoints if allowed is not None else endpoints[index + 1:]
        for other in others:
            other_service, other_address, other_port, _ = other
            if other is endpoints[index] or other_address != address:
                continue
            if allowed is not None and not allowed[0] <= other_port <= allowed[1]:
                raise ValueError(
                    f"The server cannot listen to {other_service} requests at port "
                    f"{other_port}, allowed port range is [{allowed[0]}, {allowed[1]}]")
            if port == other_port and port != 0:
                raise ValueError(
                    f"The server cannot listen to {service} requests and {other_service} "
                    f"requests at the same address and port {address}:{port}")


__all__ = ["check_port_collision", "port_range", "settle_cloud_flags", "storage_uri"]
