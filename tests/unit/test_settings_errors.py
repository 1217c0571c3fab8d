"""A settings mistake stops every command before any work, in one line that says what is wrong and what was meant
(issue 41): an unknown backend names the closest one, a key in the wrong table names the table it belongs in, and
the nightly's own tables are checked by every command as `run nightly` checks them."""
from __future__ import annotations

import pytest

from caseforge.cli import main

COMMANDS = [["status", "--db"], ["llm", "check", "--no-requests"], ["build", "casefacts", "--db"]]


@pytest.fixture(autouse=True)
def _here(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for name in ("CASEFORGE_CONFIG", "CASEFORGE_LLM_CONFIG", "CASEFORGE_LLM_BACKEND"):
        monkeypatch.delenv(name, raising=False)


def refused(tmp_path, capsys, settings: str, command: list[str]) -> str:
    """The one line `command` stops with (exit 2) under the settings file `settings`; nothing was made."""
    (tmp_path / "caseforge.toml").write_text(settings)
    database = str(tmp_path / "cf.duckdb")
    code = main([word for part in command for word in ([part, database] if part == "--db" else [part])])
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (command, code, out, err)
    assert not (tmp_path / "cf.duckdb").exists()
    return lines[0]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("table", ['llm.roles.validator', 'llm.steps."casefacts.factuality"', "llm",
                                   "llm.backends.vlm"])
def test_an_unknown_backend_names_the_closest_one(tmp_path, capsys, command, table):
    settings = f'[{table}]\nbackend = "vlm"\n' if table != "llm.backends.vlm" else f"[{table}]\noptions = {{}}\n"
    line = refused(tmp_path, capsys, settings, command)
    assert "unknown backend vlm; did you mean vllm?" in line and "KeyError" not in line, line
    assert "caseforge.toml" in line and f"[{table.removesuffix('.vlm')}]" in line, line


def test_an_unknown_backend_from_the_environment_names_the_closest_one(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CASEFORGE_LLM_BACKEND", "vlm")
    line = refused(tmp_path, capsys, "", ["llm", "check", "--no-requests"])
    assert "CASEFORGE_LLM_BACKEND" in line and "unknown backend vlm; did you mean vllm?" in line, line


@pytest.mark.parametrize("table, home", [
    ("llm", "[llm.backends.openai.options]"),
    ("llm.roles.validator", "[llm.roles.validator.options] or [llm.backends.openai.options]"),
    ('llm.steps."casefacts.factuality"', '[llm.steps."casefacts.factuality".options] or [llm.backends.openai.options]'),
    ("llm.backends.openai", "[llm.backends.openai.options]"),
])
def test_a_backend_option_in_the_wrong_table_says_which_table_it_belongs_in(tmp_path, capsys, table, home):
    line = refused(tmp_path, capsys, f'[{table}]\nbase_url = "http://127.0.0.1:8000/v1"\n', ["status", "--db"])
    assert f"unknown setting [{table}] base_url; it belongs under {home}" in line, line


def test_a_key_of_another_table_says_which_one(tmp_path, capsys):
    line = refused(tmp_path, capsys, '[fanout]\npublish = "s3://b/p"\n', ["status", "--db"])
    assert "unknown setting [fanout] publish; it belongs in [mirror] publish" in line, line


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_an_llm_step_no_pipeline_has_names_the_closest_one(tmp_path, capsys, command):
    """[llm.steps] names are checked against every pipeline's steps (their modules imported only then)."""
    line = refused(tmp_path, capsys, '[llm.steps."casefacts.factualty"]\nmodel = "m"\n', command)
    assert 'unknown setting [llm.steps] "casefacts.factualty"; did you mean casefacts.factuality?' in line, line


def test_llm_steps_every_pipeline_has_are_accepted(tmp_path, capsys):
    (tmp_path / "caseforge.toml").write_text('[llm.steps."casefacts.factuality"]\nmodel = "m"\n'
                                             '[llm.steps."aquaechr-question-*"]\nmodel = "m"\n')
    assert main(["llm", "check", "--no-requests"]) != 2, capsys.readouterr().err


@pytest.mark.parametrize("command", COMMANDS + [["run", "nightly", "--db"]], ids=" ".join)
def test_every_command_checks_the_nightlys_own_tables(tmp_path, capsys, command):
    line = refused(tmp_path, capsys, "[nightly.builders.casefacts]\nlimt = 3\n", command)
    assert line.endswith("unknown setting [nightly.builders.casefacts] limt; did you mean limit?"), line


def test_a_flows_parameters_read_from_its_source_are_those_it_takes():
    """What every command checks the nightly's options against (read without importing the flow) is the flow's
    real signature, for every builder and evaluation."""
    import inspect

    from caseforge.flows import registry
    from caseforge.flows.settings_check import flow_parameters

    for entry in [*registry.BUILDERS.values(), *registry.EVALUATIONS.values()]:
        assert flow_parameters(entry) == list(inspect.signature(entry.flow().fn).parameters), entry.name
