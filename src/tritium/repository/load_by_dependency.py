"""Loading models in dependency order (Triton's LoadModelByDependency).

Every model whose composing models are settled loads at once, side by side on a pool of
`--model-load-thread-count` threads; an ensemble waits for its composing models, loads those
not READY yet first, and is refused in Triton's words when one is missing, in a cycle or
failed. Its own module because it is the one part of the repository manager that walks the
dependency graph while loading: which models to load, and when, stays the manager's.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

from ..errors import TritonError
from .dependency_graph import DependencyGraph
from .lifecycle import ModelLifeCycle
from .model_info import ModelInfoReader, PolledModel
from .ready_state import ModelReadyState
from .scanner import RepositoryScan

log = logging.getLogger("tritium.repository")


class DependencyLoader:
    """Loads PolledModels through the life cycle, each after the composing models it uses."""

    def __init__(self, lifecycle: ModelLifeCycle, graph: DependencyGraph,
                 reader: ModelInfoReader, thread_count: int) -> None:
        self.lifecycle = lifecycle
        self.graph = graph
        self.reader = reader
        self._thread_count = max(thread_count, 1)

    def load_many(
        self, scan: RepositoryScan, configs: dict[str, PolledModel], settled: set[str]
    ) -> list[str]:
        """Load models in parallel, each ensemble after its composing models; the errors.
        Models in `settled` were tried by the caller: an ensemble does not try them again."""
        errors: list[str] = []
        order = self.graph.load_order(sorted(configs))
        remaining = list(order)
        with ThreadPoolExecutor(self._thread_count, thread_name_prefix="model-control") as pool:
            while remaining:
                # Every model whose composing models are settled can load now.
                ready = [n for n in remaining if not set(self.graph.uses(n)) & set(remaining)]
                ready = ready or remaining[:1]  # a cycle: let the ensemble check report it
                for name in ready:
                    remaining.remove(name)
                futures = [
                    pool.submit(self.load_tree, scan, name, configs[name], set(), settled)
                    for name in ready
                ]
                for future in futures:
                    try:
                        future.result()
                    except TritonError as exc:
                        log.error("%s", exc.message.rstrip())
                        errors.append(exc.message)
        return errors

    def load_tree(
        self,
        scan: RepositoryScan,
        name: str,
        polled: PolledModel,
        visiting: set[str],
        settled: set[str],
    ) -> None:
        """Load `name` after its composing models (those not already READY); raise on failure
        with Triton's "load failed for model ..." text. Composing models in `settled` were
        already tried by the caller and are not tried again."""
        self.graph.set(name, polled.config, polled.links)
        dependencies = self.graph.uses(name)
        cycle = self.graph.cycle(name)
        if cycle is not None:
            polled.abandon()
            self.lifecycle.mark_unavailable(name, cycle, model_name=polled.source.name)
            raise TritonError.invalid_arg(f"load failed for model '{name}': {cycle}\n")
        if dependencies:
            try:
                self._check_dependencies(scan, name, dependencies, visiting | {name}, settled)
            except BaseException:
                polled.abandon()
                raise
        try:
            self.lifecycle.load(polled.source, polled.config, polled.agents,
                                config_provided=polled.config_provided)
        except TritonError as exc:
            raise TritonError.invalid_arg(
                f"load failed for model '{name}': {exc.message}\n"
            ) from None

    def _check_dependencies(
        self,
        scan: RepositoryScan,
        name: str,
        dependencies: list[str],
        visiting: set[str],
        settled: set[str],
    ) -> None:
        """Load what an ensemble needs; refuse it, as Triton does, if something is missing."""
        missing = [
            d
            for d in dependencies
            if d in visiting or (d not in scan.models and not self._is_ready(d))
        ]
        if missing:
            raise TritonError.invalid_arg(
                f"load failed for model '{name}': ensemble {name} contains models that are not "
                f"available or ambiguous: {', '.join(missing)}\n"
            )
        for dependency in dependencies:
            if self._is_ready(dependency):
                continue
            polled = None if dependency in settled else \
                self.reader.for_load(scan, scan.models[dependency])
            error = ""
            if polled is not None:
                try:
                    self.load_tree(scan, dependency, polled, visiting, settled)
                except TritonError as exc:
                    error = exc.message
            if not self._is_ready(dependency):
                reason = error.split(": ", 1)[-1] if error else self._reason(dependency)
                raise TritonError.invalid_arg(
                    f"load failed for model '{name}': ensemble '{name}' depends on "
                    f"'{dependency}' which has no loaded version. Model '{dependency}' loading "
                    f"failed with error: {reason.rstrip()}\n"
                )

    def _is_ready(self, name: str) -> bool:
        versions = self.lifecycle.status().get(name, {})
        return any(s.state is ModelReadyState.READY for s in versions.values())

    def _reason(self, name: str) -> str:
        versions = self.lifecycle.status().get(name, {})
        return "".join(
            f"version {v} is at {s.state.value} state: {s.reason};"
            for v, s in sorted(versions.items())
        )
