"""The settings file: LLM backends and models per role and step, the nightly's benchmarks and caps,
fan-out to GPU workers.

Three layers, later ones laid over earlier ones key by key:
  1. caseforge/defaults.toml, shipped with caseforge (offline defaults);
  2. the user's file: $CASEFORGE_CONFIG (or the older $CASEFORGE_LLM_CONFIG), else ./caseforge.toml;
  3. overrides for the current run (a deployment's `settings` parameter), see `overriding`.
"""
from __future__ import annotations

import contextvars
import copy
import hashlib
import json
import os
import tomllib
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

DEFAULTS_FILE = Path(__file__).resolve().parent / "defaults.toml"
_overrides: contextvars.ContextVar[tuple[dict, ...]] = contextvars.ContextVar("caseforge_settings_overrides",
                                                                               default=())


def _read_toml(path: Path) -> dict:
    with path.open("rb") as handle:
        try:
            return tomllib.load(handle)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{path}: not valid TOML ({exc})") from exc


def user_file(path: str | Path | None = None) -> Path | None:
    """The user's settings file, or None. An explicitly named file that is missing is an error."""
    explicit = path or os.environ.get("CASEFORGE_CONFIG") or os.environ.get("CASEFORGE_LLM_CONFIG")
    candidate = Path(explicit) if explicit else Path("caseforge.toml")
    if candidate.exists():
        return candidate
    if explicit:
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


def load(path: str | Path | None = None) -> dict:
    """The settings in force: defaults, the user's file, then the current overrides."""
    data = _read_toml(DEFAULTS_FILE)
    found = user_file(path)
    if found is not None:
        data = merge(data, _read_toml(found))
    for layer in _overrides.get():
        data = merge(data, layer)
    return data


@contextmanager
def overriding(settings: dict | None) -> Iterator[None]:
    """Lay `settings` over the file for what runs inside (a flow run and its subflows and tasks)."""
    if not settings:
        yield
        return
    token = _overrides.set(_overrides.get() + (dict(settings),))
    try:
        yield
    finally:
        _overrides.reset(token)


def section(*keys: str, path: str | Path | None = None) -> dict:
    """A nested table of the settings ({} when absent), e.g. section("nightly", "builders", "casefacts")."""
    node = load(path)
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            return {}
    return dict(node) if isinstance(node, dict) else {}


def upstream(name: str) -> str:
    """The base URL a live source fetches from ([upstream] <name>), without a trailing slash."""
    url = section("upstream").get(name)
    if not isinstance(url, str) or not url:
        raise ValueError(f"no base URL for source {name!r}: set [upstream] {name} in the settings")
    return url.rstrip("/")


def fingerprint(value) -> str:
    """A stable digest of a settings value (for change detection; key order does not matter)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()
