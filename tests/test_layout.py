"""The layout's import rule: apps import downward only, and no file imports itself in a circle.

Every import counts, at module level or inside a function (a local import does not dodge the
rule). The table below is the architecture; docs/CONVENTIONS.md shows the same layers.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Which of the project's packages each one may import (besides itself), lowest layer first.
MAY_IMPORT: dict[str, set[str]] = {
    "lib": set(),
    "config": {"lib"},
    "taxonomy": {"lib"},
    "annotator": {"lib", "taxonomy"},
    "ingest": {"lib", "taxonomy", "annotator"},
    "labeling": {"lib", "taxonomy", "annotator", "ingest"},
    # The pages that span apps (home, a project's page, the taxonomy pages): nothing imports
    # them but the root URL conf, which names them by a string.
    "front": {"lib", "taxonomy", "annotator", "ingest", "labeling"},
    "agreement": {"lib", "taxonomy", "annotator", "ingest", "labeling"},
    "raters": {"lib", "taxonomy", "annotator", "ingest", "labeling", "agreement"},
    "dataset": {"lib", "taxonomy", "annotator", "ingest", "labeling", "agreement", "raters"},
    "interviews": {"lib", "taxonomy", "annotator", "ingest", "labeling", "agreement"},
}


def _packages() -> list[str]:
    return sorted(
        p.name
        for p in ROOT.iterdir()
        if (p / "__init__.py").is_file() and p.name not in ("tests", "bench")
    )


def _modules() -> dict[str, Path]:
    found = {}
    for package in _packages():
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules a file imports (`from a import b` counts a.b when b is a module)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        out |= {n for n in names if n in modules}
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items()}


def test_every_package_has_a_place_in_the_table():
    assert set(_packages()) == set(MAY_IMPORT)


def test_apps_import_downward_only():
    wrong = defaultdict(set)
    for module, imported in _graph().items():
        app = module.split(".")[0]
        for target in imported:
            target_app = target.split(".")[0]
            if target_app != app and target_app not in MAY_IMPORT[app]:
                wrong[module].add(target)
    assert not wrong, dict(wrong)


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_file_imports_itself_in_a_circle():
    assert _cycle(_graph()) is None


def test_the_cycle_check_finds_a_cycle():
    """The probe can fire."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
