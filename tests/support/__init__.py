"""What the tests share, in one package imported the same way everywhere (`from support.X import
...`; tests/conftest.py puts tests/ on sys.path): the server process, raw HTTP, model builders,
fixtures per protocol, and the model repositories and data files the tests serve or read."""

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
# The checkout's root (src/, examples/) and the Triton Python-backend models the tests serve.
ROOT = SUPPORT.parents[1]
PYTHON_MODELS = SUPPORT / "python_models"
