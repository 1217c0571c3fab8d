"""`caseforge llm ...` commands against a scripted server double and a small cache."""
import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from caseforge.cli import main
from caseforge.llm import LLMRequest, run_job
from caseforge.llm.doubles import ScriptedOpenAIServerDouble, ScriptedReply, chat_reply
from caseforge.llm.types import Completion
from caseforge.warehouse.connection import connect


class Number(BaseModel):
    value: int


class CountingBackendDouble:
    name = "counting-double"
    model = "double-model"
    batch_size = 8

    def complete_batch(self, requests):
        return [Completion(text='{"value": 1}' if r.key != "bad" else "nope", prompt_tokens=10, completion_tokens=2,
                           latency_s=0.5) for r in requests]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in ("CASEFORGE_LLM_BACKEND", "CASEFORGE_LLM_MODEL", "CASEFORGE_LLM_CONFIG", "CASEFORGE_OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def filled_db(path: Path) -> Path:
    con = connect(path)
    requests = [LLMRequest(key=k, messages=[{"role": "user", "content": k}], template_id="t", template_sha="s")
                for k in ("a", "b", "bad")]
    run_job(con, "demo/step", CountingBackendDouble(), requests, Number, max_attempts=1)
    con.close()
    return path


def test_stats_reports_calls_ok_failed_tokens_latency(db_path, capsys):
    filled_db(db_path)
    assert main(["llm", "stats", "--db", str(db_path), "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["step"], row["calls"], row["ok"], row["failed"]) == ("demo/step", 3, 2, 1)
    assert (row["prompt_tokens"], row["completion_tokens"], row["mean_latency_ms"]) == (30, 6, 500.0)


def test_export_replay_writes_one_record_per_call(db_path, tmp_path, capsys):
    filled_db(db_path)
    out = tmp_path / "replay.jsonl"
    assert main(["llm", "export-replay", "--db", str(db_path), "--out", str(out), "--step", "demo/step"]) == 0
    assert len(out.read_text().splitlines()) == 3
    # a step the pipelines know, with no cached answer: nothing to export (exit 1), the file left as it was
    before = out.read_text()
    assert main(["llm", "export-replay", "--db", str(db_path), "--out", str(out), "--step",
                 "casefacts.factuality"]) == 1
    assert out.read_text() == before
    # a step nobody knows is a typo (exit 2)
    assert main(["llm", "export-replay", "--db", str(db_path), "--out", str(out), "--step", "other"]) == 2


def test_ping_answers_and_reports_a_dead_endpoint(capsys):
    with ScriptedOpenAIServerDouble(lambda body, n: chat_reply("ready"), models=("m",)) as server:
        assert main(["llm", "ping", "--llm", "openai", "--model", "m", "--base-url", server.base_url]) == 0
        assert f"openai:m at {server.base_url} answered" in capsys.readouterr().out
        server.script = lambda body, n: ScriptedReply(404, {"error": "no such model"})
        assert main(["llm", "ping", "--llm", "openai", "--model", "m", "--base-url", server.base_url]) == 2
        assert "did not answer: HTTP 404" in capsys.readouterr().err


def test_models_lists_the_configured_choices(capsys, tmp_path):
    (tmp_path / "caseforge.toml").write_text(
        '[llm]\nbackend = "openai"\n[llm.roles.generator]\nmodel = "Qwen/Qwen2.5-7B-Instruct"\n'
        '[llm.steps."casefacts.factuality"]\nmodel = "google/gemma-3-12b-it"\n')
    assert main(["llm", "models"]) == 0
    out = capsys.readouterr().out
    assert "Qwen/Qwen2.5-7B-Instruct" in out and "casefacts.factuality" in out and "gemma-3-12b-it" in out
    assert "no model configured for the openai backend" in out      # the validator of other steps: said, not hidden


def test_stats_count_requests_no_endpoint_answered_apart_from_failed_answers(db_path, capsys):
    """A request whose endpoint never answered (connection refused) is 'unanswered': the next run asks it
    again; a bad answer is 'failed' and stays cached."""
    import socket

    from caseforge.llm.backends.openai_compat import OpenAIBackend

    filled_db(db_path)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    async def no_sleep(seconds):
        pass

    con = connect(db_path)
    down = OpenAIBackend("double-model", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0, sleep=no_sleep)
    requests = [LLMRequest(key=k, messages=[{"role": "user", "content": k}], template_id="t", template_sha="s")
                for k in ("c", "d")]
    run_job(con, "down/step", down, requests, Number, max_attempts=1)
    con.close()
    assert main(["llm", "stats", "--db", str(db_path), "--format", "json"]) == 0
    rows = {row["step"]: row for row in json.loads(capsys.readouterr().out)}
    assert (rows["demo/step"]["ok"], rows["demo/step"]["failed"], rows["demo/step"]["unanswered"]) == (2, 1, 0)
    assert (rows["down/step"]["ok"], rows["down/step"]["failed"], rows["down/step"]["unanswered"]) == (0, 0, 2)
