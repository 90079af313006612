"""``Logger``: model log lines into the server log, tagged with the model file and line that
logged them (into Python's logging when no server is connected)."""

from __future__ import annotations

import logging
import sys
from enum import IntEnum
from types import FrameType

from .runtime import _current_runtime

_fallback_log = logging.getLogger("triton_python_backend_utils")


def _caller_location() -> tuple[str, int]:
    """File and line of the model code that called the Logger."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    if frame is None:
        return "<unknown>", 0
    return frame.f_code.co_filename, frame.f_lineno


class Logger:
    """Writes model log lines into the server log, tagged with the caller's file and line."""

    class LogLevel(IntEnum):
        INFO = 0
        WARNING = 1
        ERROR = 2
        VERBOSE = 3

    INFO = LogLevel.INFO
    WARNING = LogLevel.WARNING
    ERROR = LogLevel.ERROR
    VERBOSE = LogLevel.VERBOSE

    _PYTHON_LEVELS = {
        LogLevel.INFO: logging.INFO,
        LogLevel.WARNING: logging.WARNING,
        LogLevel.ERROR: logging.ERROR,
        LogLevel.VERBOSE: logging.DEBUG,
    }

    @staticmethod
    def log(message: str, level: int = LogLevel.INFO) -> None:
        level = Logger.LogLevel(level)
        filename, line = _caller_location()
        runtime = _current_runtime()
        if runtime is None:
            _fallback_log.log(Logger._PYTHON_LEVELS[level], "%s:%d] %s", filename, line, message)
        else:
            runtime.log(int(level), message, filename, line)

    # Triton's shorthands, one per level.
    log_info = staticmethod(lambda message: Logger.log(message, Logger.LogLevel.INFO))
    log_warn = staticmethod(lambda message: Logger.log(message, Logger.LogLevel.WARNING))
    log_error = staticmethod(lambda message: Logger.log(message, Logger.LogLevel.ERROR))
    log_verbose = staticmethod(lambda message: Logger.log(message, Logger.LogLevel.VERBOSE))
