"""Reading a server's log as Triton writes it: one record a line, `<head> <file>:<line>]
<message>`, the message a JSON string (or, for a table's record, empty with the table's rows on
the lines after it). Tests assert on the messages as the server meant them."""

from __future__ import annotations

import json
import re

_RECORD = re.compile(r"^(?:[IWE]\d{4} \d\d:\d\d:\d\d\.\d{6}|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ [IWE])"
                     r" \d+ [^\s\]]+:\d+\] (?P<message>.*)$")


def messages(log: str) -> list[str]:
    """Every record's message, decoded (a message that is not a JSON string as it is)."""
    found = []
    for line in log.splitlines():
        match = _RECORD.match(line)
        if match is None:
            continue
        message = match["message"]
        if message.startswith('"'):
            try:
                message = json.loads(message)
            except ValueError:
                pass
        found.append(message)
    return found
