"""The GPU a KIND_GPU instance runs on, made current in the stub (Triton runs a GPU instance's
CUDA work on its device): a model that allocates with `torch.empty(..., device="cuda")` or
`cupy.empty(...)` without naming a device lands on `model_instance_device_id`, not on GPU 0.

The current device is per thread: the stub sets it on the thread that runs initialize and
execute, and on the thread of its asyncio loop (async execute). It uses what the model has
already imported (torch, cupy, cuda-python's runtime binding) and imports none of them: making a
device current creates its CUDA context (hundreds of MiB of device memory), which a model that
does no CUDA work (numpy on a GPU instance, as a missing instance_group gives) must not pay, as
in Triton, whose stub itself uses no GPU memory.
"""

from __future__ import annotations

import sys


def make_current(device_id: int) -> tuple[bool, str]:
    """Make `device_id` this thread's current CUDA device: (done, what was done or why not)."""
    reasons = []
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            torch.cuda.set_device(device_id)
            return True, f"torch.cuda.set_device({device_id})"
        except Exception as exc:
            reasons.append(f"torch: {exc}")
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            cupy.cuda.runtime.setDevice(device_id)
            return True, f"cupy.cuda.runtime.setDevice({device_id})"
        except Exception as exc:
            reasons.append(f"cupy: {exc}")
    runtime = sys.modules.get("cuda.bindings.runtime")
    if runtime is None:
        reasons.append("the model imported none of torch, cupy, cuda.bindings.runtime")
    else:
        (error,) = runtime.cudaSetDevice(device_id)
        if error == runtime.cudaError_t.cudaSuccess:
            return True, f"cudaSetDevice({device_id})"
        reasons.append(f"cudaSetDevice({device_id}): {getattr(error, 'name', error)}")
    return False, "; ".join(reasons)
