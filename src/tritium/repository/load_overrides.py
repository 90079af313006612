"""What a load request may bring with it: a model name to check, a config and model files.

A load request names a model (a directory of the repository) and may override its
configuration (`config`, JSON) and its files (`file:<version>/<path>`, the content). Override
files are written to a private temporary directory that becomes the model's directory, as in
Triton. A name or a file path that would reach outside the repository or that temporary
directory (`..`, an absolute path, a symlink pointing out) is refused with INVALID_ARG before
anything is read or written.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath

from ..errors import TritonError

FILE_PREFIX = "file:"


def check_model_name(name: str) -> None:
    """A model name is one directory name: no separator, no `.`/`..`, nothing empty."""
    if (
        not name
        or name in (".", "..")
        or "/" in name
        or "\\" in name
        or "\0" in name
        or name != name.strip()
    ):
        raise TritonError.invalid_arg(f"invalid model name '{name}'")


def inside(path: Path, root: Path) -> bool:
    """Whether `path`, with every symlink resolved, is `root` or below it."""
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


class OverrideDirectory:
    """A private temporary model directory `<tmp>/<name>/` holding the override files."""

    def __init__(self, name: str, files: dict[str, bytes]) -> None:
        check_model_name(name)
        relative = {key: _relative_path(name, key) for key in files}
        self.root = Path(tempfile.mkdtemp(prefix="tritium-model-"))
        self.path = self.root / name
        try:
            self.path.mkdir(mode=0o700)
            for key, content in files.items():
                target = self.path / relative[key]
                target.parent.mkdir(parents=True, exist_ok=True)
                if not inside(target.parent, self.path):
                    raise TritonError.invalid_arg(
                        f"failed to load '{name}', invalid file override '{key}': the path "
                        "leaves the model directory"
                    )
                # O_EXCL|O_NOFOLLOW: the file is new, and never written through a link.
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                with os.fdopen(fd, "wb") as out:
                    out.write(content)
        except BaseException:
            self.remove()
            raise

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _relative_path(name: str, key: str) -> PurePosixPath:
    """`file:<version>/<path>` -> the relative path, refusing anything that could leave. A
    leading `/` is inside the override directory too, as Triton joins the path to it
    (`file:/1/model.py` is `1/model.py`)."""
    text = key[len(FILE_PREFIX):].lstrip("/")
    path = PurePosixPath(text)
    if (
        not text
        or "\0" in text
        or "\\" in text
        or any(part in ("..", ".") for part in text.split("/"))
        or not path.parts
    ):
        # Triton's answer begins "failed to load '<name>'" (clients match it); this says why.
        raise TritonError.invalid_arg(
            f"failed to load '{name}', invalid file override '{key}': the path must stay "
            "inside the model directory"
        )
    return path
