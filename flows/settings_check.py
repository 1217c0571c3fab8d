"""The settings file's names that only the pipelines and backends know: LLM steps, backend options (and where one
put in the wrong table belongs), the nightly's builders and evaluations and their options, the sources
[source_health] names. The typed tables (caseforge.settings_tables) check the rest; every command runs both before
any work starts (`command_settings`), so no misspelt setting is silently ignored, whatever the command."""
from __future__ import annotations

import ast
import fnmatch
import inspect
import textwrap
from importlib.util import find_spec
from pathlib import Path

from caseforge.flows import registry
from caseforge.llm.backends import REGISTRY, option_names
from caseforge.settings import Settings, SettingsError, read_settings
from caseforge.settings_errors import dotted, unknown_key
from caseforge.settings_file import layer_holding

__all__ = ["command_settings", "settings_problems"]


def command_settings() -> Settings:
    """The settings a command runs with, read once and checked whole: SettingsError with one line per problem."""
    settings = read_settings(belongs=option_home)
    problems = name_problems(settings)
    if problems:
        raise SettingsError(problems)
    return settings


def settings_problems(path: str | Path | None = None) -> list[str]:
    """One line per problem of the settings in force (or with `path` as the user's file), as a command would say
    them before any work starts."""
    try:
        settings = read_settings(path, belongs=option_home)
    except SettingsError as exc:
        return exc.problems
    return name_problems(settings, path)


def name_problems(settings: Settings, path: str | Path | None = None) -> list[str]:
    """The names of `settings`' file that no pipeline, backend or nightly flow knows, one line each."""
    named = path or settings.config_file

    def unknown(table: tuple[str, ...], key: str, known) -> str:
        return unknown_key(layer_holding((*table, key), named), table, key, known, option_home)

    llm, problems = settings.file.llm, []
    if llm.steps:       # the steps are known by importing every pipeline (a third of a second): only when needed
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
                continue
            parameters = flow_parameters(entries[name])
            problems += [unknown(("nightly", section, name), key, parameters) for key in options
                         if key not in parameters]
    problems += [unknown(("source_health", "sources"), name, registry.SOURCES)
                 for name in settings.file.source_health.sources if name not in registry.SOURCES]
    return problems + _review_problems(settings)


def _review_problems(settings: Settings) -> list[str]:
    """[review] nightly names benchmarks that have a labelling view (caseforge.review.views)."""
    import difflib

    from caseforge.review.views import VIEWS

    problems = []
    for name in settings.file.review.nightly:
        if name not in VIEWS:
            close = difflib.get_close_matches(str(name), sorted(VIEWS), n=1)
            hint = f"; did you mean {close[0]}?" if close else f" (known: {', '.join(sorted(VIEWS))})"
            problems.append(f"settings file: [review] nightly names {name!r}, which has no review{hint}")
    return problems


def option_home(table: tuple[str, ...], key: str) -> str | None:
    """Where a backend option put straight into [llm], a role, a step or a backend's table belongs: its options
    table (a role's or a step's own, or the backend's), e.g. "[llm.backends.openai.options]"."""
    if table[:1] != ("llm",) or len(table) not in (1, 3) or table[1:2] not in ((), ("roles",), ("steps",),
                                                                              ("backends",)):
        return None
    backends = [table[2]] if table[1:2] == ("backends",) else sorted(REGISTRY)
    homes = [f"[llm.backends.{name}.options]" for name in backends if name in REGISTRY and key in option_names(name)]
    if not homes:
        return None
    own = [f"[{dotted(table)}.options]"] if table[1:2] in (("roles",), ("steps",)) else []
    return " or ".join(own + homes)


def flow_parameters(entry: registry.FlowEntry) -> list[str]:
    """The parameters of an entry's flow, read from its module's source without importing it (importing a flow
    imports Prefect and its pipeline: seconds, for a command such as `status` that runs none)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(entry.load_flow)))
        found = next(n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))
        spec = find_spec(found.module)
        source = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        wanted = found.names[0].name
        function = next(n for n in source.body if isinstance(n, ast.FunctionDef) and n.name == wanted)
    except (OSError, TypeError, SyntaxError, StopIteration, AttributeError, ImportError, ValueError):
        return list(inspect.signature(entry.flow().fn).parameters)     # a loader that is no plain import
    arguments = function.args
    return [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
