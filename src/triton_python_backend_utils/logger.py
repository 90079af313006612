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
        if not isinstance(level, Logger.LogLevel) or not isinstance(message, (str, bytes)):
            raise _incompatible("log", "message: str, level: c_python_backend_utils.Logger."
                                "LogLevel = <LogLevel.INFO: 0>", (message, level))
        if isinstance(message, bytes):
            message = message.decode("utf-8", "replace")
        filename, line = _caller_location()
        runtime = _current_runtime()
        if runtime is None:
            _fallback_log.log(Logger._PYTHON_LEVELS[level], "%s", message,
                              extra={"source_file": filename, "source_line": line})
        else:
            runtime.log(int(level), message, filename, line)

    # Triton's shorthands, one per level.
    @staticmethod
    def log_info(message: str) -> None:
        Logger._shorthand("log_info", message, Logger.LogLevel.INFO)

    @staticmethod
    def log_warn(message: str) -> None:
        Logger._shorthand("log_warn", message, Logger.LogLevel.WARNING)

    @staticmethod
    def log_error(message: str) -> None:
        Logger._shorthand("log_error", message, Logger.LogLevel.ERROR)

    @staticmethod
    def log_verbose(message: str) -> None:
        Logger._shorthand("log_verbose", message, Logger.LogLevel.VERBOSE)

    @staticmethod
    def _shorthand(name: str, message: str, level: LogLevel) -> None:
        if not isinstance(message, (str, bytes)):
            raise _incompatible(name, "message: str", (message,))
        Logger.log(message, level)


def _incompatible(function: str, signature: str, args: tuple) -> TypeError:
    """pybind11's TypeError for a call its casters refuse (Triton's Logger is pybind11's):
    an int is not a LogLevel, None is not a str."""
    invoked = ", ".join(repr(arg) for arg in args)
    return TypeError(
        f"{function}(): incompatible function arguments. The following argument types are "
        f"supported:\n    1. ({signature}) -> None\n\nInvoked with: {invoked}"
    )
