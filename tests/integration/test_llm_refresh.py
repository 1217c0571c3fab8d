"""What the LLM cache is keyed by, and asking again: the request (model name, messages, parameters, schema,
template), not the backend that served it; `refresh` asks again and keeps the answers it replaces."""
from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from caseforge.cli import build_parser
from caseforge.llm import LLMRequest, run_job
from caseforge.llm.backends.openai_compat import OpenAIBackend
from caseforge.llm.backends.replay import ReplayBackend
from caseforge.llm.cache import calls_table, store_calls
from caseforge.llm.doubles import ScriptedOpenAIServerDouble, chat_reply
from caseforge.warehouse.connection import connect


class Number(BaseModel):
    value: int


def requests(n: int = 3) -> list[LLMRequest]:
    return [LLMRequest(key=f"k{i}", messages=[{"role": "user", "content": f"number {i}"}], template_id="t",
                       template_sha="s") for i in range(n)]


def answering(value: int):
    return lambda body, n: chat_reply(json.dumps({"value": value}))


def test_two_backends_serving_one_model_name_share_answers_and_refresh_asks_again(db_path, tmp_path):
    con = connect(db_path)
    with ScriptedOpenAIServerDouble(answering(1), models=("shared-model",)) as first, \
            ScriptedOpenAIServerDouble(answering(2), models=("shared-model",)) as second:
        openai_one = OpenAIBackend("shared-model", base_url=first.base_url, max_retries=0)
        assert {o.value for o in run_job(con, "demo", openai_one, requests(), Number).outputs.values()} == {1}
        # the same model name behind another backend: answered from the cache, nothing asked
        (tmp_path / "empty.jsonl").write_text("")
        replay = ReplayBackend("shared-model", replay_file=tmp_path / "empty.jsonl")
        again = run_job(con, "demo", replay, requests(), Number)
        assert again.cache_hits == 3 and again.backend_calls == 0
        # and behind another endpoint: the same, until a refresh asks it
        openai_two = OpenAIBackend("shared-model", base_url=second.base_url, max_retries=0)
        assert run_job(con, "demo", openai_two, requests(), Number).backend_calls == 0
        assert second.calls == 0
        refreshed = run_job(con, "demo", openai_two, requests(), Number, refresh=True)
        assert refreshed.backend_calls == 3 and second.calls == 3
        assert {o.value for o in refreshed.outputs.values()} == {2}
    # the new answers are the cache's; the old ones are kept, once each
    assert con.execute("SELECT DISTINCT parsed::VARCHAR FROM ops.llm_calls").fetchall() == [('{"value":2}',)]
    history = con.execute("SELECT parsed::VARCHAR, backend FROM ops.llm_call_history").fetchall()
    assert sorted(history) == [('{"value":1}', "openai")] * 3
    [stats] = con.execute("SELECT calls, ok, replaced FROM ops.llm_call_stats").fetchall()
    assert stats == (3, 3, 3)


def row(identity: str, status: str, parsed: str | None, created: str) -> tuple:
    from datetime import datetime

    return (identity, "demo", "openai", "m", "t", "s", "{}", parsed, parsed if status == "ok" else None, status,
            None if status == "ok" else "why", 1, 1, 1, 1.0, datetime.fromisoformat(created), None, None)


@pytest.mark.parametrize("refresh", [False, True])
def test_no_answer_never_replaces_an_answer_even_in_a_refresh(db_path, refresh):
    con = connect(db_path)
    store_calls(con, calls_table([row("a", "ok", '{"value": 1}', "2026-01-01T00:00:00+00:00")]))
    store_calls(con, calls_table([row("a", "unanswered", None, "2026-01-02T00:00:00+00:00")]), refresh)
    assert con.execute("SELECT status FROM ops.llm_calls").fetchall() == [("ok",)]
    assert con.execute("SELECT count(*) FROM ops.llm_call_history").fetchone() == (0,)
    # a failed answer replaces an ok one only in a refresh, and then the ok one is kept
    store_calls(con, calls_table([row("a", "failed", "x", "2026-01-03T00:00:00+00:00")]), refresh)
    assert con.execute("SELECT status FROM ops.llm_calls").fetchall() == [("failed" if refresh else "ok",)]
    assert con.execute("SELECT status FROM ops.llm_call_history").fetchall() == ([("ok",)] if refresh else [])


@pytest.mark.parametrize("command", [["build", "casefacts"], ["run", "nightly"], ["eval", "casegen"]])
def test_commands_that_run_llm_steps_take_refresh(command):
    assert build_parser().parse_args(command + ["--refresh"]).refresh is True
