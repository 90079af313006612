"""Triton's verbose log line for an infer request refused before it runs (a body that does not
parse, an unknown model or input, a request the model's configuration refuses): both frontends
write it as Triton's do, "[request id: <id>] Infer failed: <message>"."""

from __future__ import annotations

import logging

from ...errors import TritonError

log = logging.getLogger("tritium.frontend")


def log_infer_failed(request_id: str | None, error: TritonError) -> None:
    if log.isEnabledFor(logging.DEBUG):
        log.debug("[request id: %s] Infer failed: %s", request_id or "<id_unknown>",
                  error.message)
