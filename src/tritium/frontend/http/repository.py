"""The model repository extension over HTTP: `POST /v2/repository/index`,
`POST /v2/repository/models/<name>/load` and `.../unload` (Triton's http_server.cc).

A request's body is read on a worker thread (it may be a large JSON document with files); a load
or unload is then queued with the model's others (the server runs them one at a time per model
on its model-control workers) and the answer is sent from the event loop once it is done: no
thread waits for it, and the loop keeps serving other requests meanwhile. Status codes, messages
and bodies are Triton's, including its 500s for JSON of the wrong type.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any
from urllib.parse import unquote_to_bytes

from ...errors import TritonError
from ...server import InferenceServer
from ..extensions.json_codec import nesting_too_deep

log = logging.getLogger("tritium.frontend.http")

# (status, JSON document or None for an empty body)
Answer = tuple[int, Any]
# A handler answers at once, or hands back the queued load or unload to answer from.
Handler = Callable[[InferenceServer, bytes], "Answer | Future[None]"]
_DONE: Answer = (200, None)
FILE_PREFIX = "file:"


def repository_handler(raw_path: bytes) -> Handler | None:
    """The work behind a /v2/repository/... path (None: no such route)."""
    parts = raw_path.split(b"/")[3:]  # after b"", b"v2", b"repository"
    if parts == [b"index"]:
        return _index
    if len(parts) == 3 and parts[0] == b"models" and parts[2] in (b"load", b"unload"):
        name = unquote_to_bytes(parts[1]).decode("utf-8", "replace")
        return partial(_load if parts[2] == b"load" else _unload, name=name)
    return None


def run_later(
    handler: Handler, server: InferenceServer, body: bytes, send: Callable[[Answer], None]
) -> None:
    """Run `handler` on a worker thread; `send` gets its answer on the event loop."""
    loop = asyncio.get_running_loop()

    def settled(outcome: Future[None]) -> None:
        try:
            loop.call_soon_threadsafe(send, _answer(outcome))
        except RuntimeError:  # the loop is closed: the server has exited, nobody to answer
            pass

    def handled(done: asyncio.Future[Answer | Future[None]]) -> None:
        result = done.result()
        if isinstance(result, Future):
            result.add_done_callback(settled)
        else:
            send(result)

    loop.run_in_executor(None, _guard, handler, server, body).add_done_callback(handled)


def _guard(handler: Handler, server: InferenceServer, body: bytes) -> Answer | Future[None]:
    """The handler's answer; an error, whatever it is, still answers the client."""
    try:
        return handler(server, body)
    except Exception as exc:
        return _error(exc)


def _answer(outcome: Future[None]) -> Answer:
    exc = outcome.exception()
    return _DONE if exc is None else _error(exc)


def _error(exc: BaseException) -> Answer:
    if isinstance(exc, TritonError):
        return exc.http_status, {"error": exc.message}
    # A bug, not the client's fault: say so and keep serving.
    log.error("repository request failed", exc_info=exc)
    return 500, {"error": str(exc) or type(exc).__name__}


def _index(server: InferenceServer, body: bytes) -> Answer:
    document = _parse(body)
    ready = document.get("ready", False)
    if not isinstance(ready, bool):
        raise TritonError.internal("attempt to access JSON non-boolean as boolean")
    return 200, server.repository_index(ready)


def _load(server: InferenceServer, body: bytes, *, name: str) -> Future[None]:
    parameters: dict[str, Any] = {}
    for key, value in _parameters(body).items():
        # Triton 2.51 reads every parameter as a string, then knows only these keys.
        if not isinstance(value, str):
            raise TritonError.internal("attempt to access JSON non-string as string")
        if key == "config":
            parameters[key] = value
        elif key.startswith(FILE_PREFIX):
            parameters[key] = _base64(key, value)
        else:
            raise TritonError.internal("unexpected error on creating Triton parameter")
    return server.request_load(name, parameters)


def _unload(server: InferenceServer, body: bytes, *, name: str) -> Future[None]:
    # Triton 2.51 unloads whatever the parameters say: only a boolean `unload_dependents`
    # counts, other members and kinds are ignored.
    parameters = _parse(body).get("parameters")
    dependents = isinstance(parameters, dict) and parameters.get("unload_dependents") is True
    return server.request_unload(name, dependents)


def _parse(body: bytes) -> dict[str, Any]:
    """The request's JSON object; an empty body is an empty object, as in Triton."""
    if not body.strip():
        return {}
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise TritonError.internal(f"failed to parse the request JSON buffer: {exc}") from None
    except RecursionError:
        raise nesting_too_deep() from None
    return document if isinstance(document, dict) else {}


def _parameters(body: bytes) -> dict[str, Any]:
    parameters = _parse(body).get("parameters", {})
    if not isinstance(parameters, dict):
        raise TritonError.internal("attempt to get members for non-object")
    return parameters


def _base64(key: str, text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise TritonError.invalid_arg(
            f"failed to load model: the content of '{key}' is not valid base64"
        ) from None
