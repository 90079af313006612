"""Tritium's version, in a leaf module: the core reads it without importing the package root
(whose lazy attributes front the in-process API, a frontend)."""

__version__ = "0.1.0"
