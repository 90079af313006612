"""The python backend's layout holds: the stub side and the wire import nothing of the server.

The stub process may run under another interpreter (an execution environment with numpy and
little else), and it imports `stub/` and `wire/` alone; an import of the server side (or of
the server's dependencies) would break such stubs, or slow every stub's start. Each check runs
in a fresh interpreter, as a stub starts, and lists what importing the modules loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import tritium

SRC = str(Path(tritium.__file__).resolve().parents[1])
PACKAGE = "tritium.builtin_backends.python"

_PROBE = """
import importlib, json, pkgutil, sys
sys.path.insert(0, sys.argv[1])
for name in sys.argv[2:]:
    package = importlib.import_module(name)
    for module in pkgutil.iter_modules(package.__path__, name + "."):
        importlib.import_module(module.name)
print(json.dumps(sorted(sys.modules)))
"""


def loaded_after_importing(*packages: str) -> list[str]:
    """Every module in sys.modules after a fresh interpreter imported all of `packages`."""
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, SRC, *packages],
        check=True, capture_output=True, text=True, timeout=120,
    )
    return json.loads(out.stdout)


def tritium_modules(modules: list[str]) -> set[str]:
    return {m for m in modules if m == "tritium" or m.startswith("tritium.")}


def test_the_stub_side_imports_only_itself_and_the_wire() -> None:
    modules = loaded_after_importing(f"{PACKAGE}.stub", f"{PACKAGE}.wire")
    # The probe really imported the stub's modules (an empty list would pass vacuously).
    assert f"{PACKAGE}.stub.main" in modules and f"{PACKAGE}.wire.shm_tensors" in modules
    allowed_packages = (f"{PACKAGE}.stub", f"{PACKAGE}.wire")
    # `import tritium` loads its version (a leaf module with one constant).
    allowed = {
        "tritium", "tritium.version", "tritium.datatypes", "tritium.builtin_backends", PACKAGE
    }
    strays = {
        m for m in tritium_modules(modules)
        if m not in allowed and not m.startswith(allowed_packages)
    }
    assert strays == set()
    # Outside tritium: the standard library and numpy (the one dependency a stub needs), and
    # the site hooks an interpreter may run at start-up (Debian's Python has a sitecustomize);
    # numpy 1.x's compiled parts register Cython's runtime modules.
    foreign = {m.split(".")[0] for m in modules} - set(sys.stdlib_module_names)
    foreign = {m for m in foreign if m != "cython_runtime" and not m.startswith("_cython_")}
    assert foreign <= {"numpy", "tritium", "_distutils_hack", "__main__", "sitecustomize",
                       "usercustomize"}, foreign


def test_the_wire_imports_neither_side() -> None:
    modules = loaded_after_importing(f"{PACKAGE}.wire")
    assert f"{PACKAGE}.wire.messages" in modules
    strays = {
        m for m in tritium_modules(modules)
        if m not in {"tritium", "tritium.version", "tritium.datatypes", "tritium.builtin_backends",
                     PACKAGE}
        and not m.startswith(f"{PACKAGE}.wire")
    }
    assert strays == set()


def test_the_server_side_is_where_the_backend_api_is_used() -> None:
    """The other way round is allowed and real: the server side starts stubs (it imports the
    stub's BOOTSTRAP) and speaks the wire; importing it loads the backend API."""
    modules = loaded_after_importing(f"{PACKAGE}.server")
    assert "tritium.backend" in modules
    assert f"{PACKAGE}.stub.main" in modules and f"{PACKAGE}.wire.messages" in modules
