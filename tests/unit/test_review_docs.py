"""docs/review.md as written: its commands are the CLI's and the Makefile's, its settings block is a valid
settings file, and the documented server refuses to start without its first user's credentials. (The commands
themselves run against a real Label Studio in tests/integration/test_review_labelstudio.py.)"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
DOC = (ROOT / "docs" / "review.md").read_text(encoding="utf-8")


def fenced(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC, re.S)


def test_every_documented_caseforge_command_parses_and_make_review_server_exists():
    from caseforge.cli import build_parser

    lines = [line.split("#")[0].strip() for block in fenced("bash") for line in block.splitlines()]
    commands = [shlex.split(line) for line in lines if line]
    assert [c[:3] for c in commands if c[0] == "caseforge"] == [
        ["caseforge", "review", "push"], ["caseforge", "review", "pull"], ["caseforge", "review", "report"],
        ["caseforge", "export", "casefacts"]]
    for command in commands:
        if command[0] == "caseforge":
            build_parser().parse_args(command[1:])
        else:
            assert command == ["make", "review-server"]
    recipe = (ROOT / "Makefile").read_text().split("\nreview-server:")[1].split("\n\n")[0]
    assert "-m caseforge.review.server" in recipe


def test_the_documented_settings_block_is_a_valid_settings_file(tmp_path, monkeypatch):
    from caseforge.settings import load_settings

    (block,) = fenced("toml")
    config = tmp_path / "caseforge.toml"
    config.write_text(block)
    monkeypatch.setenv("CASEFORGE_CONFIG", str(config))
    review = load_settings().file.review
    assert review.url == "http://127.0.0.1:8080" and review.nightly == ["casefacts"]
    assert review.policy.below == "mark" and review.policy.agreement == "kappa"


def test_the_documented_server_needs_its_first_users_credentials(monkeypatch, capsys):
    from caseforge.review import server

    for name in ("CASEFORGE_REVIEW_USER", "CASEFORGE_REVIEW_PASSWORD", "CASEFORGE_REVIEW_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    assert server.main(["--data-dir", "unused"]) == 2
    assert capsys.readouterr().err == ("caseforge: set CASEFORGE_REVIEW_USER, CASEFORGE_REVIEW_PASSWORD, "
                                       "CASEFORGE_REVIEW_TOKEN (the first user's e-mail, password and API token)\n")
    assert server.QUIET_ENVIRONMENT["DISABLE_SIGNUP_WITHOUT_LINK"] == "true"
    assert server.QUIET_ENVIRONMENT["LATEST_VERSION_CHECK"] == "false"
