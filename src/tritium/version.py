"""Tritium's version, in a leaf module: the core reads it without importing the package root
(whose lazy attributes front the in-process API, a frontend)."""

__version__ = "0.1.0"

# The Triton Inference Server release whose protocol and behaviour Tritium serves: what server
# metadata reports as its version (clients and Triton's own tests compare it with Triton's).
TRITON_VERSION = "2.51.0"
