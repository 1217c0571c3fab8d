"""`caseforge llm check`: every step's backend, model and endpoint per role, one tiny structured request per
distinct one, and one line per problem (exit 2), against scripted OpenAI-compatible server doubles."""
from __future__ import annotations

import json
import socket

import pytest

from caseforge.cli import main
from caseforge.llm.check import PROBE_ANSWER
from caseforge.llm.doubles import ScriptedOpenAIServerDouble, chat_reply


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in ("CASEFORGE_LLM_BACKEND", "CASEFORGE_LLM_MODEL", "CASEFORGE_CONFIG", "CASEFORGE_LLM_CONFIG",
                 "CASEFORGE_OPENAI_BASE_URL", "CASEFORGE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


QWEN, GEMMA = "Qwen/Qwen2.5-7B-Instruct", "google/gemma-3-27b-it"     # what the doubles serve


def honours_schema(body: dict, call_number: int):
    """A server double that answers what the schema it was sent allows (vLLM's structured_outputs), and in a word
    when no schema is sent."""
    if "structured_outputs" not in body:
        return chat_reply("ready")
    assert body["structured_outputs"]["json"]["required"] == ["caseforge_check"]
    return chat_reply(json.dumps(PROBE_ANSWER))


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def settings(tmp_path, generator_url: str, checker_url: str, validator: str | None = "google/gemma-3-27b-it") -> None:
    """The nightly's roles on two servers: the generator (and CaseGen's system) on one, the checkers on the
    other."""
    text = (f'[llm]\nbackend = "openai"\n'
            f'[llm.roles.generator]\nmodel = "Qwen/Qwen2.5-7B-Instruct"\noptions = {{ base_url = "{generator_url}" }}\n'
            f'[llm.roles.system]\nmodel = "Qwen/Qwen2.5-7B-Instruct"\noptions = {{ base_url = "{generator_url}" }}\n'
            f'[llm.roles.judge]\nmodel = "google/gemma-3-27b-it"\noptions = {{ base_url = "{checker_url}" }}\n'
            f'[nightly.evaluations.casegen]\nmodels = ["Qwen/Qwen2.5-7B-Instruct"]\n')
    if validator:
        text += f'[llm.roles.validator]\nmodel = "{validator}"\noptions = {{ base_url = "{checker_url}" }}\n'
    (tmp_path / "caseforge.toml").write_text(text)


def problems(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("caseforge: ")]


def test_a_configuration_that_works_is_checked_with_one_request_per_endpoint_and_model(tmp_path, capsys):
    with ScriptedOpenAIServerDouble(honours_schema, models=(QWEN,)) as writer, \
            ScriptedOpenAIServerDouble(honours_schema, models=(GEMMA,)) as checker:
        settings(tmp_path, writer.base_url, checker.base_url)
        assert main(["llm", "check", "--format", "json"]) == 0
        rows = json.loads(capsys.readouterr().out)
        assert len(writer.bodies) == 2 and len(checker.bodies) == 2      # with and without the schema
    by_step = {(r["pipeline"], r["step"], r["role"]): r for r in rows}
    factuality = by_step[("build casefacts", "casefacts.factuality", "validator")]
    assert (factuality["model"], factuality["endpoint"], factuality["check"]) == (
        "google/gemma-3-27b-it", checker.base_url, "ok")
    assert by_step[("build casefacts", "casefacts.generate", "generator")]["endpoint"] == writer.base_url
    assert by_step[("eval casegen", "casegen-generate", "system")]["model"] == "Qwen/Qwen2.5-7B-Instruct"
    assert all(r["check"] == "ok" for r in rows)


def test_a_role_without_a_model_is_one_line_naming_the_role_and_its_flag(tmp_path, capsys):
    with ScriptedOpenAIServerDouble(honours_schema, models=(QWEN, GEMMA)) as server:
        settings(tmp_path, server.base_url, server.base_url, validator=None)
        assert main(["llm", "check"]) == 2
    [line] = problems(capsys.readouterr().err)
    assert "build casefacts" in line and "role validator" in line and "--validator-model" in line
    assert "casefacts.factuality" in line


def test_an_endpoint_that_does_not_answer_is_one_line_naming_role_model_and_url(tmp_path, capsys):
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    with ScriptedOpenAIServerDouble(honours_schema, models=(QWEN,)) as writer:
        settings(tmp_path, writer.base_url, dead)
        assert main(["llm", "check", "--timeout-s", "5"]) == 2
    [line] = problems(capsys.readouterr().err)
    assert "judge/validator openai:google/gemma-3-27b-it at " + dead in line and "did not answer" in line


@pytest.mark.parametrize("reply, says", [
    ("", ["openai:google/gemma-3-27b-it at {url} answered with empty content", "judge/validator"]),
    # a server that ignores the schema: the line says how the schema was sent
    ("Ready!", ["at {url} ignores the JSON schema: answered 'Ready!'", 'structured = "vllm"']),
], ids=["empty-content", "ignores-the-schema"])
def test_a_checker_server_answering_what_no_step_can_use_is_one_line(tmp_path, capsys, reply, says):
    with ScriptedOpenAIServerDouble(honours_schema, models=(QWEN,)) as writer, \
            ScriptedOpenAIServerDouble(lambda body, n: chat_reply(reply), models=(GEMMA,)) as checker:
        settings(tmp_path, writer.base_url, checker.base_url)
        assert main(["llm", "check"]) == 2
    [line] = problems(capsys.readouterr().err)
    for part in says:
        assert part.format(url=checker.base_url) in line


def test_a_checker_of_the_writers_family_is_a_problem_where_the_pipeline_refuses_it(tmp_path, capsys):
    with ScriptedOpenAIServerDouble(honours_schema, models=(QWEN, GEMMA)) as server:
        (tmp_path / "caseforge.toml").write_text(
            f'[llm]\nbackend = "openai"\nmodel = "Qwen/Qwen2.5-7B-Instruct"\n'
            f'[llm.backends.openai.options]\nbase_url = "{server.base_url}"\n'
            f'[nightly.evaluations.casegen]\nmodels = ["Qwen/Qwen2.5-7B-Instruct"]\n'
            f'[nightly.builders.casefacts]\nallow_same_family = true\n')
        assert main(["llm", "check"]) == 2
        assert len(server.bodies) == 2          # one model, one endpoint: one request with the schema, one without
    err = capsys.readouterr().err
    # CaseGen's evaluation refuses a judge of the judged model's family; CaseFacts is allowed here, AQuAECHR warns
    [line] = problems(err)
    assert line.startswith("caseforge: eval casegen: the judge Qwen/Qwen2.5-7B-Instruct is of the qwen family")
    assert "warning: build aquaechr: the judge" in err and "warning: build casefacts: the validator" in err


def test_no_requests_resolves_the_configuration_only(tmp_path, capsys):
    with ScriptedOpenAIServerDouble(honours_schema, models=(QWEN, GEMMA)) as server:
        settings(tmp_path, server.base_url, server.base_url)
        assert main(["llm", "check", "--no-requests"]) == 0
        assert server.bodies == []


def test_ping_fails_on_an_empty_answer_and_names_the_url_it_tried(capsys):
    with ScriptedOpenAIServerDouble(lambda body, n: chat_reply(""), models=("m",)) as server:
        assert main(["llm", "ping", "--llm", "openai", "--model", "m", "--base-url", server.base_url]) == 2
        assert f"openai:m at {server.base_url} answered with empty content" in capsys.readouterr().err
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    assert main(["llm", "ping", "--llm", "openai", "--model", "m", "--base-url", dead]) == 2
    assert f"openai:m at {dead} did not answer" in capsys.readouterr().err
