"""The dependency graph between models: which ensembles use which composing models.

Triton's ModelRepositoryManager keeps the same graph to load composing models before the
ensembles that use them, to refuse an ensemble whose composing model is missing or failed, and
to unload ensembles with (or, with `unload_dependents`, because of) their composing models.
The graph holds edges only; whether a model is loaded is the life cycle's business. Nodes are
model identifiers (the names, unless --model-namespacing gives them namespaces); an edge goes to
the identifier a step's model name was linked to (Triton's ConnectDependencyGraph), or to the
bare name when nothing could be linked, which then shows as missing.
"""

from __future__ import annotations

import threading

from tritonclient.grpc import model_config_pb2 as mc


def composing_models(config: mc.ModelConfig) -> list[str]:
    """The models an ensemble's steps name, in step order, each once (empty for other models)."""
    if config.platform != "ensemble":
        return []
    names: list[str] = []
    for step in config.ensemble_scheduling.step:
        if step.model_name and step.model_name not in names:
            names.append(step.model_name)
    return names


class DependencyGraph:
    """Edges `ensemble -> composing model`, updated each time a model's configuration is read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._uses: dict[str, list[str]] = {}
        # node -> the model names its steps give (composing_models), which `_uses` links.
        self._steps: dict[str, list[str]] = {}

    def set(self, name: str, config: mc.ModelConfig, links: list[str] | None = None) -> None:
        """`name`'s edges: `links[i]` is the identifier the i-th model its steps name
        (composing_models) was linked to; without `links`, the names themselves."""
        steps = composing_models(config)
        with self._lock:
            self._steps[name] = steps
            self._uses[name] = list(steps if links is None else links)

    def remove(self, name: str) -> None:
        with self._lock:
            self._uses.pop(name, None)
            self._steps.pop(name, None)

    def steps(self, name: str) -> list[str]:
        """The model names `name`'s steps give, each once (empty unless it is an ensemble)."""
        with self._lock:
            return list(self._steps.get(name, ()))

    def ensembles(self) -> list[str]:
        """Every node with edges (an ensemble)."""
        with self._lock:
            return sorted(name for name, used in self._uses.items() if used)

    def uses(self, name: str) -> list[str]:
        """The models `name` names directly (empty unless it is an ensemble)."""
        with self._lock:
            return list(self._uses.get(name, ()))

    def users(self, name: str) -> list[str]:
        """Every ensemble that uses `name`, directly or through other ensembles, nearest first."""
        with self._lock:
            found: list[str] = []
            frontier = [name]
            while frontier:
                target = frontier.pop(0)
                for user, used in sorted(self._uses.items()):
                    if target in used and user not in found and user != name:
                        found.append(user)
                        frontier.append(user)
            return found

    def composing_closure(self, name: str) -> list[str]:
        """Every model `name` uses, directly or through its composing ensembles, nearest
        first (empty unless it is an ensemble)."""
        with self._lock:
            found: list[str] = []
            frontier = list(self._uses.get(name, ()))
            while frontier:
                child = frontier.pop(0)
                if child not in found and child != name:
                    found.append(child)
                    frontier += self._uses.get(child, ())
            return found

    def load_order(self, names: list[str]) -> list[str]:
        """`names` with every composing model before the ensembles that use it."""
        ordered: list[str] = []
        with self._lock:
            uses = {k: list(v) for k, v in self._uses.items()}

        def visit(node: str, stack: tuple[str, ...]) -> None:
            if node in ordered or node in stack:
                return
            for child in uses.get(node, ()):
                if child in names:
                    visit(child, stack + (node,))
            ordered.append(node)

        for name in names:
            visit(name, ())
        return ordered

    def cycle(self, name: str) -> str | None:
        """Triton's CircularDependencyCheck: its message if `name` reaches itself through the
        models its steps name, else None."""
        with self._lock:
            uses = {k: list(v) for k, v in self._uses.items()}
        seen: set[str] = set()

        def walk(current: str) -> str | None:
            for upstream in uses.get(current, ()):
                if upstream == name:
                    return (f"circular dependency between ensembles: {name} -> ... -> "
                            f"{current} -> {name}")
                if upstream not in seen:
                    seen.add(upstream)
                    found = walk(upstream)
                    if found:
                        return found
            return None

        return walk(name)
