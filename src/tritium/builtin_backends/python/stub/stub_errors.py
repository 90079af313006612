"""Errors as Triton's stub words them to the server and its clients.

Triton's stub is C++: an error it finds itself goes out bare, and an exception the model
raises goes out as pybind11 words it (type, message, the model's frames), never with frames
of the stub. Its own module because every part of the stub reports errors this way, and the
frames to hide grow as the stub imports pb_utils.
"""

from __future__ import annotations

import os
import traceback

# Frames of files in these directories (the stub side and the wire, and pb_utils once imported)
# stay out of tracebacks sent to clients: in Triton they are C++.
_HIDDEN_DIRS = {os.path.dirname(__file__),
                os.path.join(os.path.dirname(os.path.dirname(__file__)), "wire")}


class StubError(Exception):
    """An error the stub itself finds (Triton's stub raises these from C++: the message goes
    out bare, without an exception type or a traceback)."""


def hide_frames_of(directory: str) -> None:
    """Frames of files in `directory` stay out of the tracebacks sent from now on."""
    _HIDDEN_DIRS.add(directory)


def describe_exception(exc: BaseException) -> str:
    """An exception as Triton's stub words it (pybind11's error_already_set::what()): the
    type, the message, and the model's frames, innermost first."""
    if isinstance(exc, StubError):
        return str(exc)
    text = f"{type(exc).__name__}: {exc}"
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__)
              if os.path.dirname(frame.filename) not in _HIDDEN_DIRS]
    if frames:
        text += "\n\nAt:\n" + "".join(
            f"  {frame.filename}({frame.lineno}): {frame.name}\n" for frame in reversed(frames)
        )
    return text
