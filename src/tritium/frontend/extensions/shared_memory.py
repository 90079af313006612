"""Tensors in client shared memory, for both frontends: where an input's bytes come from and
where an output's bytes go.

An input or requested output names a registered region with the `shared_memory_region`,
`shared_memory_offset` and `shared_memory_byte_size` parameters, and gets a bounds-checked
window of it. Inputs read the window (one copy out of a system region, checked against the
object's current size; one copy from the device for a CUDA region); outputs are written into it
after inference and the response then carries the output's name, datatype and shape only, as
Triton's does. Each window is a use of its region until the request has been answered
(`end_region_use`): meanwhile the region cannot be unregistered, as in Triton. The
wire-specific parameter checks (JSON types for HTTP, InferParameter kinds for gRPC) stay in
each frontend's codec.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import TritonError
from ...request import MEMORY_CPU, MEMORY_GPU, InferenceRequest, OutputQuery
from ...shared_memory import DeviceWindow, SharedMemoryManager, Window
from ...tensor import numpy_dtype, serialize_bytes

__all__ = ["OutputRegion", "SharedMemoryManager", "Window", "end_region_use", "output_query",
           "region_window", "write_output"]

_UINT64 = 1 << 64

# Where a requested output goes: a bounds-checked window of a registered region.
OutputRegion = Window


def _unsigned(value: int | None) -> int | None:
    # Triton reads these parameters into size_t: a negative gRPC int64 wraps around.
    return None if value is None else value % _UINT64


def region_window(regions: SharedMemoryManager, name: str, offset: int | None,
                  byte_size: int | None) -> Window:
    """The window of region `name` that a tensor names (NOT_FOUND or INVALID_ARG with Triton's
    messages). Outputs are checked this way too, before inference, as Triton does."""
    return regions.window(name, _unsigned(offset) or 0, _unsigned(byte_size))


def end_region_use(request: InferenceRequest) -> None:
    """The request's (final) answer has been sent: the regions its tensors name are no longer
    in use by it, whoever still holds the request (an instance thread finishing its execute)."""
    for window in request.region_windows:
        window.let_go()


def output_query(regions: dict[str, OutputRegion]) -> OutputQuery:
    """Where a request's outputs go, for a backend that asks
    (TRITONBACKEND_RequestOutputBufferProperties), as Triton's HTTP and gRPC frontends answer:
    an output in a region its region's memory, unless the backend's byte size does not fit
    the window; any other output host memory."""

    def query(name: str | None, byte_size: int | None, memory_type: int,
              memory_type_id: int) -> tuple[int, int]:
        region = regions.get(name) if name is not None else None
        if region is None or (byte_size is not None and byte_size > len(region)):
            return MEMORY_CPU, 0
        if isinstance(region, DeviceWindow):
            return MEMORY_GPU, region.device_id
        return MEMORY_CPU, 0

    return query


def write_output(region: OutputRegion, name: str, datatype: str, data: Any) -> None:
    """Copy an output into its region; an output that does not fit fails as Triton's does."""
    if datatype == "BYTES":
        payload: Any = np.frombuffer(serialize_bytes(np.asarray(data, dtype=np.object_)),
                                     dtype=np.uint8)
    else:
        array = np.asarray(data)
        dtype = numpy_dtype(datatype)
        if array.dtype != dtype:
            array = array.astype(dtype)
        payload = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    size = payload.nbytes
    available = len(region)
    if size > available:
        raise TritonError.internal(
            f"shared memory size specified with the request for output '{name}' "
            f"({available} bytes) should be at least {size} bytes to hold the results"
        )
    if size:
        region.write(payload)
