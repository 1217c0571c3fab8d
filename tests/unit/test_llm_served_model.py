"""The model that answered is the model recorded (issue 41): the openai backend reads the endpoint's /v1/models
before its first request and each answer's `model` field, against an in-memory server double (an httpx
transport: no socket). Like llama_cpp.server, the double answers whatever model name it is asked for; only its
model list says what it serves."""
import json
import sys
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from echo_prompts import Number, requests_for  # noqa: E402
from migration_support import connect_before  # noqa: E402

from caseforge.llm import run_job  # noqa: E402
from caseforge.llm.backends.openai_compat import OpenAIBackend, ServedModelMismatch, same_model  # noqa: E402
from caseforge.warehouse.connection import connect  # noqa: E402

BASE = "http://gpu-box:8000/v1"


class AnyNameServerDouble:
    """An httpx transport standing in for an OpenAI-compatible server of one model: /v1/models lists `listed`;
    a chat completion echoes the number asked and names, as its `model`, the name it was asked for (what
    llama_cpp.server and vLLM do) unless `answers_as` says otherwise. Records the bodies it was sent."""

    def __init__(self, listed: list[str] | None, answers_as: str | None = None, models_status: int = 200):
        self.listed, self.answers_as, self.models_status = listed, answers_as, models_status
        self.bodies: list[dict] = []
        self.model_lists = 0

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/models"):
            self.model_lists += 1
            if self.models_status != 200:
                return httpx.Response(self.models_status, json={"error": "not here"})
            return httpx.Response(200, json={"object": "list", "data": [{"id": m} for m in self.listed or []]})
        body = json.loads(request.content)
        self.bodies.append(body)
        number = int(body["messages"][-1]["content"].split("number ")[1].split(" ")[0])
        return httpx.Response(200, json={
            "model": self.answers_as or body["model"],
            "choices": [{"message": {"content": json.dumps({"value": number})}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 2}})


def backend(server: AnyNameServerDouble, model: str, **options) -> OpenAIBackend:
    return OpenAIBackend(model, base_url=BASE, transport=server.transport(), max_retries=0, **options)


def cached(con) -> list[tuple]:
    return con.execute("SELECT model, served_model, status FROM ops.llm_calls ORDER BY identity").fetchall()


def test_a_model_the_server_does_not_list_is_refused_in_one_line_before_anything_is_sent(db_path):
    # SmolLM2 served, Qwen configured: llama_cpp.server would answer every request, and Qwen would be credited
    server = AnyNameServerDouble(["smollm2-135m-instruct"])
    con = connect(db_path)
    with pytest.raises(ServedModelMismatch) as refused:
        run_job(con, "casefacts.generate", backend(server, "Qwen/Qwen2.5-7B-Instruct"), requests_for(range(3)),
                Number)
    line = str(refused.value)
    assert "\n" not in line and BASE in line
    assert "'Qwen/Qwen2.5-7B-Instruct'" in line and "'smollm2-135m-instruct'" in line
    assert server.bodies == [] and cached(con) == []


def test_an_answer_served_under_another_name_is_refused_and_nothing_is_cached(db_path):
    # a proxy that lists the model but routes the request elsewhere
    server = AnyNameServerDouble(["Qwen/Qwen2.5-7B-Instruct"], answers_as="smollm2-135m-instruct")
    con = connect(db_path)
    with pytest.raises(ServedModelMismatch) as refused:
        run_job(con, "casefacts.generate", backend(server, "Qwen/Qwen2.5-7B-Instruct", concurrency=1),
                requests_for(range(3)), Number)
    assert "'smollm2-135m-instruct'" in str(refused.value) and "'Qwen/Qwen2.5-7B-Instruct'" in str(refused.value)
    assert cached(con) == []


def test_the_served_model_is_recorded_with_each_answer(db_path):
    server = AnyNameServerDouble(["Qwen/Qwen2.5-7B-Instruct"])
    con = connect(db_path)
    result = run_job(con, "casefacts.generate", backend(server, "Qwen/Qwen2.5-7B-Instruct"), requests_for(range(3)),
                     Number)
    assert {k: v.value for k, v in result.outputs.items()} == {"n0": 0, "n1": 1, "n2": 2}
    assert cached(con) == [("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "ok")] * 3
    assert server.model_lists == 1                  # read once, before the first request


def test_a_declared_served_name_is_what_is_sent_and_checked_while_answers_keep_the_configured_name(db_path):
    # vllm serve --served-model-name qwen: the server lists and answers "qwen" only
    server = AnyNameServerDouble(["qwen"])
    con = connect(db_path)
    run_job(con, "casefacts.generate", backend(server, "Qwen/Qwen2.5-7B-Instruct", served_model="qwen"),
            requests_for(range(2)), Number)
    assert {b["model"] for b in server.bodies} == {"qwen"}
    assert cached(con) == [("Qwen/Qwen2.5-7B-Instruct", "qwen", "ok")] * 2
    # the identity is the configured model's: the same requests without the alias are answered from the cache
    again = run_job(con, "casefacts.generate", backend(AnyNameServerDouble(["x"]), "Qwen/Qwen2.5-7B-Instruct"),
                    requests_for(range(2)), Number)
    assert again.cache_hits == 2 and again.backend_calls == 0


@pytest.mark.parametrize("listed, status", [([], 200), (None, 404)])
def test_a_server_that_lists_nothing_useful_needs_the_served_name_declared(db_path, listed, status):
    con = connect(db_path)
    with pytest.raises(ServedModelMismatch, match="declare the name it serves the model under"):
        run_job(con, "s", backend(AnyNameServerDouble(listed, models_status=status), "qwen"), requests_for([1]),
                Number)
    assert cached(con) == []
    server = AnyNameServerDouble(listed, models_status=status)
    run_job(con, "s", backend(server, "qwen", served_model="qwen"), requests_for([1]), Number)
    assert cached(con) == [("qwen", "qwen", "ok")]          # each answer's own `model` field, checked


def test_a_dated_snapshot_is_the_same_model_and_a_longer_name_is_not():
    assert same_model("gpt-4o", "gpt-4o-2024-08-06") and same_model("gpt-4", "gpt-4-0613")
    assert not same_model("Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B-Instruct")
    assert not same_model("qwen", "smollm2")


def test_answers_cached_before_served_models_were_recorded_stay_answers(db_path, tmp_path, monkeypatch):
    """Migration 160 adds the column: an answer cached before it keeps serving, its served model NULL (shown as
    'not recorded' by the statistics, never guessed)."""

    from caseforge.llm.parsing import schema_for

    con = connect_before(160, db_path, tmp_path, monkeypatch)
    request = requests_for([4])[0].model_copy(update={"json_schema": schema_for(Number)})   # as run_job sends it
    con.execute("INSERT INTO ops.llm_calls (identity, step, backend, model, template_id, template_sha, request, "
                "response_text, parsed, status, attempts, created_at) VALUES (?, 's', 'openai', 'qwen', ?, ?, ?, "
                "'{\"value\": 4}', '{\"value\": 4}', 'ok', 1, now())",
                [request.identity("qwen"), request.template_id, request.template_sha, request.model_dump_json()])
    con.close()
    con = connect(db_path)                           # migrates
    again = run_job(con, "s", backend(AnyNameServerDouble([]), "qwen"), requests_for([4]), Number)
    assert again.cache_hits == 1 and again.outputs["n4"].value == 4
    assert con.execute("SELECT served_model, calls FROM ops.llm_call_stats").fetchall() == [("not recorded", 1)]
