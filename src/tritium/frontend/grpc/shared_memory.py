"""The shared-memory extension's gRPC calls (SystemSharedMemory*, CudaSharedMemory*).

Each handler takes the request message and returns the response message, raising TritonError
with Triton's codes and messages; `service.py` wires them into the service.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tritonclient.grpc import service_pb2 as pb

from ...shared_memory import SharedMemoryManager


def handlers(regions: SharedMemoryManager) -> dict[str, tuple[Callable[[Any], Any], Any, Any]]:
    """RPC name -> (handler, request type, response type)."""

    def system_status(request: Any) -> Any:
        return _status_response(pb.SystemSharedMemoryStatusResponse,
                                regions.system_status(request.name))

    def system_register(request: Any) -> Any:
        regions.register_system(request.name, request.key, request.offset, request.byte_size)
        return pb.SystemSharedMemoryRegisterResponse()

    def system_unregister(request: Any) -> Any:
        regions.unregister_system(request.name)
        return pb.SystemSharedMemoryUnregisterResponse()

    def cuda_status(request: Any) -> Any:
        return _status_response(pb.CudaSharedMemoryStatusResponse,
                                regions.cuda_status(request.name))

    def cuda_register(request: Any) -> Any:
        regions.register_cuda(request.name, request.raw_handle, request.device_id,
                              request.byte_size)
        return pb.CudaSharedMemoryRegisterResponse()

    def cuda_unregister(request: Any) -> Any:
        regions.unregister_cuda(request.name)
        return pb.CudaSharedMemoryUnregisterResponse()

    return {
        "SystemSharedMemoryStatus": (system_status, pb.SystemSharedMemoryStatusRequest,
                                     pb.SystemSharedMemoryStatusResponse),
        "SystemSharedMemoryRegister": (system_register, pb.SystemSharedMemoryRegisterRequest,
                                       pb.SystemSharedMemoryRegisterResponse),
        "SystemSharedMemoryUnregister": (system_unregister,
                                         pb.SystemSharedMemoryUnregisterRequest,
                                         pb.SystemSharedMemoryUnregisterResponse),
        "CudaSharedMemoryStatus": (cuda_status, pb.CudaSharedMemoryStatusRequest,
                                   pb.CudaSharedMemoryStatusResponse),
        "CudaSharedMemoryRegister": (cuda_register, pb.CudaSharedMemoryRegisterRequest,
                                     pb.CudaSharedMemoryRegisterResponse),
        "CudaSharedMemoryUnregister": (cuda_unregister, pb.CudaSharedMemoryUnregisterRequest,
                                       pb.CudaSharedMemoryUnregisterResponse),
    }


def _status_response(response_type: Any, statuses: list[dict[str, Any]]) -> Any:
    """A {System,Cuda}SharedMemoryStatusResponse: each region's status under its name."""
    response = response_type()
    for status in statuses:
        response.regions[status["name"]].CopyFrom(response_type.RegionStatus(**status))
    return response
