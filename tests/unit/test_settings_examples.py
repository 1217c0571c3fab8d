"""Every settings example of README.md and docs/ is a settings file caseforge accepts, and the same example with
any one key or table name misspelt is refused in one line naming the key, the file and the key meant (issue 37:
the documented `[llm] model` and `[llm.options]` were silently ignored)."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from caseforge.flows.settings_check import settings_problems
from caseforge.settings import reload_settings

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```toml\n(?P<body>.*?)^(?P=indent)```", re.S | re.M)
KEY = re.compile(r"^(?P<key>[A-Za-z_][\w-]*)(?P<rest>\s*=)", re.M)
HEADER = re.compile(r"^\[(?P<path>[^\]]+)\]", re.M)


def examples() -> list[tuple[str, str]]:
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for number, match in enumerate(FENCE.finditer(page.read_text()), 1):
            found.append((f"{page.relative_to(ROOT)}#{number}", textwrap.dedent(match["body"])))
    return found


EXAMPLES = examples()


def misspelt(name: str) -> str:
    """`name` with its last two letters swapped (or a letter dropped where they are the same)."""
    return name[:-2] + name[-1] + name[-2] if name[-1] != name[-2] else name[:-1]


def misspellings(body: str) -> list[tuple[str, str, str]]:
    """(the body with one key or table name misspelt, the misspelt name, the name meant), for every one."""
    found = []
    for match in KEY.finditer(body):
        key = match["key"]
        found.append((body[:match.start()] + misspelt(key) + body[match.start("rest"):], misspelt(key), key))
    for match in HEADER.finditer(body):
        path = match["path"]
        start = path.rindex('"', 0, len(path) - 1) + 1 if path.endswith('"') else path.rindex(".") + 1 if "." in path \
            else 0
        last = path[start:].rstrip('"')
        wrong = path[:start] + misspelt(last) + path[start + len(last):]
        found.append((body[:match.start("path")] + wrong + body[match.end("path"):], misspelt(last), last))
    return found


@pytest.fixture(autouse=True)
def _fresh(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for name in ("CASEFORGE_CONFIG", "CASEFORGE_LLM_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    reload_settings()
    yield
    reload_settings()


def test_the_pages_have_settings_examples():
    assert {name.split("#")[0] for name, _ in EXAMPLES} >= {"docs/deploying.md", "docs/llm.md"} and len(EXAMPLES) >= 5


@pytest.mark.parametrize("name, body", EXAMPLES, ids=[name for name, _ in EXAMPLES])
def test_a_documented_settings_example_is_accepted_and_each_misspelling_refused(name, body, tmp_path):
    example = tmp_path / "example.toml"
    example.write_text(body)
    assert settings_problems(example) == [], f"{name} is refused as documented"
    tried = misspellings(body)
    assert tried, f"{name}: no key to misspell"
    for number, (wrong_body, wrong, meant) in enumerate(tried):
        wrong_file = tmp_path / f"wrong-{number}.toml"
        wrong_file.write_text(wrong_body)
        problems = settings_problems(wrong_file)
        assert len(problems) == 1 and "\n" not in problems[0], (name, wrong, problems)
        [problem] = problems
        assert str(wrong_file) in problem and wrong in problem and f"did you mean {meant}?" in problem, (name, problem)
