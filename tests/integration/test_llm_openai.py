"""The openai backend against a scripted OpenAI-compatible server double on loopback."""
import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from echo_prompts import Number, requests_for  # noqa: E402

from caseforge.llm import SamplingParams, run_job  # noqa: E402
from caseforge.llm.backends.openai_compat import OpenAIBackend, retry_after_seconds  # noqa: E402
from caseforge.llm.doubles import ScriptedOpenAIServerDouble, ScriptedReply, chat_reply  # noqa: E402
from caseforge.warehouse.connection import connect  # noqa: E402


def number_in(body: dict) -> int:
    return int(body["messages"][-1]["content"].split("number ")[1].split(" ")[0])


def answer_number(body, call_number):
    return chat_reply(json.dumps({"value": number_in(body)}), prompt_tokens=11, completion_tokens=4)


@pytest.fixture
def scripted_openai_server():
    server = ScriptedOpenAIServerDouble(answer_number).start()
    yield server
    server.stop()


class RecordingSleep:
    """Stands in for asyncio.sleep: records the waits, does not wait."""

    def __init__(self):
        self.waits: list[float] = []

    async def __call__(self, seconds):
        self.waits.append(seconds)


def backend_for(server, **options) -> OpenAIBackend:
    options.setdefault("sleep", RecordingSleep())
    return OpenAIBackend("double-model", base_url=server.base_url, **options)



def test_concurrency_bound_is_respected(scripted_openai_server):
    def slow(body, call_number):
        reply = answer_number(body, call_number)
        reply.delay_s = 0.05
        return reply

    scripted_openai_server.script = slow
    backend = backend_for(scripted_openai_server, concurrency=4)
    completions = backend.complete_batch(requests_for(range(20)))
    assert [json.loads(c.text)["value"] for c in completions] == list(range(20))
    assert scripted_openai_server.max_in_flight == 4
    assert scripted_openai_server.calls == 20


def test_tokens_and_latency_are_recorded(scripted_openai_server):
    [completion] = backend_for(scripted_openai_server).complete_batch(requests_for([7]))
    assert (completion.prompt_tokens, completion.completion_tokens, completion.error) == (11, 4, None)
    assert completion.latency_s > 0


def test_500_is_retried_then_answered(scripted_openai_server):
    scripted_openai_server.script = lambda body, n: (ScriptedReply(500, {"error": "boom"}) if n <= 2
                                                      else answer_number(body, n))
    sleep = RecordingSleep()
    [completion] = backend_for(scripted_openai_server, sleep=sleep).complete_batch(requests_for([3]))
    assert json.loads(completion.text) == {"value": 3}
    assert scripted_openai_server.calls == 3 and len(sleep.waits) == 2


def test_429_honours_retry_after(scripted_openai_server):
    scripted_openai_server.script = lambda body, n: (
        ScriptedReply(429, {"error": "slow down"}, headers={"retry-after": "7"}) if n == 1 else answer_number(body, n))
    sleep = RecordingSleep()
    [completion] = backend_for(scripted_openai_server, sleep=sleep).complete_batch(requests_for([5]))
    assert json.loads(completion.text) == {"value": 5}
    assert sleep.waits == [7.0]


def test_retry_after_as_http_date_is_understood():
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert retry_after_seconds("2.5") == 2.5
    assert retry_after_seconds("soon") is None


def test_timeout_is_retried_and_a_request_that_never_answers_fails_alone(scripted_openai_server):
    def script(body, n):
        reply = answer_number(body, n)
        if number_in(body) == 1:
            reply.delay_s = 2.0   # always longer than the client waits
        return reply

    scripted_openai_server.script = script
    backend = backend_for(scripted_openai_server, timeout_s=0.2, max_retries=2)
    completions = backend.complete_batch(requests_for([0, 1, 2]))
    assert json.loads(completions[0].text) == {"value": 0} and json.loads(completions[2].text) == {"value": 2}
    assert completions[1].text is None
    assert "gave up after 3 attempts: timed out" in completions[1].error


def test_a_400_is_not_retried_and_becomes_a_per_request_error(scripted_openai_server):
    scripted_openai_server.script = lambda body, n: ScriptedReply(400, {"error": "bad schema"})
    [completion] = backend_for(scripted_openai_server).complete_batch(requests_for([1]))
    assert scripted_openai_server.calls == 1
    assert completion.error.startswith("HTTP 400") and "bad schema" in completion.error


def test_a_body_that_is_not_json_is_retried(scripted_openai_server):
    scripted_openai_server.script = lambda body, n: (ScriptedReply(200, "<html>proxy error</html>") if n == 1
                                                      else answer_number(body, n))
    [completion] = backend_for(scripted_openai_server).complete_batch(requests_for([4]))
    assert json.loads(completion.text) == {"value": 4} and scripted_openai_server.calls == 2


def test_invalid_json_answer_then_valid_goes_through_the_job_retry(scripted_openai_server, db_path):
    scripted_openai_server.script = lambda body, n: (chat_reply('{"value": "nine"') if n == 1
                                                      else answer_number(body, n))
    con = connect(db_path)
    sampled = SamplingParams(temperature=0.6)
    result = run_job(con, "echo", backend_for(scripted_openai_server), requests_for([9], sampled), Number)
    assert result.outputs["n9"].value == 9 and not result.failures
    # the retry asks with another seed so a deterministic server does not repeat itself
    assert [b.get("seed") for b in scripted_openai_server.bodies] == [None, 2]
    assert con.execute("SELECT status, attempts FROM ops.llm_calls").fetchone() == ("ok", 2)


@pytest.mark.parametrize("style", ["vllm", "openai", "llamacpp", "none"])
def test_structured_output_request_body(scripted_openai_server, db_path, style):
    run_job(connect(db_path), "echo", backend_for(scripted_openai_server, structured=style),
            requests_for([1], SamplingParams(temperature=0.6, top_p=0.9, max_tokens=50)), Number)
    [body] = scripted_openai_server.bodies
    schema = Number.model_json_schema()
    assert body["model"] == "double-model"
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.6, 0.9, 50)
    if style == "vllm":
        assert body["structured_outputs"] == {"json": schema} and "response_format" not in body
    elif style == "openai":
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["schema"] == schema
    elif style == "llamacpp":
        assert body["response_format"] == {"type": "json_object", "schema": schema}
    else:
        assert "structured_outputs" not in body and "response_format" not in body


def test_api_key_and_base_url_come_from_the_environment(scripted_openai_server, monkeypatch, tmp_path):
    """Through the settings (CASEFORGE_OPENAI_BASE_URL and _API_KEY are fields of Settings): the choice carries them
    as this machine's own values, below any option, outside its identity."""
    from caseforge.llm.config import backend_for as chosen_backend, llm_choice
    from caseforge.settings import load_settings

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CASEFORGE_OPENAI_BASE_URL", scripted_openai_server.base_url)
    monkeypatch.setenv("CASEFORGE_OPENAI_API_KEY", "sk-test")
    choice = llm_choice(load_settings(), "echo", "generator", "openai", "double-model")
    assert choice.identity()["options"] == {} and "sk-test" not in repr(choice)
    backend = chosen_backend(choice)
    assert backend.base_url == scripted_openai_server.base_url and backend.api_key == "sk-test"
    assert json.loads(backend.complete_batch(requests_for([2]))[0].text) == {"value": 2}


def test_second_run_makes_zero_server_calls(scripted_openai_server, db_path):
    con = connect(db_path)
    first = run_job(con, "echo", backend_for(scripted_openai_server), requests_for(range(12)), Number)
    assert len(first.outputs) == 12 and scripted_openai_server.calls == 12
    assert first.prompt_tokens == 12 * 11
    scripted_openai_server.reset()
    second = run_job(con, "echo", backend_for(scripted_openai_server), requests_for(range(12)), Number)
    assert scripted_openai_server.calls == 0 and second.cache_hits == 12
    assert {k: v.value for k, v in second.outputs.items()} == {f"n{i}": i for i in range(12)}


class InterruptedAfterFiveAnswersDouble(OpenAIBackend):
    """Test double around the real backend: the job is interrupted (as by Ctrl-C) once five
    answers have reached it, while other requests are still in flight."""

    def complete_stream(self, requests):
        answers = super().complete_stream(requests)
        try:
            for count, answer in enumerate(answers, 1):
                yield answer
                if count == 5:
                    raise KeyboardInterrupt("killed")
        finally:
            answers.close()


def test_a_killed_job_keeps_what_arrived_and_resumes_with_the_rest(scripted_openai_server, db_path):
    def slow_after_eight(body, call_number):
        reply = answer_number(body, call_number)
        reply.delay_s = 60.0 if call_number > 8 else 0.02
        return reply

    scripted_openai_server.script = slow_after_eight
    con = connect(db_path)
    killed = InterruptedAfterFiveAnswersDouble("double-model", base_url=scripted_openai_server.base_url,
                                               concurrency=3, batch_size=100)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_job(con, "echo", killed, requests_for(range(12)), Number)
    # in-flight requests were cancelled, not waited for (the server holds them for 60 s)
    assert time.monotonic() - started < 30
    # the five answers that reached the job were saved although no batch of 100 had filled up
    saved = {json.loads(r)["value"] for (r,) in con.execute("SELECT parsed FROM ops.llm_calls WHERE status = 'ok'").fetchall()}
    assert len(saved) == 5
    scripted_openai_server.reset()
    scripted_openai_server.script = answer_number
    resumed = run_job(con, "echo", backend_for(scripted_openai_server, batch_size=5), requests_for(range(12)), Number)
    assert scripted_openai_server.calls == 7 and resumed.cache_hits == 5 and len(resumed.outputs) == 12
    asked = {number_in(b) for b in scripted_openai_server.bodies}
    assert asked == set(range(12)) - saved
    assert {k: v.value for k, v in resumed.outputs.items()} == {f"n{i}": i for i in range(12)}


def test_the_proxy_comes_from_the_environment_unless_the_host_is_exempt(monkeypatch):
    import httpx

    from caseforge.llm.backends.openai_compat import proxy_for
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert proxy_for(httpx.URL("https://api.example.org/v1/chat/completions")) is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "gpu-node.internal")
    assert proxy_for(httpx.URL("https://api.example.org/v1/chat/completions")) == "http://proxy.internal:3128"
    assert proxy_for(httpx.URL("http://api.example.org/v1/chat/completions")) is None
    assert proxy_for(httpx.URL("https://gpu-node.internal:8000/v1/chat/completions")) is None
    assert proxy_for(httpx.URL("https://127.0.0.1:8000/v1/chat/completions")) is None
    assert proxy_for(httpx.URL("https://localhost:8000/v1/chat/completions")) is None


# --- hostile endpoints: every bad answer is a failure of its own request, with its reason -----------------

def chat_body(content="{\"value\": 1}", **changes) -> dict:
    body = {"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3}}
    body.update(changes)
    return body


WRONG_ANSWERS = {
    "content is a number": (chat_body(12345), "choices.0.message.content"),
    "usage is a string": (chat_body(usage="lots"), "usage"),
    "prompt_tokens is text": (chat_body(usage={"prompt_tokens": "11", "completion_tokens": 3}), "usage.prompt_tokens"),
    "finish_reason is a number": (chat_body(choices=[{"message": {"content": "x"}, "finish_reason": 5}]),
                                  "choices.0.finish_reason"),
    "message is a string": (chat_body(choices=[{"message": "hi"}]), "choices.0.message"),
    "choices is an object": (chat_body(choices={"0": {"message": {"content": "x"}}}), "choices"),
    "no choices": (chat_body(choices=[]), "choices"),
    "choices missing": ({"id": "x"}, "choices"),
    "a JSON list": ([1, 2], "a JSON list"),
    "a number too long to read": (b'{"choices": ' + b"9" * 5000 + b"}", "not JSON"),
    "nested too deeply": (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
    "not JSON": ("<html>proxy error</html>", "not JSON"),
    "not UTF-8": (b'{"choices": "\xff\xfe"}', "not JSON"),
}


@pytest.mark.parametrize("name", WRONG_ANSWERS)
def test_an_answer_of_the_wrong_shape_fails_its_request_with_the_reason(scripted_openai_server, name):
    body, where = WRONG_ANSWERS[name]
    scripted_openai_server.script = lambda request, n: ScriptedReply(200, body)
    [completion] = backend_for(scripted_openai_server, max_retries=1).complete_batch(requests_for([1]))
    assert completion.text is None and where in completion.error, completion.error
    assert completion.error.startswith("gave up after 2 attempts: HTTP 200 answer ")
    assert completion.answered                      # the endpoint answered: a cached failure, not an outage


def test_one_answer_of_twenty_with_wrong_types_fails_alone_and_the_other_nineteen_are_stored(
        scripted_openai_server, db_path):
    """The issue's case: one answer with "content": 12345 among 20 crashed the whole job and stored nothing."""
    scripted_openai_server.script = lambda body, n: (ScriptedReply(200, chat_body(12345)) if number_in(body) == 7
                                                      else answer_number(body, n))
    con = connect(db_path)
    result = run_job(con, "echo", backend_for(scripted_openai_server, max_retries=1), requests_for(range(20)), Number)
    assert sorted(result.outputs) == sorted(f"n{i}" for i in range(20) if i != 7)
    assert list(result.failures) == ["n7"] and "choices.0.message.content" in result.failures["n7"].reason
    assert dict(con.execute("SELECT status, count(*) FROM ops.llm_calls GROUP BY status").fetchall()) == \
        {"ok": 19, "failed": 1}


def test_a_drip_fed_answer_ends_at_the_deadline(scripted_openai_server):
    """A body sent a byte every 0.1 s never trips a per-read timeout; the deadline (timeout_s, for connect,
    send and the whole answer) ends each attempt."""
    def drip(body, n):
        reply = answer_number(body, n)
        reply.drip_s = 0.1
        return reply

    scripted_openai_server.script = drip
    backend = backend_for(scripted_openai_server, timeout_s=1, max_retries=1)
    started = time.monotonic()
    [completion] = backend.complete_batch(requests_for([3]))
    elapsed = time.monotonic() - started
    assert completion.text is None and "no complete answer within 1s" in completion.error, completion.error
    assert not completion.answered
    assert elapsed < 8, elapsed                     # two attempts of 1 s (the backoff is not slept here)


def test_a_cut_connection_is_asked_again_and_one_that_stays_cut_is_unanswered(scripted_openai_server):
    def script(body, n):
        reply = answer_number(body, n)
        if number_in(body) == 1 or (number_in(body) == 2 and n <= 2):
            reply.cut_after = 20
        return reply

    scripted_openai_server.script = script
    completions = backend_for(scripted_openai_server, max_retries=2).complete_batch(requests_for([1, 2]))
    assert completions[0].text is None and not completions[0].answered
    assert "gave up after 3 attempts: connection problem" in completions[0].error, completions[0].error
    assert json.loads(completions[1].text) == {"value": 2}


def refusing_base_url() -> str:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_a_refused_connection_is_not_cached_as_the_answer_and_the_next_run_asks_again(db_path):
    """The issue's case: a run against a server that was down cached 3 ConnectError failures, and the run after
    the server came back made 0 calls."""
    con = connect(db_path)
    down = OpenAIBackend("double-model", base_url=refusing_base_url(), max_retries=1, sleep=RecordingSleep())
    first = run_job(con, "echo", down, requests_for(range(3)), Number)
    assert sorted(first.failures) == ["n0", "n1", "n2"] and not first.outputs
    assert all("connection problem: ConnectError" in f.reason for f in first.failures.values())
    assert con.execute("SELECT DISTINCT status FROM ops.llm_calls").fetchall() == [("unanswered",)]
    with ScriptedOpenAIServerDouble(answer_number) as server:
        second = run_job(con, "echo", backend_for(server), requests_for(range(3)), Number)
    assert server.calls == 3 and second.cache_hits == 0 and not second.failures
    assert {k: v.value for k, v in second.outputs.items()} == {"n0": 0, "n1": 1, "n2": 2}
    assert con.execute("SELECT DISTINCT status FROM ops.llm_calls").fetchall() == [("ok",)]


def test_a_bad_answer_stays_a_cached_failure_until_retry_failed(scripted_openai_server, db_path):
    scripted_openai_server.script = lambda body, n: ScriptedReply(200, chat_body(12345))
    con = connect(db_path)
    run_job(con, "echo", backend_for(scripted_openai_server, max_retries=0), requests_for([4]), Number)
    scripted_openai_server.reset()
    scripted_openai_server.script = answer_number
    again = run_job(con, "echo", backend_for(scripted_openai_server), requests_for([4]), Number, retry_failed=False)
    assert scripted_openai_server.calls == 0 and again.cache_hits == 1 and "n4" in again.failures
    retried = run_job(con, "echo", backend_for(scripted_openai_server), requests_for([4]), Number, retry_failed=True)
    assert scripted_openai_server.calls == 1 and retried.outputs["n4"].value == 4


def test_an_outage_never_replaces_a_cached_answer(scripted_openai_server, db_path):
    """With retry_failed, a failed answer is asked again; if the endpoint is down then, the failure it gave
    stays (with its text), and an ok answer is never touched."""
    scripted_openai_server.script = lambda body, n: (ScriptedReply(200, chat_body(12345)) if number_in(body) == 1
                                                      else answer_number(body, n))
    con = connect(db_path)
    run_job(con, "echo", backend_for(scripted_openai_server, max_retries=0), requests_for([0, 1]), Number)
    down = OpenAIBackend("double-model", base_url=refusing_base_url(), max_retries=0, sleep=RecordingSleep())
    result = run_job(con, "echo", down, requests_for([0, 1]), Number, retry_failed=True)
    assert result.outputs["n0"].value == 0 and "connection problem" in result.failures["n1"].reason
    assert con.execute("SELECT status FROM ops.llm_calls ORDER BY status").fetchall() == [("failed",), ("ok",)]


@pytest.mark.parametrize("content", ["9" * 5000, '{"value": ' + "9" * 5000 + "}", "[" * 100_000, "{" * 50_000])
def test_a_reply_the_json_reader_chokes_on_fails_its_request_instead_of_the_job(scripted_openai_server, db_path,
                                                                                 content):
    """A number over 4,300 digits is a ValueError, deep nesting a RecursionError: neither a JSONDecodeError."""
    scripted_openai_server.script = lambda body, n: chat_reply(content) if number_in(body) == 1 else answer_number(body, n)
    result = run_job(connect(db_path), "echo", backend_for(scripted_openai_server), requests_for([0, 1]), Number)
    assert result.outputs["n0"].value == 0 and "n1" in result.failures


@pytest.mark.parametrize("status, about_the_request", [(400, True), (422, True), (401, False), (404, False)])
def test_a_4xx_is_not_retried_and_only_one_about_the_request_is_its_answer(scripted_openai_server, status,
                                                                           about_the_request):
    """400/413/422: the endpoint refused this request (a prompt too long): cached as its failure. 401/403/404: a
    wrong key, URL or model name refuses every request: asked again by the next run."""
    scripted_openai_server.script = lambda body, n: ScriptedReply(status, {"error": "no"})
    [completion] = backend_for(scripted_openai_server).complete_batch(requests_for([1]))
    assert scripted_openai_server.calls == 1 and completion.error.startswith(f"HTTP {status}")
    assert completion.answered is about_the_request and not completion.retryable
