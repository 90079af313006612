"""Builds Tritium's libtritonserver.so: the C/C++ library behind Triton's C API.

Triton's backends link against `libtritonserver.so` and call back into the server through it;
Tritium's own library implements that API over Tritium's server objects. It is compiled with
the system C++ compiler (`$CXX`, else `c++`/`g++`) the first time a native backend is loaded, or
ahead of time by `python -m tritium.backend.native.build` (`make serve`/`make test` run it), into
a per-user cache directory keyed by the sources' hash, under a file lock so concurrent servers
build once. Without a compiler every other part of Tritium works; loading a native backend then
fails UNAVAILABLE with the reason.

The hot path between Tritium's Python server and that library (one call per Execute batch,
`csrc/python/hotpath.cc`) is a CPython extension compiled next to it against this
interpreter's and numpy's headers, `_hotpath-<numpy version><extension suffix>`. Without
Python's headers it is not built and native backends run through ctypes alone (slower).

A backend whose DT_NEEDED names the server library under another file name (a wheel-repaired
`libtritonserver-<hash>.so`) gets an alias: an empty shared object carrying that soname, loaded
RTLD_GLOBAL, so the dynamic loader finds the name already loaded and binds the backend's
imports to the real library in the global scope.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from ...errors import TritonError

PACKAGE_DIR = Path(__file__).resolve().parent
SOURCES = sorted((PACKAGE_DIR / "csrc").glob("*.cc"))
HEADERS = [*sorted((PACKAGE_DIR / "csrc").glob("*.h")),
           PACKAGE_DIR / "include" / "tritium_triton_api.h"]
HOTPATH_SOURCE = PACKAGE_DIR / "csrc" / "python" / "hotpath.cc"
INCLUDE_DIR = PACKAGE_DIR / "include"
SONAME = "libtritonserver.so"
_SONAME_RE = re.compile(r"^[A-Za-z0-9_.+-]+$")

log = logging.getLogger("tritium.backend.native")


def compiler() -> str:
    """The C++ compiler to use, or UNAVAILABLE saying why there is none."""
    for candidate in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if candidate and shutil.which(candidate):
            return candidate
    raise TritonError.unavailable(
        "native backends need Tritium's libtritonserver.so, which is compiled with a C++ "
        "compiler at first use; none was found (install g++ or set CXX)"
    )


def cache_dir() -> Path:
    base = os.environ.get("TRITIUM_NATIVE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tritium", "native"
    )
    return Path(base)


def _digest(cxx: str) -> str:
    digest = hashlib.sha256(cxx.encode())
    for path in SOURCES + HEADERS + [HOTPATH_SOURCE]:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _locked_build(target: Path, command: list[str]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists():
            return
        # Seconds of silence otherwise, the first time a native backend loads.
        log.info("building %s with %s (once: cached in %s)", target.name, command[0],
                 target.parent)
        started = time.monotonic()
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            out = Path(tmp) / target.name
            result = subprocess.run(command + ["-o", str(out)], capture_output=True, text=True,
                                    check=False)
            if result.returncode != 0:
                raise TritonError.unavailable(
                    f"failed to compile {target.name} with {command[0]}: "
                    f"{(result.stderr or result.stdout).strip()[-2000:]}"
                )
            os.replace(out, target)
        log.info("built %s in %.1f s", target.name, time.monotonic() - started)


def library_path() -> Path:
    """Tritium's libtritonserver.so, compiled on first use."""
    cxx = compiler()
    target = cache_dir() / _digest(cxx) / SONAME
    if not target.exists():
        _locked_build(target, [
            cxx, "-std=c++17", "-O2", "-fPIC", "-shared", "-fvisibility=hidden",
            f"-Wl,-soname,{SONAME}", *map(str, SOURCES), "-lpthread", "-ldl",
        ])
    return target


def hotpath_path() -> Path:
    """The hot-path extension for this interpreter and numpy, compiled on first use."""
    import numpy

    library = library_path()
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    target = library.parent / f"_hotpath-{numpy.__version__}{suffix}"
    if not target.exists():
        python_include = sysconfig.get_paths()["include"]
        if not (Path(python_include) / "Python.h").is_file():
            raise TritonError.unavailable(
                f"the native hot path needs Python's C headers ({python_include}/Python.h is "
                "missing: install the python3-dev package of this interpreter)")
        _locked_build(target, [
            compiler(), "-std=c++17", "-O2", "-fPIC", "-shared", "-fvisibility=hidden",
            f"-I{python_include}", f"-I{numpy.get_include()}", str(HOTPATH_SOURCE),
            f"-L{library.parent}", "-ltritonserver", "-Wl,-rpath,$ORIGIN",
        ])
    return target


def alias_path(soname: str) -> Path:
    """An empty shared object whose soname is `soname` (see the module docstring)."""
    if not _SONAME_RE.match(soname):
        raise TritonError.invalid_arg(f"invalid library name '{soname}'")
    cxx = compiler()
    target = cache_dir() / _digest(cxx) / "aliases" / soname
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        empty = target.parent / "empty.cc"
        if not empty.exists():
            empty.write_text("// an alias of libtritonserver.so: carries only a soname\n")
        _locked_build(target, [cxx, "-shared", "-fPIC", f"-Wl,-soname,{soname}", str(empty)])
    return target


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="tritium: %(message)s", stream=sys.stderr)
    try:
        print(library_path())
    except TritonError as exc:
        print(f"tritium: {exc}", file=sys.stderr)
        return 1
    try:
        print(hotpath_path())
    except TritonError as exc:  # native backends still work, through ctypes only
        print(f"tritium: {exc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
