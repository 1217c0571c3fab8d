"""The settings file's names that only the pipelines and backends know: LLM steps, backend options, the nightly's
builders and evaluations and their options. The typed tables (caseforge.settings_tables) check the rest; a command
runs both before any work starts (`command_settings`), so no misspelt setting is silently ignored."""
from __future__ import annotations

import fnmatch
import inspect
from pathlib import Path

from caseforge.flows import registry
from caseforge.llm.backends import REGISTRY, option_names
from caseforge.settings import Settings, SettingsError, read_settings
from caseforge.settings_errors import unknown_key
from caseforge.settings_file import layer_holding

__all__ = ["command_settings", "settings_problems"]


def command_settings(nightly: bool = True) -> Settings:
    """The settings a command runs with, read once and checked whole: SettingsError with one line per problem."""
    settings = read_settings()
    problems = name_problems(settings, nightly=nightly)
    if problems:
        raise SettingsError(problems)
    return settings


def settings_problems(path: str | Path | None = None, nightly: bool = True) -> list[str]:
    """One line per key of the settings file in force (or `path`) that caseforge does not know. `nightly`: also
    the options of the nightly's builders and evaluations (their flows are imported to read their parameters)."""
    try:
        settings = read_settings(path)
    except SettingsError as exc:
        return exc.problems
    return name_problems(settings, path, nightly)


def name_problems(settings: Settings, path: str | Path | None = None, nightly: bool = True) -> list[str]:
    """The names of `settings`' file that no pipeline, backend or nightly flow knows, one line each."""
    named = path or settings.config_file

    def unknown(table: tuple[str, ...], key: str, known) -> str:
        return unknown_key(layer_holding((*table, key), named), table, key, known)

    llm, problems = settings.file.llm, []
    steps = sorted({step for steps in registry.llm_steps().values() for step in steps})
    problems += [unknown(("llm", "steps"), step, steps) for step in llm.steps
                 if not any(fnmatch.fnmatchcase(step, name) or fnmatch.fnmatchcase(name, step) for name in steps)]
    every = set().union(*(option_names(name) for name in REGISTRY))
    tables = [(("llm", "backends", name), choice, option_names(name)) for name, choice in llm.backends.items()]
    for kind, choices in (("roles", llm.roles), ("steps", llm.steps)):
        tables += [(("llm", kind, name), choice, option_names(choice.backend) if choice.backend else every)
                   for name, choice in choices.items()]
    problems += [unknown((*table, "options"), key, known)
                 for table, choice, known in tables for key in choice.options if key not in known]
    for section, entries in (("builders", registry.BUILDERS), ("evaluations", registry.EVALUATIONS)):
        for name, options in getattr(settings.file.nightly, section).items():
            if name not in entries:
                problems.append(unknown(("nightly", section), name, entries))
            elif nightly:
                parameters = inspect.signature(entries[name].flow().fn).parameters
                problems += [unknown(("nightly", section, name), key, parameters) for key in options
                             if key not in parameters]
    return problems
