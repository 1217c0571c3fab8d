"""The floors and the arrows between them: core (caseforge/) ← tasks/ and runtime/ (side by side) ← flows/ ← cli/,
and no import circles.

import-linter checks the arrows (the contracts in pyproject.toml, [tool.importlinter]: the floors and the core's
own floors as layers, an upward import direct or indirect breaking them, and no circle at any depth);
tests/integration/test_import_contracts.py runs it as documented and proves that planted wrong-way imports and a
planted circle fail it. What import-linter cannot say is checked here by hand: every module of every floor is
imported (so a broken import fails here), and every import statement in its source, at module level or inside a
function, is checked against the rules:

- core and tasks/ import no Prefect (a Prefect run is the business of the flows and of runtime/, which serves
  and runs them), no floor imports one above it directly, and runtime/ and tasks/ not each other (import-linter
  also sees the indirect ways);
- nothing turns module names in strings into imports (importlib.import_module / __import__), which no import
  graph can see.
"""
from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import caseforge
import caseforge.cli
import caseforge.flows
import caseforge.runtime
import caseforge.tasks

FLOORS = {"core": caseforge, "tasks": caseforge.tasks, "runtime": caseforge.runtime, "flows": caseforge.flows,
          "cli": caseforge.cli}
ABOVE_THE_CORE = ("caseforge.tasks", "caseforge.runtime", "caseforge.flows", "caseforge.cli")
FORBIDDEN = {                            # beside import-linter's floors (see the docstring)
    "core": ("prefect", *ABOVE_THE_CORE),
    "tasks": ("prefect", "caseforge.runtime", "caseforge.flows", "caseforge.cli"),
    "runtime": ("caseforge.tasks", "caseforge.flows", "caseforge.cli"),
    "flows": ("caseforge.cli",),
    "cli": (),
}
ENTRY_POINT = "caseforge.__main__"       # `python -m caseforge` starts the command line


def modules_of(floor: str) -> list[str]:
    package = FLOORS[floor]
    names = [m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    if floor == "core":
        names = [n for n in names if not n.startswith(ABOVE_THE_CORE)]
    return [package.__name__] + sorted(n for n in names if n != ENTRY_POINT)


def imported_names(path: Path, module: str) -> list[str]:
    """Every module an import statement in the file names (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                full = f"{base}.{node.module}" if node.module else base
            else:
                full = node.module
            found.append(full)
            found += [f"{full}.{alias.name}" for alias in node.names]
    return found


def dynamic_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("import_module", "__import__"):
                calls.append(f"line {node.lineno}: {name}")
    return calls


@pytest.mark.parametrize("floor", list(FLOORS))
def test_each_floor_imports_only_what_is_below_it(floor):
    broken = []
    for name in modules_of(floor):
        module = importlib.import_module(name)
        path = Path(module.__file__)
        for imported in imported_names(path, name):
            for rule in FORBIDDEN[floor]:
                if imported == rule or imported.startswith(rule + "."):
                    broken.append(f"{path}: imports {imported} ({floor} must not import {rule})")
        broken += [f"{path} {call}" for call in dynamic_imports(path)]
    assert broken == []


def test_the_rules_catch_what_they_guard(tmp_path):
    """The checker itself: a task importing Prefect in a function, and a dynamic import, are seen."""
    sample = tmp_path / "step.py"
    sample.write_text("def f():\n    from prefect import task\n    import importlib\n"
                      "    return importlib.import_module('caseforge.flows.oyez')\n")
    assert "prefect" in imported_names(sample, "caseforge.tasks.x.step")
    assert dynamic_imports(sample) == ["line 4: import_module"]
    relative = tmp_path / "rel.py"
    relative.write_text("from ..flows import registry\n")
    assert "caseforge.flows.registry" in imported_names(relative, "caseforge.tasks.rel")

