"""The core has no import cycle: server -> repository -> model -> scheduler -> backend API.

The graph is read from the sources (every import statement, including those under
TYPE_CHECKING and inside functions: a cycle hidden in either is still a cycle), at two grains:
the core's packages and top-level modules (tritium.server, tritium.model, ...), and single
modules. The core is everything but the frontends, the built-in backends, the in-process API and
the command line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tritium

SRC = Path(tritium.__file__).resolve().parent
NOT_CORE = {
    "tritium.frontend", "tritium.builtin_backends", "tritium.inprocess", "tritium.cli",
    "tritium.serving", "tritium.check", "tritium.infer_command", "tritium.pytest_plugin",
    "tritium.__main__",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """tritium module -> the tritium modules it imports (a package counts as its __init__)."""
    modules = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                # `from package import module` imports the module (as import-linter reads it:
                # the package itself is already initialised before any module in it runs).
                submodules = {f"{target}.{alias.name}" for alias in node.names}
                named_modules = submodules & modules.keys()
                targets.update(named_modules if named_modules == submodules else {target})
                targets.update(named_modules)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def component(module: str) -> str:
    """The core's unit of layering: `tritium.<package or module>`."""
    return ".".join(module.split(".")[:2])


def core_graph(graph: dict[str, set[str]], grain) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for source, targets in graph.items():
        if component(source) in NOT_CORE or source == "tritium":
            continue
        for target in targets:
            if component(target) in NOT_CORE or target == "tritium":
                continue
            a, b = grain(source), grain(target)
            if a != b:
                out.setdefault(a, set()).add(b)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_core_packages_import_each_other_without_a_cycle() -> None:
    graph = core_graph(import_graph(), component)
    # The layers the walk of a request goes down, really seen in the sources.
    assert "tritium.repository" in graph["tritium.server"]
    assert "tritium.model" in graph["tritium.repository"]
    assert "tritium.scheduler" in graph["tritium.model"]
    assert "tritium.backend" in graph["tritium.scheduler"]
    assert cycles(graph) == []


def test_no_core_module_is_part_of_an_import_cycle() -> None:
    assert cycles(core_graph(import_graph(), lambda module: module)) == []


def test_the_cycle_finder_finds_cycles() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
