"""RepositoryPoller: POLL mode's background thread (`--repository-poll-secs`).

Every period it asks the ModelRepositoryManager to compare the repositories with what it
loaded, so new, changed and removed models and versions are picked up without a restart. A
failed poll is logged and tried again next period: the server keeps serving what it has.
"""

from __future__ import annotations

import logging
import threading

from .model_repository_manager import ModelRepositoryManager

log = logging.getLogger("tritium.repository")


class RepositoryPoller:
    def __init__(self, control: ModelRepositoryManager, period_secs: float) -> None:
        self._control = control
        self._period = max(period_secs, 0.1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="repository-poll", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop polling; a poll in progress finishes first (it may be loading a model)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            try:
                self._control.poll()
            except Exception:
                log.exception("polling the model repository failed")
