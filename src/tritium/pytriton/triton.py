"""`pytriton.triton`: Triton, RemoteTriton, TritonConfig, TritonSecurityConfig."""

from tritium.inprocess.pytriton.remote import RemoteTriton
from tritium.inprocess.pytriton.server_config import TRITON_ACCESS_HEADER
from tritium.inprocess.pytriton.triton import (
    DefaultTritonLifecyclePolicy,
    Triton,
    TritonConfig,
    TritonLifecyclePolicy,
    TritonSecurityConfig,
    VertextAILifecyclePolicy,
)

__all__ = ["TRITON_ACCESS_HEADER", "DefaultTritonLifecyclePolicy", "RemoteTriton", "Triton",
           "TritonConfig", "TritonLifecyclePolicy", "TritonSecurityConfig",
           "VertextAILifecyclePolicy"]
