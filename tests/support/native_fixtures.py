"""Test backends in C++ (tests/support/native_backends/*.cc), compiled while the tests run against
Tritium's own API header and libtritonserver.so, exactly as a Triton backend is built."""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import subprocess
from pathlib import Path

from support import ROOT
from tritium.backend.native import build

SOURCES = Path(__file__).resolve().parent / "native_backends"


def compile_backends(directory: Path, names: dict[str, str],
                     filename: str = "libtriton_{name}.so") -> Path:
    """Compile `{backend name: source stem}` into `directory/<name>/libtriton_<name>.so`
    (`filename`: a repository agent's `libtritonrepoagent_{name}.so`)."""
    library = build.library_path()
    cxx = build.compiler()

    def one(name: str, stem: str) -> None:
        target = directory / name / filename.format(name=name)
        target.parent.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(
            [cxx, "-std=c++17", "-O2", "-fPIC", "-shared", f"-I{build.INCLUDE_DIR}",
             f"-I{SOURCES}", str(SOURCES / f"{stem}.cc"), f"-L{library.parent}",
             "-ltritonserver", "-lpthread", "-ldl", "-o", str(target)],
            capture_output=True, text=True, check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"compiling {stem}.cc failed:\n{result.stderr}")

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda item: one(*item), names.items()))
    return directory


def write_model(
    repository: Path, name: str, config: str, files: dict[str, Path] | None = None
) -> None:
    folder = repository / name
    (folder / "1").mkdir(parents=True, exist_ok=True)
    (folder / "config.pbtxt").write_text(f'name: "{name}"\n{config}')
    for relative, source in (files or {}).items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)


def compile_program(source: Path, target: Path) -> Path:
    """A C++ program that links Tritium's libtritonserver.so (found at run time by its rpath),
    built against Tritium's API header as a program embedding Triton's server is built."""
    library = build.library_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [build.compiler(), "-std=c++17", "-O2", f"-I{build.INCLUDE_DIR}", str(source),
         f"-L{library.parent}", "-ltritonserver", f"-Wl,-rpath,{library.parent}", "-lpthread",
         "-o", str(target)],
        capture_output=True, text=True, check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"compiling {source.name} failed:\n{result.stderr}")
    return target


FAKE_CUDART = Path(__file__).resolve().parent / "fake_cudart" / "fake_cudart.cc"


def compile_fake_cudart(directory: Path) -> dict[str, str]:
    """The stand-in CUDA runtime (fake_cudart/fake_cudart.cc) as `directory/libcudart.so`, and
    the environment of a server that opens it for GPU memory: `directory` on LD_LIBRARY_PATH,
    and cuda-python's pathfinder hidden. The server tries the runtime pathfinder finds before
    the loader's search, and where cuda-python is installed (PyPI's CUDA build of torch pulls
    it) that is NVIDIA's real one, which fails without a GPU."""
    hidden = directory / "without_pathfinder" / "cuda" / "pathfinder"
    hidden.mkdir(parents=True, exist_ok=True)
    # `cuda` is a namespace package: this folder comes first on PYTHONPATH, so its
    # cuda.pathfinder is the one imported, and the server takes it as not installed.
    (hidden / "__init__.py").write_text(
        'raise ImportError("cuda.pathfinder hidden: the stand-in CUDA runtime is tested")\n')
    target = directory / "libcudart.so"
    directory.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [build.compiler(), "-std=c++17", "-O2", "-fPIC", "-shared", "-Wl,-soname,libcudart.so",
         str(FAKE_CUDART), "-lpthread", "-o", str(target)],
        capture_output=True, text=True, check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"compiling fake_cudart.cc failed:\n{result.stderr}")
    python_path = [str(ROOT / "src"), str(hidden.parents[1]), os.environ.get("PYTHONPATH", "")]
    return {"LD_LIBRARY_PATH": str(directory), "PYTHONPATH": os.pathsep.join(python_path)}
