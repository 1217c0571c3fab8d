"""The settings file's three layers, as plain tables before they are typed (caseforge.settings_tables types them):
  1. caseforge/defaults.toml, shipped with caseforge (offline defaults);
  2. the user's file: $CASEFORGE_CONFIG (or the older $CASEFORGE_LLM_CONFIG), else ./caseforge.toml;
  3. overrides for the current run (a deployment's `settings` parameter: caseforge.settings.overriding).
Later layers are laid over earlier ones key by key. The one place a settings file is read."""
from __future__ import annotations

import contextvars
import copy
import tomllib
from pathlib import Path

from caseforge.settings_errors import SettingsError

DEFAULTS_FILE = Path(__file__).resolve().parent / "defaults.toml"

# the overrides in force, innermost last (caseforge.settings.overriding adds one for what runs inside it)
OVERRIDES: contextvars.ContextVar[tuple[dict, ...]] = contextvars.ContextVar("caseforge_settings_overrides",
                                                                             default=())
_READ: dict[Path, tuple[tuple, dict]] = {}          # file -> (its stamp when read, what it held)


def _stamp(path: Path) -> tuple:
    status = path.stat()
    return status.st_mtime_ns, status.st_size, status.st_ino


def read_toml(path: Path) -> dict:
    """A settings file's tables, read again only when the file changed."""
    path = Path(path).resolve()
    stamp = _stamp(path)
    cached = _READ.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    with path.open("rb") as handle:
        try:
            data = tomllib.load(handle)
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(f"{path}: not valid TOML ({exc})") from exc
    _READ[path] = (stamp, data)
    return data


def forget_files() -> None:
    """The next read of each settings file reads it from disk again."""
    _READ.clear()


def user_file(named: str | Path | None = None) -> Path | None:
    """The user's settings file (`named`: the one CASEFORGE_CONFIG names), else ./caseforge.toml when there is one,
    else None. A named file that is missing is an error."""
    candidate = Path(named) if named else Path("caseforge.toml")
    if candidate.exists():
        return candidate
    if named:
        raise FileNotFoundError(f"settings file not found: {candidate} (CASEFORGE_CONFIG)")
    return None


def merge(base: dict, over: dict) -> dict:
    """`over` laid over `base`: tables merge key by key, anything else replaces."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def merged_file(named: str | Path | None = None) -> dict:
    """The settings file as given, before it is typed: the defaults, the user's file, the overrides in force."""
    data = read_toml(DEFAULTS_FILE)
    found = user_file(named)
    if found is not None:
        data = merge(data, read_toml(found))
    for layer in OVERRIDES.get():
        data = merge(data, layer)
    return data


def layer_holding(keys: tuple[str, ...], named: str | Path | None = None) -> str:
    """Which layer holds `keys` (a table path and a key), as a problem names it: this run's overrides, the user's
    file, or the shipped defaults."""
    def holds(data: dict) -> bool:
        for key in keys:
            if not isinstance(data, dict) or key not in data:
                return False
            data = data[key]
        return True

    if any(holds(layer) for layer in OVERRIDES.get()):
        return "this run's settings (overrides)"
    found = user_file(named)
    if found is not None and holds(read_toml(found)):
        return f"settings file {found}"
    return f"settings file {DEFAULTS_FILE}"
