"""Golden files, the juriscraper way: the whole parsed output of a real sample, reviewed by eye once.

tests/golden/<source>/<example>.compare.json holds what a parser gave for one real sample when a person
last read it against the document. A golden test parses the sample again and compares:

- the compare file is missing → it is written, and the test fails asking a person to review it;
- the output differs → the test fails with a diff; when the change is intended, regenerate
  (`.venv/bin/python tests/golden/regenerate.py SOURCE`) and review `git diff tests/golden`;
- the parse takes over SLOW_SECONDS → a SlownessWarning; over TOO_SLOW_SECONDS → a failure,
  except under CI (shared runners are slow for reasons of their own).

A test module with golden files declares SOURCE and EXAMPLES (example name → a function of the samples
folder returning the parsed output); tests/golden/regenerate.py reads the same two names, so the tests
and the regenerate command never disagree about what an example is.
"""
from __future__ import annotations

import difflib
import json
import math
import os
import time
import warnings
from datetime import date, datetime
from pathlib import Path
from typing import Any, Callable

GOLDEN_DIR = Path(__file__).resolve().parent
SLOW_SECONDS = 1.0
TOO_SLOW_SECONDS = 15.0
DIFF_LINES = 80

Producer = Callable[[Path], Any]


class SlownessWarning(Warning):
    """A parser took more than SLOW_SECONDS on one golden example."""


def compare_path(source: str, example: str) -> Path:
    return GOLDEN_DIR / source / f"{example}.compare.json"


def _plain(value: Any) -> Any:
    """JSON-ready copy: dates as ISO strings, tuples as lists, float NaN as null (pandas' missing cell)."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item") and callable(value.item):      # numpy scalars
        return _plain(value.item())
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"golden output holds a {type(value).__name__}: {value!r}")


def to_json(value: Any) -> str:
    """The compare-file text: keys in the parser's own (deterministic) order, UTF-8 as is, indent 1."""
    return json.dumps(_plain(value), ensure_ascii=False, indent=1)


def timed(produce: Producer, samples_dir: Path) -> tuple[Any, float]:
    started = time.perf_counter()
    output = produce(samples_dir)
    return output, time.perf_counter() - started


def on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def check_duration(source: str, example: str, seconds: float) -> str | None:
    """Warn when slow; the failure message when too slow (None under CI, where only the warning stays)."""
    if seconds > SLOW_SECONDS:
        warnings.warn(SlownessWarning(f"golden {source}/{example}: parsing took {seconds:.2f} s "
                                      f"(more than {SLOW_SECONDS:g} s)"), stacklevel=3)
    if seconds > TOO_SLOW_SECONDS and not on_ci():
        return (f"golden {source}/{example}: parsing took {seconds:.1f} s, more than {TOO_SLOW_SECONDS:g} s; "
                f"make the parser faster or the example smaller")
    return None


def write(source: str, example: str, output: Any) -> tuple[Path, str]:
    """Write one compare file; returns its path and 'new', 'changed' or 'unchanged'."""
    path = compare_path(source, example)
    text = to_json(output)
    if not path.exists():
        state = "new"
    elif path.read_text(encoding="utf-8") == text:
        return path, "unchanged"
    else:
        state = "changed"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path, state


def _shown(path: Path) -> str:
    project = Path(__file__).resolve().parent.parent.parent
    return str(path.relative_to(project)) if path.is_relative_to(project) else str(path)


def difference(expected_text: str, got_text: str, path: Path) -> str:
    lines = list(difflib.unified_diff(expected_text.splitlines(), got_text.splitlines(),
                                      fromfile=f"{path.name} (reviewed)", tofile="parser now", lineterm="", n=2))
    if len(lines) > DIFF_LINES:
        lines = lines[:DIFF_LINES] + [f"... {len(lines) - DIFF_LINES} more diff lines"]
    return "\n".join(lines)


def mismatch(source: str, example: str, output: Any) -> str | None:
    """None when the output equals the compare file, else why not (a new file is written first)."""
    path = compare_path(source, example)
    if not path.exists():
        write(source, example, output)
        return (f"golden {source}/{example}: no compare file yet; wrote {_shown(path)}. "
                f"A person must review it against the sample (and commit it) before this test can pass.")
    expected_text = path.read_text(encoding="utf-8")
    got_text = to_json(output)
    if json.loads(expected_text) == json.loads(got_text):
        return None
    # compare as re-indented JSON so the diff shows values, not the file's layout
    expected_norm = json.dumps(json.loads(expected_text), ensure_ascii=False, indent=1)
    return (f"golden {source}/{example}: the parser's output differs from the reviewed compare file.\n"
            f"If the change is intended: .venv/bin/python tests/golden/regenerate.py {source}, "
            f"then review `git diff tests/golden/{source}`.\n" + difference(expected_norm, got_text, path))


def assert_golden(source: str, example: str, produce: Producer, samples_dir: Path) -> Any:
    """Parse one example (timed), compare it with its compare file; returns the output for further asserts."""
    import pytest

    output, seconds = timed(produce, samples_dir)
    problem = mismatch(source, example, output)
    too_slow = check_duration(source, example, seconds)
    if problem or too_slow:
        pytest.fail("\n".join(p for p in (problem, too_slow) if p), pytrace=False)
    return output
