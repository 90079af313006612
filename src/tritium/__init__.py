"""Tritium: a Triton-compatible inference server in Python."""

from .version import __version__ as __version__

# The in-process API (tritium.Server, tritium.Options, ... as in Triton's `tritonserver`),
# imported on first use: `import tritium` stays light for the Python-backend stub processes.
_INPROCESS = ("Server", "Options", "Model", "InferenceRequest", "InferenceResponse", "Tensor",
              "DataType", "MemoryType", "ModelControlMode")


def __getattr__(name: str) -> object:
    if name in _INPROCESS:
        from . import inprocess

        return getattr(inprocess, name)
    raise AttributeError(f"module 'tritium' has no attribute '{name}'")
