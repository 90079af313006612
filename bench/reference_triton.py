"""Real NVIDIA Triton 2.51 (CPU, python backend) for side-by-side benchmarks.

Installed the way shared/tools/reference-triton.sh installs it: a venv holding the
nvidia-pytriton==0.7.0 wheel (~55 MB, from PyPI), whose tritonserver binary and python-backend
stub are used as they are. The stub embeds libpython and finds its prefix through PATH, so the
venv's bin/ comes first (models then import that venv's numpy 1.x, which the stub needs).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

VENV = Path(os.environ.get("REF_TRITON_VENV", "/tmp/ref-triton-venv"))
WHEEL = "nvidia-pytriton==0.7.0"


def _site_packages() -> Path:
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return VENV / "lib" / version / "site-packages"


def tritonserver_dir() -> Path:
    return _site_packages() / "pytriton" / "tritonserver"


def install() -> Path:
    """Create the venv and install the wheel if needed; return the tritonserver binary."""
    server_dir = tritonserver_dir()
    binary = server_dir / "bin" / "tritonserver"
    if not binary.exists():
        print(f"[bench] installing {WHEEL} into {VENV} ...", file=sys.stderr, flush=True)
        if not (VENV / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", WHEEL],
                       check=True)
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    stub_src = server_dir / "python_backend_stubs" / version / "triton_python_backend_stub"
    stub_dst = server_dir / "backends" / "python" / "triton_python_backend_stub"
    if not stub_dst.exists() or stub_dst.read_bytes() != stub_src.read_bytes():
        shutil.copyfile(stub_src, stub_dst)
        stub_dst.chmod(0o755)
    return binary


def command(repository: Path, http_port: int, grpc_port: int, metrics_port: int) -> list[str]:
    return [
        str(install()),
        f"--model-repository={repository}",
        f"--backend-directory={tritonserver_dir() / 'backends'}",
        f"--http-port={http_port}",
        f"--grpc-port={grpc_port}",
        f"--metrics-port={metrics_port}",
        "--exit-timeout-secs=1",
    ]


def environment() -> dict[str, str]:
    env = dict(os.environ)
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    libs = [str(_site_packages() / "nvidia_pytriton.libs"), libdir]
    if env.get("LD_LIBRARY_PATH"):
        libs.append(env["LD_LIBRARY_PATH"])
    env["LD_LIBRARY_PATH"] = ":".join(libs)
    env["PATH"] = f"{VENV / 'bin'}:{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(VENV)
    env.pop("PYTHONPATH", None)
    return env
