"""How a settings problem is said: one line that names the environment variable, or the layer of the settings file
and its `[table] key`, with what was meant (the closest known name, the table a misplaced key belongs in)."""
from __future__ import annotations

import difflib
from typing import Callable, Iterable

from caseforge.settings_tables import BACKENDS, RENAMED, key_elsewhere, known_keys

# (table path, key) → where that key belongs instead, e.g. "[llm.backends.openai.options]", or None: a hint the
# settings' own tables cannot give (caseforge.flows.settings_check knows the backends' options)
Belongs = Callable[[tuple[str, ...], str], "str | None"]


class SettingsError(ValueError):
    """A setting has a value caseforge cannot use, or the settings file has a key caseforge does not know; each
    problem names the variable, or the file and its key."""

    def __init__(self, problems: str | list[str]):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("; ".join(self.problems))


def closest(value: str, known: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(value, sorted(set(known)), n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_key(layer: str, table_path: tuple[str, ...], key: str, known: Iterable[str],
                belongs: Belongs | None = None) -> str:
    """One line for a key the settings file holds and caseforge does not know: the layer that holds it, the key in
    its table, then the key's new name, the table it belongs in, or the closest known key."""
    known = sorted(set(known))
    renamed = RENAMED.get((*table_path, key))
    home = belongs(table_path, key) if belongs else None
    close = closest(key, known)
    elsewhere = key_elsewhere(key) if not close else None
    hint = (f"; it is now {renamed}" if renamed else f"; it belongs under {home}" if home else
            f"; did you mean {close}?" if close else f"; it belongs in {elsewhere}" if elsewhere else
            f" (known: {', '.join(known)})" if known else "")
    where = f"[{dotted(table_path)}] {dotted((key,))}" if table_path else f"[{dotted((key,))}]"
    return f"{layer}: unknown setting {where}{hint}"


def unknown_backend(where: str, name: str) -> str:
    """`where`: the variable or `layer: [table] key` that names backend `name`, which does not exist."""
    close = closest(name, BACKENDS)
    hint = f"; did you mean {close}?" if close else f" (known: {', '.join(sorted(BACKENDS))})"
    return f"{where}: unknown backend {name}{hint}"


def problem(error: dict, layer_of: Callable[[tuple[str, ...]], str], variables_of: Callable[[str], list[str]],
            belongs: Belongs | None = None) -> str:
    """One pydantic validation error of the settings as a line. `layer_of(keys)`: the layer of the settings file
    that holds a key; `variables_of(field)`: the variables a field is read from."""
    loc = tuple(str(part) for part in error["loc"])
    if error["type"] == "caseforge":             # a problem a validator of ours worded (settings_tables.ours)
        return f"{layer_of(loc[1:])}: {error['msg']}" if loc[:1] == ("file",) else error["msg"]
    if not loc or loc[0] != "file":
        return f"{_variable(loc, variables_of)}: {error['msg']} (got {_short(error.get('input'))})"
    keys = loc[1:]
    if error["type"] == "extra_forbidden":
        return unknown_key(layer_of(keys), keys[:-1], keys[-1], known_keys(keys[:-1]), belongs)
    if error["type"] == "literal_error" and keys[-1] == "[key]":
        table, key = keys[:-2], keys[-2]
        if set(known_keys(table)) == set(BACKENDS):
            return unknown_backend(f"{layer_of((*table, key))}: [{dotted(table)}]", key)
        return unknown_key(layer_of(keys[:-1]), table, key, known_keys(table), belongs)
    if error["type"] == "literal_error" and keys[-1] == "backend":
        return unknown_backend(f"{layer_of(keys)}: [{dotted(keys[:-1])}] backend", str(error.get("input")))
    where = f"[{dotted(keys[:-1])}] {dotted(keys[-1:])}" if len(keys) > 1 else f"[{dotted(keys)}]"
    return f"{layer_of(keys)}: {where}: {error['msg']} (got {_short(error.get('input'))})"


def dotted(keys: tuple[str, ...]) -> str:
    """Keys as TOML writes them: llm.steps."casefacts.factuality"."""
    return ".".join(key if key.replace("_", "").replace("-", "").isalnum() else f'"{key}"' for key in keys)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _variable(loc: tuple[str, ...], variables_of: Callable[[str], list[str]]) -> str:
    """The environment variable an error is about (pydantic-settings names the one it read), else the field."""
    if loc and loc[0].startswith("CASEFORGE_"):
        return "_".join(loc) if len(loc) > 1 else loc[0]
    try:
        return (variables_of(loc[0]) or [".".join(loc)])[0]
    except KeyError:
        return ".".join(loc)
