"""The settings file's names that only the pipelines and backends know: LLM steps, backend options, the nightly's
builders and evaluations and their options, the sources [source_health] names. The typed tables (caseforge.settings_tables) check the rest; a command
runs both before any work starts, so no misspelt setting is silently ignored."""
from __future__ import annotations

import fnmatch
import inspect
from pathlib import Path

from caseforge.flows import registry
from caseforge.llm.backends import REGISTRY, option_names
from caseforge.settings import SettingsError, file_tables, unknown_key

__all__ = ["settings_problems"]


def settings_problems(path: str | Path | None = None, nightly: bool = True) -> list[str]:
    """One line per key of the settings file in force (or `path`) that caseforge does not know. `nightly`: also
    the options of the nightly's builders and evaluations (their flows are imported to read their parameters)."""
    try:
        tables = file_tables(path)
    except SettingsError as exc:
        return exc.problems
    llm = tables.get("llm") or {}
    problems = _step_problems(llm, path) + _option_problems(llm, path)
    for section, entries in (("builders", registry.BUILDERS), ("evaluations", registry.EVALUATIONS)):
        for name, options in ((tables.get("nightly") or {}).get(section) or {}).items():
            if name not in entries:
                problems.append(unknown_key(("nightly", section), name, entries, path))
            elif nightly:
                parameters = inspect.signature(entries[name].flow().fn).parameters
                problems += [unknown_key(("nightly", section, name), key, parameters, path)
                             for key in options if key not in parameters]
    problems += [unknown_key(("source_health", "sources"), name, registry.SOURCES, path)
                 for name in ((tables.get("source_health") or {}).get("sources") or {}) if name not in registry.SOURCES]
    return problems


def _step_problems(llm: dict, path) -> list[str]:
    known = sorted({step for steps in registry.llm_steps().values() for step in steps})
    return [unknown_key(("llm", "steps"), step, known, path) for step in llm.get("steps") or {}
            if not any(fnmatch.fnmatchcase(step, name) or fnmatch.fnmatchcase(name, step) for name in known)]


def _option_problems(llm: dict, path) -> list[str]:
    """Options a backend would ignore: checked against the backend the table names, else against every one."""
    every = set().union(*(option_names(name) for name in REGISTRY))
    tables = [(("llm", "backends", name), choice, option_names(name))
              for name, choice in (llm.get("backends") or {}).items()]
    for kind in ("roles", "steps"):
        tables += [(("llm", kind, name), choice, option_names(choice["backend"]) if choice.get("backend") else every)
                   for name, choice in (llm.get(kind) or {}).items()]
    return [unknown_key((*where, "options"), key, known, path)
            for where, choice, known in tables for key in (choice.get("options") or {}) if key not in known]
