"""Triton's log settings (`--log-*` flags, the logging extension) on top of Python logging.

One object per process, because Python logging is per process: it owns the root handler (the
console, or `--log-file`), formats records as Triton's log lines, and filters them by the
settings the logging extension reads and changes at run time (log_info, log_warning,
log_error, log_verbose_level, log_format). The log file is fixed at start-up: Triton refuses to
change it over the network, and so does this.

A record is one line, as Triton writes it: the head names the source file and line (a model's
or a compiled backend's own, where the record carries them as `source_file` and
`source_line`), and the message is written as a JSON string (quoted, newlines and control
characters escaped), so that nothing a client sends can forge a line, unless
TRITON_SERVER_ESCAPE_LOG_MESSAGES=0. A record marked `raw` (a table the server printed) is
written as it is.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from typing import Any, TextIO

from .errors import TritonError

FORMATS = ("default", "ISO8601")

# Triton's message when a client tries to move the log file.
LOG_FILE_REFUSED = "log file location can not be updated through network protocol"
# Triton's switch for quoting messages ("0": off).
ESCAPE_ENVIRONMENT_VARIABLE = "TRITON_SERVER_ESCAPE_LOG_MESSAGES"

# JSON's string escapes, as Triton's serializer writes them (upper-case hex).
_ESCAPES = {code: f"\\u{code:04X}" for code in range(0x20)}
_ESCAPES.update({ord('"'): '\\"', ord("\\"): "\\\\", 0x08: "\\b", 0x0C: "\\f",
                 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"})


def escape_message(text: str) -> str:
    """`text` as a JSON string: in quotes, with quotes, backslashes and control characters
    escaped."""
    return '"' + text.translate(_ESCAPES) + '"'


class TritonFormatter(logging.Formatter):
    """`I1122 13:48:21.002116 <pid> <file>:<line>] "<message>"` ("default") or
    `2026-11-22T13:50:41Z I <pid> <file>:<line>] "<message>"` ("ISO8601"): Triton's lines."""

    def __init__(self, settings: LogSettings) -> None:
        super().__init__()
        self._settings = settings
        self._pid = os.getpid()
        self._escape = os.environ.get(ESCAPE_ENVIRONMENT_VARIABLE) != "0"

    def format(self, record: logging.LogRecord) -> str:
        severity = _SEVERITY.get(record.levelno, "I")
        seconds = int(record.created)
        if self._settings.log_format == "ISO8601":
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
            head = f"{stamp} {severity} {self._pid}"
        else:
            micros = int((record.created - seconds) * 1_000_000)
            stamp = time.strftime("%m%d %H:%M:%S", time.localtime(seconds))
            head = f"{severity}{stamp}.{micros:06d} {self._pid}"
        source = getattr(record, "source_file", None)
        if source is None:
            source, line = record.filename, record.lineno
        else:
            source, line = os.path.basename(str(source)), getattr(record, "source_line", 0)
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + self.formatException(record.exc_info)
        if self._escape and not getattr(record, "raw", False):
            message = escape_message(message)
        return f"{head} {source}:{line}] {message}"


# The loggers whose debug records --log-verbose shows.
_OWN_LOGGERS = ("tritium", "triton_python_backend_utils")

# Triton writes its verbose lines with the info severity.
_SEVERITY = {logging.DEBUG: "I", logging.INFO: "I", logging.WARNING: "W", logging.ERROR: "E",
             logging.CRITICAL: "E"}


def verbose_level(value: int) -> int:
    """A verbose level as Triton keeps one: a 32-bit signed int (the value's low 32 bits), a
    negative one as 0 (its LOG_SET_VERBOSE takes max(0, level)). So 4294967295, or any level
    past 2147483647, turns verbose logging off, as in Triton."""
    level = value & 0xFFFFFFFF
    return 0 if level >= 1 << 31 else level


class LogSettings(logging.Filter):
    """The current settings, and the filter that applies them to every record."""

    def __init__(self, verbose: int = 0, info: bool = True, warning: bool = True,
                 error: bool = True, log_format: str = "default", log_file: str = "") -> None:
        super().__init__()
        if log_format not in FORMATS:
            raise ValueError(f"invalid argument for --log-format, got: {log_format}")
        self.log_info = info
        self.log_warning = warning
        self.log_error = error
        self.log_verbose_level = verbose
        self.log_format = log_format
        self.log_file = log_file
        self._lock = threading.Lock()

    def install(self) -> None:
        """Make these settings the process's logging: one root handler, Triton's lines."""
        stream: TextIO
        if self.log_file:
            # The handler writes to it for the rest of the process's life.
            stream = open(self.log_file, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
        else:
            stream = sys.stderr
        handler = logging.StreamHandler(stream)
        handler.setFormatter(TritonFormatter(self))
        handler.addFilter(self)
        root = logging.getLogger()
        for old in list(root.handlers):
            root.removeHandler(old)
        root.addHandler(handler)
        self._apply_level()

    def filter(self, record: logging.LogRecord) -> bool:
        level = record.levelno
        if level >= logging.ERROR:
            return self.log_error
        if level >= logging.WARNING:
            return self.log_warning
        if level >= logging.INFO:
            return self.log_info
        # Verbose lines are Tritium's own (and models'): libraries' debug chatter (hpack logs
        # each header of each gRPC call) stays out, as Triton's verbose log has none of it.
        return self.log_verbose_level > 0 and record.name.startswith(_OWN_LOGGERS)

    def _apply_level(self) -> None:
        # Debug records are only built when verbose logging is on (they cost nothing otherwise).
        logging.getLogger().setLevel(logging.DEBUG if self.log_verbose_level > 0 else logging.INFO)

    def as_json(self) -> dict[str, Any]:
        """The settings as Triton's GET /v2/logging lists them."""
        return {
            "log_file": self.log_file,
            "log_info": self.log_info,
            "log_warning": self.log_warning,
            "log_error": self.log_error,
            "log_verbose_level": self.log_verbose_level,
            "log_format": self.log_format,
        }

    def update(self, changes: dict[str, Any]) -> dict[str, Any]:
        """Apply the changes (None values are left as they are) and return the settings.

        Values are already checked (each frontend checks its own encoding, with its own
        messages, as Triton's do); a change to `log_file` is refused.
        """
        if "log_file" in changes:
            raise TritonError.unsupported(LOG_FILE_REFUSED)
        if changes.get("log_format") not in (None, *FORMATS):
            raise ValueError(f"unchecked log format {changes['log_format']!r}")
        with self._lock:
            for key in ("log_info", "log_warning", "log_error", "log_verbose_level",
                        "log_format"):
                if changes.get(key) is not None:
                    setattr(self, key, changes[key])
            self._apply_level()
            return self.as_json()


__all__ = ["ESCAPE_ENVIRONMENT_VARIABLE", "FORMATS", "LOG_FILE_REFUSED", "LogSettings",
           "TritonFormatter", "escape_message", "verbose_level"]
